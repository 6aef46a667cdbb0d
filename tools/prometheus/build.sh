#!/usr/bin/env bash
# Builds Prometheus and promtool from their Go module (`go install ...@version`: the module's own
# go.mod and go.sum, checked against the Go checksum database) into a cache directory keyed by the
# version and the Go toolchain, the way tools/testenv/build.sh caches the control plane. The tests
# of `serve` scrape it with the real Prometheus and check the exposition and the alert rules with
# promtool. Idempotent: a warm run only computes the key and runs both binaries once.
#
# The binaries are built without the `builtinassets` tag: no web UI, which nothing here uses (the
# HTTP API is complete without it).
#
# stdout: exactly one line, the directory holding `prometheus` and `promtool`. Everything else goes
# to stderr.
# Env: XDG_CACHE_HOME (cache root), PROMETHEUS_REBUILD=1 (ignore an existing cache entry).
set -euo pipefail

exec 3>&1 1>&2   # fd 3 = real stdout (for the final line); all progress -> stderr

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cache.sh
source "$HERE/../cache.sh"
# The one pin (Prometheus 3.x tags its Go module v0.3xx.y for release 3.xx.y).
PROMETHEUS_VERSION="v0.316.0"
# Bump when the build command below changes in a way that changes the binaries.
RECIPE=1

export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-buildvcs=false"

log() { printf '[prometheus/build] %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }
command -v go >/dev/null || die "go not found in PATH"

GO_VERSION="$(go version)"
GO_TAG="$(cache_go_tag)"
KEY="prometheus-${PROMETHEUS_VERSION}_${GO_TAG}_r${RECIPE}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-prometheus"
OUT="$CACHE_ROOT/$KEY"

# Each output is captured whole before it is inspected (no `| grep -q` under pipefail: SIGPIPE).
smoke() { # smoke <dir>
  local out
  out="$("$1/prometheus" --version 2>&1)" || { log "prometheus --version failed: $out"; return 1; }
  [[ $out == *"prometheus, version"* ]] || { log "prometheus --version printed '$out'"; return 1; }
  out="$("$1/promtool" --version 2>&1)" || { log "promtool --version failed: $out"; return 1; }
  [[ $out == *"promtool, version"* ]] || { log "promtool --version printed '$out'"; return 1; }
}

publish_cached() {
  smoke "$OUT" || die "cached binaries in $OUT fail the smoke check; rerun with PROMETHEUS_REBUILD=1"
  log "cached: $OUT"
  echo "$OUT" >&3
  exit 0
}

[[ ${PROMETHEUS_REBUILD:-} != 1 && -x $OUT/prometheus && -x $OUT/promtool ]] && publish_cached

cache_lock "$CACHE_ROOT" "$KEY"   # concurrent cold builds: the second one finds the cache
[[ ${PROMETHEUS_REBUILD:-} != 1 && -x $OUT/prometheus && -x $OUT/promtool ]] && publish_cached

TMP="$(cache_scratch "$CACHE_ROOT" "$KEY")"
trap 'rm -rf "$TMP"' EXIT
trap cache_on_signal INT TERM HUP

start=$SECONDS
log "cold build: prometheus + promtool $PROMETHEUS_VERSION with $GO_VERSION (several minutes on 2 cores)"
# -X: what Prometheus' own release build (promu) stamps, so --version names the release.
LDFLAGS="-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION} -X github.com/prometheus/common/version.Branch=module"
GOBIN="$TMP" cache_run go install -trimpath -ldflags "$LDFLAGS" \
  "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" \
  "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
smoke "$TMP" || die "smoke check failed for the fresh build in $TMP"
printf 'prometheus %s\n%s\nrecipe %s\n' "$PROMETHEUS_VERSION" "$GO_VERSION" "$RECIPE" >"$TMP/VERSIONS"

cache_publish "$TMP" "$OUT"
trap - EXIT
log "built in $((SECONDS - start)) s: $OUT"
echo "$OUT" >&3
