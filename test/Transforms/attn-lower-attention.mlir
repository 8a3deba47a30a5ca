// RUN: attn-opt %s -split-input-file --attn-lower-attention --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-lower-attention="vector-width=8 block-rows=16" --canonicalize --cse | FileCheck %s --check-prefix=SMALL
// RUN: attn-opt %s -split-input-file --attn-lower-attention="fast-exp=0" --canonicalize --cse | FileCheck %s --check-prefix=LIBM
// Numbers: test/Pipelines/attention-kernel-run.mlir and the e2e attention
// tests (kernel_* variants).

// Prefill, 4 query heads on 2 KV heads, head_dim 32: threads take (KV head,
// block of 32 positions x 2 heads = 64 rows). Per block, scratch in L1: the
// scaled queries transposed [d, rows], the output accumulators, running max
// and sum, one key block of scores [keys, rows], each row's last visible key.
// CHECK-LABEL: func.func @prefill
// CHECK: scf.parallel (%[[KVH:.*]], %[[BLOCK:.*]]) = (%c0, %c0) to (%c2, %{{.*}}) step (%c1, %c1)
// CHECK-DAG: memref.alloca() : memref<32x64xf32>
// CHECK-DAG: memref.alloca() : memref<64x32xf32>
// CHECK-DAG: memref.alloca() : memref<64xi32>
// Causal: key blocks stop at the diagonal of the block's last position.
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK: scf.for %{{.*}} = %c0 to %[[END]] step %c32
// Scores: 8 keys x 2 row vectors of accumulators over head_dim.
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(
// CHECK-COUNT-16: vector.fma
// Online softmax down the lanes. A full key block wholly at or before the
// block's first position needs no mask; the others compare key positions
// with each row's last visible one.
// CHECK: %[[FULL:.*]] = arith.cmpi eq, %{{.*}}, %c32 : index
// CHECK: %[[BELOW:.*]] = arith.cmpi sle, %{{.*}}, %{{.*}} : index
// CHECK: %[[UNMASKED:.*]] = arith.andi %[[FULL]], %[[BELOW]] : i1
// exp(x) for x <= 0 inline: clamp at -87, n = round(x log2(e)),
// r = x - n ln(2) in two steps, e^r by a degree-7 polynomial, 2^n written
// into the exponent bits.
// CHECK: scf.if %[[UNMASKED]] {
// CHECK-NOT: arith.cmpi sle, %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: arith.maximumf %{{.*}}, %[[CLAMP:.*]] : vector<16xf32>
// CHECK-COUNT-10: vector.fma
// CHECK: arith.bitcast %{{.*}} : vector<16xf32> to vector<16xi32>
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: } else {
// CHECK: arith.cmpi sle, %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: arith.shli
// CHECK: }
// CHECK-NOT: math.exp
// LIBM-LABEL: func.func @prefill
// LIBM: scf.if
// LIBM: math.exp %{{.*}} : vector<16xf32>
// LIBM: } else {
// LIBM: math.exp %{{.*}} : vector<16xf32>
// P V into the output accumulators, then out = O / l.
// CHECK: vector.fma
// CHECK: arith.divf
// CHECK: vector.store %{{.*}}, %arg3[
// CHECK-NOT: attn.flash_attention
// SMALL-LABEL: func.func @prefill
// SMALL: scf.parallel
// SMALL-DAG: memref.alloca() : memref<32x16xf32>
// SMALL-DAG: memref.alloca() : memref<16x32xf32>
// SMALL: vector<8xf32>
func.func @prefill(%q: memref<?x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %out: memref<?x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.176776692) causal ins(%q, %k, %v : memref<?x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<?x128xf32>)
  return
}

// -----

