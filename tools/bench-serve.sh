# `serve` measurements (issue 30), sourced by `tools/bench.sh --serve` once the test control plane is
# up and loaded with $LIVE_NODES × $LIVE_PODS; uses its BIN, GEN, WORK, log, die, mb, ratio, median.
# Prints Markdown on stdout like the rest of the report:
#   1. scrape latency p50/p99 of /metrics (keep-alive, as Prometheus scrapes), both Accept headers;
#   2. change → updated series: from a write (a CiliumNode's blocks, a pod) to the changed figure on
#      /metrics, minus the 1 s debounce;
#   3. RSS over a churn run of $CHURN_MINUTES (CiliumNodes and pods created and deleted every round),
#      sampled every 10 s from /proc/PID/status, against the RSS after the first full sync;
#   4. initial sync at $SYNC_NODES × $SYNC_PODS (a fresh control plane unless that is the loaded size): time to /readyz 200 vs the
#      raw GETs of the same lists, serve's RSS vs the bytes of the lists, and the kube-apiserver's
#      peak RSS (VmHWM) during the sync, with one list answer per resource (the default) and with
#      streaming lists (`serve --streaming-lists`), the apiserver restarted before each.
# Targets (benchmarks, not tests): scrape p99 ≤ 5 ms; change ≤ 2 s after the debounce; RSS at the end
# of the churn ≤ 1.1 × the RSS after the first sync.

SCRAPES=${SCRAPES:-1000} CHANGES=${CHANGES:-6}
OPENMETRICS_ACCEPT='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5'
PROMETHEUS_ACCEPT='text/plain;version=0.0.4'
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
# The admin credentials of the test control plane, for writes with curl (kubectl's own start-up would
# be counted in the change latency otherwise).
API=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
api() { curl -sS --fail --cacert "$TESTENV_DIR/ca.crt" --cert "$TESTENV_DIR/admin.crt" --key "$TESTENV_DIR/admin.key" "$@"; }
now() { echo "${EPOCHREALTIME/./}"; } # microseconds
rss_of() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }
hwm_of() { awk '/^VmHWM/ {print $2 * 1024}' "/proc/$1/status"; }
readyz() { curl -s -o /dev/null -w '%{http_code}' "$URL/readyz" || true; }
# figures: the pool series of one scrape (the exporter's own series change on every scrape).
figures() { curl -s "$URL/metrics" | grep -v -e '^#' -e '^ciliumpool_exporter_' | md5sum; }

start_serve() { # start_serve [serve flags...]
  "$BIN" serve --listen "127.0.0.1:$PORT" "$@" >"$WORK/serve.out" 2>"$WORK/serve.err" &
  serve_pid=$!
}
wait_ready() { # wait_ready <seconds>
  local waited=0
  until [[ $(readyz) == 200 ]]; do
    sleep 0.05
    kill -0 "$serve_pid" 2>/dev/null || die "serve exited (see $WORK/serve.err)"
    (( ++waited < $1 * 20 )) || die "serve not ready in $1 s (see $WORK/serve.err)"
  done
}
stop_serve() { kill -TERM "$serve_pid"; wait "$serve_pid" || true; serve_pid=""; }
serve_pid=""
trap '[[ -n $serve_pid ]] && kill -TERM "$serve_pid" 2>/dev/null; cleanup' EXIT
percentile() { sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int(NR * p + 0.999999); if (i < 1) i = 1; printf "%.2f", v[i] * 1000 }'; }

latency() { # latency <label> <accept>: $SCRAPES scrapes on one connection; curl's own time of each
  curl -s -H "Accept: $2" -w '%{stderr}%{time_total}\n' $(for _ in $(seq "$SCRAPES"); do echo "$URL/metrics"; done) 2>"$WORK/latency.txt" >/dev/null
  [[ $(wc -l <"$WORK/latency.txt") == "$SCRAPES" ]] || die "curl did not time $SCRAPES scrapes (see $WORK/latency.txt)"
  local bytes; bytes=$(curl -s -H "Accept: $2" "$URL/metrics" | wc -c)
  echo "| $1 | $bytes | $(percentile "$WORK/latency.txt" 0.5) ms | $(percentile "$WORK/latency.txt" 0.99) ms | $(percentile "$WORK/latency.txt" 1) ms |"
}

