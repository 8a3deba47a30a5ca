// RUN: attn-opt %s -split-input-file --attn-parallel-to-openmp --canonicalize -verify-diagnostics | FileCheck %s
// Without canonicalization, which would inline the alloca scope:
// RUN: attn-opt %s -split-input-file --attn-parallel-to-openmp -verify-diagnostics | FileCheck %s --check-prefix=SCOPE
// Numbers: every e2e model test runs through it on 2 threads.

// A 2-D loop becomes one team: thread t runs linear iterations t, t + n, ...
// (no worksharing-loop runtime call), delinearized with the last dimension
// fastest; the fixed-size scratch tile is allocated once per thread.
// CHECK-LABEL: func.func @two_d
// CHECK-SAME: (%[[OUT:.*]]: memref<?x8xf32>, %[[N:.*]]: index)
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[ROWS:.*]] = arith.maxsi %[[N]], %c0
// CHECK: %[[TOTAL:.*]] = arith.muli %[[ROWS]], %[[C4]]
// CHECK: omp.parallel {
// CHECK: %[[T:.*]] = func.call @omp_get_thread_num()
// CHECK: %[[SELF:.*]] = arith.index_cast %[[T]]
// CHECK: %[[NT:.*]] = func.call @omp_get_num_threads()
// CHECK: %[[THREADS:.*]] = arith.index_cast %[[NT]]
// CHECK: %[[TILE:.*]] = memref.alloca() : memref<16xf32>
// CHECK: scf.for %[[L:.*]] = %[[SELF]] to %[[TOTAL]] step %[[THREADS]] {
// CHECK:   %[[JJ:.*]] = arith.remsi %[[L]], %[[C4]]
// CHECK:   %[[I:.*]] = arith.divsi %[[L]], %[[C4]]
// CHECK:   %[[J:.*]] = arith.muli %[[JJ]], %c2
// CHECK:   memref.load %[[TILE]]
// CHECK:   memref.store %{{.*}}, %[[OUT]][%[[I]], %[[J]]]
// CHECK: omp.terminator
// CHECK-NOT: scf.parallel
// CHECK-NOT: omp.wsloop
func.func @two_d(%out: memref<?x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c8) step (%c1, %c2) {
    %tile = memref.alloca() : memref<16xf32>
    memref.store %f, %tile[%c0] : memref<16xf32>
    %v = memref.load %tile[%c0] : memref<16xf32>
    memref.store %v, %out[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// A loop marked attn.contiguous_schedule (a GEMV's weight blocks): thread t
// runs one contiguous range [t * ceil(n / T), min(n, (t + 1) * ceil(n / T))).
// CHECK-LABEL: func.func @contiguous
// CHECK-SAME: (%[[OUT:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK: %[[TOTAL:.*]] = arith.maxsi %[[N]], %c0
// CHECK: omp.parallel {
// CHECK: %[[SELF:.*]] = arith.index_cast
// CHECK: %[[THREADS:.*]] = arith.index_cast
// CHECK: %[[CHUNK:.*]] = arith.ceildivsi %[[TOTAL]], %[[THREADS]]
// CHECK: %[[FIRST:.*]] = arith.muli %[[SELF]], %[[CHUNK]]
// CHECK: %[[BEGIN:.*]] = arith.minsi %[[FIRST]], %[[TOTAL]]
// CHECK: %[[LAST:.*]] = arith.addi %[[BEGIN]], %[[CHUNK]]
// CHECK: %[[END:.*]] = arith.minsi %[[LAST]], %[[TOTAL]]
// CHECK: scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step %c1 {
// CHECK:   memref.store %{{.*}}, %[[OUT]][%[[I]]]
func.func @contiguous(%out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %out[%i] : memref<?xf32>
    scf.reduce
  } {attn.contiguous_schedule}
  return
}

// -----

// A stack buffer sized in the loop lives for one iteration: the body runs in
// an alloca scope. A nested scf.parallel stays on its thread.
// CHECK-LABEL: func.func @scoped
// SCOPE-LABEL: func.func @scoped
// SCOPE: omp.parallel
// SCOPE: scf.for
// SCOPE-NEXT: memref.alloca_scope
// SCOPE: memref.alloca(%{{.*}}) : memref<?xf32>
// SCOPE: scf.parallel
func.func @scoped(%out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %buf = memref.alloca(%i) : memref<?xf32>
    scf.parallel (%j) = (%c0) to (%i) step (%c1) {
      %v = memref.load %buf[%j] : memref<?xf32>
      memref.store %v, %out[%j] : memref<?xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

func.func @reduction(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'scf.parallel' op with reductions is not supported by attn-parallel-to-openmp}}
  %sum = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %one = arith.constant 1.0 : f32
    scf.reduce(%one : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %sum : f32
}
