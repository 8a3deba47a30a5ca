// RUN: attn-opt %s -split-input-file --attn-fuse-linear-epilogues | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-fuse-linear-epilogues=input-norms=0 | FileCheck %s --check-prefix=UNFUSED

// LLaMA's MLP: gate and up read the same input; the SwiGLU and the residual
// become the epilogues of two gemms, and no intermediate is left.
// CHECK-LABEL: func.func @llama_mlp
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[WG:.*]]: tensor<6x64x32xf32>, %[[WU:.*]]: tensor<6x64x32xf32>, %[[WD:.*]]: tensor<2x172x32xf32>, %[[R:.*]]: tensor<?x64xf32>)
// CHECK: %[[H:.*]] = attn.gemm swiglu ins(%[[X]], %[[WG]], %[[WU]] : tensor<?x64xf32>, tensor<6x64x32xf32>, tensor<6x64x32xf32>) outs(%{{.*}} : tensor<?x172xf32>)
// CHECK: %[[OUT:.*]] = attn.gemm none ins(%[[H]], %[[WD]] : tensor<?x172xf32>, tensor<2x172x32xf32>) residual(%[[R]] : tensor<?x64xf32>)
// CHECK-NOT: attn.linear
// CHECK-NOT: attn.swiglu
// CHECK-NOT: attn.residual_add
// CHECK: return %[[OUT]]
func.func @llama_mlp(%x: tensor<?x64xf32>, %wg: tensor<6x64x32xf32>, %wu: tensor<6x64x32xf32>,
                     %wd: tensor<2x172x32xf32>, %r: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %g = attn.linear %x, %wg layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %u = attn.linear %x, %wu layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %h = attn.swiglu %g, %u : tensor<?x172xf32>
  %d = attn.linear %h, %wd layout(packed) : tensor<?x172xf32>, tensor<2x172x32xf32> -> tensor<?x64xf32>
  %out = attn.residual_add %r, %d : tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// GPT-2's MLP: GELU (tanh) after a biased projection; the residual joins the
// activation's gemm when it is the projection being added.
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK: %[[H:.*]] = attn.gemm gelu_tanh ins({{.*}}) bias(%{{.*}} : tensor<256xf32>) outs
// CHECK: attn.gemm none ins(%[[H]], {{.*}}) bias(%{{.*}} : tensor<64xf32>) residual(%{{.*}} : tensor<?x64xf32>) outs
// CHECK-NEXT: return
func.func @gpt2_mlp(%x: tensor<?x64xf32>, %w1: tensor<8x64x32xf32>, %b1: tensor<256xf32>,
                    %w2: tensor<2x256x32xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  %a = attn.linear %x, %w1, %b1 layout(packed) : tensor<?x64xf32>, tensor<8x64x32xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %h = attn.gelu %a tanh : tensor<?x256xf32>
  %p = attn.linear %h, %w2, %b2 layout(packed) : tensor<?x256xf32>, tensor<2x256x32xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %out = attn.residual_add %p, %x : tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// An activation's gemm takes the residual as well; erf GELU and SiLU map to
// their own epilogues.
// CHECK-LABEL: func.func @activations
// CHECK: attn.gemm gelu_erf ins({{.*}}) residual(%{{.*}} : tensor<4x64xf32>) outs
// CHECK: attn.gemm silu ins
func.func @activations(%x: tensor<4x64xf32>, %w: tensor<2x64x32xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %a = attn.linear %x, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %g = attn.gelu %a erf : tensor<4x64xf32>
  %r = attn.residual_add %x, %g : tensor<4x64xf32>
  %b = attn.linear %x, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %s = attn.silu %b : tensor<4x64xf32>
  return %r, %s : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// Gemma's GeGLU MLP fuses as SwiGLU does; OPT's ReLU is an epilogue.
// CHECK-LABEL: func.func @geglu_and_relu
// CHECK: %[[H:.*]] = attn.gemm geglu_tanh ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<6x64x32xf32>, tensor<6x64x32xf32>) outs
// CHECK: attn.gemm geglu_erf ins
// CHECK: attn.gemm relu ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<6x64x32xf32>) bias(%{{.*}} : tensor<172xf32>) outs
// CHECK-NOT: attn.geglu
// CHECK-NOT: attn.relu
func.func @geglu_and_relu(%x: tensor<?x64xf32>, %wg: tensor<6x64x32xf32>, %wu: tensor<6x64x32xf32>,
                          %b: tensor<172xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>, tensor<?x172xf32>) {
  %g = attn.linear %x, %wg layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %u = attn.linear %x, %wu layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %h = attn.geglu %g, %u tanh : tensor<?x172xf32>
  %g2 = attn.linear %x, %wg layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %u2 = attn.linear %x, %wu layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %h2 = attn.geglu %g2, %u2 erf : tensor<?x172xf32>
  %a = attn.linear %x, %wg, %b layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32>, tensor<172xf32> -> tensor<?x172xf32>
  %r = attn.relu %a : tensor<?x172xf32>
  return %h, %h2, %r : tensor<?x172xf32>, tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

// Left alone: a projection whose value has a second use (it must be stored
// anyway), an unpacked weight, and gate/up projections of different inputs.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: attn.gemm
// CHECK: attn.gelu
// CHECK: attn.silu
// CHECK: attn.swiglu
// CHECK-NOT: attn.gemm
// CHECK: return
func.func @not_fused(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>, %w: tensor<2x64x32xf32>,
                     %plain: tensor<64x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) {
  %a = attn.linear %x, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %g = attn.gelu %a tanh : tensor<4x64xf32>
  %b = attn.linear %x, %plain layout(out_in) : tensor<4x64xf32>, tensor<64x64xf32> -> tensor<4x64xf32>
  %s = attn.silu %b : tensor<4x64xf32>
  %c = attn.linear %x, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %d = attn.linear %y, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %h = attn.swiglu %c, %d : tensor<4x64xf32>
  return %a, %g, %s, %h : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// The norm before a projection becomes the gemm's input norm: the kernel
// normalizes each row as it prepares it. The row count the slices ask of the
// norm is its input's.
// CHECK-LABEL: func.func @llama_block_norms
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[G1:[^:]*]]: tensor<64xf32>, %[[WQKV:[^:]*]]: tensor<3x64x32xf32>, %[[G2:[^:]*]]: tensor<64xf32>
// CHECK-NOT: attn.rms_norm
// CHECK: %[[QKV:.*]] = attn.gemm none ins(%[[X]], %[[WQKV]] : tensor<?x64xf32>, tensor<3x64x32xf32>) rms_norm(%[[G1]] : tensor<64xf32>) epsilon(9.99999974E-6) outs
// CHECK: tensor.dim %[[X]], %{{.*}} : tensor<?x64xf32>
// CHECK: attn.gemm swiglu ins(%[[X]], %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<6x64x32xf32>, tensor<6x64x32xf32>) rms_norm(%[[G2]] : tensor<64xf32>) epsilon(9.99999997E-7) gain_offset(1.000000e+00) outs
// UNFUSED-LABEL: func.func @llama_block_norms
// UNFUSED-COUNT-2: attn.rms_norm
// UNFUSED-NOT: rms_norm(
func.func @llama_block_norms(%x: tensor<?x64xf32>, %g1: tensor<64xf32>, %wqkv: tensor<3x64x32xf32>,
                             %g2: tensor<64xf32>, %wg: tensor<6x64x32xf32>, %wu: tensor<6x64x32xf32>)
    -> (tensor<?x32xf32>, tensor<?x172xf32>) {
  %n = attn.rms_norm %x, %g1 epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %n, %c0 : tensor<?x64xf32>
  %qkv = attn.linear %n, %wqkv layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32> -> tensor<?x96xf32>
  %q = tensor.extract_slice %qkv[0, 0] [%rows, 32] [1, 1] : tensor<?x96xf32> to tensor<?x32xf32>
  %m = attn.rms_norm %x, %g2 epsilon(1.0e-06) gain_offset(1.0) : tensor<?x64xf32>, tensor<64xf32>
  %g = attn.linear %m, %wg layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %u = attn.linear %m, %wu layout(packed) : tensor<?x64xf32>, tensor<6x64x32xf32> -> tensor<?x172xf32>
  %h = attn.swiglu %g, %u : tensor<?x172xf32>
  return %q, %h : tensor<?x32xf32>, tensor<?x172xf32>
}

// -----

// GPT-2's MLP: the layer norm, the biased projection and its GELU are one
// gemm whichever the rewriter meets first.
// CHECK-LABEL: func.func @gpt2_mlp_norm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[G:[^:]*]]: tensor<64xf32>, %[[B:[^:]*]]: tensor<64xf32>
// CHECK: %[[H:.*]] = attn.gemm gelu_tanh ins(%[[X]], %{{.*}} : tensor<?x64xf32>, tensor<8x64x32xf32>) layer_norm(%[[G]], %[[B]] : tensor<64xf32>, tensor<64xf32>) epsilon(9.99999974E-6) bias(%{{.*}} : tensor<256xf32>) outs
// CHECK: attn.gemm none ins(%[[H]], {{.*}}) bias(%{{.*}} : tensor<64xf32>) residual(%[[X]] : tensor<?x64xf32>) outs
// CHECK-NOT: attn.layer_norm
func.func @gpt2_mlp_norm(%x: tensor<?x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>,
                         %w1: tensor<8x64x32xf32>, %b1: tensor<256xf32>,
                         %w2: tensor<2x256x32xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  %n = attn.layer_norm %x, %gamma, %beta epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %a = attn.linear %n, %w1, %b1 layout(packed) : tensor<?x64xf32>, tensor<8x64x32xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %h = attn.gelu %a tanh : tensor<?x256xf32>
  %p = attn.linear %h, %w2, %b2 layout(packed) : tensor<?x256xf32>, tensor<2x256x32xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %out = attn.residual_add %p, %x : tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// A projection whose norm was fused before its activation was seen still
// takes the activation (and then the residual).
// CHECK-LABEL: func.func @activation_after_norm
// CHECK: %[[H:.*]] = attn.gemm gelu_tanh ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<8x64x32xf32>) layer_norm(%{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64xf32>) epsilon(9.99999974E-6) bias(%{{.*}} : tensor<256xf32>) residual(%{{.*}} : tensor<?x256xf32>) outs
// CHECK-NEXT: return %[[H]]
func.func @activation_after_norm(%x: tensor<?x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>,
                                 %w: tensor<8x64x32xf32>, %b: tensor<256xf32>, %r: tensor<?x256xf32>,
                                 %init: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %a = attn.gemm none ins(%x, %w : tensor<?x64xf32>, tensor<8x64x32xf32>) layer_norm(%gamma, %beta : tensor<64xf32>, tensor<64xf32>) epsilon(1.0e-05) bias(%b : tensor<256xf32>) outs(%init : tensor<?x256xf32>) -> tensor<?x256xf32>
  %h = attn.gelu %a tanh : tensor<?x256xf32>
  %out = attn.residual_add %h, %r : tensor<?x256xf32>
  return %out : tensor<?x256xf32>
}

// -----

// Left alone: a norm whose value is also the residual (a post-norm block),
// one feeding an unpacked weight, and one that is a projection's input and
// its residual at once.
// CHECK-LABEL: func.func @norms_not_fused
// CHECK-COUNT-3: attn.layer_norm
// CHECK-NOT: layer_norm(
func.func @norms_not_fused(%x: tensor<4x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>,
                           %w: tensor<2x64x32xf32>, %plain: tensor<64x64xf32>)
    -> (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) {
  %n = attn.layer_norm %x, %gamma, %beta epsilon(1.0e-05) : tensor<4x64xf32>, tensor<64xf32>
  %p = attn.linear %n, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %post = attn.residual_add %n, %p : tensor<4x64xf32>
  %m = attn.layer_norm %x, %beta, %gamma epsilon(1.0e-05) : tensor<4x64xf32>, tensor<64xf32>
  %q = attn.linear %m, %plain layout(out_in) : tensor<4x64xf32>, tensor<64x64xf32> -> tensor<4x64xf32>
  %k = attn.layer_norm %x, %gamma, %gamma epsilon(1.0e-05) : tensor<4x64xf32>, tensor<64xf32>
  %r = attn.linear %k, %w layout(packed) : tensor<4x64xf32>, tensor<2x64x32xf32> -> tensor<4x64xf32>
  %self = attn.residual_add %r, %k : tensor<4x64xf32>
  return %post, %q, %self : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// A per-head norm (qk-norm) is not a row norm: it stays out of the gemm.
// CHECK-LABEL: func.func @head_norm_not_an_input_norm
// CHECK: %[[N:.*]] = attn.rms_norm %{{.*}} head_dim(16)
// CHECK: attn.linear %[[N]], %{{.*}} layout(packed)
// CHECK-NOT: rms_norm(
func.func @head_norm_not_an_input_norm(%x: tensor<?x64xf32>, %g: tensor<16xf32>, %w: tensor<1x64x32xf32>) -> tensor<?x32xf32> {
  %n = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(16) : tensor<?x64xf32>, tensor<16xf32>
  %y = attn.linear %n, %w layout(packed) : tensor<?x64xf32>, tensor<1x64x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
