#!/usr/bin/env bash
# Starts a real etcd + kube-apiserver on loopback (envtest-style) and writes an admin kubeconfig.
#
#   eval "$(tools/testenv/up.sh)"
#   trap 'tools/testenv/down.sh' EXIT
#
# stdout: only `export` lines (KUBECONFIG, TESTENV_DIR, TESTENV_BIN, PATH); progress on stderr.
# The same lines are written to $TESTENV_DIR/env for other processes to source.
# Env: TESTENV_KEEP=1 keeps $TESTENV_DIR (logs) when startup fails.
set -euo pipefail

exec 3>&1 1>&2   # fd 3 = real stdout (export lines only)

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
READY_DEADLINE=90   # seconds, per attempt
PORT_ATTEMPTS=3

log() { printf '[testenv/up] %s\n' "$*"; }
die() { log "ERROR: $*"; exit 1; }
for tool in openssl curl python3; do
  command -v "$tool" >/dev/null || die "$tool not found in PATH"
done

start=$SECONDS
BIN="$("$HERE/build.sh" | tail -n 1)"
[[ -x $BIN/kube-apiserver && -x $BIN/etcd && -x $BIN/kubectl ]] || die "build.sh gave no binaries ($BIN)"

D="$(mktemp -d "${TMPDIR:-/tmp}/kubectl-ciliumpool-testenv.XXXXXX")"
touch "$D/.kubectl-ciliumpool-testenv"   # marker: down.sh only deletes directories carrying it
log "TESTENV_DIR=$D"

ok=0
cleanup_on_failure() {
  [[ $ok == 1 ]] && return
  "$HERE/down.sh" "$D" --keep-dir >/dev/null 2>&1 || true
  if [[ ${TESTENV_KEEP:-} == 1 ]]; then
    log "startup failed; logs kept in $D"
  else
    rm -rf "$D"
  fi
}
trap cleanup_on_failure EXIT
trap 'exit 130' INT TERM HUP

# --- certificates ----------------------------------------------------------------------------
log "generating certificates"
(
  cd "$D"
  ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
  ec ca.key
  openssl req -x509 -new -key ca.key -out ca.crt -days 3650 -subj "/CN=kubectl-ciliumpool-testenv-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  sign() { # sign <name> <subject> <extensions>
    ec "$1.key"
    openssl req -new -key "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    printf '%s\n' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -CAserial ca.srl \
      -days 3650 -out "$1.crt" -extfile "$1.ext" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
  }
  sign apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
  sign admin "/O=system:masters/CN=admin" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  # Service-account key, SEC1 "EC PRIVATE KEY": --service-account-key-file rejects PKCS#8.
  openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
)

# --- ports ------------------------------------------------------------------------------------
free_ports() { # prints N distinct free loopback ports (held open together while choosing)
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
}

alive() { # alive <pid>: running and not a zombie
  local st
  st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n $st && $st != Z ]]
}

stop_started() { # best effort, for retries: our own PIDs only
  local n pid
  for n in kube-apiserver etcd; do
    [[ -f $D/$n.pid ]] || continue
    pid="$(<"$D/$n.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$D/$n.pid"
  done
}

port_race() { grep -qiE 'address already in use' "$D/etcd.log" "$D/kube-apiserver.log" 2>/dev/null; }

# --- start ------------------------------------------------------------------------------------
CURL=(curl -sS --max-time 5 --cacert "$D/ca.crt" --cert "$D/admin.crt" --key "$D/admin.key")

