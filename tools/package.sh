#!/usr/bin/env bash
# Release packaging for krew: builds the plugin for one target, packs
#   <out>/kubectl-ciliumpool_v<version>_<os>_<arch>.tar.gz   (binary + LICENSE + kubectl_complete-ciliumpool)
#   <out>/kubectl-ciliumpool_v<version>_<os>_<arch>.tar.gz.sha256   (`sha256sum -c` format)
# and renders <out>/krew-manifest.yaml from the checked-in krew-manifest.yaml (the one source of
# truth), keeping the platforms whose archives are in <out> with their real sha256. Archives built
# on other machines can be copied into <out> before a later run; each run re-renders the manifest.
#
#   tools/package.sh [--target TRIPLE] [--out DIR] [--binary PATH]
#   tools/package.sh --manifest-only [--out DIR]
#   tools/package.sh --list-targets
#     --target TRIPLE   one of the release targets (--list-targets); default: this machine, built
#                       for its default target. Fails with one line when the toolchain is missing.
#     --out DIR         where archives and the manifest go (default: dist)
#     --binary PATH     package this binary instead of running `cargo build --release --locked`
#                       (the tests reuse the binary cargo built for them; a release build takes minutes)
#     --manifest-only   build nothing; render the manifest from the archives already in DIR
#     --list-targets    print "TRIPLE ARCHIVE" for every release target and exit
#
# stdout: two lines, the archive and the manifest paths (--manifest-only: the manifest path).
# Progress goes to stderr. SOURCE_DATE_EPOCH (the build date `version` reports) defaults to the
# date of the git commit, so two builds of one commit say the same.
# Install the result offline:
#   kubectl krew install --manifest=dist/krew-manifest.yaml --archive=dist/<archive>
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/dist"
BINARY="" TARGET="" MODE=package

# The release targets and the krew platform (os, arch) each one's archive is for. Statically
# linked where the platform allows: musl on Linux, the static C runtime on Windows.
TARGETS=(
  "x86_64-unknown-linux-musl linux amd64"
  "aarch64-unknown-linux-musl linux arm64"
  "x86_64-apple-darwin darwin amd64"
  "aarch64-apple-darwin darwin arm64"
  "x86_64-pc-windows-msvc windows amd64"
)

die() { printf 'package.sh: %s\n' "$*" >&2; exit 2; }

while (($#)); do
  case $1 in
    --out) OUT="${2:?--out needs a directory}"; shift 2 ;;
    --binary) BINARY="${2:?--binary needs a path}"; shift 2 ;;
    --target) TARGET="${2:?--target needs a target triple}"; shift 2 ;;
    --manifest-only) MODE=manifest; shift ;;
    --list-targets) MODE=list; shift ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

cd "$ROOT"
# `cargo pkgid` prints path+file:///...#kubectl-ciliumpool@0.1.0 (older cargo: ...#0.1.0).
PKGID="$(cargo pkgid --quiet)"
VERSION="v${PKGID##*[#@]}"
archive_name() { printf 'kubectl-ciliumpool_%s_%s_%s.tar.gz' "$VERSION" "$1" "$2"; }

if [[ $MODE == list ]]; then
  for entry in "${TARGETS[@]}"; do
    read -r triple os arch <<<"$entry"
    printf '%s %s\n' "$triple" "$(archive_name "$os" "$arch")"
  done
  exit 0
fi

# spec.version, the uris and the caveats all name the version.
OTHER_VERSIONS="$(grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+' krew-manifest.yaml | grep -vxF "$VERSION" | sort -u | tr '\n' ' ' || true)"
[[ -z $OTHER_VERSIONS ]] || die "krew-manifest.yaml names ${OTHER_VERSIONS}but Cargo.toml says $VERSION; update the manifest"

host_os() {
  case "$(uname -s)" in
    Linux) echo linux ;;
    Darwin) echo darwin ;;
    MINGW*|MSYS*|CYGWIN*) echo windows ;;
    *) die "unsupported OS $(uname -s) (krew-manifest.yaml has linux, darwin and windows)" ;;
  esac
}
host_arch() {
  case "$(uname -m)" in
    x86_64|amd64) echo amd64 ;;
    aarch64|arm64) echo arm64 ;;
    *) die "unsupported architecture $(uname -m) (krew-manifest.yaml has amd64 and arm64)" ;;
  esac
}

# Whether this machine can build TARGET; dies with one line saying what is missing.
check_toolchain() {
  local target=$1 os=$2 arch=$3 host cc
  host="$(host_os)"
  [[ -d "$(rustc --print sysroot)/lib/rustlib/$target/lib" ]] \
    || die "cannot build $target: its Rust standard library is not installed (rustup target add $target)"
  case $os in
    linux)
      [[ $host == linux ]] || die "cannot build $target on $host: build it on Linux"
      # ring compiles C for the target: the cc crate looks for <arch>-linux-musl-gcc, then musl-gcc.
      cc="${target%%-*}-linux-musl-gcc"
      if [[ $arch == "$(host_arch)" ]]; then
        command -v "$cc" >/dev/null || command -v musl-gcc >/dev/null \
          || die "cannot build $target: no C compiler for musl ($cc or musl-gcc; e.g. apt-get install musl-tools)"
      else
        command -v "$cc" >/dev/null || die "cannot build $target on $(host_arch): no $cc cross compiler on PATH (or build on an $arch machine)"
      fi ;;
    darwin) [[ $host == darwin ]] || die "cannot build $target on $host: it needs macOS (the Apple SDK and linker)" ;;
    windows) [[ $host == windows ]] || die "cannot build $target on $host: it needs Windows (the MSVC linker)" ;;
  esac
}

