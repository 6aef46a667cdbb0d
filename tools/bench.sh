#!/usr/bin/env bash
# End-to-end performance comparisons, side by side in one run (docs/performance.md explains them):
#   1. offline `usage -f` on generated dumps vs `jq -c .` reading the same files;
#   2. live `usage -o json` against the real test apiserver vs the raw GETs of the same lists;
#   3. peak RSS of each (GNU time);
#   --fleet instead: three control planes of --live-nodes nodes each read together
#   (`usage --context a,b,c -o json`) vs each alone (the target: at most 1.3 × the slowest alone),
#   with the CPU the client and the three control planes spent on one fleet read.
#   --fleet-wan instead: one control plane of --live-nodes nodes behind --wan-clusters (default 10)
#   WAN-shaped proxies (examples/wan_proxy.rs: --wan-rtt-ms, default 50 ms round trip, and
#   --wan-rate-mb, default 20 MB/s each way, per proxy), each its own server URL, so the plugin reads
#   each proxy as its own remote cluster: 3 and 10 clusters together vs each alone (targets 1.3 ×
#   and 1.5 × the slowest alone), with the client's CPU (user + system) and the server's.
# Prints a Markdown report on stdout; progress on stderr. Needs: cargo, jq, GNU time (/usr/bin/time),
# and for the live part the test control plane (tools/testenv). hyperfine is installed from crates.io
# 1.20.0 (the newest that builds with Rust 1.95) into the tools cache on first use.
#
# Usage: tools/bench.sh [--offline-only | --live-only | --bombs | --fleet | --fleet-wan | --serve] [--nodes N] [--pods-per-node N]
#        [--runs N] [--live-nodes N] [--live-pods-per-node N] [--watch-minutes N]
#        [--churn-minutes N] [--sync-nodes N] [--sync-pods-per-node N] [--no-build] [--live-compact] [--testenv DIR]
#        [--wan-clusters N] [--wan-rtt-ms N] [--wan-rate-mb N]
# --live-compact: load compact objects (only the fields the plugin reads) instead of realistic ones: at
# 5,000 nodes / 150,000 pods realistic pods would need about 12 GB of kube-apiserver memory.
# --testenv DIR: use the running test control plane of DIR (tools/testenv/up.sh's TESTENV_DIR),
# already loaded by `gen_scale --load` with --live-nodes × --live-pods-per-node; it is not stopped.
# The live timings alternate `usage -o json` and the raw GETs --runs times (pairs under the same load).
# --bombs: only the hostile inputs of issues 28 and 40 (tools/bombs.py writes them into a temporary
# directory, about 2.5 GB): wall time, peak RSS and outcome of `usage -f BOMB` for each.
# --serve: instead of the offline and `usage` timings, measure `serve` against the loaded cluster
# (tools/bench-serve.sh: scrape latency, change → series, RSS over --churn-minutes of churn, default 5,
# then the initial sync at --sync-nodes × --sync-pods-per-node, default 2000 × 25; 0 nodes skips it).
# --watch-minutes N: after the live timings, `usage --watch` runs N minutes while pods come and go
# (25 created and 25 deleted every round) and its RSS is compared with the RSS after the first frame
# built from its watch stores (a marker pool makes that frame visible).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

