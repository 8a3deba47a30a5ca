// attn-scope-parallel-allocas: a stack buffer in an scf.parallel body lives
// for one iteration, also where the loop runs sequentially.
// RUN: attn-opt %s --attn-scope-parallel-allocas | FileCheck %s
// A loop of 100000 iterations, each with a 64 KB stack buffer: 6.4 GB of
// stack if the buffers were not freed; run sequentially (threads=0).
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s --check-prefix=NUMBERS

// No stack buffer, or one that belongs to a nested loop's own scope: the
// outer body is left alone, the inner one scoped.
// CHECK-LABEL: func.func @nested
// CHECK: scf.parallel
// CHECK-NOT: llvm.intr.stacksave
// CHECK: scf.parallel
// CHECK-NEXT: llvm.intr.stacksave
// CHECK: llvm.intr.stackrestore
// CHECK-NOT: llvm.intr.stackrestore
func.func @nested(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      %buf = memref.alloca() : memref<4xf32>
      %v = memref.load %buf[%c0] : memref<4xf32>
      memref.store %v, %out[%j] : memref<?xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// CHECK-LABEL: func.func @scratch_per_iteration
// CHECK: scf.parallel
// CHECK-NEXT: %[[TOP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT: memref.alloca() : memref<16384xf32>
// CHECK: llvm.intr.stackrestore %[[TOP]] : !llvm.ptr
// CHECK-NEXT: scf.reduce
// NUMBERS: 100000
func.func @scratch_per_iteration(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16383 = arith.constant 16383 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %buf = memref.alloca() : memref<16384xf32>
    %one = arith.constant 1.0 : f32
    memref.store %one, %buf[%c16383] : memref<16384xf32>
    %v = memref.load %buf[%c16383] : memref<16384xf32>
    memref.store %v, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  %out = memref.alloc(%n) : memref<?xf32>
  func.call @scratch_per_iteration(%n, %out) : (index, memref<?xf32>) -> ()
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %out[%i] : memref<?xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  vector.print %sum : f32
  return
}

