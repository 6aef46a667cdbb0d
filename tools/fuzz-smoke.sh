#!/usr/bin/env bash
# A seconds-long run of every fuzz target (fuzz/fuzz_targets/) from its seed corpus, as part of
# the README test command. A finding fails the run and leaves the input under fuzz/artifacts/.
# Long runs: tools/fuzz-smoke.sh SECONDS (docs/reliability.md records the last ones).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-${FUZZ_SMOKE_SECONDS:-10}}"

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz smoke runs SKIPPED: no nightly Rust toolchain (rustup toolchain install nightly); cargo-fuzz needs it" >&2
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (cargo install cargo-fuzz --locked)" >&2
  cargo install cargo-fuzz --locked >&2
fi
# Outside the work tree, so that every clone on this machine (CI's too) reuses the instrumented
# dependencies: a cold build takes tens of minutes on 2 cores, a warm one only rebuilds the plugin.
export CARGO_TARGET_DIR="${CILIUMPOOL_FUZZ_TARGET:-$HOME/.cache/kubectl-ciliumpool-fuzz-target}"
# Safe Rust only: no sanitizer, coverage-guided all the same.
cargo +nightly fuzz build -s none >&2
for target in $(cargo +nightly fuzz list); do
  # The repository's seed corpus is read, never grown: new inputs go to a scratch directory.
  scratch="$(mktemp -d)"
  echo "fuzz $target: ${seconds}s" >&2
  status=0
  cargo +nightly fuzz run -s none "$target" "$scratch" "fuzz/corpus/$target" -- -max_total_time="$seconds" -print_final_stats=1 >"$scratch.log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added)|panicked|SUMMARY|Test unit written" "$scratch.log" >&2 || true
  rm -rf "$scratch" "$scratch.log"
  if [[ $status -ne 0 ]]; then
    echo "fuzz $target: FAILED (exit $status); the crashing input is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
