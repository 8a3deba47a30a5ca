// RUN: attn-opt %s -split-input-file -canonicalize | FileCheck %s

// x + 0 is x.
// CHECK-LABEL: func.func @residual_add_zero_rhs
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: attn.residual_add
// CHECK: return %[[X]]
func.func @residual_add_zero_rhs(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %0 = attn.residual_add %x, %zero : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// 0 + x is x, negative zero included.
// CHECK-LABEL: func.func @residual_add_negative_zero_lhs
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: attn.residual_add
// CHECK: return %[[X]]
func.func @residual_add_negative_zero_lhs(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant dense<-0.0> : tensor<4x8xf32>
  %0 = attn.residual_add %zero, %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A constant that is not all zeros stays, moved to the right-hand side.
// CHECK-LABEL: func.func @negative_residual_add_nonzero
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[C:.*]] = arith.constant dense<1.000000e+00>
// CHECK: attn.residual_add %[[X]], %[[C]]
func.func @negative_residual_add_nonzero(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = arith.constant dense<1.0> : tensor<4x8xf32>
  %0 = attn.residual_add %one, %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A non-splat constant with a zero in it is not zero.
// CHECK-LABEL: func.func @negative_residual_add_partly_zero
// CHECK: attn.residual_add
func.func @negative_residual_add_partly_zero(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = attn.residual_add %x, %c : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Appending zero rows leaves the cache unchanged.
// CHECK-LABEL: func.func @kv_cache_append_empty
// CHECK-SAME: (%[[NEW:.*]]: tensor<0x8xf32>, %[[CACHE:.*]]: tensor<16x8xf32>
// CHECK-NOT: attn.kv_cache_append
// CHECK: return %[[CACHE]]
func.func @kv_cache_append_empty(%new: tensor<0x8xf32>, %cache: tensor<16x8xf32>, %pos: index) -> tensor<16x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<0x8xf32> into tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

// CHECK-LABEL: func.func @negative_kv_cache_append_dynamic_rows
// CHECK: attn.kv_cache_append
func.func @negative_kv_cache_append_dynamic_rows(%new: tensor<?x8xf32>, %cache: tensor<16x8xf32>, %pos: index) -> tensor<16x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

// kv_len equal to the static key count masks nothing: it is dropped.
// CHECK-LABEL: func.func @attention_full_kv_len
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(2) causal :
// CHECK-NOT: kv_len
func.func @attention_full_kv_len(%q: tensor<5x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<5x8xf32> {
  %n = arith.constant 5 : index
  %0 = attn.attention %q, %k, %v heads(2) causal kv_len(%n) : tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

// A shorter kv_len masks keys: it stays.
// CHECK-LABEL: func.func @negative_attention_partial_kv_len
// CHECK: %[[N:.*]] = arith.constant 3 : index
// CHECK: attn.attention {{.*}} kv_len(%[[N]])
func.func @negative_attention_partial_kv_len(%q: tensor<1x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<1x8xf32> {
  %n = arith.constant 3 : index
  %0 = attn.attention %q, %k, %v heads(2) causal kv_len(%n) : tensor<1x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

// With dynamic keys the length is unknown: kv_len stays.
// CHECK-LABEL: func.func @negative_attention_dynamic_keys
// CHECK: attn.attention {{.*}} kv_len(
func.func @negative_attention_dynamic_keys(%q: tensor<1x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>) -> tensor<1x8xf32> {
  %n = arith.constant 5 : index
  %0 = attn.attention %q, %k, %v heads(2) kv_len(%n) : tensor<1x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

// RoPE at position 0 with a zero offset is still a rotation for rows 1.. :
// nothing folds.
// CHECK-LABEL: func.func @negative_rope_zero_offset
// CHECK: attn.rope
func.func @negative_rope_zero_offset(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %c0 = arith.constant 0 : index
  %0 = attn.rope %x offset(%c0) head_dim(8) theta(1.0e+04) rotate_half : tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
