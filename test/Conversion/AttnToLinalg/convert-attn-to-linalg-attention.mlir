// attn.attention -> blocked online softmax (FlashAttention's recurrence).
// RUN: attn-opt %s -split-input-file --convert-attn-to-linalg="query-block=32 kv-block=16" | FileCheck %s
// No value anywhere has the size of the whole [seq, seq] score matrix:
// RUN: attn-opt %s -split-input-file --convert-attn-to-linalg="query-block=32 kv-block=16" | FileCheck %s --check-prefix=TILES
// TILES-NOT: 1024x1024
// TILES: tensor<?x?xf32>
// TILES-NOT: 1024x1024

// CHECK-DAG: #[[$QBLOCK:.*]] = affine_map<()[s0, s1] -> (32, s0 - s1)>
// CHECK-DAG: #[[$KVBLOCK:.*]] = affine_map<()[s0, s1] -> (16, s0 - s1)>
// CHECK-DAG: #[[$Q:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$KT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$S:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @attention_causal_gqa
// CHECK-SAME: (%[[QUERY:.*]]: tensor<1024x64xf32>, %[[KEY:.*]]: tensor<1024x32xf32>, %[[VALUE:.*]]: tensor<1024x32xf32>)
// CHECK-DAG: %[[SEQ_Q:.*]] = tensor.dim %[[QUERY]]
// CHECK-DAG: %[[SEQ_KV:.*]] = tensor.dim %[[KEY]]
// query i sits at position i + (kv_len - seq_q)
// CHECK: %[[OFFSET:.*]] = arith.subi %[[SEQ_KV]], %[[SEQ_Q]]
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// one iteration per query head; GQA maps it to KV head h / 2, by index
// CHECK: scf.for %[[H:.*]] = %{{.*}} to %[[C4]]
// CHECK:   %[[KVH:.*]] = arith.divui %[[H]], %[[C2]]
// CHECK:   %[[QCOL:.*]] = arith.muli %[[H]]
// CHECK:   %[[KCOL:.*]] = arith.muli %[[KVH]]
// blocks of 32 query rows
// CHECK:   scf.for %[[QB:.*]] = %{{.*}} to %[[SEQ_Q]] step
// CHECK:     %[[BQ:.*]] = affine.min #[[$QBLOCK]]()[%[[SEQ_Q]], %[[QB]]]
// CHECK:     %[[QBLK:.*]] = tensor.extract_slice %[[QUERY]][%[[QB]], %[[QCOL]]] [%[[BQ]], 16]
// keys past the diagonal of the block's last row are never visited:
// end = min(max(qb + bq + offset, 0), kv_len)
// CHECK:     %[[LAST:.*]] = arith.addi %[[QB]], %[[BQ]]
// CHECK:     %[[DIAG:.*]] = arith.addi %[[LAST]], %[[OFFSET]]
// CHECK:     %[[NONNEG:.*]] = arith.maxsi %[[DIAG]]
// CHECK:     %[[END:.*]] = arith.minsi %[[NONNEG]], %[[SEQ_KV]]
// acc = 0, m = -inf, l = 0
// CHECK:     %[[ACC0:.*]] = linalg.fill {{.*}} -> tensor<?x16xf32>
// CHECK:     %[[M0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?xf32>)
// CHECK:     %[[L0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?xf32>)
// CHECK:     %[[LOOP:.*]]:3 = scf.for %[[KB:.*]] = %{{.*}} to %[[END]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]], %[[M:.*]] = %[[M0]], %[[L:.*]] = %[[L0]])
// CHECK:       %[[BK:.*]] = affine.min #[[$KVBLOCK]]()[%[[END]], %[[KB]]]
// CHECK:       %[[KBLK:.*]] = tensor.extract_slice %[[KEY]][%[[KB]], %[[KCOL]]] [%[[BK]], 16]
// S = Q_blk K_blk^T: a [bq, bk] tile, never [seq, seq]
// CHECK:       %[[QK:.*]] = linalg.matmul indexing_maps = [#[[$Q]], #[[$KT]], #[[$S]]] ins(%[[QBLK]], %[[KBLK]] : {{.*}}) outs(%{{.*}} : tensor<?x?xf32>)
// S = scale * S, -inf where key kb + j is past query qb + i's diagonal
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} ins(%[[QK]] : tensor<?x?xf32>)
// CHECK:         arith.mulf
// CHECK:         arith.cmpi sle
// CHECK:         arith.select
// CHECK:       %[[VBLK:.*]] = tensor.extract_slice %[[VALUE]][%[[KB]], %[[KCOL]]] [%[[BK]], 16]
// m' = max(m, rowmax(S))
// CHECK:       %[[MNEW:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<?x?xf32>) outs(%[[M]] : tensor<?xf32>)
// CHECK:         arith.maximumf
// P = exp(S - m'), with m' = -inf read as 0 so an empty row gives 0, not NaN
// CHECK:       %[[P:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[MNEW]] : {{.*}})
// CHECK:         arith.cmpf oeq
// CHECK:         arith.select
// CHECK:         arith.subf
// CHECK:         math.exp
// alpha = exp(m - m')
// CHECK:       %[[ALPHA:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[MNEW]] : tensor<?xf32>, tensor<?xf32>)
// CHECK:         math.exp
// l' = alpha l + rowsum(P)
// CHECK:       %[[LSCALED:.*]] = linalg.generic {{.*}} ins(%[[L]], %[[ALPHA]] : tensor<?xf32>, tensor<?xf32>)
// CHECK:         arith.mulf
// CHECK:       %[[LNEW:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<?x?xf32>) outs(%[[LSCALED]] : tensor<?xf32>)
// CHECK:         arith.addf
// acc' = alpha acc + P V_blk
// CHECK:       %[[ACCSCALED:.*]] = linalg.generic {{.*}} ins(%[[ACC]], %[[ALPHA]] : tensor<?x16xf32>, tensor<?xf32>)
// CHECK:       %[[ACCNEW:.*]] = linalg.matmul ins(%[[P]], %[[VBLK]] : tensor<?x?xf32>, tensor<?x16xf32>) outs(%[[ACCSCALED]] : tensor<?x16xf32>)
// CHECK:       scf.yield %[[ACCNEW]], %[[MNEW]], %[[LNEW]]
// out = acc / l, 0 where l = 0
// CHECK:     %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#0, %[[LOOP]]#2 : tensor<?x16xf32>, tensor<?xf32>)
// CHECK:       arith.divf
// CHECK:       arith.select
// CHECK:     tensor.insert_slice %[[OUT]] into %{{.*}}[%[[QB]], %[[QCOL]]] [%[[BQ]], 16]
func.func @attention_causal_gqa(%q: tensor<1024x64xf32>, %k: tensor<1024x32xf32>, %v: tensor<1024x32xf32>) -> tensor<1024x64xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal : tensor<1024x64xf32>, tensor<1024x32xf32>, tensor<1024x32xf32> -> tensor<1024x64xf32>
  return %0 : tensor<1024x64xf32>
}

