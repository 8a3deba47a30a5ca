// The flash-attention kernel (attn.flash_attention, attn-lower-attention)
// against the linalg lowering, run in mlir-runner. A zero bias sends the
// reference through the linalg path, since the kernel takes no bias.
// Grouped-query heads (4 query heads on 2 KV heads, head_dim 32), causal and
// not; 37 queries over 37 keys (several query blocks, a partial key block),
// 20 queries after 25 cached keys, and 1 or 3 decode queries over a cache of
// which 45 of 64 rows are valid (the kernel's path for fewer rows than a
// vector). Gemma 2's softcap (1.5, below the scores' spread, so it changes
// every row) in prefill with a window and in decode, and with ALiBi (the
// cap comes first, then the slope term).
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 query-block=8" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 vector-width=8" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// Decode split into chunks of 32 keys (flash-decoding): 45 keys make two
// splits that see keys and one past kv_len that sees none.
// RUN: attn-opt %s --attn-pipeline-linalg --attn-pipeline-bufferize --attn-lower-attention="split-keys=16" --attn-pipeline-loops --attn-pipeline-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// Fewer tasks than KV heads: with decode-tasks=2 the two splits take both
// heads each, with decode-tasks=1 one task takes both heads and every key.
// RUN: attn-opt %s --attn-pipeline-linalg --attn-pipeline-bufferize --attn-lower-attention="split-keys=16 decode-tasks=2" --attn-pipeline-loops --attn-pipeline-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-pipeline-linalg --attn-pipeline-bufferize --attn-lower-attention="decode-tasks=1" --attn-pipeline-loops --attn-pipeline-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s

// CHECK: causal 37x37
// CHECK-NEXT: 1
// CHECK: full 37x37
// CHECK-NEXT: 1
// CHECK: causal 20 after 25
// CHECK-NEXT: 1
// CHECK: decode 1 over 45 of 64
// CHECK-NEXT: 1
// CHECK: decode 3 over 45 of 64
// CHECK-NEXT: 1
// CHECK: softcap window 37x37
// CHECK-NEXT: 1
// CHECK: softcap alibi 37x37
// CHECK-NEXT: 1
// CHECK: softcap decode 3 over 45 of 64
// CHECK-NEXT: 1
// CHECK: softcap alibi decode 1 over 45 of 64
// CHECK-NEXT: 1

