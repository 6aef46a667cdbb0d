#!/usr/bin/env bash
# The whole test suite, as CI runs it: build the real control plane (cached), start it, run every
# test against it, stop it, then the fuzz smoke (tools/fuzz-smoke.sh). Extra arguments go to
# `cargo test` (e.g. `tools/test.sh --test integration cli_offline::`) and skip the fuzz smoke.
# Cluster tests run at most CILIUMPOOL_CONTROL_PLANES private control planes at once (default: one
# per two cores; tests/integration/support/mod.rs), so that they do not starve each other.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Cold: ~12 minutes of Go builds on 2 cores; afterwards cached under ~/.cache.
tools/testenv/build.sh >/dev/null
# Cilium's own operator allocator as the judge of tests/integration/cilium_oracle.rs (cold: ~1 min; cached).
tools/cilium-oracle/build.sh >/dev/null
# The workflow linter tests/integration/release.rs runs on .github/workflows (cold: under a minute).
ACTIONLINT="$(tools/actionlint/build.sh)"
export ACTIONLINT
# Prometheus and promtool for tests/integration/deploy.rs and tests/integration/cluster_serve.rs (cold: 15 min of CPU,
# docs/performance.md; cached under ~/.cache afterwards).
PROMETHEUS_DIR="$(tools/prometheus/build.sh)"
export PROMETHEUS_DIR
eval "$(tools/testenv/up.sh)"
trap 'tools/testenv/down.sh' EXIT

# Every target, unless the arguments name some (`--all-targets` would add every target to a `--test X`).
targets=(--all-targets)
for arg in "$@"; do
  case "$arg" in --test | --test=* | --lib | --bin | --bin=* | --bench | --bench=* | --doc | --example | --example=*) targets=() ;; esac
done
cargo test --locked "${targets[@]}" "$@"
# Every fuzz target replays its seed corpus and fuzzes for 10 s (cold: the instrumented build
# takes most of the time; cached under ~/.cache afterwards).
if [[ $# -eq 0 ]]; then
  tools/fuzz-smoke.sh
fi
