// attn.attention_probabilities against the attention kernels, run in
// mlir-runner. With one-hot values (value row j is e_j in every KV head's
// 32 features) attention's output column h * 32 + j is the weight query i
// gives key j, so the fused online softmax checks the materialized one:
// grouped-query heads (4 on 2), causal, a sliding window of 5, ALiBi, and
// 3 queries over 24 keys of which 17 are valid (kv_len). Every row sums to
// 1 and every masked key gets exactly 0.
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 attention-kernel=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s

// CHECK: causal
// CHECK-NEXT: 1
// CHECK: window 5
// CHECK-NEXT: 1
// CHECK: alibi
// CHECK-NEXT: 1
// CHECK: 3 queries over 17 of 24 keys
// CHECK-NEXT: 1

// Deterministic values in [-scale, scale) from a hash of (i, j, seed).
func.func private @values(%rows: index, %cols: index, %seed: i32, %scale: f32) -> tensor<?x?xf32> {
  %t = tensor.generate %rows, %cols {
  ^bb0(%i: index, %j: index):
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %m1 = arith.constant 1103515245 : i32
    %m2 = arith.constant 40503 : i32
    %m3 = arith.constant 1540483477 : i32
    %c13 = arith.constant 13 : i32
    %mask = arith.constant 65535 : i32
    %a = arith.muli %ii, %m1 : i32
    %b = arith.muli %jj, %m2 : i32
    %h0 = arith.addi %a, %b : i32
    %h1 = arith.addi %h0, %seed : i32
    %s1 = arith.shrui %h1, %c13 : i32
    %h2 = arith.xori %h1, %s1 : i32
    %h3 = arith.muli %h2, %m3 : i32
    %low = arith.andi %h3, %mask : i32
    %f = arith.uitofp %low : i32 to f32
    %inv = arith.constant 3.0517578e-05 : f32
    %one = arith.constant 1.0 : f32
    %u = arith.mulf %f, %inv : f32
    %v = arith.subf %u, %one : f32
    %w = arith.mulf %v, %scale : f32
    tensor.yield %w : f32
  } : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

// 1 when p[h, i, j] matches out[i, 32 h + j] within 1e-5 for every key j,
// is exactly 0 for j >= valid, and each row sums to 1 within 1e-5.
func.func private @check(%p: tensor<4x?x?xf32>, %out: tensor<?x128xf32>, %valid: index) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %rows = tensor.dim %p, %c1 : tensor<4x?x?xf32>
  %keys = tensor.dim %p, %c2 : tensor<4x?x?xf32>
  %true = arith.constant true
  %tol = arith.constant 1.0e-5 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ok = scf.for %h = %c0 to %c4 step %c1 iter_args(%acc = %true) -> i1 {
    %col0 = arith.muli %h, %c32 : index
    %rh = scf.for %i = %c0 to %rows step %c1 iter_args(%acc1 = %acc) -> i1 {
      %res:2 = scf.for %j = %c0 to %keys step %c1 iter_args(%acc2 = %acc1, %sum = %zero) -> (i1, f32) {
        %x = tensor.extract %p[%h, %i, %j] : tensor<4x?x?xf32>
        %inside = arith.cmpi ult, %j, %valid : index
        %good = scf.if %inside -> i1 {
          %col = arith.addi %col0, %j : index
          %y = tensor.extract %out[%i, %col] : tensor<?x128xf32>
          %d = arith.subf %x, %y : f32
          %ad = math.absf %d : f32
          %close = arith.cmpf ole, %ad, %tol : f32
          scf.yield %close : i1
        } else {
          %isZero = arith.cmpf oeq, %x, %zero : f32
          scf.yield %isZero : i1
        }
        %n = arith.andi %acc2, %good : i1
        %s = arith.addf %sum, %x : f32
        scf.yield %n, %s : i1, f32
      }
      %e = arith.subf %res#1, %one : f32
      %ae = math.absf %e : f32
      %sumOk = arith.cmpf ole, %ae, %tol : f32
      %r = arith.andi %res#0, %sumOk : i1
      scf.yield %r : i1
    }
    scf.yield %rh : i1
  }
  return %ok : i1
}

