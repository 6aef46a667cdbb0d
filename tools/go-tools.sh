#!/usr/bin/env bash
# Every Go-built tool the tests use, each cached under ~/.cache by its own build script (cold: the
# control plane ~12 min, Prometheus ~15 min of CPU, the others about a minute; warm: seconds).
# stdout: the environment the tests read, as `export` lines to `source`. Progress on stderr.
# Two runs at once are safe: each build script waits for another build of the same entry.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools/testenv/build.sh >/dev/null
# Cilium's own operator allocator as the judge of tests/integration/cilium_oracle.rs.
tools/cilium-oracle/build.sh >/dev/null
# The workflow linter tests/integration/release.rs runs on .github/workflows.
printf 'export ACTIONLINT=%q\n' "$(tools/actionlint/build.sh)"
# Prometheus and promtool for tests/integration/deploy.rs and cluster_serve.rs.
printf 'export PROMETHEUS_DIR=%q\n' "$(tools/prometheus/build.sh)"
