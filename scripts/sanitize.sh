#!/usr/bin/env bash
# Sanitizer runs of our own code (docs/reliability.md).
#
#   scripts/sanitize.sh [asan] [tsan]     (default: both)
#
# asan: configures $ATTN_SANITIZE_BUILD_DIR (default build-sanitize) with
#   ASan + UBSan (LeakSanitizer on) and the libFuzzer targets, builds what the
#   checks need, and runs under the sanitizers: the runtime's unit tests, the
#   stress tests on a real compiled model (compiled by the sanitized
#   attn-compile), the fuzz seeds, end-to-end subsets (ops, whole models) and
#   lit subsets (attn-opt on broken IR, attn-compile on broken configs,
#   attn-run on good and bad inputs).
# tsan: configures $ATTN_TSAN_BUILD_DIR (default build-tsan) with
#   ThreadSanitizer and builds only the runtime and its tests (not the
#   compiler); runs the concurrent-session tests, with the mock model and with
#   the tiny model the asan step compiled.
# Exits non-zero on the first failure or sanitizer report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=sanitize-env.sh
source "$root/scripts/sanitize-env.sh"
"$root/scripts/setup.sh" # clang-22, libclang-rt-22-dev (the sanitizer runtimes), ...
asan_dir=${ATTN_SANITIZE_BUILD_DIR:-$root/build-sanitize}
tsan_dir=${ATTN_TSAN_BUILD_DIR:-$root/build-tsan}
jobs=${ATTN_SANITIZE_JOBS:-$(nproc)}

steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(asan tsan)

elapsed() { echo "($((SECONDS - $1)) s)"; }

run_asan() {
  local t0=$SECONDS
  echo "== ASan+UBSan build ($asan_dir)"
  attn_configure_sanitized "$asan_dir" address,undefined -DATTN_FUZZ=ON
  # Everything the checks below run, and nothing else (no docs).
  cmake --build "$asan_dir" --target \
    attnrt-unit-test attnrt-tokenizer-reference-test attnrt-stress-test \
    attnrt-stress-model attnrt-folder-test \
    attn-e2e-ops-test attn-e2e-model-test attn-fuzzers \
    attn-opt attn-compile attn-run attn-make-model attn-ref-model \
    attn-npy-compare attn-tokenize attn-perplexity \
    attn-inspect attn-inspect-report-test attn-png-info attn-serve attn-serve-unit-test
  echo "   built $(elapsed "$t0")"

  t0=$SECONDS
  echo "== ASan+UBSan: runtime unit tests, stress tests, fuzz seeds, e2e subsets"
  # The runtime's unit tests and attn-run (against the mock), the stress
  # tests on the tiny model, model folders compiled on first use (the
  # sanitized runtime spawning the sanitized attn-compile), the tokenizer
  # (with the real vocabularies), every fuzz seed, then end-to-end subsets:
  # one test of each op family against the reference, the decoder blocks,
  # and whole GPT-2 and LLaMA models through the runtime; attn-inspect's
  # report writer, the inspection entry point on GPT-2 and LLaMA, and
  # attn-inspect on the trained and a random model; batched decode; chat
  # templates; attn-serve's protocol and scheduler, its greedy and bad-input
  # tests.
  local unit='^(AttnRunTest|Json|ModelLoadTest|HalfConversion|LibraryTest|Npy|Safetensors|WeightsFileTest|ShardedWeightsTest|Sampler|Prng|SessionTest|ModelStress|ModelFolderTest|Tokenizer[A-Za-z]*|Utf8|ChatTemplate[A-Za-z]*)\.|^Texts/TokenizerReference\.'
  local e2e='^(Attention|KvCache|Rope|DecoderBlocks)\.|^Families/ModelE2E\..*/(tiny_gpt2|tiny_llama)$|^ModelE2EContext\.|^ModelE2ETensorParallelErrors\.'
  local inspect='^inspect/|^Families/ModelE2EInspect\..*/(tiny_gpt2|tiny_llama_gqa2)$|^inspect-trained-model$'
  local batch='^Families/ModelE2EBatch\..*/(tiny_gpt2|tiny_llama_gqa2|mistral_sharp)$'
  local serve='^serve/|^serve-(model|greedy|bad-input)$'
  ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" \
    -R "$unit|^fuzz-seeds-|$e2e|$inspect|$batch|$serve"
  echo "   ctest $(elapsed "$t0")"

  t0=$SECONDS
  echo "== ASan+UBSan: lit subsets (attn-opt, attn-compile, attn-run)"
  # attn-opt on every broken-IR corpus, attn-compile on broken configs, and
  # the attn-make-model -> attn-compile -> attn-run chain on good and bad
  # inputs (generate.test runs attn-run on a tiny model against the
  # reference), and the text tools on the trained models (e2e/text:
  # tokenize, generate from a folder, perplexity, their bad inputs).
  "$LLVM_LIT" -sv --time-tests -j "$jobs" \
    "$asan_dir/test/Dialect" \
    "$asan_dir/test/Compiler" \
    "$asan_dir/test/e2e"
  echo "   lit $(elapsed "$t0")"
}

run_tsan() {
  local t0=$SECONDS
  echo "== ThreadSanitizer build ($tsan_dir): the runtime and its tests"
  attn_configure_sanitized "$tsan_dir" thread
  cmake --build "$tsan_dir" --target attnrt-unit-test attnrt-stress-test attn-serve-unit-test
  echo "   built $(elapsed "$t0")"

  # The tiny model compiled by the asan step (or by the default build).
  local model=""
  for dir in "$asan_dir/test/unit/stress-model" "$root/build/test/unit/stress-model"; do
    if [[ -f "$dir/libmodel.so" && -f "$dir/model.safetensors" ]]; then
      model=$dir
      break
    fi
  done
  if [[ -z "$model" ]]; then
    echo "sanitize.sh: no compiled tiny model: run the asan step first" >&2
    return 1
  fi

  t0=$SECONDS
  echo "== ThreadSanitizer: concurrent sessions (mock model, then $model) and tokenizers"
  "$tsan_dir/test/unit/attnrt-unit-test" --gtest_brief=1 \
    --gtest_filter='SessionTest.*:TokenizerThreads.*:ChatTemplateApi.*'
  # attn-serve's scheduler thread, its HTTP handlers' channels, cancellation.
  "$tsan_dir/test/serve/attn-serve-unit-test" --gtest_brief=1 --gtest_filter='ServeScheduler.*'
  ATTNRT_STRESS_LIB="$model/libmodel.so" \
    ATTNRT_STRESS_WEIGHTS="$model/model.safetensors" \
    "$tsan_dir/test/unit/attnrt-stress-test" --gtest_brief=1 \
    --gtest_filter='ModelStress.*'
  echo "   tests $(elapsed "$t0")"
}

LLVM_LIT=${LLVM_LIT:-/usr/lib/llvm-22/bin/lit}
for step in "${steps[@]}"; do
  case $step in
  asan) run_asan ;;
  tsan) run_tsan ;;
  *)
    echo "usage: scripts/sanitize.sh [asan] [tsan]" >&2
    exit 2
    ;;
  esac
done
echo "== sanitizers: no findings"