func.func @main() {
  %c3 = arith.constant 3 : index
  %c20 = arith.constant 20 : index
  %c24 = arith.constant 24 : index
  %c128 = arith.constant 128 : index
  %c64 = arith.constant 64 : index
  %c17 = arith.constant 17 : index
  %s0 = arith.constant 11 : i32
  %s1 = arith.constant 22 : i32
  %scale = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32

  %qd = call @values(%c20, %c128, %s0, %scale) : (index, index, i32, f32) -> tensor<?x?xf32>
  %q = tensor.cast %qd : tensor<?x?xf32> to tensor<?x128xf32>
  %kd = call @values(%c24, %c64, %s1, %scale) : (index, index, i32, f32) -> tensor<?x?xf32>
  %k24 = tensor.cast %kd : tensor<?x?xf32> to tensor<?x64xf32>
  // Value row j: 1 at feature j of each KV head, else 0.
  %v24 = tensor.generate %c24 {
  ^bb0(%j: index, %f: index):
    %c32 = arith.constant 32 : index
    %lane = arith.remui %f, %c32 : index
    %hit = arith.cmpi eq, %lane, %j : index
    %x = arith.select %hit, %one, %zero : f32
    tensor.yield %x : f32
  } : tensor<?x64xf32>
  %k = tensor.extract_slice %k24[0, 0] [%c20, 64] [1, 1] : tensor<?x64xf32> to tensor<?x64xf32>
  %v = tensor.extract_slice %v24[0, 0] [%c20, 64] [1, 1] : tensor<?x64xf32> to tensor<?x64xf32>

  %p0 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) causal : tensor<?x128xf32>, tensor<?x64xf32> -> tensor<4x?x?xf32>
  %a0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok0 = call @check(%p0, %a0, %c20) : (tensor<4x?x?xf32>, tensor<?x128xf32>, index) -> i1
  vector.print str "causal\n"
  vector.print %ok0 : i1

  %p1 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) causal window(5) : tensor<?x128xf32>, tensor<?x64xf32> -> tensor<4x?x?xf32>
  %a1 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal window(5) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok1 = call @check(%p1, %a1, %c20) : (tensor<4x?x?xf32>, tensor<?x128xf32>, index) -> i1
  vector.print str "window 5\n"
  vector.print %ok1 : i1

  %p2 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) causal alibi([0.5, 0.25, 0.125, 0.0625]) : tensor<?x128xf32>, tensor<?x64xf32> -> tensor<4x?x?xf32>
  %a2 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal alibi([0.5, 0.25, 0.125, 0.0625]) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok2 = call @check(%p2, %a2, %c20) : (tensor<4x?x?xf32>, tensor<?x128xf32>, index) -> i1
  vector.print str "alibi\n"
  vector.print %ok2 : i1

  // Three queries at positions 14, 15, 16 over the 17 valid of 24 keys.
  %q3 = tensor.extract_slice %q[0, 0] [%c3, 128] [1, 1] : tensor<?x128xf32> to tensor<?x128xf32>
  %p3 = attn.attention_probabilities %q3, %k24 heads(4) kv_heads(2) causal kv_len(%c17) : tensor<?x128xf32>, tensor<?x64xf32> -> tensor<4x?x?xf32>
  %a3 = attn.attention %q3, %k24, %v24 heads(4) kv_heads(2) causal kv_len(%c17) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok3 = call @check(%p3, %a3, %c17) : (tensor<4x?x?xf32>, tensor<?x128xf32>, index) -> i1
  vector.print str "3 queries over 17 of 24 keys\n"
  vector.print %ok3 : i1
  return
}
