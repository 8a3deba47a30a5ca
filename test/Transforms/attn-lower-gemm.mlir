// RUN: attn-opt %s -split-input-file --attn-lower-gemm --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-lower-gemm="vector-width=8 tile-rows=4 k-unroll=2" --canonicalize --cse | FileCheck %s --check-prefix=AVX2
// Numbers: test/Pipelines/gemm-kernel-run.mlir and the PackedGemm e2e tests.

// 72 outputs in blocks of 32: two full blocks and one with 8 live lanes.
// Rows go in chunks that stay in L2 (393216 B / (64 * 4 B) = 1536 rows), the
// blocks in parallel (contiguous ranges per thread), each as 8-row register tiles (8 rows x 2 vectors = 16
// accumulators carried through a k loop unrolled by 4) and single rows.
// CHECK-LABEL: func.func @gelu_bias
// CHECK: scf.for %[[CHUNK:.*]] = %c0 to %{{.*}} step %c1536
// CHECK: scf.parallel (%[[BLOCK:.*]]) = (%c0) to (%c3) step (%c1)
// The last block: masked epilogue loads and stores of its 8 live lanes.
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %[[CHUNK]] to %{{.*}} step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: vector.load %{{.*}}[%[[BLOCK]], %{{.*}}, %c0] : memref<3x64x32xf32>, vector<16xf32>
// CHECK: vector.constant_mask [8] : vector<16xi1>
// CHECK: vector.maskedload %{{.*}} : memref<72xf32>
// CHECK: math.tanh
// CHECK: vector.maskedstore %{{.*}} : memref<?x72xf32>, vector<16xi1>, vector<16xf32>
// Single rows: 2 vectors x 4 independent chains.
// CHECK: scf.for %{{.*}} step %c4 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// Full blocks: plain stores.
// CHECK: } else {
// CHECK-NOT: vector.maskedstore
// CHECK: vector.store %{{.*}} : memref<?x72xf32>, vector<16xf32>
// Equal blocks: each thread takes one contiguous range of them.
// CHECK: } {attn.contiguous_schedule}
// CHECK-NOT: attn.gemm
// AVX2-LABEL: func.func @gelu_bias
// AVX2: scf.for %{{.*}} step %c4
// AVX2: scf.for %{{.*}} step %c2 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
func.func @gelu_bias(%x: memref<?x64xf32>, %w: memref<3x64x32xf32>, %b: memref<72xf32>, %out: memref<?x72xf32>) {
  attn.gemm gelu_tanh ins(%x, %w : memref<?x64xf32>, memref<3x64x32xf32>) bias(%b : memref<72xf32>) outs(%out : memref<?x72xf32>)
  return
}

// -----

// SwiGLU reads both weights in one k loop (two accumulator sets) and stores
// silu(gate) * up + residual. Blocks of 8 lanes narrow the vectors to 8.
// CHECK-LABEL: func.func @swiglu_residual
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-DAG: vector.load %[[G:.*]][%{{.*}}, %{{.*}}, %c0] : memref<2x16x8xf32>, vector<8xf32>
// CHECK-DAG: vector.load %[[U:.*]][%{{.*}}, %{{.*}}, %c0] : memref<2x16x8xf32>, vector<8xf32>
// CHECK: math.exp
// CHECK: vector.load %{{.*}} : memref<?x16xf32>, vector<8xf32>
// CHECK: arith.addf
// CHECK: vector.store
func.func @swiglu_residual(%x: memref<?x16xf32>, %g: memref<2x16x8xf32>, %u: memref<2x16x8xf32>, %r: memref<?x16xf32>, %out: memref<?x16xf32>) {
  attn.gemm swiglu ins(%x, %g, %u : memref<?x16xf32>, memref<2x16x8xf32>, memref<2x16x8xf32>) residual(%r : memref<?x16xf32>) outs(%out : memref<?x16xf32>)
  return
}

// -----

