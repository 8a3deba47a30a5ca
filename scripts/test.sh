#!/usr/bin/env bash
# Sets up, builds, and runs every test: the lit suite (regression, conversion,
# end-to-end) and the C++ unit tests. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

"$root/scripts/build.sh"

echo "== lit suite"
cmake --build "$build" --target check-attn

echo "== unit tests"
ctest --test-dir "$build" --output-on-failure -E '^lit$'
