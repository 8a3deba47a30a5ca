// RUN: attn-opt %s --attn-approximate-math | FileCheck %s

// f32 exp, tanh and erf, scalar or vector, become polynomials: no math ops
// (hence no libm calls) are left. f64 stays exact.
// CHECK-LABEL: func.func @f32
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: arith.mulf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @f32(%x: f32, %v: vector<16xf32>) -> (f32, vector<16xf32>, vector<16xf32>) {
  %0 = math.exp %x : f32
  %1 = math.tanh %v : vector<16xf32>
  %2 = math.erf %v : vector<16xf32>
  return %0, %1, %2 : f32, vector<16xf32>, vector<16xf32>
}

// CHECK-LABEL: func.func @f64
// CHECK: math.exp %{{.*}} : f64
func.func @f64(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}
