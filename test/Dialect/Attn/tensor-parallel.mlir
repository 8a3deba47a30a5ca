// The tensor-parallel ops print and parse back (their verifiers:
// tensor-parallel-invalid.mlir).
// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @collectives
// CHECK: %[[S:.*]] = attn.all_reduce %{{.*}} ranks(2) : tensor<?x768xf32>
// CHECK: attn.all_gather %[[S]] ranks(2) : tensor<?x768xf32> -> tensor<?x1536xf32>
// CHECK: %[[R:.*]] = attn.group_rank ranks(2) : index
// CHECK: attn.embedding %{{.*}}[%{{.*}}] offset(%{{.*}}) scale(2.000000e+00) : tensor<16x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
func.func @collectives(%x: tensor<?x768xf32>, %table: tensor<16x768xf32>, %ids: tensor<?xi32>)
    -> (tensor<?x1536xf32>, tensor<?x768xf32>) {
  %s = attn.all_reduce %x ranks(2) : tensor<?x768xf32>
  %g = attn.all_gather %s ranks(2) : tensor<?x768xf32> -> tensor<?x1536xf32>
  %r = attn.group_rank ranks(2) : index
  %c16 = arith.constant 16 : index
  %first = arith.muli %r, %c16 : index
  %e = attn.embedding %table[%ids] offset(%first) scale(2.0) : tensor<16x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
  return %g, %e : tensor<?x1536xf32>, tensor<?x768xf32>
}

// -----

// The collectives communicate: canonicalization keeps an unused one (every
// rank must run the same sequence), and two identical ones stay two.
// CHECK-LABEL: func.func @kept
// CHECK: attn.all_reduce
// CHECK: attn.all_reduce
func.func @kept(%x: tensor<4x8xf32>) {
  %a = attn.all_reduce %x ranks(4) : tensor<4x8xf32>
  %b = attn.all_reduce %x ranks(4) : tensor<4x8xf32>
  return
}
