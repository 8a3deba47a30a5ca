// The fused, packed projection path (attn-fuse-linear-epilogues,
// attn.gemm, attn-lower-gemm) against the linalg lowering of the same
// projections with unpacked weights (and the norms before them), run in
// mlir-runner. 19 rows make two
// full 8-row register tiles and three single-row tiles; 72 output features
// make a last weight block with 8 live lanes of 32, whose padding is NaN so
// a padded lane that leaks into a stored output shows.
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 vector-width=8 tile-rows=4" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 fusion=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s

// CHECK: gelu_bias_residual 19 rows
// CHECK-NEXT: 1
// CHECK: swiglu_residual 19 rows
// CHECK-NEXT: 1
// CHECK: silu 1 row
// CHECK-NEXT: 1
// CHECK: gelu_erf 1 row
// CHECK-NEXT: 1
// CHECK: rms_norm_silu 19 rows
// CHECK-NEXT: 1
// CHECK: layer_norm_residual 1 row
// CHECK-NEXT: 1

// Deterministic values in [-scale, scale] that differ in every element.
func.func private @values(%rows: index, %cols: index, %seed: i32, %scale: f32) -> tensor<?x?xf32> {
  %t = tensor.generate %rows, %cols {
  ^bb0(%i: index, %j: index):
    // A multiplicative hash of (i, j, seed): no structure across rows or
    // columns that could hide a wrong mask or head mapping.
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %m1 = arith.constant 1103515245 : i32
    %m2 = arith.constant 40503 : i32
    %m3 = arith.constant 1540483477 : i32
    %c13 = arith.constant 13 : i32
    %c15 = arith.constant 15 : i32
    %mask = arith.constant 65535 : i32
    %a = arith.muli %ii, %m1 : i32
    %b = arith.muli %jj, %m2 : i32
    %h0 = arith.addi %a, %b : i32
    %h1 = arith.addi %h0, %seed : i32
    %s1 = arith.shrui %h1, %c13 : i32
    %h2 = arith.xori %h1, %s1 : i32
    %h3 = arith.muli %h2, %m3 : i32
    %s2 = arith.shrui %h3, %c15 : i32
    %h4 = arith.xori %h3, %s2 : i32
    %low = arith.andi %h4, %mask : i32
    %f = arith.uitofp %low : i32 to f32
    // [0, 65535] -> [-scale, scale).
    %inv = arith.constant 3.0517578e-05 : f32
    %one = arith.constant 1.0 : f32
    %u = arith.mulf %f, %inv : f32
    %v = arith.subf %u, %one : f32
    %w = arith.mulf %v, %scale : f32
    tensor.yield %w : f32
  } : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

// [K, N] weight -> [ceil(N/32), K, 32] blocks, NaN past N.
func.func private @pack(%w: tensor<64x72xf32>) -> tensor<3x64x32xf32> {
  %t = tensor.generate {
  ^bb0(%b: index, %k: index, %j: index):
    %c32 = arith.constant 32 : index
    %c72 = arith.constant 72 : index
    %base = arith.muli %b, %c32 : index
    %n = arith.addi %base, %j : index
    %live = arith.cmpi slt, %n, %c72 : index
    %v = scf.if %live -> f32 {
      %e = tensor.extract %w[%k, %n] : tensor<64x72xf32>
      scf.yield %e : f32
    } else {
      %nan = arith.constant 0x7FC00000 : f32
      scf.yield %nan : f32
    }
    tensor.yield %v : f32
  } : tensor<3x64x32xf32>
  return %t : tensor<3x64x32xf32>
}

// 1 when every |a - b| <= 1e-4 (and nothing is NaN), else 0.
func.func private @close(%a: tensor<?x72xf32>, %b: tensor<?x72xf32>) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c72 = arith.constant 72 : index
  %rows = tensor.dim %a, %c0 : tensor<?x72xf32>
  %true = arith.constant true
  %tol = arith.constant 1.0e-4 : f32
  %ok = scf.for %i = %c0 to %rows step %c1 iter_args(%acc = %true) -> i1 {
    %r = scf.for %j = %c0 to %c72 step %c1 iter_args(%acc2 = %acc) -> i1 {
      %x = tensor.extract %a[%i, %j] : tensor<?x72xf32>
      %y = tensor.extract %b[%i, %j] : tensor<?x72xf32>
      %d = arith.subf %x, %y : f32
      %ad = math.absf %d : f32
      // ule is false for NaN.
      %good = arith.cmpf ole, %ad, %tol : f32
      %n = arith.andi %acc2, %good : i1
      scf.yield %n : i1
    }
    scf.yield %r : i1
  }
  return %ok : i1
}


