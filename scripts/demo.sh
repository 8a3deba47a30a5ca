#!/usr/bin/env bash
# Sets up, builds, and runs the main job on the bundled example: a GPT-2 style
# decoder block in the attn dialect, verified and canonicalized by attn-opt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

"$root/scripts/build.sh"

example="$root/docs/examples/decoder-block.mlir"
echo "== attn-opt --canonicalize $example"
"$build/bin/attn-opt" --canonicalize "$example"
