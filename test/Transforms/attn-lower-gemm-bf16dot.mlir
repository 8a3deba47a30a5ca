// RUN: attn-opt %s -split-input-file --attn-lower-gemm=bf16-dot=true --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-lower-gemm=bf16-dot=true | attn-opt --attn-pipeline-llvm="threads=false" | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s -split-input-file --attn-lower-gemm | FileCheck %s --check-prefix=OFF
// Numbers: PackedGemmBf16Dot in test/e2e/ops (the reference on bf16 weights
// and inputs; a wrong pair or unrounded inputs fail it).

// A prefill's rows of a bf16 weight through vdpbf16ps: rounded to bf16 once
// and stored as pairs (i32); per block, once per chunk of 8 rows or more,
// the weight interleaved into pairs of k rows on the thread's stack (as for
// AMX); then 8-row tiles over the 32 pairs of k, each row's pair broadcast
// against the block's two vectors of pairs.
// CHECK-LABEL: func.func @bias
// CHECK: %[[PAIRED:.*]] = memref.alloc(%{{.*}}) : memref<?x32xi32>
// CHECK: scf.parallel
// CHECK: %[[HALF:.*]] = arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: %[[AS_PAIRS:.*]] = vector.bitcast %[[HALF]] : vector<16xbf16> to vector<8xi32>
// CHECK: vector.store %[[AS_PAIRS]], %[[PAIRED]]
// CHECK: scf.parallel (%[[BLOCK:.*]]) =
// CHECK: %[[PAIRS:.*]] = memref.alloca() : memref<32x64xbf16>
// CHECK: %[[MANY:.*]] = arith.cmpi uge, %{{.*}}, %c8 : index
// CHECK: scf.if %[[MANY]] {
// CHECK: %[[EVEN:.*]] = vector.load %arg1[%[[BLOCK]], %{{.*}}, %c0] : memref<3x64x32xbf16>, vector<16xbf16>
// CHECK: %[[ODD:.*]] = vector.load %arg1[%[[BLOCK]], %{{.*}}, %c0] : memref<3x64x32xbf16>, vector<16xbf16>
// CHECK: vector.interleave %[[EVEN]], %[[ODD]] : vector<16xbf16> -> vector<32xbf16>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %c8 {
// CHECK: scf.for %[[KK:.*]] = %c0 to %c32 step %c4 iter_args(
// CHECK: %[[B0:.*]] = vector.load %[[PAIRS]][%[[KK]], %c0] : memref<32x64xbf16>, vector<32xbf16>
// CHECK: %[[B1:.*]] = vector.load %[[PAIRS]][%[[KK]], %c32] : memref<32x64xbf16>, vector<32xbf16>
// CHECK: %[[PAIR:.*]] = memref.load %[[PAIRED]][%[[ROW]], %[[KK]]] : memref<?x32xi32>
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[PAIR]] : i32 to vector<16xi32>
// CHECK: %[[A:.*]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<32xbf16>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %[[A]], %[[B0]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %[[A]], %[[B1]])
// CHECK-COUNT-62: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// CHECK-NOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// CHECK: scf.yield
// The epilogue (a bias), then the leftover rows one at a time, still on pairs.
// CHECK: vector.load %arg2
// CHECK: scf.for %{{.*}} step %c1 {
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// A chunk of fewer rows widens the weight as the f32 kernel does.
// CHECK: } else {
// CHECK: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK: vector.fma
// CHECK: memref.dealloc %[[PAIRED]]
// LLVM-LABEL: llvm.func @bias
// LLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// Without bf16-dot the f32 kernel widens the bf16 weight.
// OFF-LABEL: func.func @bias
// OFF-NOT: dpbf16ps
// OFF: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// OFF-NOT: dpbf16ps
// OFF: return
func.func @bias(%x: memref<?x64xf32>, %w: memref<3x64x32xbf16>, %b: memref<72xf32>, %out: memref<?x72xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<3x64x32xbf16>) bias(%b : memref<72xf32>) outs(%out : memref<?x72xf32>)
  return
}

// -----

// Decode's one row (a static M of 1), a K that is not whole vectors and an
// f32 weight stay on the vector kernel.
// CHECK-LABEL: func.func @stays_on_the_vector_kernel
// CHECK-NOT: dpbf16ps
// CHECK: return
// OFF-LABEL: func.func @stays_on_the_vector_kernel
func.func @stays_on_the_vector_kernel(%x1: memref<1x64xf32>, %w: memref<2x64x32xbf16>, %o1: memref<1x64xf32>,
                                      %x: memref<?x40xf32>, %w40: memref<2x40x32xbf16>, %o: memref<?x64xf32>,
                                      %wf: memref<2x64x32xf32>, %xf: memref<?x64xf32>) {
  attn.gemm none ins(%x1, %w : memref<1x64xf32>, memref<2x64x32xbf16>) outs(%o1 : memref<1x64xf32>)
  attn.gemm none ins(%x, %w40 : memref<?x40xf32>, memref<2x40x32xbf16>) outs(%o : memref<?x64xf32>)
  attn.gemm none ins(%xf, %wf : memref<?x64xf32>, memref<2x64x32xf32>) outs(%o : memref<?x64xf32>)
  return
}