# changed <what> <write command...>: runs the write, then polls /metrics until the figures differ;
# prints the time from the start of the write minus the debounce, in ms.
changed() {
  local what=$1; shift
  local before start seen
  before=$(figures)
  start=$(now)
  "$@" >/dev/null
  until [[ $(figures) != "$before" ]]; do
    sleep 0.01
    (( $(now) - start < 30000000 )) || die "the figures did not change within 30 s of: $what"
  done
  seen=$(now)
  awk -v d="$((seen - start))" 'BEGIN { printf "%.0f\n", d / 1000 - 1000 }' | tee -a "$WORK/changes.txt" >/dev/null
  log "change ($what): $(( (seen - start) / 1000 )) ms"
  sleep 1.5 # let the analysis settle before the next write
}

node_path() { echo "/apis/cilium.io/v2/ciliumnodes/$1"; }
node_blocks_off() { api -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"ipam":{"pools":{"allocated":[]}}}}' "$API$(node_path "$1")"; }
node_blocks_on() { api -X PATCH -H 'Content-Type: application/merge-patch+json' -d "{\"spec\":{\"ipam\":{\"pools\":{\"allocated\":$2}}}}" "$API$(node_path "$1")"; }
# pod_addressed <name> <ip>: the status a kubelet would write for a pod of node 0, with an address of
# its block that the generated pods leave free.
pod_addressed() {
  api -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$2\",\"podIPs\":[{\"ip\":\"$2\"}]}}" "$API/api/v1/namespaces/bench/pods/$1/status"
}

measure_changes() {
  : >"$WORK/changes.txt"
  local i node blocks block pod
  for i in $(seq 0 $((CHANGES / 2 - 1))); do
    node=$(kubectl get ciliumnodes -o jsonpath="{.items[$i].metadata.name}")
    blocks=$(kubectl get ciliumnode "$node" -o jsonpath='{.spec.ipam.pools.allocated}')
    changed "blocks of CiliumNode $node removed" node_blocks_off "$node"
    changed "blocks of CiliumNode $node restored" node_blocks_on "$node" "$blocks"
  done
  node=$(kubectl get ciliumnodes -o jsonpath='{.items[0].metadata.name}')
  block=$(kubectl get ciliumnode "$node" -o jsonpath='{.spec.ipam.pools.allocated[?(@.pool=="default")].cidrs[0]}')
  [[ $block == */24 ]] || die "expected a /24 block of pool default on $node, got $block"
  # Namespaces are never deleted here (no controller-manager): a second run on the same cluster
  # continues the numbering, so each pod and address is new.
  kubectl create namespace bench >/dev/null 2>&1 || true
  local earlier; earlier=$(kubectl get pods -n bench --no-headers 2>/dev/null | wc -l)
  (( earlier + CHANGES <= 50 )) || die "namespace bench has $earlier pods: start from a fresh control plane"
  for i in $(seq $((earlier + 1)) $((earlier + CHANGES))); do
    pod="bench-change-$i"
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"bench"},"spec":{"nodeName":"%s","containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}' "$pod" "$node" |
      kubectl create -f - >/dev/null
    sleep 1.5 # a pod without an address changes no figure; its address below does
    changed "pod bench/$pod given an address" pod_addressed "$pod" "${block%.*/24}.$((200 + i))"
  done
  sort -g "$WORK/changes.txt" | awk '{ v[NR] = $1 } END { printf "| %d | %d ms | %d ms | %d ms |\n", NR, v[1], v[int((NR + 1) / 2)], v[NR] }'
}

churn_objects() { # churn_objects <round>: 25 pods (no kubelet: they stay Pending) and 5 CiliumNodes asking for a block
  local i
  for i in $(seq 1 25); do
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"churn-%s-%s","namespace":"churn"},"spec":{"nodeName":"churn-node","containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}\n' "$1" "$i"
  done
  for i in $(seq 1 5); do
    printf '{"apiVersion":"cilium.io/v2","kind":"CiliumNode","metadata":{"name":"churn-%s-%s"},"spec":{"ipam":{"pools":{"requested":[{"pool":"default","needed":{"ipv4-addrs":16}}]}}}}\n' "$1" "$i"
  done
}

