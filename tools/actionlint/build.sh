#!/usr/bin/env bash
# Builds actionlint (the GitHub Actions workflow linter) from the wrapper Go module next to this
# script into a cache directory keyed by its version, the Go toolchain and the wrapper's
# go.mod/go.sum, the way tools/testenv/build.sh caches the control plane. Idempotent: a warm run
# only computes the key and runs the binary once.
#
# stdout: exactly one line, the path of the actionlint binary. Everything else goes to stderr.
# Env: XDG_CACHE_HOME (cache root), ACTIONLINT_REBUILD=1 (ignore an existing cache entry).
# To move versions: `go -C tools/actionlint get -tool github.com/rhysd/actionlint/cmd/actionlint@vX.Y.Z`
# and update ACTIONLINT_VERSION below.
set -euo pipefail

exec 3>&1 1>&2   # fd 3 = real stdout (for the final line); all progress -> stderr

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cache.sh
source "$HERE/../cache.sh"
ACTIONLINT_VERSION="v1.7.12"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

log() { printf '[actionlint/build] %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null || die "go not found in PATH"
for f in "$HERE/go.mod" "$HERE/go.sum"; do [[ -f $f ]] || die "missing $f"; done
pinned="$(awk '$1 == "github.com/rhysd/actionlint" && $2 ~ /^v/ { print $2; exit }' "$HERE/go.mod")"
[[ $pinned == "$ACTIONLINT_VERSION" ]] || die "go.mod pins github.com/rhysd/actionlint $pinned, build.sh expects $ACTIONLINT_VERSION"

GO_VERSION="$(go version)"
MOD_HASH="$(cat "$HERE/go.mod" "$HERE/go.sum" | sha256sum | cut -c1-16)"
GO_TAG="$(cache_go_tag)"
KEY="actionlint-${ACTIONLINT_VERSION}_${GO_TAG}_${MOD_HASH}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-actionlint"
OUT="$CACHE_ROOT/$KEY"

# Output captured whole before it is inspected (no `| grep -q` under pipefail: SIGPIPE).
smoke() { # smoke <binary>
  local out
  out="$("$1" -version 2>&1)" || { log "$1 -version failed: $out"; return 1; }
  [[ $out == *"${ACTIONLINT_VERSION}"* ]] || { log "$1 -version printed '$out', expected $ACTIONLINT_VERSION"; return 1; }
}

publish_cached() {
  smoke "$OUT/actionlint" || die "cached $OUT/actionlint fails the smoke check; rerun with ACTIONLINT_REBUILD=1"
  log "cached: $OUT/actionlint"
  echo "$OUT/actionlint" >&3
  exit 0
}

[[ ${ACTIONLINT_REBUILD:-} != 1 && -x $OUT/actionlint ]] && publish_cached

cache_lock "$CACHE_ROOT" "$KEY"   # concurrent cold builds: the second one finds the cache
[[ ${ACTIONLINT_REBUILD:-} != 1 && -x $OUT/actionlint ]] && publish_cached

TMP="$(cache_scratch "$CACHE_ROOT" "$KEY")"
trap 'rm -rf "$TMP"' EXIT
start=$SECONDS
log "building actionlint $ACTIONLINT_VERSION with $GO_VERSION"
go -C "$HERE" mod download
# -X: what actionlint's own release build stamps (built as a dependency, -version would say "(devel)").
go -C "$HERE" build -trimpath -ldflags "-s -w -X github.com/rhysd/actionlint.version=$ACTIONLINT_VERSION" -o "$TMP/actionlint" \
  github.com/rhysd/actionlint/cmd/actionlint
smoke "$TMP/actionlint" || die "smoke check failed for the fresh build in $TMP"

cache_publish "$TMP" "$OUT"
trap - EXIT
log "built in $((SECONDS - start)) s: $OUT/actionlint"
echo "$OUT/actionlint" >&3
