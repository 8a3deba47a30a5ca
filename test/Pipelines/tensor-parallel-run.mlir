// The tensor-parallel ops through the whole pipeline, run in mlir-runner.
// The collectives they lower to are defined here as those of rank 1 of 2
// whose peer's partial results are its own plus 10 (the runtime's hooks
// stand in their place in a library, see ModelAbi.cpp):
//   all_reduce: x + (x + 10)           = 2x + 10
//   all_gather: [x of rank 0 = x - 10, x of rank 1 = x], rank-major
//   group_rank: 1
// so a swapped or transposed gather, a missing call or a wrong shard offset
// prints other numbers.
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s

func.func @attn_collective_all_reduce(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %ten = arith.constant 10.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %peer = arith.addf %v, %ten : f32
    %sum = arith.addf %v, %peer : f32
    memref.store %sum, %x[%i] : memref<?xf32>
  }
  return
}

func.func @attn_collective_all_gather(%x: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %ten = arith.constant 10.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %r0 = arith.subf %v, %ten : f32
    memref.store %r0, %out[%i] : memref<?xf32>
    %j = arith.addi %i, %n : index
    memref.store %v, %out[%j] : memref<?xf32>
  }
  return
}

func.func @attn_collective_rank() -> i64 {
  %one = arith.constant 1 : i64
  return %one : i64
}

func.func @split(%x: tensor<3x4xf32>, %table: tensor<3x4xf32>, %ids: tensor<4xi32>)
    -> (tensor<3x4xf32>, tensor<3x8xf32>, tensor<4x4xf32>) {
  %sum = attn.all_reduce %x ranks(2) : tensor<3x4xf32>
  %all = attn.all_gather %x ranks(2) : tensor<3x4xf32> -> tensor<3x8xf32>
  // This rank's shard: rows 3, 4, 5 of a 6-row table.
  %rank = attn.group_rank ranks(2) : index
  %c3 = arith.constant 3 : index
  %first = arith.muli %rank, %c3 : index
  %e = attn.embedding %table[%ids] offset(%first) : tensor<3x4xf32>, tensor<4xi32> -> tensor<4x4xf32>
  return %sum, %all, %e : tensor<3x4xf32>, tensor<3x8xf32>, tensor<4x4xf32>
}

// Prints row %r of %t, one number per line.
func.func @print_row(%t: tensor<?x?xf32>, %r: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %t, %c1 : tensor<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = tensor.extract %t[%r, %i] : tensor<?x?xf32>
    vector.print %v : f32
  }
  vector.print str "--\n"
  return
}

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>
  %table = arith.constant dense<[[0.5, 0.25, 0.125, 1.0], [-1.0, -2.0, -3.0, -4.0], [7.0, 8.0, 9.0, 6.0]]> : tensor<3x4xf32>
  %ids = arith.constant dense<[2, 3, 5, 6]> : tensor<4xi32>
  %sum, %all, %e = call @split(%x, %table, %ids)
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4xi32>) -> (tensor<3x4xf32>, tensor<3x8xf32>, tensor<4x4xf32>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %sumd = tensor.cast %sum : tensor<3x4xf32> to tensor<?x?xf32>
  %alld = tensor.cast %all : tensor<3x8xf32> to tensor<?x?xf32>
  %ed = tensor.cast %e : tensor<4x4xf32> to tensor<?x?xf32>
  // Row 1: 2 x + 10.
  // CHECK: 20
  // CHECK-NEXT: 22
  // CHECK-NEXT: 24
  // CHECK-NEXT: 26
  // CHECK-NEXT: --
  call @print_row(%sumd, %c1) : (tensor<?x?xf32>, index) -> ()
  // Row 0 of rank 0 (x - 10), then of rank 1 (x).
  // CHECK-NEXT: -9
  // CHECK-NEXT: -8
  // CHECK-NEXT: -7
  // CHECK-NEXT: -6
  // CHECK-NEXT: 1
  // CHECK-NEXT: 2
  // CHECK-NEXT: 3
  // CHECK-NEXT: 4
  // CHECK-NEXT: --
  call @print_row(%alld, %c0) : (tensor<?x?xf32>, index) -> ()
  // CHECK-NEXT: -1
  // CHECK-NEXT: 0
  // CHECK-NEXT: 1
  // CHECK-NEXT: 2
  // CHECK-NEXT: 9
  // CHECK-NEXT: 10
  // CHECK-NEXT: 11
  // CHECK-NEXT: 12
  // CHECK-NEXT: --
  call @print_row(%alld, %c2) : (tensor<?x?xf32>, index) -> ()
  // Ids 2 and 6 are other ranks': zeros; 3 and 5 are this shard's rows 0
  // and 2.
  // CHECK-NEXT: 0
  // CHECK-NEXT: 0
  // CHECK-NEXT: 0
  // CHECK-NEXT: 0
  // CHECK-NEXT: --
  // CHECK-NEXT: 0.5
  // CHECK-NEXT: 0.25
  // CHECK-NEXT: 0.125
  // CHECK-NEXT: 1
  // CHECK-NEXT: --
  // CHECK-NEXT: 7
  // CHECK-NEXT: 8
  // CHECK-NEXT: 9
  // CHECK-NEXT: 6
  // CHECK-NEXT: --
  // CHECK-NEXT: 0
  // CHECK-NEXT: 0
  // CHECK-NEXT: 0
  // CHECK-NEXT: 0
  // CHECK-NEXT: --
  call @print_row(%ed, %c0) : (tensor<?x?xf32>, index) -> ()
  call @print_row(%ed, %c1) : (tensor<?x?xf32>, index) -> ()
  call @print_row(%ed, %c2) : (tensor<?x?xf32>, index) -> ()
  call @print_row(%ed, %c3) : (tensor<?x?xf32>, index) -> ()
  return
}
