#!/usr/bin/env bash
# The compile-and-run acceptance check on full-size shapes: random-weight
# GPT-2-small (12 layers, 768, 12 heads, vocab 50257) and LLaMA-110M (12
# layers, 768, 12 heads, ffn 2048, vocab 32000) checkpoints are written,
# compiled (timed), run on a 64-token prompt with 64 greedy tokens, and
# compared with the naive reference model: every logit row within 1e-3 and
# every generated token the reference's argmax. Slow (the reference is naive
# double-precision code): minutes, not part of the CI suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}
work=${ATTN_CHECK_DIR:-$build/check-models}
bin="$build/bin"
mkdir -p "$work"

prompt=$(seq -s, 101 163)   # 63 ids ...
prompt="1,$prompt"          # ... plus one: 64 prompt tokens

for preset in gpt2-small llama-110m; do
  dir="$work/$preset"
  echo "== $preset"
  [[ -f "$dir/model.safetensors" ]] || "$bin/attn-make-model" --preset "$preset" --out "$dir"
  start=$(date +%s%N)
  "$bin/attn-compile" "$dir" -o "$dir/libmodel.so"
  echo "compile: $(( ($(date +%s%N) - start) / 1000000 )) ms"
  ls -l "$dir/libmodel.so" "$dir/model.safetensors"
  /usr/bin/time -f "attn-run peak RSS: %M KB" "$bin/attn-run" --lib "$dir/libmodel.so" \
    --weights "$dir/model.safetensors" --tokens "$prompt" --generate 64 \
    --dump-logits "$dir/run.npy" | tee "$dir/run.out"
  "$bin/attn-ref-model" --model "$dir" --tokens "$prompt" --generated-from "$dir/run.out" \
    --dump-logits "$dir/ref.npy"
  "$bin/attn-npy-compare" "$dir/run.npy" "$dir/ref.npy" --max-abs 1e-3
done
