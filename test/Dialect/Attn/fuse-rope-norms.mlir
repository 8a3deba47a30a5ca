// RUN: attn-opt %s -split-input-file --attn-fuse-rope-norms | FileCheck %s

// Qwen3's q and k: each per-head norm feeds only its rope and folds into it.
// CHECK-LABEL: func.func @qwen3_q_and_k
// CHECK-NOT: attn.rms_norm
// CHECK: attn.rope %arg0 offset(%arg4) head_dim(8) theta(1.000000e+06) rms_norm(%arg2 : tensor<8xf32>) epsilon(9.99999997E-7) rotate_half : tensor<?x32xf32>
// CHECK: attn.rope %arg1 offset(%arg4) head_dim(8) theta(1.000000e+06) rms_norm(%arg3 : tensor<8xf32>) epsilon(9.99999997E-7) rotate_half : tensor<?x16xf32>
// CHECK-NOT: attn.rms_norm
func.func @qwen3_q_and_k(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>, %gq: tensor<8xf32>, %gk: tensor<8xf32>, %pos: index) -> (tensor<?x32xf32>, tensor<?x16xf32>) {
  %qn = attn.rms_norm %q, %gq epsilon(1.0e-06) head_dim(8) : tensor<?x32xf32>, tensor<8xf32>
  %qr = attn.rope %qn offset(%pos) head_dim(8) theta(1.0e+06) rotate_half : tensor<?x32xf32>
  %kn = attn.rms_norm %k, %gk epsilon(1.0e-06) head_dim(8) : tensor<?x16xf32>, tensor<8xf32>
  %kr = attn.rope %kn offset(%pos) head_dim(8) theta(1.0e+06) rotate_half : tensor<?x16xf32>
  return %qr, %kr : tensor<?x32xf32>, tensor<?x16xf32>
}

// -----

// Gemma 3's norms keep their gain offset; partial rotation keeps rotary_dims.
// CHECK-LABEL: func.func @gain_offset_and_partial
// CHECK: attn.rope %arg0 offset(%arg2) head_dim(8) rotary_dims(4) theta(1.000000e+04) rms_norm(%arg1 : tensor<8xf32>) epsilon(9.99999997E-7) gain_offset(1.000000e+00) interleaved
func.func @gain_offset_and_partial(%q: tensor<?x32xf32>, %g: tensor<8xf32>, %pos: index) -> tensor<?x32xf32> {
  %qn = attn.rms_norm %q, %g epsilon(1.0e-06) gain_offset(1.0) head_dim(8) : tensor<?x32xf32>, tensor<8xf32>
  %qr = attn.rope %qn offset(%pos) head_dim(8) rotary_dims(4) theta(1.0e+04) interleaved : tensor<?x32xf32>
  return %qr : tensor<?x32xf32>
}

// -----

// Left alone: a norm with a second use (its value is stored anyway), a norm
// over whole rows, and one over heads of another size than the rope's.
// CHECK-LABEL: func.func @left_alone
// CHECK: %[[N:.*]] = attn.rms_norm %arg0, %arg1 epsilon(9.99999997E-7) head_dim(8)
// CHECK: attn.rope %[[N]] offset
// CHECK: %[[W:.*]] = attn.rms_norm %arg0, %arg2 epsilon(9.99999997E-7) :
// CHECK: attn.rope %[[W]] offset
// CHECK: %[[H:.*]] = attn.rms_norm %arg0, %arg3 epsilon(9.99999997E-7) head_dim(16)
// CHECK: attn.rope %[[H]] offset
// CHECK-NOT: rms_norm(
func.func @left_alone(%q: tensor<?x32xf32>, %g: tensor<8xf32>, %g32: tensor<32xf32>, %g16: tensor<16xf32>, %pos: index) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %n = attn.rms_norm %q, %g epsilon(1.0e-06) head_dim(8) : tensor<?x32xf32>, tensor<8xf32>
  %r = attn.rope %n offset(%pos) head_dim(8) theta(1.0e+04) rotate_half : tensor<?x32xf32>
  %w = attn.rms_norm %q, %g32 epsilon(1.0e-06) : tensor<?x32xf32>, tensor<32xf32>
  %rw = attn.rope %w offset(%pos) head_dim(8) theta(1.0e+04) rotate_half : tensor<?x32xf32>
  %h = attn.rms_norm %q, %g16 epsilon(1.0e-06) head_dim(16) : tensor<?x32xf32>, tensor<16xf32>
  %rh = attn.rope %h offset(%pos) head_dim(8) theta(1.0e+04) rotate_half : tensor<?x32xf32>
  return %r, %n, %rw, %rh : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}
