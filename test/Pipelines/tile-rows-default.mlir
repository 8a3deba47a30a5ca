// The pipeline's gemm register tile follows the vector width unless
// tile-rows says otherwise: 8 rows with AVX-512's 16 lanes (32 registers),
// 4 with AVX2's 8 (16 registers, which 8 rows of accumulators spill).
// RUN: attn-opt %s --attn-pipeline-loops="vector-width=16" | FileCheck %s --check-prefix=WIDE
// RUN: attn-opt %s --attn-pipeline-loops="vector-width=8" | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s --attn-pipeline-loops="vector-width=8 tile-rows=3" | FileCheck %s --check-prefix=SET

// WIDE-LABEL: func.func @gemm
// WIDE: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8 {
// WIDE: scf.for {{.*}} -> (vector<16xf32>,
// AVX2-LABEL: func.func @gemm
// AVX2: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4 {
// AVX2: scf.for {{.*}} -> (vector<8xf32>,
// SET: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c3 {
func.func @gemm(%x: memref<?x64xf32>, %w: memref<2x64x32xf32>, %out: memref<?x64xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<2x64x32xf32>) outs(%out : memref<?x64xf32>)
  return
}
