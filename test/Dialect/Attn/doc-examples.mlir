// The examples docs/ shows must parse and verify.
// RUN: attn-opt %attn_src_root/docs/examples/decoder-block.mlir --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @gpt2_block
// CHECK: attn.layer_norm
// CHECK: attn.attention {{.*}} heads(4) causal
// CHECK: attn.layer_norm
// CHECK: attn.gelu {{.*}} tanh
// CHECK: return