churn() {
  log "churn for $CHURN_MINUTES minute(s): every round 25 pods and 5 CiliumNodes created, the previous round's deleted"
  kubectl create namespace churn >/dev/null 2>&1 || true
  local rounds=0 end=$((SECONDS + CHURN_MINUTES * 60)) next=$SECONDS start=$SECONDS
  : >"$WORK/rss.txt"
  while (( SECONDS < end )); do
    churn_objects "$rounds" | kubectl create -f - >/dev/null
    if (( rounds > 0 )); then
      # Forced: without a kubelet a graceful delete never completes and the pods would pile up.
      kubectl delete pod -n churn --grace-period=0 --force $(for i in $(seq 1 25); do echo "churn-$((rounds - 1))-$i"; done) >/dev/null 2>&1
      kubectl delete ciliumnode $(for i in $(seq 1 5); do echo "churn-$((rounds - 1))-$i"; done) >/dev/null
    fi
    rounds=$((rounds + 1))
    if (( SECONDS >= next )); then echo "$((SECONDS - start)) $(rss_of "$serve_pid")" >>"$WORK/rss.txt"; next=$((SECONDS + 10)); fi
  done
  # The last round goes too: a later run on this control plane starts from the loaded objects.
  kubectl delete pod -n churn --grace-period=0 --force $(for i in $(seq 1 25); do echo "churn-$((rounds - 1))-$i"; done) >/dev/null 2>&1
  kubectl delete ciliumnode $(for i in $(seq 1 5); do echo "churn-$((rounds - 1))-$i"; done) >/dev/null
  sleep 5
  echo "$((SECONDS - start)) $(rss_of "$serve_pid")" >>"$WORK/rss.txt"
  churn_rounds=$rounds
  cp "$WORK/rss.txt" "${BENCH_KEEP:-/tmp}/serve-churn-rss.txt" 2>/dev/null || true
}

# restart_apiserver [flags...]: the same kube-apiserver command line plus flags, against the same etcd.
restart_apiserver() {
  local pid args=()
  pid=$(<"$TESTENV_DIR/kube-apiserver.pid")
  mapfile -d '' args <"/proc/$pid/cmdline"
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  "${args[@]}" "$@" </dev/null >>"$TESTENV_DIR/kube-apiserver.log" 2>&1 3>&- &
  echo $! >"$TESTENV_DIR/kube-apiserver.pid"
  local waited=0
  until kubectl get --raw /readyz >/dev/null 2>&1; do
    sleep 0.5; (( ++waited < 240 )) || die "kube-apiserver not ready after a restart with $*"
  done
  sleep 10 # let its caches settle before the baseline
}

sync_once() { # sync_once <label> [serve flags...]
  local label=$1; shift
  log "initial sync, $label"
  restart_apiserver
  # The raw GETs against the restarted server, which also fill its watch caches (a custom
  # resource's is built at its first request): serve is then timed against the same server state
  # as they are, not against caches still loading from etcd.
  "$HYPERFINE" --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/sync-raw.json" -n "raw GETs" "$WORK/raw.sh" >&2
  raw_sync=$(median "$WORK/sync-raw.json" 0)
  local apiserver base start ready serve_rss apiserver_peak
  apiserver=$(<"$TESTENV_DIR/kube-apiserver.pid")
  base=$(rss_of "$apiserver")
  # VmHWM counts from the process start; a fresh process for each mode makes it the sync's peak.
  start=$(now)
  start_serve "$@"
  wait_ready 600
  ready=$(( ($(now) - start) / 1000 ))
  sleep 2
  serve_rss=$(rss_of "$serve_pid") apiserver_peak=$(hwm_of "$apiserver")
  # The allocator gives back what the first analyses freed within a minute: the steady figure.
  sleep 58
  local settled serve_peak
  settled=$(rss_of "$serve_pid") serve_peak=$(hwm_of "$serve_pid")
  grep -q 'sendInitialEvents\|streaming' "$WORK/serve.err" && log "serve's warnings: $(head -c 300 "$WORK/serve.err")"
  stop_serve
  echo "| $label | $(awk -v t="$ready" 'BEGIN { printf "%.2f s", t / 1000 }') | ${raw_sync}s | $(awk -v a="$ready" -v b="$raw_sync" 'BEGIN { printf "%.2f", a / 1000 / b }') | $(mb "$serve_rss") | $(mb "$settled") | $(mb "$serve_peak") | $(ratio "$settled" "$sync_bytes") | $(mb "$base") | $(mb "$apiserver_peak") |"
}

