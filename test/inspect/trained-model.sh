#!/usr/bin/env bash
# attn-inspect on the trained austen-llama and on a random model of the
# same shape (its tokenizer, the same prompt): the trained model has a head
# whose previous-token score stands out, the random one has none (a test of
# the scores, not of the model); both reports hold what check-report.py
# checks, and the trained one renders in headless Chromium (check-page.sh).
#
#   trained-model.sh BIN_DIR SHARED_DIR PYTHON
#
# Skipped (77) without ../shared, except under CI=true, where that fails.
set -euo pipefail
bin=$1 shared=$2 python=$3
here=$(cd "$(dirname "$0")" && pwd)
model=$shared/models/austen-llama
if [[ ! -f $model/model.safetensors ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "error: $model is missing: CI must run this test" >&2
    exit 1
  fi
  echo "skipped: $model is missing"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tokenizer=("$model/tokenizer.json" "$model/tokenizer_config.json")
mkdir "$work/trained"
cp "$model/config.json" "${tokenizer[@]}" "$work/trained/"
ln -s "$model/model.safetensors" "$work/trained/model.safetensors"
"$bin/attn-make-model" --preset tiny-llama --layers 4 --hidden 192 --heads 6 --kv-heads 2 \
  --ffn 512 --vocab 32000 --head-dim 32 --max-positions 512 --out "$work/random" > /dev/null
cp "${tokenizer[@]}" "$work/random/"

# Persuasion, chapter 23 (held out of training): 38 tokens with BOS.
prompt="I can listen no longer in silence. I must speak to you by such means as are within \
my reach. You pierce my soul. I am half agony, half hope."
for kind in trained random; do
  "$bin/attn-inspect" "$work/$kind" -p "$prompt" --out "$work/$kind-report"
done
"$python" "$here/check-report.py" "$work/trained-report" --layers 4 --heads 6 --hidden 192 \
  --min-standing 1
"$python" "$here/check-report.py" "$work/random-report" --layers 4 --heads 6 --hidden 192 \
  --max-standing 0
bash "$here/check-page.sh" "$work/trained-report" 4 6
