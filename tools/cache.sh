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

# cache_go_tag: the Go toolchain as part of a cache key (go1.26.8-linux-amd64).
cache_go_tag() {
  go version | awk '{print $3 "-" $4}' | tr '/' '-'
}

# cache_lock ROOT KEY: wait while another build of KEY runs (that build's entry is then found by
# the caller's second look). Holds fd 9 until the script ends.
cache_lock() {
  mkdir -p "$1"
  command -v flock >/dev/null || return 0
  exec 9>"$1/.$2.lock"
  flock 9
}

# cache_run CMD...: a long build step in the background + `wait`, so that a signal is handled at
# once (bash defers traps while a foreground child runs) and stops the child instead of letting it
# finish an abandoned build. A script using it installs `trap cache_on_signal INT TERM HUP`.
CACHE_CHILD=""
cache_on_signal() {
  [[ -n $CACHE_CHILD ]] && kill -TERM "$CACHE_CHILD" 2>/dev/null
  exit 130
}
cache_run() {
  local rc=0
  "$@" &
  CACHE_CHILD=$!
  wait "$CACHE_CHILD" || rc=$?
  CACHE_CHILD=""
  return "$rc"
}
