#!/usr/bin/env bash
# Builds Cilium's own `cilium-operator-generic` (the operator of self-managed clusters, which runs
# multi-pool IPAM) from the Go module proxy, into a cache directory keyed by the release, the Go
# toolchain, this script and the wrapper module next to it. Idempotent: a warm run only computes
# the key and runs the binary once. The operator-in-the-loop tests (tests/integration/operator_*.rs)
# start it against the project's own kube-apiserver (tests/integration/support/operator.rs).
#
# Nothing of Cilium is copied into the repository: go.mod requires github.com/cilium/cilium and
# names the operator as a `tool`; the module proxy serves the source, verified against go.sum.
# What the proxy refuses is replaced (README.md next to this script says what and why).
#
# stdout: exactly one line, the path of the binary. Everything else goes to stderr.
# Env: XDG_CACHE_HOME (cache root), OPERATOR_REBUILD=1 (ignore an existing cache entry),
#      OPERATOR_TIDY=1 (run `go mod tidy` here first: after changing the pin).
set -euo pipefail

exec 3>&1 1>&2   # fd 3 = real stdout (for the final line); all progress -> stderr

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cache.sh
source "$HERE/../cache.sh"
# Bump when the build command below changes in a way that changes the binary.
RECIPE=1

# `,direct` would send a refused module to its origin, which this machine cannot reach: a refusal
# must fail at once, not hang on the network.
GOPROXY="$(go env GOPROXY)"
GOPROXY="${GOPROXY//,direct/}"
GOPROXY="${GOPROXY//|direct/}"
export GOPROXY GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

log() { printf '[cilium-operator/build] %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }
command -v go >/dev/null || die "go not found in PATH"

if [[ ${OPERATOR_TIDY:-} == 1 ]]; then
  log "go mod tidy"
  GOFLAGS="-mod=mod -buildvcs=false" go -C "$HERE" mod tidy
fi

# The one pin: the version go.mod requires.
CILIUM_VERSION="$(awk '$1 == "github.com/cilium/cilium" && $2 ~ /^v/ { print $2; exit }' "$HERE/go.mod")"
[[ -n $CILIUM_VERSION ]] || die "go.mod requires no github.com/cilium/cilium"
GO_VERSION="$(go version)"
SRC_HASH="$(cd "$HERE" && cat build.sh go.mod go.sum mcs-api-controllers/* | sha256sum | cut -c1-16)"
KEY="cilium-operator-${CILIUM_VERSION}_$(cache_go_tag)_r${RECIPE}_${SRC_HASH}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-operator"
OUT="$CACHE_ROOT/$KEY"
BIN="$OUT/cilium-operator-generic"

# The output is captured whole before it is inspected (no `| grep -q` under pipefail: SIGPIPE).
smoke() { # smoke <binary>
  local out
  out="$("$1" --help 2>&1)" || { log "$1 --help failed: $out"; return 1; }
  [[ $out == *--k8s-kubeconfig-path* && $out == *--ipam* ]] || { log "$1 --help lacks --k8s-kubeconfig-path or --ipam"; return 1; }
}

publish_cached() {
  smoke "$BIN" || die "the cached operator in $OUT fails the smoke check; rerun with OPERATOR_REBUILD=1"
  echo "$BIN" >&3
  exit 0
}

[[ ${OPERATOR_REBUILD:-} != 1 && -x $BIN ]] && publish_cached
cache_lock "$CACHE_ROOT" "$KEY"   # concurrent cold builds: the second one finds the cache
[[ ${OPERATOR_REBUILD:-} != 1 && -x $BIN ]] && publish_cached

TMP="$(cache_scratch "$CACHE_ROOT" "$KEY")"
trap 'rm -rf "$TMP"' EXIT
trap cache_on_signal INT TERM HUP

start=$SECONDS
log "cold build: cilium-operator-generic $CILIUM_VERSION with $GO_VERSION (about 14 min of CPU on 2 cores)"
cache_run go -C "$HERE" mod download
# The tags of Cilium's own image for the generic operator (operator/Makefile: ipam_provider_operator;
# images/operator: osusergo); -X as Cilium's Makefile.defs stamps the version.
cache_run go -C "$HERE" build -trimpath -tags osusergo,ipam_provider_operator \
  -ldflags "-s -w -X github.com/cilium/cilium/pkg/version.ciliumVersion=${CILIUM_VERSION#v}" \
  -o "$TMP/cilium-operator-generic" github.com/cilium/cilium/operator
smoke "$TMP/cilium-operator-generic" || die "smoke check failed for the fresh build in $TMP"
printf 'cilium-operator-generic %s\n%s\nrecipe %s\nsources %s\n' "$CILIUM_VERSION" "$GO_VERSION" "$RECIPE" "$SRC_HASH" >"$TMP/VERSIONS"

cache_publish "$TMP" "$OUT"
trap - EXIT
log "built in $((SECONDS - start)) s: $BIN"
echo "$BIN" >&3
