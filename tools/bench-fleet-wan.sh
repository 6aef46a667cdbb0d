# Sourced by tools/bench.sh --fleet-wan (it sets BIN, GEN, WORK, HYPERFINE, RUNS, LIVE_NODES,
# LIVE_PODS, WAN_CLUSTERS, WAN_RTT, WAN_RATE and the helpers log, median, ratio, cpu_ticks).
# One test control plane, loaded once; examples/wan_proxy.rs opens WAN_CLUSTERS listeners in front
# of it, each a link of its own (WAN_RTT ms round trip, WAN_RATE MB/s each way), and a kubeconfig
# gives each listener its own context and server URL (w1, w2, …): the plugin reads them as that
# many remote clusters (same server URL is what makes two contexts one cluster, docs/fleet.md).

fleet_wan() {
  log "starting the test control plane and loading $LIVE_NODES nodes with $LIVE_PODS pods each"
  tools/testenv/build.sh >/dev/null
  eval "$(tools/testenv/up.sh)"
  local crds; crds="$(tools/cilium-oracle/build.sh --crds)"
  kubectl apply -f tests/fixtures/crds/ciliumpodippools-upstream.yaml -f "$crds/ciliumnodes.yaml" \
    -f "$crds/ciliumendpoints.yaml" >&2
  kubectl wait --for=condition=Established crd --all --timeout=60s >&2
  "$GEN" --nodes "$LIVE_NODES" --pods-per-node "$LIVE_PODS" --load
  local server; server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  "$PWD/target/release/examples/wan_proxy" --upstream "${server#https://}" --listeners "$WAN_CLUSTERS" \
    --rtt-ms "$WAN_RTT" --rate-mb "$WAN_RATE" >"$WORK/proxies" &
  WAN_PROXY_PID=$!
  trap 'kill "$WAN_PROXY_PID" 2>/dev/null || true; cleanup' EXIT
  while [[ $(wc -l <"$WORK/proxies") -lt $WAN_CLUSTERS ]]; do sleep 0.1; done
  local merged="$WORK/wan.kubeconfig"
  python3 - "$merged" "$KUBECONFIG" "$WORK/proxies" <<'PY'
import json, subprocess, sys
own = json.loads(subprocess.check_output(["kubectl", "config", "view", "--raw", "--flatten", "-o", "json", "--kubeconfig", sys.argv[2]]))
out = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [], "current-context": "w1"}
out["users"].append({"name": "admin", "user": own["users"][0]["user"]})
for i, address in enumerate(open(sys.argv[3]).read().split(), 1):
    cluster = dict(own["clusters"][0]["cluster"], server="https://" + address)
    out["clusters"].append({"name": f"w{i}", "cluster": cluster})
    out["contexts"].append({"name": f"w{i}", "context": {"cluster": f"w{i}", "user": "admin"}})
open(sys.argv[1], "w").write(json.dumps(out))
PY
  chmod 600 "$merged"
  export KUBECONFIG="$merged"
  local three all alone=() i
  three="w1,w2,w3"; all=$(seq -s, -f 'w%g' 1 "$WAN_CLUSTERS")
  for i in $(seq 1 "$WAN_CLUSTERS"); do alone+=(-n "w$i alone" "$BIN usage --context w$i -o json"); done
  log "timing 3 and $WAN_CLUSTERS clusters together and each alone"
  "$HYPERFINE" --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/wan.json" \
    -n "3 together" "$BIN usage --context $three -o json" \
    -n "$WAN_CLUSTERS together" "$BIN usage --context $all -o json" "${alone[@]}" >&2
  local t3 tall s3 sall
  t3=$(median "$WORK/wan.json" 0); tall=$(median "$WORK/wan.json" 1)
  s3=$(for i in 2 3 4; do median "$WORK/wan.json" "$i"; done | sort -g | tail -1)
  sall=$(for i in $(seq 2 $((WAN_CLUSTERS + 1))); do median "$WORK/wan.json" "$i"; done | sort -g | tail -1)
  local fastest; fastest=$(for i in $(seq 2 $((WAN_CLUSTERS + 1))); do median "$WORK/wan.json" "$i"; done | sort -g | head -1)
  echo "## Fleet over a WAN: ${WAN_RTT} ms round trip, ${WAN_RATE} MB/s per cluster (medians of $RUNS runs)"
  echo
  echo "Each cluster: $LIVE_NODES nodes, $((LIVE_NODES * LIVE_PODS)) pods, one control plane behind $WAN_CLUSTERS proxies."
  echo
  echo "| clusters | together | slowest alone | together / slowest alone | client CPU (user + sys) | server CPU |"
  echo "|---|---|---|---|---|---|"
  local pids=("$TESTENV_DIR/etcd.pid" "$TESTENV_DIR/kube-apiserver.pid") contexts n before after
  for n in 1 3 "$WAN_CLUSTERS"; do
    contexts=$(seq -s, -f 'w%g' 1 "$n")
    before=$(cpu_ticks "${pids[@]}")
    /usr/bin/time -f '%U %S %e' -o "$WORK/wan.time" "$BIN" usage --context "$contexts" -o json >/dev/null
    after=$(cpu_ticks "${pids[@]}")
    local client servers
    client=$(awk '{printf "%.2f s (%.2f + %.2f) in %.2f s", $1 + $2, $1, $2, $3}' "$WORK/wan.time")
    servers=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f s", t / hz }')
    case $n in
      1) echo "| 1 (w1) | – | – | – | $client | $servers |" ;;
      3) echo "| 3 | ${t3}s | ${s3}s | $(ratio "$t3" "$s3") (target 1.3) | $client | $servers |" ;;
      *) echo "| $n | ${tall}s | ${sall}s | $(ratio "$tall" "$sall") (target 1.5) | $client | $servers |" ;;
    esac
  done
  echo
  echo "Alone: fastest ${fastest}s, slowest ${sall}s (of $WAN_CLUSTERS). CPU columns: one more run each, GNU time for the plugin, /proc/PID/stat for etcd + kube-apiserver."
}
