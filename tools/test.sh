#!/usr/bin/env bash
# The whole test suite, as CI runs it: build the real control plane (cached), start it, run every
# test against it, stop it. Extra arguments go to `cargo test` (e.g. `tools/test.sh --test cli_offline`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Cold: ~12 minutes of Go builds on 2 cores; afterwards cached under ~/.cache.
tools/testenv/build.sh >/dev/null
# Cilium's own operator allocator as the judge of tests/cilium_oracle.rs (cold: ~1 min; cached).
tools/cilium-oracle/build.sh >/dev/null
# The workflow linter tests/release.rs runs on .github/workflows (cold: under a minute).
ACTIONLINT="$(tools/actionlint/build.sh)"
export ACTIONLINT
eval "$(tools/testenv/up.sh)"
trap 'tools/testenv/down.sh' EXIT

cargo test --locked --all-targets "$@"
