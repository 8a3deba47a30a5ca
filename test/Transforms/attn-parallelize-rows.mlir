// RUN: attn-opt %s -split-input-file --attn-parallelize-rows --canonicalize | FileCheck %s
// Numbers: every prefill of the model e2e tests runs through it.

// A copy over a dynamic number of rows (a prefill's KV append) becomes an
// scf.parallel over rows of one-row copies; decode's static row stays.
// CHECK-LABEL: func.func @copies
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0 : memref<?x64xf32>
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%[[N]]) step (%c1) {
// CHECK:   %[[SRC:.*]] = memref.subview %arg0[%[[R]], 0] [1, 64] [1, 1]
// CHECK:   %[[DST:.*]] = memref.subview %arg1[%[[R]], 0] [1, 64] [1, 1]
// CHECK:   linalg.copy ins(%[[SRC]] : {{.*}}) outs(%[[DST]] : {{.*}})
// CHECK: }
// CHECK-NOT: scf.parallel
// CHECK: linalg.copy ins(%arg2 : memref<1x64xf32>) outs(%arg3 : memref<1x64xf32>)
func.func @copies(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %z: memref<1x64xf32>, %w: memref<1x64xf32>) {
  linalg.copy ins(%x : memref<?x64xf32>) outs(%y : memref<?x64xf32>)
  linalg.copy ins(%z : memref<1x64xf32>) outs(%w : memref<1x64xf32>)
  return
}

// -----

// A row reduction (a norm's sum of squares): the rows go in parallel, the
// reduction stays inside each row's op.
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sums
// CHECK: scf.parallel
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: memref<1x768xf32
func.func @row_sums(%x: memref<?x768xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x768xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// Not inside a kernel's parallel loop, and not a reduction over rows.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: scf.parallel (%{{.*}}) = (%c0) to (%dim)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
func.func @left_alone(%x: memref<?x64xf32>, %s: memref<64xf32>, %n: index) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sum = arith.addf %acc, %in : f32
    linalg.yield %sum : f32
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    linalg.copy ins(%x : memref<?x64xf32>) outs(%x : memref<?x64xf32>)
    scf.reduce
  }
  return
}
