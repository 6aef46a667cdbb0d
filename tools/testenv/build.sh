#!/usr/bin/env bash
# Builds kube-apiserver, kubectl, etcd, kubectl-krew and validate-krew-manifest from the
# wrapper Go modules next to this script, into a cache directory keyed by the versions, the Go
# toolchain and the wrapper go.mod/go.sum. Idempotent: a warm run only computes the key.
#
# stdout: exactly one line, the directory holding the binaries. Everything else goes to stderr.
# Env: XDG_CACHE_HOME (cache root), TESTENV_REBUILD=1 (ignore an existing cache entry).
set -euo pipefail

exec 3>&1 1>&2   # fd 3 = real stdout (for the final line); all progress -> stderr

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cache.sh
source "$HERE/../cache.sh"
K8S_MOD="$HERE/k8s"
KREW_MOD="$HERE/krew"

K8S_VERSION="v1.36.3"
KREW_VERSION="v0.4.3"
# Bump when the build commands/ldflags below change in a way that changes the binaries.
RECIPE=2

export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

log() { printf '[testenv/build] %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null || die "go not found in PATH"
for f in "$K8S_MOD/go.mod" "$K8S_MOD/go.sum" "$KREW_MOD/go.mod" "$KREW_MOD/go.sum"; do
  [[ -f $f ]] || die "missing $f"
done

# Versions as pinned in the wrapper go.mod files (the source of truth).
modver() { # modver <go.mod> <module path>  -> version from its require block
  awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$1"
}
got_k8s="$(modver "$K8S_MOD/go.mod" k8s.io/kubernetes)"
[[ $got_k8s == "$K8S_VERSION" ]] || die "k8s/go.mod pins k8s.io/kubernetes $got_k8s, build.sh expects $K8S_VERSION"
ETCD_VERSION="$(modver "$K8S_MOD/go.mod" go.etcd.io/etcd/server/v3)"
[[ -n $ETCD_VERSION ]] || die "cannot find go.etcd.io/etcd/server/v3 in k8s/go.mod"
got_krew="$(modver "$KREW_MOD/go.mod" sigs.k8s.io/krew)"
[[ $got_krew == "$KREW_VERSION" ]] || die "krew/go.mod pins sigs.k8s.io/krew $got_krew, build.sh expects $KREW_VERSION"

GO_VERSION="$(go version)"
MOD_HASH="$(cat "$K8S_MOD/go.mod" "$K8S_MOD/go.sum" "$KREW_MOD/go.mod" "$KREW_MOD/go.sum" \
  | sha256sum | cut -c1-16)"
GO_TAG="$(cache_go_tag)"
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_krew-${KREW_VERSION}_${GO_TAG}_r${RECIPE}_${MOD_HASH}"

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-testenv"
OUT="$CACHE_ROOT/$KEY"
BINARIES=(kube-apiserver kubectl etcd kubectl-krew validate-krew-manifest)

complete() { # complete <dir>: every binary present and executable
  local b
  for b in "${BINARIES[@]}"; do [[ -x $1/$b ]] || return 1; done
}

# Runs every binary once. Each output is captured whole before it is inspected: a reader that
# closes the pipe early (`| head`, `| grep -q`) under `set -o pipefail` would kill the writer with
# SIGPIPE (exit 141) on a loaded machine and throw a finished build away. Cheap (< 1 s), so it runs
# on every call, cache hit included, and CI exercises it on warm caches too.
smoke() { # smoke <dir>
  local d=$1 out krew_root
  out="$("$d/kube-apiserver" --version 2>&1)" || { log "kube-apiserver --version failed: $out"; return 1; }
  [[ $out == *"$K8S_VERSION"* ]] || { log "kube-apiserver reports '$out', expected $K8S_VERSION"; return 1; }
  out="$("$d/kubectl" version --client 2>&1)" || { log "kubectl version --client failed: $out"; return 1; }
  [[ $out == *"$K8S_VERSION"* ]] || { log "kubectl reports '$out', expected $K8S_VERSION"; return 1; }
  out="$("$d/etcd" --version 2>&1)" || { log "etcd --version failed: $out"; return 1; }
  [[ $out == *"${ETCD_VERSION#v}"* ]] || { log "etcd reports '$out', expected $ETCD_VERSION"; return 1; }
  krew_root="$(mktemp -d)"
  out="$(KREW_ROOT="$krew_root" KREW_NO_UPGRADE_CHECK=1 "$d/kubectl-krew" version 2>&1)" \
    || { rm -rf "$krew_root"; log "kubectl-krew version failed: $out"; return 1; }
  rm -rf "$krew_root"
  [[ $out == *"$KREW_VERSION"* ]] || { log "kubectl-krew reports '$out', expected $KREW_VERSION"; return 1; }
  # validate-krew-manifest -h exits 2 (flag package convention); only its text matters.
  out="$("$d/validate-krew-manifest" -h 2>&1)" || true
  [[ $out == *-manifest* ]] || { log "validate-krew-manifest -h printed '$out'"; return 1; }
}

if [[ ${TESTENV_REBUILD:-} != 1 ]] && complete "$OUT"; then
  smoke "$OUT" || die "cached binaries in $OUT fail the smoke check; rerun with TESTENV_REBUILD=1"
  log "cached: $OUT"
  echo "$OUT" >&3
  exit 0
fi

# Serialise concurrent cold builds of the same key (the second one then finds the cache).
cache_lock "$CACHE_ROOT" "$KEY"
if [[ ${TESTENV_REBUILD:-} != 1 ]] && complete "$OUT"; then
  smoke "$OUT" || die "cached binaries in $OUT fail the smoke check; rerun with TESTENV_REBUILD=1"
  log "cached (built concurrently): $OUT"
  echo "$OUT" >&3
  exit 0
fi

TMP="$(cache_scratch "$CACHE_ROOT" "$KEY")"
trap 'rm -rf "$TMP"' EXIT
trap cache_on_signal INT TERM HUP   # build steps run through cache_run (tools/cache.sh)

log "cold build into $OUT"
log "k8s $K8S_VERSION, etcd $ETCD_VERSION, krew $KREW_VERSION, $GO_VERSION"
log "this takes a while (roughly 10-20 min on 2 cores); progress follows"
start=$SECONDS

# -X for both version packages, as kubernetes/hack/lib/version.sh does; without gitMajor/gitMinor
# /version and `kubectl version` show placeholders.
k8s_minor="${K8S_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
K8S_LDFLAGS="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  K8S_LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  K8S_LDFLAGS+=" -X $pkg.gitTreeState=clean"
done

log "go mod download (k8s wrapper)"
cache_run go -C "$K8S_MOD" mod download
log "building kube-apiserver + kubectl"
cache_run go -C "$K8S_MOD" build -trimpath -ldflags "$K8S_LDFLAGS" -o "$TMP/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
log "  done after $((SECONDS - start)) s"

log "building etcd"
cache_run go -C "$K8S_MOD" build -trimpath -ldflags "-s -w" -o "$TMP/etcd" go.etcd.io/etcd/server/v3
log "  done after $((SECONDS - start)) s"

log "go mod download (krew wrapper)"
cache_run go -C "$KREW_MOD" mod download
log "building kubectl-krew + validate-krew-manifest"
# Stamped like krew's own release build, so `kubectl krew version` names the version it is.
KREW_LDFLAGS="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION"
cache_run go -C "$KREW_MOD" build -trimpath -ldflags "$KREW_LDFLAGS" -o "$TMP/kubectl-krew" sigs.k8s.io/krew/cmd/krew
cache_run go -C "$KREW_MOD" build -trimpath -ldflags "-s -w" -o "$TMP/validate-krew-manifest" \
  sigs.k8s.io/krew/cmd/validate-krew-manifest
log "  done after $((SECONDS - start)) s"

complete "$TMP" || die "build finished but binaries are missing in $TMP"

# Smoke-check before publishing the cache entry.
smoke "$TMP" || die "smoke check failed for the fresh build in $TMP"

cat >"$TMP/VERSIONS" <<EOF
kubernetes $K8S_VERSION
etcd $ETCD_VERSION
krew $KREW_VERSION
$GO_VERSION
wrapper-hash $MOD_HASH
recipe $RECIPE
EOF

cache_publish "$TMP" "$OUT"
trap - EXIT
log "built in $((SECONDS - start)) s: $OUT"
echo "$OUT" >&3