NODES=3000 PODS=30 RUNS=3 LIVE_NODES=1000 LIVE_PODS=10 OFFLINE_ONLY=0 LIVE_ONLY=0 BOMBS=0 WATCH_MINUTES=0 FLEET=0
SERVE=0 CHURN_MINUTES=5 SYNC_NODES=2000 SYNC_PODS=25 NO_BUILD=0 FLEET_WAN=0 WAN_CLUSTERS=10 WAN_RTT=50 WAN_RATE=20
LIVE_COMPACT=() REUSE=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --pods-per-node) PODS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --live-nodes) LIVE_NODES=$2; shift 2 ;;
    --live-pods-per-node) LIVE_PODS=$2; shift 2 ;;
    --offline-only) OFFLINE_ONLY=1; shift ;;
    --live-only) LIVE_ONLY=1; shift ;;
    --bombs) BOMBS=1; shift ;;
    --fleet) FLEET=1; shift ;;
    --watch-minutes) WATCH_MINUTES=$2; shift 2 ;;
    --serve) SERVE=1; LIVE_ONLY=1; shift ;;
    --churn-minutes) CHURN_MINUTES=$2; shift 2 ;;
    --sync-nodes) SYNC_NODES=$2; shift 2 ;;
    --sync-pods-per-node) SYNC_PODS=$2; shift 2 ;;
    --fleet-wan) FLEET_WAN=1; shift ;;
    --no-build) NO_BUILD=1; shift ;;
    --wan-clusters) WAN_CLUSTERS=$2; shift 2 ;;
    --wan-rtt-ms) WAN_RTT=$2; shift 2 ;;
    --wan-rate-mb) WAN_RATE=$2; shift 2 ;;
    --live-compact) LIVE_COMPACT=(--compact); shift ;;
    --testenv) REUSE=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for tool in cargo jq /usr/bin/time; do command -v "$tool" >/dev/null || die "$tool not found"; done

TOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-tools"
HYPERFINE="$TOOLS/bin/hyperfine"
if [[ ! -x $HYPERFINE ]]; then
  log "installing hyperfine into $TOOLS (once)"
  cargo install --quiet --locked hyperfine@1.20.0 --root "$TOOLS" >&2
fi

[[ $NO_BUILD == 1 ]] || log "release build"
[[ $NO_BUILD == 1 ]] || cargo build --quiet --release --locked --bin kubectl-ciliumpool --example gen_scale --example wan_proxy >&2
BIN="$PWD/target/release/kubectl-ciliumpool"
GEN="$PWD/target/release/examples/gen_scale"