// Decode: one position's 2 rows per KV head are fewer than a vector; dot
// products run along head_dim and the softmax across lanes. About 16 tasks
// of (group of KV heads, split of the keys): splits = clamp(ceil(keys /
// 256), 1, 16), groups = clamp(ceil(16 / splits), 1, 2) of ceil(2 / groups)
// heads; a second loop combines the splits' partial maxima, sums and
// outputs. A task keeps each of its heads' state in views of one scratch
// and, per key block, visits every head (reading whole KV rows), each first
// prefetching its lines of the next block.
// CHECK-LABEL: func.func @decode
// CHECK: %[[WANTED:.*]] = arith.ceildivui %[[KV:.*]], %c256
// CHECK: %[[CAP:.*]] = arith.minsi %[[WANTED]], %c16
// CHECK: %[[SPLITS:.*]] = arith.maxsi %[[CAP]], %c1
// CHECK: %[[WANTGROUPS:.*]] = arith.ceildivui %c16, %[[SPLITS]]
// CHECK: %[[CAPGROUPS:.*]] = arith.minsi %[[WANTGROUPS]], %c2
// CHECK: %[[SOMEGROUPS:.*]] = arith.maxsi %[[CAPGROUPS]], %c1
// CHECK: %[[PERGROUP:.*]] = arith.ceildivui %c2, %[[SOMEGROUPS]]
// CHECK: %[[GROUPS:.*]] = arith.ceildivui %c2, %[[PERGROUP]]
// CHECK: %[[OUTS:.*]] = memref.alloc() : memref<2x16x2x32xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%[[GROUPS]], %[[SPLITS]]) step (%c1, %c1)
// CHECK: memref.subview %{{.*}}[%{{.*}}, 0] [2, 32] [1, 1] : memref<4x32xf32> to memref<2x32xf32, strided<[32, 1], offset: ?>>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: memref.prefetch %arg1[%{{.*}}, %{{.*}}], read, locality<3>, data : memref<?x64xf32>
// CHECK: memref.prefetch %arg2[%{{.*}}, %{{.*}}], read, locality<3>, data : memref<?x64xf32>
// CHECK: vector.reduction <add>
// CHECK: vector.reduction <maximumf>
// CHECK: arith.shli %{{.*}} : vector<16xi32>
// CHECK: vector.store %{{.*}}, %[[OUTS]]
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2) step (%c1)
// CHECK: scf.for %{{.*}} = %c0 to %[[SPLITS]] step %c1
// CHECK: arith.maximumf
// CHECK: vector.store %{{.*}}, %arg3[
// CHECK: memref.dealloc %[[OUTS]]
// CHECK-NOT: attn.flash_attention
func.func @decode(%q: memref<1x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %out: memref<1x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.176776692) causal ins(%q, %k, %v : memref<1x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<1x128xf32>)
  return
}

// -----

// Gemma 2's softcap: each block of scores is capped in registers, after the
// dot products and before it is stored for the online softmax (prefill),
// and as the decode kernel reads its scores: s / c, tanh, * c.
// CHECK-LABEL: func.func @softcap_prefill
// CHECK: %[[CAP:.*]] = arith.constant dense<5.000000e+01> : vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(
// CHECK: %[[DIV:.*]] = arith.divf %{{.*}}, %[[CAP]] : vector<16xf32>
// CHECK: %[[TANH:.*]] = math.tanh %[[DIV]] : vector<16xf32>
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[TANH]], %[[CAP]] : vector<16xf32>
// CHECK: vector.store %[[CAPPED]]
func.func @softcap_prefill(%q: memref<?x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %out: memref<?x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.0625) softcap(50.0) causal ins(%q, %k, %v : memref<?x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<?x128xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @softcap_decode
// CHECK: math.tanh %{{.*}} : vector<16xf32>
func.func @softcap_decode(%q: memref<1x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %out: memref<1x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.0625) softcap(50.0) causal ins(%q, %k, %v : memref<1x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<1x128xf32>)
  return
}

// -----

// A head_dim of 20 takes vectors of 4 lanes.
// CHECK-LABEL: func.func @odd_head_dim
// CHECK: vector<4xf32>
// CHECK-NOT: vector<16xf32>
func.func @odd_head_dim(%q: memref<?x40xf32>, %k: memref<?x40xf32>, %v: memref<?x40xf32>, %out: memref<?x40xf32>) {
  attn.flash_attention heads(2) kv_heads(2) scale(0.22) ins(%q, %k, %v : memref<?x40xf32>, memref<?x40xf32>, memref<?x40xf32>) outs(%out : memref<?x40xf32>)
  return
}

// -----

// With 16 KV heads, a cache of fewer than 256 keys is one split and 16
// groups of one head; a longer one is split by keys and its groups take
// more heads each (all 16 from 16 splits on).
// CHECK-LABEL: func.func @decode_many_heads
// CHECK: %[[SPLITS:.*]] = arith.maxsi %{{.*}}, %c1 : index
// CHECK: %[[WANTGROUPS:.*]] = arith.ceildivui %c16, %[[SPLITS]]
// CHECK: arith.minsi %[[WANTGROUPS]], %c16
// CHECK: memref.alloc() : memref<16x16x1x64xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%{{.*}}, %[[SPLITS]]) step (%c1, %c1)
func.func @decode_many_heads(%q: memref<1x1024xf32>, %k: memref<?x1024xf32>, %v: memref<?x1024xf32>, %out: memref<1x1024xf32>) {
  attn.flash_attention heads(16) kv_heads(16) scale(0.125) causal ins(%q, %k, %v : memref<1x1024xf32>, memref<?x1024xf32>, memref<?x1024xf32>) outs(%out : memref<1x1024xf32>)
  return
}

// -----

