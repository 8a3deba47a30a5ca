#!/usr/bin/env bash
# Sets up, builds, and runs the main job on the built-in default model: a
# random-weight LLaMA of llama2.c's stories15M shape (6 layers, 288 wide,
# vocab 32000) is written, compiled by attn-compile, and run by attn-run,
# which prints the generated ids and prefill/decode tokens per second.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

"$root/scripts/build.sh"

demo="$build/demo"
mkdir -p "$demo"
if [[ ! -f "$demo/model/model.safetensors" ]]; then
  "$build/bin/attn-make-model" --preset llama-15m --out "$demo/model"
fi
"$build/bin/attn-compile" "$demo/model" -o "$demo/libmodel.so" --summary
"$build/bin/attn-run" --lib "$demo/libmodel.so" --weights "$demo/model/model.safetensors" \
  --tokens 1,450,4996,17354,1701,432,17204,975,278,17366,11203,29889 --generate 64