WORK="$(mktemp -d)"
FLEET_DIRS=()
cleanup() {
  [[ -n ${TESTENV_DIR:-} && -z $REUSE ]] && tools/testenv/down.sh >&2 || true
  for dir in "${FLEET_DIRS[@]}"; do tools/testenv/down.sh "$dir" >&2 || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

size_of() { du -sb "$1" | cut -f1; }
# peak_rss <command...>: the maximum resident set size in bytes (GNU time reports KiB).
peak_rss() {
  /usr/bin/time -v "$@" >/dev/null 2>"$WORK/time.txt" || die "failed: $*"
  awk -F': ' '/Maximum resident set size/ {print $2 * 1024}' "$WORK/time.txt"
}
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
# median <hyperfine json> <index>: the median wall time in seconds of command <index>.
median() { jq -r ".results[$2].median | . * 1000 | round / 1000" "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "# kubectl-ciliumpool benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg) at start."
echo

offline() { # offline <label> <gen flags...>
  local label=$1; shift
  local dir="$WORK/$label"
  log "generating the $label dump"
  "$GEN" --nodes "$NODES" --pods-per-node "$PODS" --out "$dir" "$@"
  local bytes; bytes=$(size_of "$dir")
  log "timing the $label dump ($(mb "$bytes"))"
  "$HYPERFINE" --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/$label.json" \
    -n "usage -f" "$BIN usage -f $dir -o json" \
    -n "jq -c ." "jq -c . $dir/*.json" >&2
  local ours jq rss
  ours=$(median "$WORK/$label.json" 0); jq=$(median "$WORK/$label.json" 1)
  rss=$(peak_rss "$BIN" usage -f "$dir" -o json)
  echo "| $label | $NODES × $PODS | $(mb "$bytes") | ${ours}s | ${jq}s | $(ratio "$ours" "$jq") | $(mb "$rss") | $(ratio "$rss" "$bytes") |"
}

bombs() {
  log "generating the bombs"
  python3 tools/bombs.py "$WORK/bombs" >&2
  echo "## Hostile inputs: \`usage -f BOMB\` (killed at 120 s)"
  echo
  echo "| input | size on disk | exit | wall | peak RSS | first line of stderr |"
  echo "|---|---|---|---|---|---|"
  local bomb
  for bomb in "$WORK"/bombs/*; do
    log "running $(basename "$bomb")"
    local code=0
    /usr/bin/time -f '%e %M' -o "$WORK/time.txt" timeout -s KILL 120 "$BIN" usage -f "$bomb" >/dev/null 2>"$WORK/stderr.txt" || code=$?
    # GNU time's last line (a failed command adds one before it); timeout's rusage includes the plugin's.
    read -r wall kib < <(tail -n 1 "$WORK/time.txt") || true
    # The plugin escapes what it prints; the cut keeps the table readable.
    local said; said=$(head -n 1 "$WORK/stderr.txt" | cut -c 1-150 | sed 's/|/\\|/g')
    echo "| $(basename "$bomb") | $(mb "$(size_of "$bomb")") | $code | ${wall}s | $(mb $((kib * 1024))) | $said |"
  done
}

# cpu_ticks <pid files...>: user + system clock ticks the processes have used so far.
cpu_ticks() { cat "$@" | while read -r pid; do awk '{print $14 + $15}' "/proc/$pid/stat"; done | awk '{t += $1} END {print t}'; }

fleet() {
  tools/testenv/build.sh >/dev/null
  local crds; crds="$(tools/cilium-oracle/build.sh --crds)"
  local name configs=()
  for name in a b c; do
    log "starting control plane $name and loading $LIVE_NODES nodes with $LIVE_PODS pods each"
    eval "$(tools/testenv/up.sh)"
    FLEET_DIRS+=("$TESTENV_DIR"); configs+=("$KUBECONFIG")
    unset TESTENV_DIR   # cleanup stops each directory of FLEET_DIRS
    kubectl apply -f tests/fixtures/crds/ciliumpodippools-upstream.yaml -f "$crds/ciliumnodes.yaml" \
      -f "$crds/ciliumendpoints.yaml" >&2
    kubectl wait --for=condition=Established crd --all --timeout=60s >&2
    "$GEN" --nodes "$LIVE_NODES" --pods-per-node "$LIVE_PODS" --load
  done
  # One kubeconfig, a context per control plane (each testenv names its own the same way).
  local merged="$WORK/fleet.kubeconfig"
  python3 - "$merged" "${configs[@]}" <<'EOF'
import json, subprocess, sys
out = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [], "current-context": "a"}
for name, path in zip("abc", sys.argv[2:]):
    own = json.loads(subprocess.check_output(["kubectl", "config", "view", "--raw", "--flatten", "-o", "json", "--kubeconfig", path]))
    out["clusters"].append({"name": name, "cluster": own["clusters"][0]["cluster"]})
    out["users"].append({"name": name, "user": own["users"][0]["user"]})
    out["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
open(sys.argv[1], "w").write(json.dumps(out))
EOF
  chmod 600 "$merged"
  export KUBECONFIG="$merged"
  log "timing the fleet read and each cluster alone"
  "$HYPERFINE" --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/fleet.json" \
    -n "fleet a,b,c" "$BIN usage --context a,b,c -o json" \
    -n "a alone" "$BIN usage --context a -o json" -n "b alone" "$BIN usage --context b -o json" \
    -n "c alone" "$BIN usage --context c -o json" >&2
  local together a b c slowest
  together=$(median "$WORK/fleet.json" 0); a=$(median "$WORK/fleet.json" 1)
  b=$(median "$WORK/fleet.json" 2); c=$(median "$WORK/fleet.json" 3)
  slowest=$(printf '%s\n' "$a" "$b" "$c" | sort -g | tail -1)
  # Where the time goes: CPU of the client (GNU time) and of the three etcd + kube-apiserver pairs.
  local pids=() dir before after client servers
  for dir in "${FLEET_DIRS[@]}"; do pids+=("$dir/etcd.pid" "$dir/kube-apiserver.pid"); done
  before=$(cpu_ticks "${pids[@]}")
  /usr/bin/time -f '%U %S %e' -o "$WORK/fleet.time" "$BIN" usage --context a,b,c -o json >/dev/null
  after=$(cpu_ticks "${pids[@]}")
  client=$(awk '{printf "%.2f s CPU (user %.2f + system %.2f) in %.2f s", $1 + $2, $1, $2, $3}' "$WORK/fleet.time")
  servers=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f s CPU", t / hz }')
  echo "## Fleet: \`usage --context a,b,c -o json\` vs each cluster alone (medians of $RUNS runs)"
  echo
  echo "| clusters | together | a alone | b alone | c alone | together / slowest alone |"
  echo "|---|---|---|---|---|---|"
  echo "| 3 × ($LIVE_NODES nodes, $((LIVE_NODES * LIVE_PODS)) pods) | ${together}s | ${a}s | ${b}s | ${c}s | $(ratio "$together" "$slowest") |"
  echo
  echo "One fleet read: the client $client; the three control planes $servers (etcd + kube-apiserver, /proc/PID/stat)."
}

if [[ $BOMBS == 1 ]]; then
  bombs
  exit 0
fi
if [[ $FLEET == 1 ]]; then
  fleet
  exit 0
fi
if [[ $FLEET_WAN == 1 ]]; then
  # shellcheck source=tools/bench-fleet-wan.sh
  source tools/bench-fleet-wan.sh
  fleet_wan
  exit 0
fi

if [[ $LIVE_ONLY == 0 ]]; then
  echo "## Offline: \`usage -f DIR -o json\` vs \`jq -c . DIR/*.json\` (medians of $RUNS runs)"
  echo
  echo "| dump | nodes × pods/node | size | usage | jq | usage / jq | usage peak RSS | RSS / size |"
  echo "|---|---|---|---|---|---|---|---|"
  offline realistic
  offline compact --compact
  echo
fi

[[ $OFFLINE_ONLY == 1 ]] && exit 0

CILIUM_CRDS="$(tools/cilium-oracle/build.sh --crds)"   # Cilium's own CiliumNode/CiliumEndpoint CRDs
if [[ -n $REUSE ]]; then
  # shellcheck source=/dev/null
  source "$REUSE/env"
  log "using the loaded control plane of $TESTENV_DIR (not stopped at the end)"
else
  log "starting the test control plane"
  tools/testenv/build.sh >/dev/null
  eval "$(tools/testenv/up.sh)"
  kubectl apply -f tests/fixtures/crds/ciliumpodippools-upstream.yaml -f "$CILIUM_CRDS/ciliumnodes.yaml" \
    -f "$CILIUM_CRDS/ciliumendpoints.yaml" >&2
  kubectl wait --for=condition=Established crd --all --timeout=60s >&2
  log "loading $LIVE_NODES nodes with $LIVE_PODS pods each"
  load_start=$SECONDS
  "$GEN" --nodes "$LIVE_NODES" --pods-per-node "$LIVE_PODS" "${LIVE_COMPACT[@]}" --load
  echo "Loaded $LIVE_NODES nodes × $LIVE_PODS pods (${LIVE_COMPACT[*]:-realistic}) with \`gen_scale --load\` in $((SECONDS - load_start)) s."
  echo
fi

cat >"$WORK/raw.sh" <<'EOF'
#!/usr/bin/env bash
# The API floor: one unpaginated GET per list the plugin reads, all four concurrently.
set -euo pipefail
for path in /apis/cilium.io/v2/ciliumpodippools /apis/cilium.io/v2/ciliumnodes /api/v1/pods /apis/cilium.io/v2/ciliumendpoints; do
  kubectl get --raw "$path" >/dev/null &
done
wait
EOF
chmod +x "$WORK/raw.sh"
if [[ $SERVE == 1 ]]; then
  # shellcheck source=tools/bench-serve.sh
  source tools/bench-serve.sh
  exit 0
fi
received=0
for path in /apis/cilium.io/v2/ciliumpodippools /apis/cilium.io/v2/ciliumnodes /api/v1/pods /apis/cilium.io/v2/ciliumendpoints; do
  received=$((received + $(kubectl get --raw "$path" | wc -c)))
done
log "timing live reads: $RUNS alternating pairs after a warm-up of each"
seconds_of() { local start=$EPOCHREALTIME; "$@" >/dev/null || die "failed: $*"; awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
seconds_of "$BIN" usage -o json >/dev/null; seconds_of "$WORK/raw.sh" >/dev/null
: >"$WORK/pairs.txt"
for _ in $(seq "$RUNS"); do
  ours=$(seconds_of "$BIN" usage -o json); raw=$(seconds_of "$WORK/raw.sh")
  echo "$ours $raw $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$WORK/pairs.txt" >&2
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ours=$(cut -d' ' -f1 "$WORK/pairs.txt" | med); raw=$(cut -d' ' -f2 "$WORK/pairs.txt" | med)
ratios=$(awk '{ printf "%.2f\n", $1 / $2 }' "$WORK/pairs.txt")
rss=$(peak_rss "$BIN" usage -o json)
echo "## Live: \`usage -o json\` vs the raw GETs of the same lists ($RUNS alternating pairs, medians)"
echo
echo "| cluster | bytes of the lists | usage | raw GETs | usage / raw | ratio of each pair | load average | usage peak RSS | RSS / bytes |"
echo "|---|---|---|---|---|---|---|---|---|"
echo "| $LIVE_NODES nodes, $((LIVE_NODES * LIVE_PODS)) pods | $(mb "$received") | ${ours}s | ${raw}s | $(ratio "$ours" "$raw") | $(echo $ratios | tr ' ' ',') | $(cut -d' ' -f3 "$WORK/pairs.txt" | sort -g | sed -n '1p;$p' | paste -sd-) | $(mb "$rss") | $(ratio "$rss" "$received") |"

[[ $WATCH_MINUTES == 0 ]] && exit 0

rss_of() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }
frames_of() { grep -c '^# ' "$WORK/watch.out" || true; }
log "usage --watch for $WATCH_MINUTES minute(s) while pods come and go"
"$BIN" usage --watch >"$WORK/watch.out" 2>"$WORK/watch.err" &   # piped: one `# TIME WHAT` block per frame
watch_pid=$!
until [[ -s $WORK/watch.out ]]; do sleep 1; done
sleep 5
read_rss=$(rss_of "$watch_pid")
# The first frame comes from the one-shot read; the watch then lists every object again into its
# stores, and builds its own first frame only once all of them are listed. A pool added now
# changes the figures, so that frame is printed (a pipe gets a frame only when the figures change):
# the baseline is the RSS after it, with the stores full.
kubectl apply -f - >/dev/null <<'EOF'
{"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "bench-watch-marker"},
 "spec": {"ipv4": {"cidrs": ["192.168.255.0/24"], "maskSize": 28}}}
EOF
waited=0
until (( $(frames_of) >= 2 )); do
  sleep 1; (( ++waited < 300 )) || die "usage --watch printed no frame from its stores in 300 s (see $WORK/watch.err)"
done
sleep 5
first=$(rss_of "$watch_pid")
churn_pod() { # churn_pod <name>: a pod of the churn namespace on node 0
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"churn"},"spec":{"nodeName":"ip-10-250-0-0.eu-west-1.compute.internal","containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}\n' "$1"
}
kubectl create namespace churn >/dev/null
rounds=0 end=$((SECONDS + WATCH_MINUTES * 60))
while (( SECONDS < end )); do
  for i in $(seq 1 25); do churn_pod "churn-$rounds-$i"; done | kubectl create -f - >/dev/null
  if (( rounds > 0 )); then
    # Forced: without a kubelet a graceful delete never completes and the pods would pile up.
    kubectl delete pod -n churn --grace-period=0 --force $(for i in $(seq 1 25); do echo "churn-$((rounds - 1))-$i"; done) >/dev/null 2>&1
  fi
  rounds=$((rounds + 1))
done
sleep 5
last=$(rss_of "$watch_pid")
frames=$(frames_of)
left=$(kubectl get pods -n churn --no-headers 2>/dev/null | wc -l)
kill -INT "$watch_pid"; wait "$watch_pid" || true
echo
echo "## \`usage --watch\` under churn ($WATCH_MINUTES min, $rounds rounds of 25 pods created and 25 deleted; $left churn pods at the end)"
echo
echo "| RSS after the one-shot read's frame | RSS after the watch's first frame | RSS at the end | end / watch's first | frames |"
echo "|---|---|---|---|---|"
echo "| $(mb "$read_rss") | $(mb "$first") | $(mb "$last") | $(ratio "$last" "$first") | $frames |"
