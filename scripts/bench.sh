#!/usr/bin/env bash
# Sets up, builds, and runs attn-bench: the machine's FMA peak and read
# bandwidth, matrix products beside OpenBLAS, causal attention, and whole
# models (LLaMA-110M and GPT-2 small shapes, random weights written under
# $ATTN_BENCH_MODELS, default build/bench-models) at 1 and 2 threads, and the
# tokenizer's encode speed beside the node references (the test data of
# scripts/test-data.sh), each figure the median of 7 runs. Extra arguments go
# to attn-bench (--only machine,matmul,attention,models,tokenizer --repeats N
# --threads 1,2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATTN_BUILD_DIR:-$root/build}

"$root/scripts/build.sh"
"$root/scripts/test-data.sh" "$build/testdata"
# OpenBLAS would pin itself to 256-bit kernels with these set.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
exec "$build/bin/attn-bench" --model-dir "${ATTN_BENCH_MODELS:-$build/bench-models}" \
  --test-data "$build/testdata" "$@"
