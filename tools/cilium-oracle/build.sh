#!/usr/bin/env bash
# Builds tools/cilium-oracle: a scenario driver around the operator's own multi-pool allocator of
# Cilium (operator/pkg/ipam/allocator/multipool over cidralloc and pkg/ipam/cidrset).
#
# The multipool package's operator glue (hive cells, k8s watchers) pulls ~600 packages, one of
# them from a module the Go proxy does not serve, and `go build -overlay` refuses files under
# GOMODCACHE. So, at build time, the allocator files and the few packages they import are copied
# unmodified from the module cache into a temporary build tree, next to a generated go.mod with a
# `replace`; only `pkg/ipam`'s Family type is stubbed. Nothing of Cilium is committed.
#
# `build.sh --crds` instead prints a directory holding every CRD of the pinned release (the
# v2 and v2alpha1 ones, in one folder: no name repeats), copied unmodified from
# pkg/k8s/apis/cilium.io/client/crds/ in the module cache, for the cluster tests (the running
# operator of tests/integration/support/operator.rs needs all of them).
#
# stdout: exactly one line, the path of the binary (or the CRD directory). Everything else goes
# to stderr.
# Env: XDG_CACHE_HOME (cache root), ORACLE_REBUILD=1 (ignore the cache entry),
#      ORACLE_TIDY=1 (run `go mod tidy` in the build tree and write go.mod/go.sum back here).
set -euo pipefail

exec 3>&1 1>&2

# The one pin. Switching to a release whose allocator has reserved ranges is this line (plus
# `ORACLE_TIDY=1` if that release moves its dependencies); see README.md next to this script.
CILIUM_VERSION="v1.20.2"
# Bump when the copy list or the build command changes.
RECIPE=1

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cache.sh
source "$HERE/../cache.sh"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=mod -buildvcs=false"