// Deterministic values in [-scale, scale).
func.func private @values(%rows: index, %cols: index, %seed: i32, %scale: f32) -> tensor<?x?xf32> {
  %t = tensor.generate %rows, %cols {
  ^bb0(%i: index, %j: index):
    // A multiplicative hash of (i, j, seed): no structure across rows or
    // columns that could hide a wrong mask or head mapping.
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %m1 = arith.constant 1103515245 : i32
    %m2 = arith.constant 40503 : i32
    %m3 = arith.constant 1540483477 : i32
    %c13 = arith.constant 13 : i32
    %c15 = arith.constant 15 : i32
    %mask = arith.constant 65535 : i32
    %a = arith.muli %ii, %m1 : i32
    %b = arith.muli %jj, %m2 : i32
    %h0 = arith.addi %a, %b : i32
    %h1 = arith.addi %h0, %seed : i32
    %s1 = arith.shrui %h1, %c13 : i32
    %h2 = arith.xori %h1, %s1 : i32
    %h3 = arith.muli %h2, %m3 : i32
    %s2 = arith.shrui %h3, %c15 : i32
    %h4 = arith.xori %h3, %s2 : i32
    %low = arith.andi %h4, %mask : i32
    %f = arith.uitofp %low : i32 to f32
    // [0, 65535] -> [-scale, scale).
    %inv = arith.constant 3.0517578e-05 : f32
    %one = arith.constant 1.0 : f32
    %u = arith.mulf %f, %inv : f32
    %v = arith.subf %u, %one : f32
    %w = arith.mulf %v, %scale : f32
    tensor.yield %w : f32
  } : tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

// 1 when every |a - b| <= 1e-4 (and nothing is NaN), else 0.
func.func private @close(%a: tensor<?x128xf32>, %b: tensor<?x128xf32>) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %rows = tensor.dim %a, %c0 : tensor<?x128xf32>
  %true = arith.constant true
  %tol = arith.constant 1.0e-4 : f32
  %ok = scf.for %i = %c0 to %rows step %c1 iter_args(%acc = %true) -> i1 {
    %r = scf.for %j = %c0 to %c128 step %c1 iter_args(%acc2 = %acc) -> i1 {
      %x = tensor.extract %a[%i, %j] : tensor<?x128xf32>
      %y = tensor.extract %b[%i, %j] : tensor<?x128xf32>
      %d = arith.subf %x, %y : f32
      %ad = math.absf %d : f32
      %good = arith.cmpf ole, %ad, %tol : f32
      %n = arith.andi %acc2, %good : i1
      scf.yield %n : i1
    }
    scf.yield %r : i1
  }
  return %ok : i1
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c37 = arith.constant 37 : index
  %c45 = arith.constant 45 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %s0 = arith.constant 11 : i32
  %s1 = arith.constant 22 : i32
  %s2 = arith.constant 33 : i32
  // Uniform in [-2, 2]: scaled scores of std ~1.3.
  %qk = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32

  %qd = call @values(%c37, %c128, %s0, %qk) : (index, index, i32, f32) -> tensor<?x?xf32>
  %q = tensor.cast %qd : tensor<?x?xf32> to tensor<?x128xf32>
  %kd = call @values(%c64, %c64, %s1, %qk) : (index, index, i32, f32) -> tensor<?x?xf32>
  %kc = tensor.cast %kd : tensor<?x?xf32> to tensor<64x64xf32>
  %vd = call @values(%c64, %c64, %s2, %one) : (index, index, i32, f32) -> tensor<?x?xf32>
  %vc = tensor.cast %vd : tensor<?x?xf32> to tensor<64x64xf32>
  %k = tensor.extract_slice %kc[0, 0] [37, 64] [1, 1] : tensor<64x64xf32> to tensor<37x64xf32>
  %v = tensor.extract_slice %vc[0, 0] [37, 64] [1, 1] : tensor<64x64xf32> to tensor<37x64xf32>
  %kk = tensor.cast %k : tensor<37x64xf32> to tensor<?x64xf32>
  %vv = tensor.cast %v : tensor<37x64xf32> to tensor<?x64xf32>
  %bias = tensor.generate %c37, %c37 {
  ^bb0(%h: index, %i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<1x?x?xf32>

  %a0 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) causal : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %r0 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) causal bias(%bias : tensor<1x?x?xf32>) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok0 = call @close(%a0, %r0) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "causal 37x37\n"
  vector.print %ok0 : i1

  %a1 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %r1 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) bias(%bias : tensor<1x?x?xf32>) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok1 = call @close(%a1, %r1) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "full 37x37\n"
  vector.print %ok1 : i1

  // Chunked prefill: 20 new queries see the 25 keys before them and the
  // causal prefix of their own.
  %q20 = tensor.extract_slice %q[5, 0] [20, 128] [1, 1] : tensor<?x128xf32> to tensor<20x128xf32>
  %q20d = tensor.cast %q20 : tensor<20x128xf32> to tensor<?x128xf32>
  %k45 = tensor.extract_slice %kc[0, 0] [45, 64] [1, 1] : tensor<64x64xf32> to tensor<45x64xf32>
  %v45 = tensor.extract_slice %vc[0, 0] [45, 64] [1, 1] : tensor<64x64xf32> to tensor<45x64xf32>
  %k45d = tensor.cast %k45 : tensor<45x64xf32> to tensor<?x64xf32>
  %v45d = tensor.cast %v45 : tensor<45x64xf32> to tensor<?x64xf32>
  %c20 = arith.constant 20 : index
  %bias3 = tensor.generate %c20, %c45 {
  ^bb0(%h: index, %i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<1x?x?xf32>
  %a2 = attn.attention %q20d, %k45d, %v45d heads(4) kv_heads(2) causal : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %r2 = attn.attention %q20d, %k45d, %v45d heads(4) kv_heads(2) causal bias(%bias3 : tensor<1x?x?xf32>) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok2 = call @close(%a2, %r2) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "causal 20 after 25\n"
  vector.print %ok2 : i1

  // Decode over the static cache with kv_len: the kernel's few-row path
  // (2 query heads per KV head, fewer rows than a vector).
  %q1 = tensor.extract_slice %q[20, 0] [1, 128] [1, 1] : tensor<?x128xf32> to tensor<1x128xf32>
  %a3 = attn.attention %q1, %kc, %vc heads(4) kv_heads(2) causal kv_len(%c45) : tensor<1x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<1x128xf32>
  %bias1 = tensor.generate %c1, %c64 {
  ^bb0(%h: index, %i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<1x?x?xf32>
  %r3 = attn.attention %q1, %kc, %vc heads(4) kv_heads(2) causal bias(%bias1 : tensor<1x?x?xf32>) kv_len(%c45) : tensor<1x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<1x128xf32>
  %a3d = tensor.cast %a3 : tensor<1x128xf32> to tensor<?x128xf32>
  %r3d = tensor.cast %r3 : tensor<1x128xf32> to tensor<?x128xf32>
  %ok3 = call @close(%a3d, %r3d) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "decode 1 over 45 of 64\n"
  vector.print %ok3 : i1

  %q3 = tensor.extract_slice %q[10, 0] [3, 128] [1, 1] : tensor<?x128xf32> to tensor<3x128xf32>
  %a4 = attn.attention %q3, %kc, %vc heads(4) kv_heads(2) causal kv_len(%c45) : tensor<3x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<3x128xf32>
  %bias4 = tensor.generate %c3, %c64 {
  ^bb0(%h: index, %i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<1x?x?xf32>
  %r4 = attn.attention %q3, %kc, %vc heads(4) kv_heads(2) causal bias(%bias4 : tensor<1x?x?xf32>) kv_len(%c45) : tensor<3x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<3x128xf32>
  %a4d = tensor.cast %a4 : tensor<3x128xf32> to tensor<?x128xf32>
  %r4d = tensor.cast %r4 : tensor<3x128xf32> to tensor<?x128xf32>
  %ok4 = call @close(%a4d, %r4d) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "decode 3 over 45 of 64\n"
  vector.print %ok4 : i1

  %a5 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) softcap(1.5) causal window(9) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %r5 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) softcap(1.5) causal window(9) bias(%bias : tensor<1x?x?xf32>) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok5 = call @close(%a5, %r5) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "softcap window 37x37\n"
  vector.print %ok5 : i1

  %a6 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) softcap(1.5) causal alibi([0.5, 0.25, 0.125, 0.0625]) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %r6 = attn.attention %q, %kk, %vv heads(4) kv_heads(2) softcap(1.5) causal alibi([0.5, 0.25, 0.125, 0.0625]) bias(%bias : tensor<1x?x?xf32>) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  %ok6 = call @close(%a6, %r6) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "softcap alibi 37x37\n"
  vector.print %ok6 : i1

  %a7 = attn.attention %q3, %kc, %vc heads(4) kv_heads(2) softcap(1.5) causal kv_len(%c45) : tensor<3x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<3x128xf32>
  %r7 = attn.attention %q3, %kc, %vc heads(4) kv_heads(2) softcap(1.5) causal bias(%bias4 : tensor<1x?x?xf32>) kv_len(%c45) : tensor<3x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<3x128xf32>
  %a7d = tensor.cast %a7 : tensor<3x128xf32> to tensor<?x128xf32>
  %r7d = tensor.cast %r7 : tensor<3x128xf32> to tensor<?x128xf32>
  %ok7 = call @close(%a7d, %r7d) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "softcap decode 3 over 45 of 64\n"
  vector.print %ok7 : i1

  %a8 = attn.attention %q1, %kc, %vc heads(4) kv_heads(2) softcap(1.5) causal alibi([0.5, 0.25, 0.125, 0.0625]) kv_len(%c45) : tensor<1x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<1x128xf32>
  %r8 = attn.attention %q1, %kc, %vc heads(4) kv_heads(2) softcap(1.5) causal alibi([0.5, 0.25, 0.125, 0.0625]) bias(%bias1 : tensor<1x?x?xf32>) kv_len(%c45) : tensor<1x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<1x128xf32>
  %a8d = tensor.cast %a8 : tensor<1x128xf32> to tensor<?x128xf32>
  %r8d = tensor.cast %r8 : tensor<1x128xf32> to tensor<?x128xf32>
  %ok8 = call @close(%a8d, %r8d) : (tensor<?x128xf32>, tensor<?x128xf32>) -> i1
  vector.print str "softcap alibi decode 1 over 45 of 64\n"
  vector.print %ok8 : i1
  return
}
