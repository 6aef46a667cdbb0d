#!/usr/bin/env bash
# Stops the control plane started by up.sh and removes its directory. Safe to call twice.
#
#   tools/testenv/down.sh [TESTENV_DIR] [--keep-dir]
#
# Only the PIDs recorded in $TESTENV_DIR/*.pid are signalled, and only while /proc/<pid>/cmdline
# still mentions $TESTENV_DIR (guards against PID reuse). Never kills by process name.
set -uo pipefail

log() { printf '[testenv/down] %s\n' "$*" >&2; }

D="" keep=0
for a in "$@"; do
  case $a in
    --keep-dir) keep=1 ;;
    *) D="$a" ;;
  esac
done
D="${D:-${TESTENV_DIR:-}}"
[[ -n $D ]] || { log "no TESTENV_DIR given; nothing to do"; exit 0; }
[[ -d $D ]] || { log "$D does not exist; nothing to do"; exit 0; }
[[ -e $D/.kubectl-ciliumpool-testenv ]] || { log "$D is not a testenv directory; refusing"; exit 1; }

alive() { # running and not a zombie
  local st
  st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n $st && $st != Z ]]
}
D="${D%/}"
TAG="$(basename -- "$D")"   # unique mktemp name; robust to relative/symlinked spellings of $D
ours() { # the process still is the one up.sh started in $D
  local cmdline # read whole first: `| grep -q` under pipefail can SIGPIPE the writer
  cmdline="$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null)" || return 1
  [[ $cmdline == *"/$TAG"* ]]
}

stop() { # stop <name>: SIGTERM, wait <= 20 s, SIGKILL
  local name=$1 pidfile="$D/$1.pid" pid
  [[ -f $pidfile ]] || return 0
  pid="$(<"$pidfile")"
  if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" && ours "$pid"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.2; done
    if alive "$pid"; then
      log "$name did not exit after 20 s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null
      for _ in $(seq 1 25); do alive "$pid" || break; sleep 0.2; done
    fi
  fi
  rm -f "$pidfile"
}

stop kube-apiserver
stop etcd

if [[ $keep == 1 ]]; then
  log "stopped; kept $D"
else
  rm -rf -- "$D"
  log "stopped and removed $D"
fi
