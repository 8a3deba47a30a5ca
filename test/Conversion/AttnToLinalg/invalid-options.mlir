// Bad pass options are reported, not acted on.
// RUN: not attn-opt %s --convert-attn-to-linalg="kv-block=0" 2>&1 | FileCheck %s --check-prefix=KV
// RUN: not attn-opt %s --convert-attn-to-linalg="query-block=-4" 2>&1 | FileCheck %s --check-prefix=Q
// KV: error: convert-attn-to-linalg: block sizes must be positive, got query-block=64 kv-block=0
// Q: error: convert-attn-to-linalg: block sizes must be positive, got query-block=-4 kv-block=64

func.func @attention(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