// gpt-oss's clamped SwiGLU: the up bias (bias2) after the up product, the
// gate capped at the limit, the up clamped on both sides, then
// g / (1 + e^(-alpha g)) * (u + 1).
// CHECK-LABEL: func.func @clamped_swiglu
// CHECK-DAG: %[[LIMIT:.*]] = arith.constant dense<7.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[NEGLIMIT:.*]] = arith.constant dense<-7.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[NEGALPHA:.*]] = arith.constant dense<-1.702000e+00> : vector<8xf32>
// CHECK: vector.load %{{.*}} : memref<16xf32>, vector<8xf32>
// CHECK: %[[G:.*]] = arith.minimumf %{{.*}}, %[[LIMIT]] : vector<8xf32>
// CHECK: %[[U:.*]] = arith.minimumf %{{.*}}, %[[LIMIT]] : vector<8xf32>
// CHECK: arith.maximumf %[[U]], %[[NEGLIMIT]] : vector<8xf32>
// CHECK: arith.mulf %[[G]], %[[NEGALPHA]] : vector<8xf32>
// CHECK: math.exp
// CHECK: arith.divf %[[G]]
func.func @clamped_swiglu(%x: memref<?x16xf32>, %g: memref<2x16x8xf32>, %u: memref<2x16x8xf32>, %b: memref<16xf32>, %out: memref<?x16xf32>) {
  attn.gemm clamped_swiglu ins(%x, %g, %u : memref<?x16xf32>, memref<2x16x8xf32>, memref<2x16x8xf32>) bias(%b : memref<16xf32>) bias2(%b : memref<16xf32>) alpha(1.702) limit(7.0) outs(%out : memref<?x16xf32>)
  return
}

// -----

// GeGLU reads both weights like SwiGLU and stores gelu(gate) * up; ReLU is
// a maximum with zero.
// CHECK-LABEL: func.func @geglu_and_relu
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: math.tanh
// CHECK-NOT: math.exp
// CHECK: vector.store
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
func.func @geglu_and_relu(%x: memref<?x16xf32>, %g: memref<2x16x8xf32>, %u: memref<2x16x8xf32>, %out: memref<?x16xf32>) {
  attn.gemm geglu_tanh ins(%x, %g, %u : memref<?x16xf32>, memref<2x16x8xf32>, memref<2x16x8xf32>) outs(%out : memref<?x16xf32>)
  attn.gemm relu ins(%x, %g : memref<?x16xf32>, memref<2x16x8xf32>) outs(%out : memref<?x16xf32>)
  return
}

// -----

