// RUN: attn-opt %s -split-input-file --attn-lower-gemm=amx=true --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-lower-gemm=amx=true | attn-opt --attn-pipeline-llvm="threads=false" | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s -split-input-file --attn-lower-gemm | FileCheck %s --check-prefix=OFF
// Numbers (AMX needs the process's tile state, which only the runtime asks
// Linux for): ModelE2EWeightFormats.Bf16AmxPrefillRoundsOnlyTheInputs.

// A prefill's rows of a bf16 weight: rounded to bf16 once, on every thread;
// then per block the weight interleaved into pairs of k rows (one stack
// copy per thread), groups of 32 rows in 2 x 2 tiles of 16 x 16 f32 over k
// unrolled by 32 (64 / 32 = 2 steps of 4 tile products), the sums through a
// stack copy into the epilogue (here a bias), and the rows left over on the
// f32 kernel's 8-row tiles.
// CHECK-LABEL: func.func @bias
// CHECK: %[[ROUNDED:.*]] = memref.alloc(%{{.*}}) : memref<?x64xbf16>
// CHECK: scf.parallel
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: scf.parallel (%[[BLOCK:.*]]) =
// CHECK-DAG: %[[PAIRS:.*]] = memref.alloca() : memref<32x64xbf16>
// CHECK-DAG: %[[SUMS:.*]] = memref.alloca() : memref<32x32xf32>
// CHECK: %[[EVEN:.*]] = vector.load %arg1[%[[BLOCK]], %{{.*}}, %c0] : memref<3x64x32xbf16>, vector<16xbf16>
// CHECK: %[[ODD:.*]] = vector.load %arg1[%[[BLOCK]], %{{.*}}, %c0] : memref<3x64x32xbf16>, vector<16xbf16>
// CHECK: %[[PAIR:.*]] = vector.interleave %[[EVEN]], %[[ODD]] : vector<16xbf16> -> vector<32xbf16>
// CHECK: vector.store %[[PAIR]], %[[PAIRS]][%{{.*}}, %c0] : memref<32x64xbf16>, vector<32xbf16>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %c32 {
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: amx.tile_load %[[ROUNDED]][%[[ROW]], %c0] : memref<?x64xbf16> into !amx.tile<16x32xbf16>
// CHECK: amx.tile_load %[[PAIRS]][%c0, %c0] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf
// CHECK: amx.tile_load %[[PAIRS]][%c16, %c0] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store %[[SUMS]]
// CHECK: scf.for %[[R:.*]] = %c0 to %c32 step %c1 {
// CHECK: vector.load %[[SUMS]][%[[R]], %c0] : memref<32x32xf32>, vector<16xf32>
// CHECK: arith.addf
// CHECK: vector.store
// CHECK: scf.for %{{.*}} step %c8 {
// CHECK: vector.fma
// CHECK: memref.dealloc %[[ROUNDED]]
// The tile ops become the AMX intrinsics LLVM configures the tiles for.
// LLVM-LABEL: llvm.func @bias
// LLVM: llvm.call_intrinsic "llvm.x86.tilezero.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// Without amx=true the f32 kernel widens the bf16 weight.
// OFF-LABEL: func.func @bias
// OFF-NOT: amx.
// OFF: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// OFF-NOT: amx.
func.func @bias(%x: memref<?x64xf32>, %w: memref<3x64x32xbf16>, %b: memref<72xf32>, %out: memref<?x72xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<3x64x32xbf16>) bias(%b : memref<72xf32>) outs(%out : memref<?x72xf32>)
  return
}

// -----

// Gate and up: both weights interleaved, groups of 16 rows so that their
// 2 x 2 accumulator tiles, an input tile and a weight tile fit the 8 tile
// registers; silu(gate) * up from the two halves of the sums.
// CHECK-LABEL: func.func @swiglu
// CHECK-DAG: memref.alloca() : memref<32x64xbf16>
// CHECK-DAG: memref.alloca() : memref<32x64xbf16>
// CHECK-DAG: %[[SUMS:.*]] = memref.alloca() : memref<32x32xf32>
// CHECK: scf.for %{{.*}} step %c16 {
// CHECK-COUNT-4: amx.tile_zero
// CHECK-COUNT-8: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store %[[SUMS]]
// CHECK: scf.for %[[R:.*]] = %c0 to %c16 step %c1 {
// CHECK: %[[UP:.*]] = arith.addi %[[R]], %c16 : index
// CHECK: vector.load %[[SUMS]][%[[UP]], %c0]
// CHECK: math.exp
func.func @swiglu(%x: memref<?x64xf32>, %g: memref<2x64x32xbf16>, %u: memref<2x64x32xbf16>, %out: memref<?x64xf32>) {
  attn.gemm swiglu ins(%x, %g, %u : memref<?x64xf32>, memref<2x64x32xbf16>, memref<2x64x32xbf16>) outs(%out : memref<?x64xf32>)
  return
}

// -----

// Not for AMX: decode's one static row (memory-bound: the f32 kernel
// streams the weight with exact f32 inputs), an f32 weight, and a k that is
// not whole tiles of 32.
// CHECK-LABEL: func.func @stays_on_the_vector_kernel
// CHECK-NOT: amx.
// CHECK: return
func.func @stays_on_the_vector_kernel(%x1: memref<1x64xf32>, %w: memref<2x64x32xbf16>, %o1: memref<1x64xf32>,
                                      %x: memref<?x64xf32>, %wf: memref<2x64x32xf32>, %o: memref<?x64xf32>,
                                      %x48: memref<?x48xf32>, %w48: memref<2x48x32xbf16>) {
  attn.gemm none ins(%x1, %w : memref<1x64xf32>, memref<2x64x32xbf16>) outs(%o1 : memref<1x64xf32>)
  attn.gemm none ins(%x, %wf : memref<?x64xf32>, memref<2x64x32xf32>) outs(%o : memref<?x64xf32>)
  attn.gemm none ins(%x48, %w48 : memref<?x48xf32>, memref<2x48x32xbf16>) outs(%o : memref<?x64xf32>)
  return
}
