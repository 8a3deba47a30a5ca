// RUN: attn-opt %s -split-input-file --attn-vectorize-rows="report-left=true" -verify-diagnostics --canonicalize | FileCheck %s
// RUN: echo "module {}" | not attn-opt --attn-vectorize-rows="max-lanes=0" 2>&1 | FileCheck %s --check-prefix=LANES
// LANES: error: attn-vectorize-rows: max-lanes must be positive, got 0
// Numbers: test/Pipelines/vectorize-rows-run.mlir, and every model e2e test.

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#one = affine_map<(d0) -> (d0)>

// Decode's RMSNorm, one row of 768: the sum of squares is a reassociable
// vector.reduction over the whole row, the row's scale a broadcast.
// CHECK-LABEL: func.func @norm_row
// CHECK-NOT: linalg.
// CHECK: %[[XR:.*]] = memref.subview %arg0[0, 0] [1, 768] [1, 1] : memref<1x768xf32> to memref<768xf32, strided<[1]>>
// CHECK: %[[X:.*]] = vector.load %[[XR]][%c0] : memref<768xf32, strided<[1]>>, vector<768xf32>
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : vector<768xf32>
// CHECK: vector.reduction <add>, %[[SQ]], %{{.*}} fastmath<reassoc> : vector<768xf32> into f32
// CHECK: math.sqrt %{{.*}} : vector<1xf32>
// CHECK: %[[S:.*]] = vector.broadcast %{{.*}} : f32 to vector<768xf32>
// CHECK: %[[G:.*]] = vector.load %arg2[%c0] : memref<768xf32>, vector<768xf32>
// CHECK: %[[Y:.*]] = arith.mulf %{{.*}}, %[[S]] : vector<768xf32>
// CHECK: %[[Z:.*]] = arith.mulf %[[Y]], %[[G]] : vector<768xf32>
// CHECK: %[[YR:.*]] = memref.subview %arg3[0, 0] [1, 768] [1, 1]
// CHECK: vector.store %[[Z]], %[[YR]][%c0] : memref<768xf32, strided<[1]>>, vector<768xf32>
// CHECK-NOT: linalg.
// CHECK: return
func.func @norm_row(%x: memref<1x768xf32>, %sum: memref<1xf32>, %g: memref<768xf32>, %y: memref<1x768xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<1xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<1x768xf32>) outs(%sum : memref<1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#one, #one], iterator_types = ["parallel"]}
      ins(%sum : memref<1xf32>) outs(%sum : memref<1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.divf %in, %n : f32
    %e = arith.addf %m, %eps : f32
    %r = math.sqrt %e : f32
    %i = arith.divf %one, %r : f32
    linalg.yield %i : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %g : memref<1x768xf32>, memref<1xf32>, memref<768xf32>) outs(%y : memref<1x768xf32>) {
  ^bb0(%in: f32, %s: f32, %w: f32, %out: f32):
    %a = arith.mulf %in, %s : f32
    %b = arith.mulf %a, %w : f32
    linalg.yield %b : f32
  }
  return
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// A prefill's op over a dynamic number of rows that no thread runs
// (threads=0, so attn-parallelize-rows did not split it): a loop over the
// rows of vectorized one-row ops.
// CHECK-LABEL: func.func @prefill_rows
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0 : memref<?x64xf32>
// CHECK: scf.for %[[R:.*]] = %c0 to %[[N]] step %c1 {
// CHECK:   %[[XR:.*]] = memref.subview %arg0[%[[R]], 0] [1, 64] [1, 1]
// CHECK:   %[[YR:.*]] = memref.subview %arg2[%[[R]], 0] [1, 64] [1, 1]
// CHECK:   %[[XV:.*]] = memref.subview %[[XR]][0, 0] [1, 64] [1, 1]
// CHECK:   %[[X:.*]] = vector.load %[[XV]][%c0] : {{.*}}, vector<64xf32>
// CHECK:   %[[B:.*]] = vector.load %arg1[%c0] : memref<64xf32>, vector<64xf32>
// CHECK:   %[[S:.*]] = arith.addf %[[X]], %[[B]] : vector<64xf32>
// CHECK:   %[[YV:.*]] = memref.subview %[[YR]][0, 0] [1, 64] [1, 1]
// CHECK:   vector.store %[[S]], %[[YV]][%c0] : {{.*}}, vector<64xf32>
// CHECK-NOT: linalg.
func.func @prefill_rows(%x: memref<?x64xf32>, %bias: memref<64xf32>, %y: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#rows, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : memref<?x64xf32>, memref<64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// The embedding gather loads through an index it read: no vector form.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
func.func @gather(%ids: memref<1xi32>, %table: memref<100x64xf32>, %out: memref<1x64xf32>) {
  // expected-remark @+1 {{attn-vectorize-rows: left to scalar loops: linalg's vectorizer cannot take it}}
  linalg.generic {indexing_maps = [#row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%ids : memref<1xi32>) outs(%out : memref<1x64xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = arith.index_cast %id : i32 to index
    %c = linalg.index 1 : index
    %v = memref.load %table[%i, %c] : memref<100x64xf32>
    linalg.yield %v : f32
  }
  return
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// Larger than max-lanes (16384 by default): not one vector.
// CHECK-LABEL: func.func @too_large
// CHECK: linalg.copy
func.func @too_large(%x: memref<1x32000xf32>, %y: memref<1x32000xf32>) {
  // expected-remark @+1 {{left to scalar loops: 32000 elements, more than max-lanes (16384)}}
  linalg.copy ins(%x : memref<1x32000xf32>) outs(%y : memref<1x32000xf32>)
  return
}

// -----

// A one-row matmul of an in_out weight reduces into 192 outputs at once:
// whole, it would be one vector of every product, and one output at a time
// a strided gather of a column each.
// CHECK-LABEL: func.func @contraction
// CHECK: linalg.matmul
func.func @contraction(%x: memref<1x64xf32>, %w: memref<64x192xf32>, %y: memref<1x192xf32>) {
  // expected-remark @+1 {{left to scalar loops: it reduces into 192 outputs at once (a contraction)}}
  linalg.matmul ins(%x, %w : memref<1x64xf32>, memref<64x192xf32>) outs(%y : memref<1x192xf32>)
  return
}

// -----

#x = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#y = affine_map<(m, n, k) -> (m, n)>

// An out_in weight's rows (a mixture of experts' router, 8 experts of 64
// features): a loop over the outputs, each a dot product of contiguous rows
// summed as a tree onto the output's initial value.
// CHECK-LABEL: func.func @router
// CHECK-NOT: linalg.
// CHECK: scf.for %[[E:.*]] = %c0 to %c8 step %c1 {
// CHECK:   %[[WR:.*]] = memref.subview %arg1[%[[E]], 0] [1, 64] [1, 1]
// CHECK:   %[[OUT:.*]] = memref.subview %arg2[0, %[[E]]] [1, 1] [1, 1]
// CHECK:   %[[X:.*]] = vector.load %{{.*}}[%c0] : memref<64xf32, strided<[1]>>, vector<64xf32>
// CHECK:   %[[W:.*]] = vector.load %{{.*}}[%c0] : memref<64xf32, {{.*}}>, vector<64xf32>
// CHECK:   %[[P:.*]] = arith.mulf %[[X]], %[[W]] : vector<64xf32>
// CHECK:   vector.reduction <add>, %[[P]], %{{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK:   vector.store
// CHECK-NOT: linalg.
// CHECK: return
func.func @router(%x: memref<1x64xf32>, %w: memref<8x64xf32>, %y: memref<1x8xf32>) {
  linalg.matmul indexing_maps = [#x, #w, #y]
      ins(%x, %w : memref<1x64xf32>, memref<8x64xf32>) outs(%y : memref<1x8xf32>)
  return
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// The kernels' own vector code is not lowered here (only what the pass
// vectorized): a multi_reduction that was there stays as it is.
// CHECK-LABEL: func.func @kernel_vectors
// CHECK: vector.multi_reduction <add>
// CHECK: vector.store %{{.*}} : memref<16xf32, strided<[1]>>, vector<16xf32>
func.func @kernel_vectors(%v: vector<4x8xf32>, %acc: vector<4xf32>, %x: memref<1x16xf32>, %y: memref<1x16xf32>) -> vector<4xf32> {
  %r = vector.multi_reduction <add>, %v, %acc [1] : vector<4x8xf32> to vector<4xf32>
  linalg.copy ins(%x : memref<1x16xf32>) outs(%y : memref<1x16xf32>)
  return %r : vector<4xf32>
}
