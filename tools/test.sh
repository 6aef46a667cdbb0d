#!/usr/bin/env bash
# The whole test suite, as CI runs it: build the real control plane and the other Go tools
# (cached), start the control plane, run every test against it, then the tests with Cilium's own
# operator in the loop (tests/integration/operator_loop.rs), stop it, then the fuzz smoke
# (tools/fuzz-smoke.sh). Extra arguments go to `cargo test` (e.g.
# `tools/test.sh --test integration cli_offline::`) and skip the fuzz smoke; the operator is built
# for them only when an argument names operator_loop.
# Cluster tests run at most CILIUMPOOL_CONTROL_PLANES private control planes at once (default: one
# per core; tests/integration/support/mod.rs), so that they do not starve each other. Tests mostly
# wait (on servers, processes, timeouts): they run on two threads per core unless RUST_TEST_THREADS
# says otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Every target, unless the arguments name some (`--all-targets` would add every target to a `--test X`).
targets=(--all-targets)
for arg in "$@"; do
  case "$arg" in --test | --test=* | --lib | --bin | --bin=* | --bench | --bench=* | --doc | --example | --example=*) targets=() ;; esac
done

# The Go tools build while cargo compiles the tests: cold, the two overlap (cargo leaves a core
# idle while it links and while one crate compiles alone); warm, both only check their caches.
tools_env="$(mktemp)"
background=()
# Background builds run in process groups of their own, so that a failing step (or Ctrl-C) ends
# each of them with every child it started.
stop_background() {
  local pid
  for pid in "${background[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
operator_out="$(mktemp)"
trap 'stop_background; rm -f "$tools_env" "$operator_out"' EXIT
# Cilium's operator (cold: about 14 minutes of both cores) builds from the start at a lower
# priority: only the operator_loop tests need it, and they run last, so the build takes the CPU
# that cargo, the other Go tools and the waiting tests leave.
operator_build=""
if [[ $# -eq 0 || "$*" == *operator_loop* ]]; then
  setsid nice -n 10 tools/cilium-operator/build.sh >"$operator_out" &
  operator_build=$!
  background+=("$operator_build")
fi
setsid tools/go-tools.sh >"$tools_env" &
go_tools=$!
background+=("$go_tools")
cargo test --locked --no-run "${targets[@]}" "$@"
wait "$go_tools"
# shellcheck source=/dev/null
source "$tools_env"
eval "$(tools/testenv/up.sh)"
trap 'stop_background; tools/testenv/down.sh; rm -f "$tools_env" "$operator_out"' EXIT

# The fuzz smoke's instrumented build (cold: many minutes) runs beside the tests at the lowest
# priority, so that it takes only the CPU the tests leave idle while they wait on servers.
fuzz_build=""
if [[ $# -eq 0 ]]; then
  FUZZ_BUILD_ONLY=1 setsid nice -n 19 tools/fuzz-smoke.sh &
  fuzz_build=$!
  background+=("$fuzz_build")
fi
: "${RUST_TEST_THREADS:=$(($(nproc) * 2))}"
export RUST_TEST_THREADS
operator_tests() {
  wait "$operator_build"
  CILIUM_OPERATOR="$(tail -n 1 "$operator_out")"
  export CILIUM_OPERATOR
}
if [[ $# -eq 0 ]]; then
  # criterion's benches (run once each, as tests) take no --skip: they run apart.
  cargo test --locked --benches --examples
  cargo test --locked --tests -- --skip operator_loop::
  operator_tests
  cargo test --locked --test integration operator_loop::
else
  [[ -n $operator_build ]] && operator_tests
  cargo test --locked "${targets[@]}" "$@"
fi
# Every fuzz target replays its seed corpus and fuzzes a fixed number of runs (cached builds under
# ~/.cache afterwards).
if [[ -n $fuzz_build ]]; then
  wait "$fuzz_build"
  tools/fuzz-smoke.sh
fi