func.func @main() {
  %c1 = arith.constant 1 : index
  %c19 = arith.constant 19 : index
  %c64 = arith.constant 64 : index
  %c72 = arith.constant 72 : index
  %one = arith.constant 1.0 : f32
  // Weights uniform in [-0.2, 0.2] (std ~0.9/sqrt(K)): outputs of order
  // 1, where GELU and SiLU bend.
  %wscale = arith.constant 0.2 : f32

  %seed1 = arith.constant 1 : i32
  %seed2 = arith.constant 2 : i32
  %seed3 = arith.constant 3 : i32
  %seed4 = arith.constant 4 : i32
  %seed5 = arith.constant 5 : i32
  %xd = call @values(%c19, %c64, %seed1, %one) : (index, index, i32, f32) -> tensor<?x?xf32>
  %x = tensor.cast %xd : tensor<?x?xf32> to tensor<?x64xf32>
  %rd = call @values(%c19, %c72, %seed2, %one) : (index, index, i32, f32) -> tensor<?x?xf32>
  %r = tensor.cast %rd : tensor<?x?xf32> to tensor<?x72xf32>
  %wd = call @values(%c64, %c72, %seed3, %wscale) : (index, index, i32, f32) -> tensor<?x?xf32>
  %w = tensor.cast %wd : tensor<?x?xf32> to tensor<64x72xf32>
  %ud = call @values(%c64, %c72, %seed4, %wscale) : (index, index, i32, f32) -> tensor<?x?xf32>
  %u = tensor.cast %ud : tensor<?x?xf32> to tensor<64x72xf32>
  %bd = call @values(%c1, %c72, %seed5, %one) : (index, index, i32, f32) -> tensor<?x?xf32>
  %bias = tensor.collapse_shape %bd [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %b = tensor.cast %bias : tensor<?xf32> to tensor<72xf32>
  %wp = call @pack(%w) : (tensor<64x72xf32>) -> tensor<3x64x32xf32>
  %up = call @pack(%u) : (tensor<64x72xf32>) -> tensor<3x64x32xf32>

  // GPT-2's MLP shape: GELU(x W + b) + r.
  %p0 = attn.linear %x, %wp, %b layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<72xf32> -> tensor<?x72xf32>
  %g0 = attn.gelu %p0 tanh : tensor<?x72xf32>
  %o0 = attn.residual_add %g0, %r : tensor<?x72xf32>
  %q0 = attn.linear %x, %w, %b layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32>, tensor<72xf32> -> tensor<?x72xf32>
  %h0 = attn.gelu %q0 tanh : tensor<?x72xf32>
  %e0 = attn.residual_add %h0, %r : tensor<?x72xf32>
  %ok0 = call @close(%o0, %e0) : (tensor<?x72xf32>, tensor<?x72xf32>) -> i1
  vector.print str "gelu_bias_residual 19 rows\n"
  vector.print %ok0 : i1

  // LLaMA's MLP shape: silu(x Wg) * (x Wu) + r.
  %p1 = attn.linear %x, %wp layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32> -> tensor<?x72xf32>
  %p2 = attn.linear %x, %up layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32> -> tensor<?x72xf32>
  %g1 = attn.swiglu %p1, %p2 : tensor<?x72xf32>
  %o1 = attn.residual_add %r, %g1 : tensor<?x72xf32>
  %q1 = attn.linear %x, %w layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32> -> tensor<?x72xf32>
  %q2 = attn.linear %x, %u layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32> -> tensor<?x72xf32>
  %h1 = attn.swiglu %q1, %q2 : tensor<?x72xf32>
  %e1 = attn.residual_add %r, %h1 : tensor<?x72xf32>
  %ok1 = call @close(%o1, %e1) : (tensor<?x72xf32>, tensor<?x72xf32>) -> i1
  vector.print str "swiglu_residual 19 rows\n"
  vector.print %ok1 : i1

  // Decode: one row.
  %x1 = tensor.extract_slice %x[5, 0] [1, 64] [1, 1] : tensor<?x64xf32> to tensor<1x64xf32>
  %xr = tensor.cast %x1 : tensor<1x64xf32> to tensor<?x64xf32>
  %p3 = attn.linear %xr, %wp layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32> -> tensor<?x72xf32>
  %g3 = attn.silu %p3 : tensor<?x72xf32>
  %q3 = attn.linear %xr, %w layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32> -> tensor<?x72xf32>
  %h3 = attn.silu %q3 : tensor<?x72xf32>
  %ok3 = call @close(%g3, %h3) : (tensor<?x72xf32>, tensor<?x72xf32>) -> i1
  vector.print str "silu 1 row\n"
  vector.print %ok3 : i1

  %p4 = attn.linear %xr, %wp, %b layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<72xf32> -> tensor<?x72xf32>
  %g4 = attn.gelu %p4 erf : tensor<?x72xf32>
  %q4 = attn.linear %xr, %w, %b layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32>, tensor<72xf32> -> tensor<?x72xf32>
  %h4 = attn.gelu %q4 erf : tensor<?x72xf32>
  %ok4 = call @close(%g4, %h4) : (tensor<?x72xf32>, tensor<?x72xf32>) -> i1
  vector.print str "gelu_erf 1 row\n"
  vector.print %ok4 : i1

  // A norm before the projection: fused into the gemm's input (fusion on),
  // against the same norm before the unpacked linalg projection. The rows
  // of r serve as a gain around 1 and a shift.
  %gain0 = tensor.extract_slice %rd[0, 0] [1, 64] [1, 1] : tensor<?x?xf32> to tensor<1x64xf32>
  %gain1 = tensor.collapse_shape %gain0 [[0, 1]] : tensor<1x64xf32> into tensor<64xf32>
  %ones = arith.constant dense<1.0> : tensor<64xf32>
  %gain = attn.residual_add %gain1, %ones : tensor<64xf32>
  %shift0 = tensor.extract_slice %rd[1, 0] [1, 64] [1, 1] : tensor<?x?xf32> to tensor<1x64xf32>
  %shift = tensor.collapse_shape %shift0 [[0, 1]] : tensor<1x64xf32> into tensor<64xf32>
  %n5 = attn.rms_norm %x, %gain epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %p5 = attn.linear %n5, %wp layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32> -> tensor<?x72xf32>
  %g5 = attn.silu %p5 : tensor<?x72xf32>
  %m5 = attn.rms_norm %x, %gain epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %q5 = attn.linear %m5, %w layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32> -> tensor<?x72xf32>
  %h5 = attn.silu %q5 : tensor<?x72xf32>
  %ok5 = call @close(%g5, %h5) : (tensor<?x72xf32>, tensor<?x72xf32>) -> i1
  vector.print str "rms_norm_silu 19 rows\n"
  vector.print %ok5 : i1

  %n6 = attn.layer_norm %xr, %gain, %shift epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %p6 = attn.linear %n6, %wp, %b layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<72xf32> -> tensor<?x72xf32>
  %r6 = tensor.extract_slice %r[2, 0] [1, 72] [1, 1] : tensor<?x72xf32> to tensor<1x72xf32>
  %rr = tensor.cast %r6 : tensor<1x72xf32> to tensor<?x72xf32>
  %o6 = attn.residual_add %p6, %rr : tensor<?x72xf32>
  %m6 = attn.layer_norm %xr, %gain, %shift epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %q6 = attn.linear %m6, %w, %b layout(in_out) : tensor<?x64xf32>, tensor<64x72xf32>, tensor<72xf32> -> tensor<?x72xf32>
  %e6 = attn.residual_add %q6, %rr : tensor<?x72xf32>
  %ok6 = call @close(%o6, %e6) : (tensor<?x72xf32>, tensor<?x72xf32>) -> i1
  vector.print str "layer_norm_residual 1 row\n"
  vector.print %ok6 : i1
  return
}
