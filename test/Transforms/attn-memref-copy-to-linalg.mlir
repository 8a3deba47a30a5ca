// RUN: attn-opt %s -split-input-file --attn-memref-copy-to-linalg | FileCheck %s

// A strided copy (which MLIR would lower to a libmlir_c_runner_utils call)
// becomes a linalg.copy the model compiles itself.
// CHECK-LABEL: func.func @strided_prefix
// CHECK-SAME: (%[[CACHE:.*]]: memref<16x8xf32>, %[[N:.*]]: index, %[[OUT:.*]]: memref<?x8xf32>)
// CHECK: %[[VIEW:.*]] = memref.subview %[[CACHE]]
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[VIEW]] : memref<?x8xf32, strided<[8, 1]>>) outs(%[[OUT]] : memref<?x8xf32>)
func.func @strided_prefix(%cache: memref<16x8xf32>, %n: index, %out: memref<?x8xf32>) {
  %view = memref.subview %cache[0, 0] [%n, 8] [1, 1] : memref<16x8xf32> to memref<?x8xf32, strided<[8, 1]>>
  memref.copy %view, %out : memref<?x8xf32, strided<[8, 1]>> to memref<?x8xf32>
  return
}