// A bf16 weight: each weight vector is loaded as bf16 and widened to f32
// before the FMA (half the bytes streamed; products and sums stay f32).
// The one-row tile prefetches 4096 B / 64 B = 64 k rows ahead, from the
// next block once past this one's end (the last block's last row at most);
// a row of 32 bf16 is one cache line.
// CHECK-LABEL: func.func @bf16_weight
// CHECK-NOT: memref.alloca
// CHECK: scf.for %{{.*}} step %c4 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: %[[AHEAD:.*]] = arith.addi %{{.*}}, %c64
// CHECK: %[[NEXT:.*]] = arith.divui %[[AHEAD]], %c64
// CHECK: %[[BLK:.*]] = arith.addi %{{.*}}, %[[NEXT]]
// CHECK: %[[PAST:.*]] = arith.cmpi ugt, %[[BLK]], %c1
// CHECK: %[[ROW:.*]] = arith.remui %[[AHEAD]], %c64
// CHECK: arith.select %[[PAST]], %c63, %[[ROW]]
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}, %c0], read, locality<3>, data : memref<2x64x32xbf16>
// CHECK-NOT: memref.prefetch
// CHECK: %[[W:.*]] = vector.load %{{.*}} : memref<2x64x32xbf16>, vector<16xbf16>
// CHECK: %[[WF:.*]] = arith.extf %[[W]] : vector<16xbf16> to vector<16xf32>
// CHECK: vector.fma %{{.*}}, %[[WF]], %{{.*}} : vector<16xf32>
// CHECK-NOT: attn.gemm
// With 8 lanes (AVX2's 4-row tiles) a chunk of 16 rows or more first widens
// the block to f32 on the stack once; its tiles then load f32. Fewer rows
// (decode) widen in the tile.
// AVX2-LABEL: func.func @bf16_weight
// AVX2: %[[MANY:.*]] = arith.cmpi uge, %{{.*}}, %c16 : index
// AVX2: %[[COPY:.*]] = memref.alloca() : memref<1x64x32xf32>
// AVX2: scf.if %[[MANY]] {
// AVX2: %[[BITS:.*]] = vector.load %{{.*}} : memref<2x64x32xbf16>, vector<8xbf16>
// AVX2-NEXT: %[[WIDE:.*]] = arith.extf %[[BITS]] : vector<8xbf16> to vector<8xf32>
// AVX2-NEXT: vector.store %[[WIDE]], %[[COPY]][%c0, %{{.*}}, %c0] : memref<1x64x32xf32>, vector<8xf32>
// AVX2: vector.load %[[COPY]][%c0, %{{.*}}, %c0] : memref<1x64x32xf32>, vector<8xf32>
// AVX2: } else {
// AVX2-NOT: %[[COPY]]
// AVX2: vector.load %{{.*}} : memref<2x64x32xbf16>, vector<8xbf16>
func.func @bf16_weight(%x: memref<?x64xf32>, %w: memref<2x64x32xbf16>, %out: memref<?x64xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<2x64x32xbf16>) outs(%out : memref<?x64xf32>)
  return
}


// -----

// A layer norm on the input of an f32 kernel, which reads its rows as they
// are: each row is normalized into a copy first (mean, then the variance
// about it, in vectors and then the 5 features past them: 37 = 2 x 16 + 5),
// and the tiles read the copy.
// CHECK-LABEL: func.func @layer_norm_f32
// CHECK-SAME: (%[[X:[^:]*]]: memref<1x37xf32>, %{{[^:]*}}: memref<2x37x32xf32>, %[[G:[^:]*]]: memref<37xf32>, %[[B:[^:]*]]: memref<37xf32>
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<1x37xf32>
// CHECK: vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// CHECK: memref.load %[[X]][%c0, %c36]
// CHECK: %[[MEAN:.*]] = arith.divf %{{.*}}, %[[COUNT:.*]] : f32
// CHECK: arith.subf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// CHECK: arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK: %[[VAR:.*]] = arith.divf %{{.*}}, %[[COUNT]] : f32
// CHECK: %[[EPS:.*]] = arith.addf %[[VAR]], %{{.*}} : f32
// CHECK: %[[ROOT:.*]] = math.sqrt %[[EPS]] : f32
// CHECK: %[[RSTD:.*]] = arith.divf %{{.*}}, %[[ROOT]] : f32
// CHECK: vector.load %[[G]][%{{.*}}] : memref<37xf32>, vector<16xf32>
// CHECK: vector.load %[[B]][%{{.*}}] : memref<37xf32>, vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[COPY]]
// CHECK: memref.load %[[G]][%c36] : memref<37xf32>
// CHECK: memref.store %{{.*}}, %[[COPY]][%c0, %c36]
// CHECK: memref.load %[[COPY]]
// CHECK: memref.dealloc %[[COPY]]
func.func @layer_norm_f32(%x: memref<1x37xf32>, %w: memref<2x37x32xf32>, %g: memref<37xf32>, %b: memref<37xf32>, %out: memref<1x64xf32>) {
  attn.gemm none ins(%x, %w : memref<1x37xf32>, memref<2x37x32xf32>) layer_norm(%g, %b : memref<37xf32>, memref<37xf32>) epsilon(1.0e-05) outs(%out : memref<1x64xf32>)
  return
}
