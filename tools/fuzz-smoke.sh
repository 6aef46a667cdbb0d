#!/usr/bin/env bash
# Every fuzz target (fuzz/fuzz_targets/) replays its seed corpus (fuzz/corpus/TARGET) and then
# fuzzes for a few seconds; part of tools/test.sh. A finding fails the run and leaves the input
# under fuzz/artifacts/TARGET/. Long runs: tools/fuzz-smoke.sh SECONDS [TARGET...]
# (docs/reliability.md records the last ones). FUZZ_SMOKE_SECONDS sets the default (10).
#
# Needs a nightly toolchain (cargo-fuzz's -Z flags; installed with rustup when missing) and
# cargo-fuzz, installed from crates.io into the tools cache on first use, as tools/bench.sh does
# with hyperfine. The fuzz build is instrumented for coverage but without a sanitizer (`-s none`):
# the plugin is safe Rust, and an AddressSanitizer build of every dependency costs far more than
# CI's budget (docs/reliability.md has the figures).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The smoke (no SECONDS given) is reproducible: a fixed seed and a fixed number of runs, so CI
# replays exactly what was verified before the commit; long runs use a fresh seed and a time budget.
if [[ $# -gt 0 ]]; then
  seconds="$1"
  shift
  budget=(-max_total_time="$seconds")
else
  seconds="${FUZZ_SMOKE_SECONDS:-}"
  if [[ -n $seconds ]]; then budget=(-max_total_time="$seconds"); else budget=(-seed=1 -runs="${FUZZ_SMOKE_RUNS:-40000}"); seconds="seed 1, ${FUZZ_SMOKE_RUNS:-40000} runs"; fi
fi

log() { printf '[fuzz] %s\n' "$*" >&2; }
if ! cargo +nightly --version >/dev/null 2>&1; then
  log "installing the nightly toolchain (rustup toolchain install nightly --profile minimal)"
  rustup toolchain install nightly --profile minimal >&2
fi
TOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-tools"
if [[ ! -x $TOOLS/bin/cargo-fuzz ]]; then
  log "installing cargo-fuzz into $TOOLS (once)"
  cargo install --quiet --locked cargo-fuzz@0.13.2 --root "$TOOLS" >&2
fi
export PATH="$TOOLS/bin:$PATH"
# Outside the work tree, so every clone on this machine (and CI's cache) reuses the instrumented
# dependencies: cold, the build takes many minutes on 2 cores; warm, it rebuilds the plugin only.
export CARGO_TARGET_DIR="${CILIUMPOOL_FUZZ_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ciliumpool-fuzz-target}"
cargo +nightly fuzz build -s none >&2
# tools/test.sh builds beside the tests (FUZZ_BUILD_ONLY=1), then runs the smoke.
[[ -z ${FUZZ_BUILD_ONLY:-} ]] || exit 0
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || mapfile -t targets < <(cargo +nightly fuzz list)
for target in "${targets[@]}"; do
  # The repository's seed corpus is read, never grown: new inputs go to a scratch directory.
  scratch="$(mktemp -d)"
  log "$target: corpus of $(find "fuzz/corpus/$target" -type f | wc -l) inputs, then ${seconds}"
  status=0
  # The archive reader must stream: a member held whole is over libFuzzer's memory limit.
  limits=()
  [[ $target == archive ]] && limits=(-rss_limit_mb=512)
  cargo +nightly fuzz run -s none "$target" "$scratch" "fuzz/corpus/$target" -- "${budget[@]}" "${limits[@]}" -print_final_stats=1 >"$scratch.log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added)|DONE|panicked|SUMMARY|Test unit written" "$scratch.log" | sed "s/^/[fuzz] $target: /" >&2 || true
  if [[ $status -ne 0 ]]; then
    tail -n 30 "$scratch.log" >&2
    rm -rf "$scratch" "$scratch.log"
    log "$target: FAILED (exit $status); a crashing input is under fuzz/artifacts/$target/"
    exit 1
  fi
  rm -rf "$scratch" "$scratch.log"
done