// -----

// Without causal every key block up to kv_len is visited and nothing masks;
// kv_len is clamped to the keys that exist.
// CHECK-LABEL: func.func @attention_kv_len
// CHECK-SAME: (%{{.*}}: tensor<1x64xf32>, %[[KEY:.*]]: tensor<256x64xf32>, %{{.*}}: tensor<256x64xf32>, %[[LEN:.*]]: index)
// CHECK: %[[SEQ_KV:.*]] = tensor.dim %[[KEY]]
// CHECK: %[[VALID:.*]] = arith.minui %[[LEN]], %[[SEQ_KV]]
// CHECK: scf.for
// CHECK:   scf.for
// CHECK-NOT: arith.maxsi
// CHECK:     scf.for %{{.*}} = %{{.*}} to %[[VALID]] step
// CHECK-NOT:   arith.cmpi sle
// CHECK:       math.exp
func.func @attention_kv_len(%q: tensor<1x64xf32>, %k: tensor<256x64xf32>, %v: tensor<256x64xf32>, %n: index) -> tensor<1x64xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_len(%n) : tensor<1x64xf32>, tensor<256x64xf32>, tensor<256x64xf32> -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

// -----

// A per-head bias is sliced for the block and added to the scaled scores.
// CHECK-DAG: #[[$BIAS:.*]] = affine_map<(d0, d1) -> (0, d0, d1)>
// CHECK-LABEL: func.func @attention_bias
// CHECK-SAME: %[[B:[a-zA-Z0-9]*]]: tensor<2x?x?xf32>)
// CHECK: scf.for %[[H:[a-zA-Z0-9]*]] =
// CHECK:   scf.for %[[QB:[a-zA-Z0-9]*]] =
// CHECK:     scf.for %[[KB:[a-zA-Z0-9]*]] =
// CHECK:       %[[SLICE:.*]] = tensor.extract_slice %[[B]][%[[H]], %[[QB]], %[[KB]]] [1, %{{.*}}, %{{.*}}] [1, 1, 1]
// CHECK:       linalg.generic {indexing_maps = [#{{.*}}, #[[$BIAS]], #{{.*}}]{{.*}} ins(%{{.*}}, %[[SLICE]] :
// CHECK:         arith.mulf
// CHECK:         arith.addf
func.func @attention_bias(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %b: tensor<2x?x?xf32>) -> tensor<?x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) bias(%b : tensor<2x?x?xf32>) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A window starts each query block's key loop at the first row's window
// (max(0, qb + kv_len - seq_q - (W - 1))) and masks keys before each row's;
// ALiBi adds slope[head] * (key - position), the distance converted exactly.
// CHECK-LABEL: func.func @window_alibi
// CHECK: %[[SLOPES:.*]] = arith.constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK: scf.for %[[HEAD:.*]] = %{{.*}} to %c2
// CHECK: %[[C15:.*]] = arith.constant 15 : index
// CHECK: %[[FIRST:.*]] = arith.subi %{{.*}}, %[[C15]] : index
// CHECK: %[[BEGIN:.*]] = arith.maxsi %[[FIRST]], %{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %{{.*}} step %c16
// CHECK: %[[SLOPE:.*]] = tensor.extract %[[SLOPES]][%[[HEAD]]] : tensor<2xf32>
// CHECK: linalg.generic
// CHECK:   %[[DIST:.*]] = arith.subi %[[KEY:.*]], %[[POS:.*]] : index
// CHECK:   %[[D64:.*]] = arith.index_cast %[[DIST]] : index to i64
// CHECK:   %[[DF:.*]] = arith.sitofp %[[D64]] : i64 to f32
// CHECK:   arith.mulf %[[SLOPE]], %[[DF]] : f32
// CHECK:   arith.cmpi sle, %[[KEY]], %[[POS]] : index
// CHECK:   %[[LOW:.*]] = arith.subi %[[POS]], %{{.*}} : index
// CHECK:   arith.cmpi sge, %[[KEY]], %[[LOW]] : index
func.func @window_alibi(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = attn.attention %q, %k, %v heads(2) causal window(16) alibi([0.5, 0.25]) : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// attention_probabilities: per head, one [seq_q, valid keys] tile of masked
// scores (the same scoring as attention's), its row softmax, inserted into a
// zero-filled [heads, seq_q, seq_kv] result.
// CHECK-LABEL: func.func @attention_probabilities
// CHECK-SAME: (%[[QUERY:.*]]: tensor<?x64xf32>, %[[KEY:.*]]: tensor<?x32xf32>, %[[LEN:.*]]: index)
// CHECK: %[[KEYS:.*]] = tensor.dim %[[KEY]]
// CHECK: %[[VALID:.*]] = arith.minui %[[LEN]], %[[KEYS]]
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<2x?x?xf32>
// CHECK: scf.for %[[HEAD:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]])
// CHECK:   linalg.matmul
// CHECK:   arith.select {{.*}} : f32
// CHECK:   arith.maximumf
// CHECK:   math.exp
// CHECK:   arith.divf
// CHECK:   tensor.insert_slice {{.*}} into %[[ACC]][%[[HEAD]], 0, 0] [1, %{{.*}}, %[[VALID]]] [1, 1, 1] : tensor<?x?xf32> into tensor<2x?x?xf32>
func.func @attention_probabilities(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %n: index) -> tensor<2x?x?xf32> {
  %0 = attn.attention_probabilities %q, %k heads(2) kv_heads(1) causal kv_len(%n) : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<2x?x?xf32>
  return %0 : tensor<2x?x?xf32>
}
