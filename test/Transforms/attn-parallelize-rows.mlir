// RUN: attn-opt %s -split-input-file --attn-parallelize-rows --canonicalize | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-parallelize-rows=fuse=false --canonicalize | FileCheck %s --check-prefix=UNFUSED
// Numbers: every prefill of the model e2e tests runs through it (fused
// and unfused row loops give the same logits bit for bit).

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
// CHECK-NOT: scf.parallel (%{{.*}}) = (%c0) to (%dim)
// CHECK: return
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

// -----

// An RMSNorm's four row ops (zero the sums, sum the squares, the
// reciprocal root, the scale) run as one loop over rows: each buffer one
// writes and another reads is row %r of the same view in both.
#x = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
#g = affine_map<(d0, d1) -> (d1)>
#e = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @rms_norm
// CHECK: scf.parallel (%[[R:.*]]) =
// CHECK:   %[[S0:.*]] = memref.subview %[[SUMS:.*]][%[[R]]] [1] [1]
// CHECK:   linalg.fill {{.*}} outs(%[[S0]]
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   math.rsqrt
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:   scf.reduce
// CHECK-NOT: scf.parallel
// UNFUSED-LABEL: func.func @rms_norm
// UNFUSED-COUNT-4: scf.parallel
func.func @rms_norm(%x: memref<?x64xf32>, %gamma: memref<64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %sums = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%sums : memref<?xf32>)
  linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  }
  linalg.generic {indexing_maps = [#e], iterator_types = ["parallel"]} outs(%sums : memref<?xf32>) {
  ^bb0(%s: f32):
    %root = math.rsqrt %s : f32
    linalg.yield %root : f32
  }
  linalg.generic {indexing_maps = [#x, #r, #g, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sums, %gamma : memref<?x64xf32>, memref<?xf32>, memref<64xf32>) outs(%out : memref<?x64xf32>) {
  ^bb0(%in: f32, %s: f32, %w: f32, %o: f32):
    %scaled = arith.mulf %in, %s : f32
    %y = arith.mulf %scaled, %w : f32
    linalg.yield %y : f32
  }
  memref.dealloc %sums : memref<?xf32>
  return
}

// -----

// Not fused: two function arguments may be views of one buffer (a copy
// from %x into %y, then one from %x, which could be %y's rows shifted, into
// %z); a loop that
// reads another loop's output through another view of it (row r + 1); and
// a store between two loops.
// CHECK-LABEL: func.func @kept_apart
// CHECK-COUNT-2: scf.parallel
// CHECK: memref.subview %[[T:.*]][1, 0] [%{{.*}}, 64] [1, 1]
// CHECK-COUNT-2: scf.parallel
// CHECK: memref.store
// CHECK: scf.parallel
func.func @kept_apart(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %z: memref<?x64xf32>, %u: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  linalg.copy ins(%x : memref<?x64xf32>) outs(%y : memref<?x64xf32>)
  linalg.copy ins(%x : memref<?x64xf32>) outs(%z : memref<?x64xf32>)
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %n1 = arith.addi %n, %c1 : index
  %t = memref.alloc(%n1) : memref<?x64xf32>
  %head = memref.subview %t[0, 0] [%n, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
  %next = memref.subview %t[1, 0] [%n, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: 64>>
  linalg.copy ins(%x : memref<?x64xf32>) outs(%head : memref<?x64xf32, strided<[64, 1]>>)
  %w = memref.alloc(%n) : memref<?x64xf32>
  linalg.copy ins(%next : memref<?x64xf32, strided<[64, 1], offset: 64>>) outs(%w : memref<?x64xf32>)
  memref.store %f, %u[%c0] : memref<1xf32>
  linalg.copy ins(%w : memref<?x64xf32>) outs(%z : memref<?x64xf32>)
  return
}
