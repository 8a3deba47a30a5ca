#!/usr/bin/env bash
# Sets up, builds, and runs every test: the lit suite (regression, conversion,
# end-to-end) and the C++ unit tests. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}
# Each stage says how long it took: CI has a time budget (README), and these
# lines show which stage to trim when a run nears it.
stage_start=$SECONDS
stage_done() {
  echo "   $1 took $((SECONDS - stage_start)) s (total $SECONDS s)"
  stage_start=$SECONDS
}

"$root/scripts/build.sh"
stage_done build

echo "== test data (scripts/test-data.sh: pinned npm tokenizers, texts, references)"
"$root/scripts/test-data.sh" "$build/testdata"
stage_done "test data"
# The sanitizer builds read the same data.
export ATTN_TEST_DATA="$build/testdata"

echo "== lit suite"
# --time-tests: lit ends with its slowest tests.
LIT_OPTS="${LIT_OPTS:-} --time-tests" cmake --build "$build" --target check-attn
stage_done lit

echo "== unit tests"
# Each test compiles into its own temporary folder, so they run side by side:
# on 2 cores this halves the stage (most of it is attn-compile, one thread).
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -E '^lit$'
stage_done "unit tests"
# The slowest ten, from ctest's record of each test's running time (name,
# runs, seconds averaged over its runs in this build): where a trim pays.
if [[ -f "$build/Testing/Temporary/CTestCostData.txt" ]]; then
  echo "   slowest unit tests (s):"
  sed '/^---/,$d' "$build/Testing/Temporary/CTestCostData.txt" |
    sort -k3 -g -r | head -10 | awk '{ printf "     %7.1f  %s\n", $3, $1 }'
fi

# ----------------------------------------------------------------------------
# Reliability (docs/reliability.md): the sanitizer builds and the fuzz smoke
# runs, each in its own build directory (build-sanitize, build-tsan).
# ATTN_SKIP_RELIABILITY=1 skips this block; ATTN_FUZZ_SMOKE_SECONDS sets the
# time per fuzz target (default 20).
# ----------------------------------------------------------------------------
if [[ "${ATTN_SKIP_RELIABILITY:-0}" != 1 ]]; then
  echo "== sanitizers: ASan+UBSan+LSan, then TSan (scripts/sanitize.sh)"
  "$root/scripts/sanitize.sh"
  stage_done sanitizers
  echo "== fuzz smoke runs (scripts/fuzz.sh)"
  # Nearly repeatable: a fixed seed and at most 40,000 inputs per target
  # (coverage from threads and timing still varies the path a little), so a
  # red CI points at the change rather than at the dice. Random exploration
  # is the long local runs' job (docs/reliability.md).
  ATTN_FUZZ_SEED=${ATTN_FUZZ_SEED:-1} ATTN_FUZZ_RUNS=${ATTN_FUZZ_RUNS:-40000} \
    "$root/scripts/fuzz.sh" "${ATTN_FUZZ_SMOKE_SECONDS:-20}"
  stage_done "fuzz smoke runs"
fi
