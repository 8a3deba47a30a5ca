#!/usr/bin/env bash
# The serve tests' model: a tiny random LLaMA (2 layers, hidden 64) with the
# trained austen-llama's tokenizer files, so prompts are text and outputs
# decode, compiled once here (attn-run, context 2048) so that the servers of
# the other tests load it from MODEL_DIR/.attn. MODEL_DIR.gguf (beside it) is the
# same model and tokenizer as a GGUF file (F32, SentencePiece metadata).
#
#   make-model.sh BIN_DIR SHARED_DIR MODEL_DIR
#
# Skipped (77) without ../shared, except under CI=true, where that fails.
set -euo pipefail
bin=$1 shared=$2 out=$3
tokenizer=$shared/models/austen-llama
if [[ ! -f $tokenizer/tokenizer.json ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "error: $tokenizer is missing: CI must run this test" >&2
    exit 1
  fi
  echo "skipped: $tokenizer is missing"
  exit 77
fi
rm -rf "$out" "$out.gguf"
"$bin/attn-make-model" --preset tiny-llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
  --head-dim 16 --ffn 128 --vocab 32000 --max-positions 2048 --out "$out" \
  --gguf "$out.gguf" --gguf-type f32 --gguf-tokenizer "$tokenizer" > /dev/null
cp "$tokenizer/tokenizer.json" "$tokenizer/tokenizer_config.json" "$out/"
"$bin/attn-run" "$out" --compiler "$bin/attn-compile" --ctx 2048 -p "Emma" -n 4 > /dev/null
# Written last: the other tests take the model as ready only when it is there.
touch "$out/.ready"
