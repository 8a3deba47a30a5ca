// attn-expand-bf16: f32 -> bf16 truncations and bf16 -> f32 extensions as
// integer arithmetic on the bits (round to nearest even, NaN to a quiet
// NaN), so that no CPU needs __truncsfbf2 and every CPU rounds alike.
// RUN: attn-opt %s --attn-expand-bf16 | FileCheck %s
// The numbers, through the whole pipeline on this CPU:
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s --check-prefix=NUMBERS

// CHECK-LABEL: func.func @round
// CHECK-NOT: arith.truncf
// CHECK: %[[NAN:.*]] = arith.cmpf une, %[[V:.*]], %[[V]] : vector<8xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[V]] : vector<8xf32> to vector<8xi32>
// CHECK: arith.shrui %[[BITS]]
// CHECK: arith.addi %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK: arith.select %[[NAN]]
// CHECK-NOT: arith.extf
// CHECK: arith.shli %{{.*}} : vector<8xi32>
// CHECK-NOT: arith.{{truncf|extf}}
// CHECK: return
// NUMBERS: 1
// NUMBERS-NEXT: 1.01562
// NUMBERS-NEXT: 1.00781
// NUMBERS-NEXT: inf
// NUMBERS-NEXT: 9.18355e-41
// NUMBERS-NEXT: -0
// NUMBERS-NEXT: inf
// NUMBERS-NEXT: nan
func.func @round(%v: vector<8xf32>) -> vector<8xf32> {
  %b = arith.truncf %v : vector<8xf32> to vector<8xbf16>
  %w = arith.extf %b : vector<8xbf16> to vector<8xf32>
  return %w : vector<8xf32>
}
func.func @main() {
  // Ties 1 + 2^-8 (to 1, even) and 1 + 3 * 2^-8 (to 1 + 2^-6, even); just
  // above a tie (up); the largest finite f32 (to infinity); 2^-133, a
  // denormal bf16 keeps; -0; infinity; NaN (a quiet NaN).
  %v = arith.constant dense<[1.00390625, 1.01171875, 1.00390637, 3.40282347e+38, 9.18354962e-41, -0.0, 0x7F800000, 0x7FC00001]> : vector<8xf32>
  %r = func.call @round(%v) : (vector<8xf32>) -> vector<8xf32>
  %e0 = vector.extract %r[0] : f32 from vector<8xf32>
  vector.print %e0 : f32
  %e1 = vector.extract %r[1] : f32 from vector<8xf32>
  vector.print %e1 : f32
  %e2 = vector.extract %r[2] : f32 from vector<8xf32>
  vector.print %e2 : f32
  %e3 = vector.extract %r[3] : f32 from vector<8xf32>
  vector.print %e3 : f32
  %e4 = vector.extract %r[4] : f32 from vector<8xf32>
  vector.print %e4 : f32
  %e5 = vector.extract %r[5] : f32 from vector<8xf32>
  vector.print %e5 : f32
  %e6 = vector.extract %r[6] : f32 from vector<8xf32>
  vector.print %e6 : f32
  %e7 = vector.extract %r[7] : f32 from vector<8xf32>
  vector.print %e7 : f32
  return
}

// f16 is left to LLVM (F16C converts it in one instruction).
// CHECK-LABEL: func.func @half
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
func.func @half(%v: vector<8xf32>) -> vector<8xf16> {
  %h = arith.truncf %v : vector<8xf32> to vector<8xf16>
  return %h : vector<8xf16>
}
