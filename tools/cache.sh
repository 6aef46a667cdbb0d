# shellcheck shell=bash
# Sourced by tools/*/build.sh: the cache entries those scripts build. An entry is a directory
# published by one rename(2), so a reader sees a complete entry or none; an interrupted build only
# ever leaves a .tmp.* directory, which a later build removes after a day.

# cache_scratch ROOT KEY: a fresh scratch directory for building entry KEY under ROOT (printed).
cache_scratch() {
  local root=$1 key=$2
  mkdir -p "$root"
  find "$root" -maxdepth 1 -name '.tmp.*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
  mktemp -d "$root/.tmp.$key.XXXXXX"
}

# cache_publish DIR OUT: DIR, complete, becomes the entry OUT. An existing entry (a forced rebuild)
# is moved aside first and removed after.
cache_publish() {
  local dir=$1 out=$2 old
  if [[ -e $out ]]; then
    old="$(mktemp -d "$(dirname "$out")/.old.$(basename "$out").XXXXXX")"
    mv -T "$out" "$old/entry"
    rm -rf "$old"
  fi
  chmod 755 "$dir"
  mv -T "$dir" "$out"
}