log "serve: listening on $URL"
start_serve
wait_ready 600
sleep 2
synced_rss=$(rss_of "$serve_pid")
echo
echo "## \`serve\` against $LIVE_NODES nodes, $((LIVE_NODES * LIVE_PODS)) pods"
echo
echo "Scrape latency of \`/metrics\`: $SCRAPES scrapes on one keep-alive connection (curl's \`time_total\` of each); target p99 ≤ 5 ms."
echo
echo "| Accept | bytes | p50 | p99 | max |"
echo "|---|---|---|---|---|"
latency "OpenMetrics" "$OPENMETRICS_ACCEPT"
latency "Prometheus text 0.0.4" "$PROMETHEUS_ACCEPT"
echo
echo "Change → updated series: a write (a CiliumNode's blocks removed or restored, a pod given an address)"
echo "to the changed figures on \`/metrics\` (polled every 10 ms), minus the 1 s debounce; target ≤ 2 s."
echo
echo "| writes | fastest | median | slowest |"
echo "|---|---|---|---|"
measure_changes

if (( CHURN_MINUTES > 0 )); then
  first=$(rss_of "$serve_pid")
  churn
  last=$(tail -n 1 "$WORK/rss.txt" | cut -d' ' -f2)
  peak=$(cut -d' ' -f2 "$WORK/rss.txt" | sort -g | tail -n 1)
  echo
  echo "RSS under churn ($CHURN_MINUTES min, $churn_rounds rounds of 25 pods and 5 CiliumNodes created and the previous round's deleted);"
  echo "the baseline is the RSS after the first full sync and the measurements above; target end ≤ 1.1 × it."
  echo
  echo "| after the first sync | before the churn | at the end | peak sample | end / after the sync |"
  echo "|---|---|---|---|---|"
  echo "| $(mb "$synced_rss") | $(mb "$first") | $(mb "$last") | $(mb "$peak") | $(ratio "$last" "$synced_rss") |"
  echo
  echo "The curve (minute: RSS, one sample every 5 minutes): $(awk 'NR == 1 || int($1 / 300) != last { printf "%s%.1f: %.1f MB", (n++ ? ", " : ""), $1 / 60, $2 / 1e6; last = int($1 / 300) }' "$WORK/rss.txt"); end: $(mb "$last")."
fi
stop_serve

(( SYNC_NODES > 0 )) || exit 0
if (( SYNC_NODES != LIVE_NODES || SYNC_PODS != LIVE_PODS )); then
  [[ -z $REUSE ]] || die "--testenv: give --sync-nodes and --sync-pods-per-node the loaded size (or --sync-nodes 0)"
  log "a fresh control plane for the initial sync at $SYNC_NODES nodes × $SYNC_PODS pods"
  tools/testenv/down.sh >&2
  eval "$(tools/testenv/up.sh)"
  kubectl apply -f tests/fixtures/crds/ciliumpodippools-upstream.yaml -f "$CILIUM_CRDS/ciliumnodes.yaml" \
    -f "$CILIUM_CRDS/ciliumendpoints.yaml" >&2
  kubectl wait --for=condition=Established crd --all --timeout=60s >&2
  "$GEN" --nodes "$SYNC_NODES" --pods-per-node "$SYNC_PODS" "${LIVE_COMPACT[@]}" --load
fi
sync_bytes=0
for path in /apis/cilium.io/v2/ciliumpodippools /apis/cilium.io/v2/ciliumnodes /api/v1/pods /apis/cilium.io/v2/ciliumendpoints; do
  sync_bytes=$((sync_bytes + $(kubectl get --raw "$path" | wc -c)))
done
echo
echo "## \`serve\`'s initial sync at $SYNC_NODES nodes, $((SYNC_NODES * SYNC_PODS)) pods ($(mb "$sync_bytes") of lists)"
echo
echo "Time from the start of \`serve\` to \`/readyz\` 200 (its first read, then the watches' listing) against the median of"
echo "$RUNS runs of the four raw GETs of the same lists, made right before it against the same restarted server; RSS 2 s and 60 s after ready (the allocator returns what the first"
echo "analyses freed within that minute), and its peak; the kube-apiserver restarted before each"
echo "mode, so its VmHWM is its peak during the raw GETs and the sync (its RSS between the two beside it)."
echo
echo "| initial listing | serve to ready | raw GETs | ratio | serve RSS 2 s after ready | 60 s after | serve peak | settled RSS / bytes | apiserver between the raw GETs and serve | apiserver peak |"
echo "|---|---|---|---|---|---|---|---|---|---|"
sync_once "one list answer per resource (the default)"
sync_once "streaming lists (--streaming-lists)" --streaming-lists