attempt_start() { # 0 = ready, 1 = fatal failure, 2 = port race (retry)
  local EP PP AP
  read -r EP PP AP < <(free_ports 3)
  log "ports: etcd client $EP, etcd peer $PP, kube-apiserver $AP"
  rm -rf "$D/etcd"

  "$BIN/etcd" --name=testenv --data-dir="$D/etcd" \
    --listen-client-urls="http://127.0.0.1:$EP" --advertise-client-urls="http://127.0.0.1:$EP" \
    --listen-peer-urls="http://127.0.0.1:$PP" --initial-advertise-peer-urls="http://127.0.0.1:$PP" \
    --initial-cluster="testenv=http://127.0.0.1:$PP" \
    --unsafe-no-fsync --log-level=warn --quota-backend-bytes=8589934592 \
    </dev/null >"$D/etcd.log" 2>&1 3>&- &
  echo $! >"$D/etcd.pid"

  "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$EP" --bind-address=127.0.0.1 \
    --secure-port="$AP" --advertise-address=127.0.0.1 --cert-dir="$D" \
    --tls-cert-file="$D/apiserver.crt" --tls-private-key-file="$D/apiserver.key" \
    --client-ca-file="$D/ca.crt" --authorization-mode=RBAC \
    --service-account-issuer="https://127.0.0.1:$AP/" --service-account-key-file="$D/sa.key" \
    --service-account-signing-key-file="$D/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
    --allow-privileged=true --disable-admission-plugins=ServiceAccount \
    </dev/null >"$D/kube-apiserver.log" 2>&1 3>&- &
  echo $! >"$D/kube-apiserver.pid"

  local url="https://127.0.0.1:$AP" deadline=$((SECONDS + READY_DEADLINE)) n phase=readyz code
  while :; do
    for n in etcd kube-apiserver; do
      if ! alive "$(<"$D/$n.pid")"; then
        if port_race; then log "$n lost a port race; retrying with new ports"; return 2; fi
        log "$n exited during startup; last lines of $D/$n.log:"
        tail -n 40 "$D/$n.log" >&2
        return 1
      fi
    done
    if [[ $phase == readyz ]]; then
      code="$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$url/readyz" 2>/dev/null || true)"
      [[ $code == 200 ]] && { log "/readyz ok after $((SECONDS - start)) s"; phase=default-ns; }
    fi
    if [[ $phase == default-ns ]]; then
      code="$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$url/api/v1/namespaces/default" 2>/dev/null || true)"
      [[ $code == 200 ]] && { SERVER="$url"; return 0; }
    fi
    if ((SECONDS >= deadline)); then
      log "not ready after ${READY_DEADLINE} s (waiting for $phase); last lines of the logs:"
      tail -n 20 "$D/etcd.log" >&2
      tail -n 40 "$D/kube-apiserver.log" >&2
      return 1
    fi
    sleep 0.2
  done
}

SERVER=""
for attempt in $(seq 1 "$PORT_ATTEMPTS"); do
  rc=0
  attempt_start || rc=$?
  ((rc == 0)) && break
  stop_started
  ((rc == 2 && attempt < PORT_ATTEMPTS)) || die "control plane did not start"
done

# --- kubeconfig -------------------------------------------------------------------------------
b64() { base64 -w0 <"$1"; }
cat >"$D/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: $SERVER
    certificate-authority-data: $(b64 "$D/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(b64 "$D/admin.crt")
    client-key-data: $(b64 "$D/admin.key")
contexts:
- name: testenv
  context:
    cluster: testenv
    user: admin
    namespace: default
current-context: testenv
EOF
chmod 600 "$D/kubeconfig"

"$BIN/kubectl" --kubeconfig="$D/kubeconfig" get --raw /version >/dev/null \
  || die "kubectl cannot reach the apiserver with the generated kubeconfig"

{
  printf 'export KUBECONFIG=%q\n' "$D/kubeconfig"
  printf 'export TESTENV_DIR=%q\n' "$D"
  printf 'export TESTENV_BIN=%q\n' "$BIN"
  printf 'export PATH=%q:"$PATH"\n' "$BIN"
} >"$D/env"

ok=1
log "ready in $((SECONDS - start)) s: $SERVER (kubeconfig $D/kubeconfig)"
cat "$D/env" >&3