sha256() { # sha256 FILE -> hex digest
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT

if [[ $MODE == package ]]; then
  if [[ -n $TARGET ]]; then
    entry="$(printf '%s\n' "${TARGETS[@]}" | awk -v t="$TARGET" '$1 == t')"
    [[ -n $entry ]] || die "unknown target $TARGET; release targets: $(printf '%s\n' "${TARGETS[@]}" | cut -d' ' -f1 | tr '\n' ' ')"
    read -r _ OS ARCH <<<"$entry"
  else
    OS="$(host_os)" ARCH="$(host_arch)"
  fi
  EXE=""
  [[ $OS != windows ]] || EXE=.exe

  if [[ -z $BINARY ]]; then
    [[ -z $TARGET ]] || check_toolchain "$TARGET" "$OS" "$ARCH"
    if [[ -z ${SOURCE_DATE_EPOCH:-} ]] && commit_date="$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null)"; then
      export SOURCE_DATE_EPOCH="$commit_date"
    fi
    if [[ -n $TARGET ]]; then
      printf 'package.sh: cargo build --release --locked --target %s\n' "$TARGET" >&2
      # The static C runtime on Windows (musl links statically by default).
      [[ $OS != windows ]] || export CARGO_TARGET_X86_64_PC_WINDOWS_MSVC_RUSTFLAGS="-C target-feature=+crt-static"
      cargo build --release --locked --target "$TARGET" >&2
      BINARY="$ROOT/target/$TARGET/release/kubectl-ciliumpool$EXE"
    else
      printf 'package.sh: cargo build --release --locked\n' >&2
      cargo build --release --locked >&2
      BINARY="$ROOT/target/release/kubectl-ciliumpool$EXE"
    fi
  fi
  [[ -f $BINARY && -x $BINARY ]] || die "$BINARY is not an executable"

  ARCHIVE="$OUT/$(archive_name "$OS" "$ARCH")"
  mkdir "$STAGE/files"
  cp "$BINARY" "$STAGE/files/kubectl-ciliumpool$EXE"
  cp LICENSE kubectl_complete-ciliumpool "$STAGE/files/"
  chmod 755 "$STAGE/files/kubectl-ciliumpool$EXE" "$STAGE/files/kubectl_complete-ciliumpool"
  tar -czf "$ARCHIVE.tmp" -C "$STAGE/files" "kubectl-ciliumpool$EXE" kubectl_complete-ciliumpool LICENSE
  mv "$ARCHIVE.tmp" "$ARCHIVE"
  printf '%s  %s\n' "$(sha256 "$ARCHIVE")" "$(basename "$ARCHIVE")" >"$ARCHIVE.sha256"
  printf 'package.sh: wrote %s and %s.sha256\n' "$ARCHIVE" "$(basename "$ARCHIVE")" >&2
fi

# Every archive present in OUT, as "<file name> <sha256>" lines for the renderer.
SUMS="$STAGE/sums"
: >"$SUMS"
for archive in "$OUT"/kubectl-ciliumpool_"${VERSION}"_*.tar.gz; do
  [[ ! -f $archive ]] || printf '%s %s\n' "$(basename "$archive")" "$(sha256 "$archive")" >>"$SUMS"
done

# The template's platform items (`  - selector:` ... up to the next item) are kept when their uri
# names an archive in OUT, with its sha256; the others are dropped. The leading comment is replaced.
MANIFEST="$OUT/krew-manifest.yaml"
awk -v sums="$SUMS" '
  BEGIN {
    while ((getline line < sums) > 0) { split(line, f, " "); sum[f[1]] = f[2] }
    print "# Generated by tools/package.sh from krew-manifest.yaml; do not edit."
  }
  function flush() {
    if (item != "" && archive in sum) { sub(/sha256: "[0-9a-f]*"/, "sha256: \"" sum[archive] "\"", item); printf "%s", item; kept++ }
    item = ""; archive = ""
  }
  !started && /^#/ { next }
  { started = 1 }
  /^  platforms:/ { in_platforms = 1; print; next }
  in_platforms && /^  - / { flush(); item = $0 "\n"; next }
  in_platforms && /^    / { item = item $0 "\n"; if ($1 == "uri:") { n = split($2, parts, "/"); archive = parts[n] } next }
  in_platforms { flush(); in_platforms = 0 }
  { print }
  END { flush(); if (!kept) exit 3 }
' krew-manifest.yaml >"$MANIFEST.tmp" || die "no platform of krew-manifest.yaml names an archive in $OUT"
mv "$MANIFEST.tmp" "$MANIFEST"
printf 'package.sh: wrote %s\n' "$MANIFEST" >&2

[[ $MODE == manifest ]] || printf '%s\n' "$ARCHIVE"
printf '%s\n' "$MANIFEST"