log() { printf '[cilium-oracle/build] %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }
command -v go >/dev/null || die "go not found in PATH"

# Cilium files and packages compiled into the oracle (module-relative; a directory means every
# non-test .go file in it).
COPY=(
  operator/pkg/ipam/allocator/multipool/pool.go
  operator/pkg/ipam/allocator/multipool/pool_allocator.go
  operator/pkg/ipam/allocator/clusterpool/cidralloc
  pkg/ipam/cidrset
  pkg/ipam/types
  pkg/ip
  pkg/lock
  pkg/logging/logfields
)

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-oracle"

# The module's source directory (downloaded once into GOMODCACHE, verified against go.sum's
# checksum database like any module).
cilium_source() {
  local dl
  dl="$(mktemp -d)"
  go -C "$dl" mod init oracle-download >/dev/null 2>&1
  go -C "$dl" mod download -json "github.com/cilium/cilium@$CILIUM_VERSION" | awk -F'"' '$2 == "Dir" { print $4 }'
  rm -rf "$dl"
}

if [[ ${1:-} == --crds ]]; then
  CRDS="$CACHE_ROOT/crds-$CILIUM_VERSION-all"
  if [[ ! -d $CRDS ]]; then
    DIR="$(cilium_source)"
    [[ -n $DIR && -d $DIR ]] || die "go mod download github.com/cilium/cilium@$CILIUM_VERSION gave no source directory"
    mkdir -p "$CACHE_ROOT"
    tmp="$(mktemp -d "$CACHE_ROOT/.tmp.crds.XXXXXX")"
    cp "$DIR"/pkg/k8s/apis/cilium.io/client/crds/{v2,v2alpha1}/*.yaml "$tmp/" || { rm -rf "$tmp"; die "cilium $CILIUM_VERSION has no CRDs"; }
    for f in ciliumpodippools.yaml ciliumnodes.yaml ciliumendpoints.yaml; do
      [[ -f $tmp/$f ]] || { rm -rf "$tmp"; die "cilium $CILIUM_VERSION has no CRD $f"; }
    done
    chmod -R u+w,a+r "$tmp" && chmod 755 "$tmp"
    mv -T "$tmp" "$CRDS" 2>/dev/null || rm -rf "$tmp"   # a concurrent run may have published it
  fi
  echo "$CRDS" >&3
  exit 0
fi

GO_TAG="$(cache_go_tag)"
SRC_HASH="$(cd "$HERE" && cat build.sh go.mod go.sum main.go hook/*.go | sha256sum | cut -c1-16)"
KEY="cilium-${CILIUM_VERSION}_${GO_TAG}_r${RECIPE}_${SRC_HASH}"
OUT="$CACHE_ROOT/$KEY"
BIN="$OUT/cilium-oracle"

if [[ ${ORACLE_REBUILD:-} != 1 && ${ORACLE_TIDY:-} != 1 && -x $BIN ]]; then
  echo "$BIN" >&3
  exit 0
fi

cache_lock "$CACHE_ROOT" "$KEY"   # concurrent cold builds: the second one finds the cache
if [[ ${ORACLE_REBUILD:-} != 1 && ${ORACLE_TIDY:-} != 1 && -x $BIN ]]; then
  echo "$BIN" >&3
  exit 0
fi

TMP="$(cache_scratch "$CACHE_ROOT" "$KEY")"
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
start=$SECONDS

log "cold build: cilium $CILIUM_VERSION, $(go version)"
DIR="$(cilium_source)"
[[ -n $DIR && -d $DIR ]] || die "go mod download github.com/cilium/cilium@$CILIUM_VERSION gave no source directory"

TREE="$TMP/tree"
CIL="$TREE/cilium"
mkdir -p "$CIL"
for item in "${COPY[@]}"; do
  if [[ -d $DIR/$item ]]; then
    mkdir -p "$CIL/$item"
    for f in "$DIR/$item"/*.go; do
      [[ $f == *_test.go ]] || cp "$f" "$CIL/$item/"
    done
  elif [[ -f $DIR/$item ]]; then
    mkdir -p "$CIL/$(dirname "$item")"
    cp "$DIR/$item" "$CIL/$item"
  else
    die "$item is not in cilium $CILIUM_VERSION: update COPY in build.sh"
  fi
done
# Our own additions to the multipool package (not Cilium code): see hook/.
cp "$HERE"/hook/*.go "$CIL/operator/pkg/ipam/allocator/multipool/"
# The only thing the allocator uses of pkg/ipam (whose real package pulls the agent): Family.
mkdir -p "$CIL/pkg/ipam"
cat >"$CIL/pkg/ipam/family.go" <<'GO'
// Stub generated by tools/cilium-oracle/build.sh: the allocator uses only pkg/ipam's Family type,
// declared here as in pkg/ipam/ipam.go; the real package pulls the agent's dependencies.
package ipam

type Family string

const (
	IPv6 Family = "ipv6"
	IPv4 Family = "ipv4"
)
GO
chmod -R u+w "$TREE"

# The wrapper module, plus the generated requirement and replace of the copied Cilium tree.
cp "$HERE/main.go" "$HERE/go.mod" "$HERE/go.sum" "$TREE/"
sed -n '/^require/,$p' "$HERE/go.mod" | sed '/^require/d; /^)/d' >"$TMP/requires"
{
  printf 'module github.com/cilium/cilium\n\ngo 1.26.0\n\nrequire (\n'
  cat "$TMP/requires"
  printf ')\n'
} >"$CIL/go.mod"
printf '\nrequire github.com/cilium/cilium %s\n\nreplace github.com/cilium/cilium => ./cilium\n' "$CILIUM_VERSION" >>"$TREE/go.mod"

if [[ ${ORACLE_TIDY:-} == 1 ]]; then
  log "go mod tidy in the build tree"
  go -C "$TREE" mod tidy
  sed '/^require github.com\/cilium\/cilium /d; /^replace github.com\/cilium\/cilium /d' "$TREE/go.mod" \
    | cat -s >"$HERE/go.mod"
  cp "$TREE/go.sum" "$HERE/go.sum"
  log "wrote $HERE/go.mod and go.sum; run build.sh again"
  exit 0
fi

mkdir -p "$TMP/out"
go -C "$TREE" build -trimpath -ldflags "-s -w -X main.ciliumVersion=$CILIUM_VERSION" -o "$TMP/out/cilium-oracle" .
"$TMP/out/cilium-oracle" version >/dev/null || die "the fresh binary does not run"
printf 'cilium %s\n%s\nrecipe %s\nsources %s\n' "$CILIUM_VERSION" "$(go version)" "$RECIPE" "$SRC_HASH" >"$TMP/out/VERSIONS"

cache_publish "$TMP/out" "$OUT"
log "built in $((SECONDS - start)) s: $BIN"
echo "$BIN" >&3