// A window: each block's key loop starts at its first row's window,
// max(0, first position + kv_len - seq_q - 99), and the masked softmax also
// tests key >= row position - 99. ALiBi: each row's slope comes from a
// constant of all heads' slopes; the score tiles start from
// slope * float(key - position) instead of zero.
// CHECK-LABEL: func.func @prefill_window_alibi
// CHECK-DAG: %[[C99:.*]] = arith.constant 99 : index
// CHECK-DAG: %[[SLOPES:.*]] = arith.constant dense<[2.500000e-01, 6.250000e-02, 1.562500e-02, 3.906250e-03]> : vector<4xf32>
// CHECK: vector.extract %[[SLOPES]][%{{.*}}] : f32 from vector<4xf32>
// CHECK: %[[FIRST:.*]] = arith.subi %{{.*}}, %[[C99]] : index
// CHECK: %[[BEGIN:.*]] = arith.maxsi %[[FIRST]], %c0 : index
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %{{.*}} step %c32
// CHECK: %[[D:.*]] = arith.subi %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: %[[DF:.*]] = arith.sitofp %[[D]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[BIAS:.*]] = arith.mulf %{{.*}}, %[[DF]] : vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %[[BIAS]],
// CHECK: arith.cmpi sge, %{{.*}}, %{{.*}} : vector<16xi32>
func.func @prefill_window_alibi(%q: memref<?x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %out: memref<?x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.17677669) causal window(100) alibi([0.25, 0.0625, 0.015625, 0.00390625]) ins(%q, %k, %v : memref<?x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<?x128xf32>)
  return
}

// -----

// Decode with a window: the keys before the window of the first row,
// kv_len - 1 - 99, are neither visited nor split among the tasks.
// CHECK-LABEL: func.func @decode_window
// CHECK: %[[DIM:.*]] = memref.dim %{{.*}}, %c0 : memref<?x64xf32>
// CHECK: %[[FIRST:.*]] = arith.subi %[[DIM]], %c100 : index
// CHECK: %[[BEGIN:.*]] = arith.maxsi %[[FIRST]], %c0 : index
// CHECK: %[[KEYS:.*]] = arith.subi %[[DIM]], %[[BEGIN]] : index
// CHECK: arith.ceildivui %[[KEYS]], %c256 : index
func.func @decode_window(%q: memref<1x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %out: memref<1x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.17677669) causal window(100) ins(%q, %k, %v : memref<1x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<1x128xf32>)
  return
}

// -----

// Keys and values of a bf16 cache are widened as they are loaded: prefill
// reads one key element at a time (broadcast against the query lanes) and
// whole value rows; decode whole key and value rows. Nothing else changes:
// scores, softmax and accumulators stay f32.
// CHECK-LABEL: func.func @prefill_bf16
// CHECK: %[[K:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}] : memref<?x64xbf16>
// CHECK: arith.extf %[[K]] : bf16 to f32
// CHECK: %[[V:.*]] = vector.load %arg2[%{{.*}}, %{{.*}}] : memref<?x64xbf16>, vector<16xbf16>
// CHECK: arith.extf %[[V]] : vector<16xbf16> to vector<16xf32>
func.func @prefill_bf16(%q: memref<?x128xf32>, %k: memref<?x64xbf16>, %v: memref<?x64xbf16>, %out: memref<?x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.176776692) causal ins(%q, %k, %v : memref<?x128xf32>, memref<?x64xbf16>, memref<?x64xbf16>) outs(%out : memref<?x128xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @decode_f16
// CHECK: %[[K:.*]] = vector.load %arg1[%{{.*}}, %{{.*}}] : memref<?x64xf16>, vector<16xf16>
// CHECK: arith.extf %[[K]] : vector<16xf16> to vector<16xf32>
// CHECK: %[[V:.*]] = vector.load %arg2[%{{.*}}, %{{.*}}] : memref<?x64xf16>, vector<16xf16>
// CHECK: arith.extf %[[V]] : vector<16xf16> to vector<16xf32>
func.func @decode_f16(%q: memref<1x128xf32>, %k: memref<?x64xf16>, %v: memref<?x64xf16>, %out: memref<1x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.176776692) causal ins(%q, %k, %v : memref<1x128xf32>, memref<?x64xf16>, memref<?x64xf16>) outs(%out : memref<1x128xf32>)
  return
}

// -----

// Sinks join a row's max and sum only when it is normalized: the key loop is
// the one without them, and each row loads its query head's sink once.
// CHECK-LABEL: func.func @sinks_prefill
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
// CHECK: arith.maximumf
// CHECK: math.fma
// CHECK: arith.divf
func.func @sinks_prefill(%q: memref<?x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %s: memref<4xf32>, %out: memref<?x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.0625) causal sinks(%s : memref<4xf32>) ins(%q, %k, %v : memref<?x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<?x128xf32>)
  return
}

// -----

// Decode: the splits are combined, then the sink joins the combined row.
// CHECK-LABEL: func.func @sinks_decode
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
// CHECK: math.fma
// CHECK: arith.divf
func.func @sinks_decode(%q: memref<1x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %s: memref<4xf32>, %out: memref<1x128xf32>) {
  attn.flash_attention heads(4) kv_heads(2) scale(0.0625) causal sinks(%s : memref<4xf32>) ins(%q, %k, %v : memref<1x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<1x128xf32>)
  return
}
