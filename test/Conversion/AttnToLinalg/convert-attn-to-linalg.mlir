// Every attn op except attention (see convert-attn-to-linalg-attention.mlir).
// RUN: attn-opt %s -split-input-file --convert-attn-to-linalg | FileCheck %s

// A gather whose row index is clamped into the table.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:.*]]: tensor<100x8xf32>, %[[IDS:.*]]: tensor<?xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[IDS]] : tensor<?xi32>)
// CHECK:   %[[ROW:.*]] = arith.index_cast
// CHECK:   %[[LO:.*]] = arith.maxsi %[[ROW]]
// CHECK:   %[[HI:.*]] = arith.minsi %[[LO]]
// CHECK:   %[[COL:.*]] = linalg.index 1
// CHECK:   tensor.extract %[[TABLE]][%[[HI]], %[[COL]]]
// CHECK-NOT: attn.
func.func @embedding(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A scaled embedding multiplies the gathered element.
// CHECK-LABEL: func.func @embedding_scaled
// CHECK: linalg.generic
// CHECK:   %[[E:.*]] = tensor.extract
// CHECK:   %[[S:.*]] = arith.constant 4.800000e+01 : f32
// CHECK:   %[[V:.*]] = arith.mulf %[[E]], %[[S]] : f32
// CHECK:   linalg.yield %[[V]]
func.func @embedding_scaled(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = attn.embedding %table[%ids] scale(48.0) : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// nn.Linear [out, in]: the weight is read transposed through its map, and
// the bias is broadcast into the accumulator.
// CHECK-DAG: #[[$LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$WNK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear_out_in_bias
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK: %[[INIT:.*]] = linalg.broadcast ins(%[[B]] : tensor<16xf32>) {{.*}} dimensions = [0]
// CHECK: linalg.matmul indexing_maps = [#[[$LHS]], #[[$WNK]], #[[$OUT]]] ins(%[[X]], %[[W]] : {{.*}}) outs(%[[INIT]] : tensor<?x16xf32>)
func.func @linear_out_in_bias(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32> {
  %0 = attn.linear %x, %w, %b layout(out_in) : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// Conv1D [in, out] is a plain matmul into zeros.
// CHECK-LABEL: func.func @linear_in_out
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[INIT]] : tensor<4x16xf32>)
func.func @linear_in_out(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = attn.linear %x, %w layout(in_out) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// sum(x) over the row, then mean = sum / 8
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.addf
// CHECK: linalg.generic
// CHECK:   arith.divf
// var = sum((x - mean)^2), a second pass over the row
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.subf
// CHECK:   arith.mulf
// CHECK:   arith.addf
// rstd = 1 / sqrt(var / 8 + eps)
// CHECK: linalg.generic
// CHECK:   arith.divf
// CHECK:   arith.addf
// CHECK:   math.sqrt
// CHECK:   arith.divf
// (x - mean) * rstd * gamma + beta
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:   arith.subf
// CHECK:   arith.mulf
// CHECK:   arith.mulf
// CHECK:   arith.addf
func.func @layer_norm(%x: tensor<?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[$FEATURE:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @rms_norm
// sum(x^2) per row
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.mulf
// CHECK:   arith.addf
// 1 / sqrt(sum / 8 + eps)
// CHECK: math.sqrt
// x * rinv[row] * gamma[feature]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$ROW]], #[[$FEATURE]], #{{.*}}]
func.func @rms_norm(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Gemma's (1 + w): the offset joins the gain before it multiplies.
// CHECK-LABEL: func.func @rms_norm_gain_offset
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: ^bb0(%[[X:.*]]: f32, %[[R:.*]]: f32, %[[W:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[N:.*]] = arith.mulf %[[X]], %[[R]] : f32
// CHECK:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:   %[[G:.*]] = arith.addf %[[W]], %[[ONE]] : f32
// CHECK:   arith.mulf %[[N]], %[[G]] : f32
func.func @rms_norm_gain_offset(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) gain_offset(1.0) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @residual_add
// CHECK: linalg.generic
// CHECK:   arith.addf
func.func @residual_add(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.residual_add %a, %b : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// RoPE, rotate_half: a cos/sin table [seq, 2] computed in f64, then the input
// viewed as [seq, heads, 2, half], the pairs' first and second members
// sliced out of it ([seq, heads, half] each: plain indexing maps, which
// linalg's vectorizer takes).
// CHECK-DAG: #[[$MEMBER:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @rope_rotate_half
// CHECK: %[[TABLE:.*]]:2 = linalg.generic
// CHECK:   math.powf {{.*}} : f64
// CHECK:   math.cos {{.*}} : f64
// CHECK:   math.sin {{.*}} : f64
// CHECK: %[[VIEW:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2, 3]] {{.*}} into tensor<?x2x2x2xf32>
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 0, 0] [%{{.*}}, 2, 1, 2] [1, 1, 1, 1] : tensor<?x2x2x2xf32> to tensor<?x2x2xf32>
// CHECK: %[[SECOND:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 1, 0] [%{{.*}}, 2, 1, 2] [1, 1, 1, 1] : tensor<?x2x2x2xf32> to tensor<?x2x2xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$MEMBER]], #[[$MEMBER]], {{.*}} ins(%[[FIRST]], %[[SECOND]], %[[TABLE]]#0, %[[TABLE]]#1
// a' = a cos - b sin; b' = b cos + a sin; pick by the member index
// CHECK:   arith.subf
// CHECK:   arith.addf
// CHECK:   linalg.index 2
// CHECK:   arith.select
// CHECK: tensor.collapse_shape {{.*}} into tensor<?x8xf32>
func.func @rope_rotate_half(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) rotate_half : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Interleaved pairs are the last dimension of a [seq, heads, half, 2] view.
// CHECK-DAG: #[[$MEMBER:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @rope_interleaved
// CHECK: %[[VIEW:.*]] = tensor.expand_shape {{.*}} into tensor<3x2x4x2xf32>
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 0, 0] [3, 2, 4, 1] [1, 1, 1, 1] : tensor<3x2x4x2xf32> to tensor<3x2x4xf32>
// CHECK: %[[SECOND:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 0, 1] [3, 2, 4, 1]
// CHECK: linalg.generic {indexing_maps = [#[[$MEMBER]], #[[$MEMBER]], {{.*}} ins(%[[FIRST]], %[[SECOND]]
// CHECK:   linalg.index 3
func.func @rope_interleaved(%x: tensor<3x16xf32>, %pos: index) -> tensor<3x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) interleaved : tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// -----

// Partial rotary: the first rotary_dims features of each head are a slice
// of the [seq, heads, head_dim] view; they are rotated as a whole head would
// be and inserted back, so the other features pass through. A frequency
// table is an f64 constant read per pair, the attention factor scales cos and
// sin before they are rounded to f32.
// CHECK-DAG: #[[$PAIR:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @rope_partial_table
// CHECK: %[[FREQ:.*]] = arith.constant dense<[5.000000e-01, 5.000000e-02]> : tensor<2xf64>
// CHECK: %[[TABLE:.*]]:2 = linalg.generic {indexing_maps = [#[[$PAIR]], {{.*}} ins(%[[FREQ]] : tensor<2xf64>)
// CHECK-NOT: math.powf
// CHECK:   %[[ANGLE:.*]] = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK:   %[[COS:.*]] = math.cos %[[ANGLE]] : f64
// CHECK:   %[[SIN:.*]] = math.sin %[[ANGLE]] : f64
// CHECK:   %[[FACTOR:.*]] = arith.constant 1.500000e+00 : f64
// CHECK:   arith.mulf %[[COS]], %[[FACTOR]] : f64
// CHECK:   arith.mulf %[[SIN]], %[[FACTOR]] : f64
// CHECK: %[[HEADS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] {{.*}} into tensor<?x2x8xf32>
// CHECK: %[[ROT:.*]] = tensor.extract_slice %[[HEADS]][0, 0, 0] [%{{.*}}, 2, 4] [1, 1, 1] : tensor<?x2x8xf32> to tensor<?x2x4xf32>
// CHECK: %[[VIEW:.*]] = tensor.expand_shape %[[ROT]] {{\[}}[0], [1], [2, 3]] {{.*}} into tensor<?x2x2x2xf32>
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 0, 0]
// CHECK: %[[SECOND:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 1, 0]
// CHECK: %[[ROTATED:.*]] = linalg.generic {{.*}} ins(%[[FIRST]], %[[SECOND]], %[[TABLE]]#0, %[[TABLE]]#1
// CHECK: %[[BACK:.*]] = tensor.collapse_shape %[[ROTATED]] {{\[}}[0], [1], [2, 3]] : tensor<?x2x2x2xf32> into tensor<?x2x4xf32>
// CHECK: %[[MERGED:.*]] = tensor.insert_slice %[[BACK]] into %[[HEADS]][0, 0, 0] [%{{.*}}, 2, 4] [1, 1, 1]
// CHECK: tensor.collapse_shape %[[MERGED]] {{\[}}[0], [1, 2]] : tensor<?x2x8xf32> into tensor<?x16xf32>
func.func @rope_partial_table(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[5.0e-01, 5.0e-02]> : tensor<2xf64>) attention_factor(1.5) rotate_half : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// Dynamic NTK: theta' = theta (k L / M - (k - 1))^(r / (r - 2)) from the
// call's length L = max(offset + seq, M), computed once before the table;
// the table raises theta' to -2i/r as with a static theta. Interleaved pairs
// over the first 6 of 8 features: a [seq, heads, 3, 2] view of the slice.
// CHECK-LABEL: func.func @rope_dynamic_ntk
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[POS:.*]]: index)
// CHECK: %[[ROWS:.*]] = tensor.dim %[[X]]
// CHECK: %[[END:.*]] = arith.addi %[[POS]], %[[ROWS]] : index
// CHECK: %[[M:.*]] = arith.constant 2048 : index
// CHECK: %[[L:.*]] = arith.maxsi %[[END]], %[[M]] : index
// CHECK: %[[RATIO:.*]] = arith.divf %{{.*}}, %{{.*}} : f64
// CHECK: %[[K:.*]] = arith.constant 2.000000e+00 : f64
// CHECK: %[[SCALED:.*]] = arith.mulf %[[K]], %[[RATIO]] : f64
// CHECK: %[[KM1:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: %[[GROWTH:.*]] = arith.subf %[[SCALED]], %[[KM1]] : f64
// CHECK: %[[EXP:.*]] = arith.constant 1.500000e+00 : f64
// CHECK: %[[POW:.*]] = math.powf %[[GROWTH]], %[[EXP]] : f64
// CHECK: %[[THETA:.*]] = arith.constant 1.000000e+04 : f64
// CHECK: %[[BASE:.*]] = arith.mulf %[[THETA]], %[[POW]] : f64
// CHECK: linalg.generic
// CHECK:   arith.constant -0.33333333333333331 : f64
// CHECK:   math.powf %[[BASE]], %{{.*}} : f64
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [%{{.*}}, 2, 6] [1, 1, 1] : tensor<?x2x8xf32> to tensor<?x2x6xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<?x2x3x2xf32>
// CHECK: linalg.index 3
// CHECK: tensor.insert_slice
func.func @rope_dynamic_ntk(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(6) theta(1.0e+04) dynamic_ntk(factor = 2.0, max_positions = 2048) interleaved : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// LongRoPE: both tables are inputs of the cos/sin generic; one test of the
// call's end (offset + seq > after) chooses between them per element.
// CHECK-LABEL: func.func @rope_longrope
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[POS:.*]]: index)
// CHECK-DAG: %[[SHORT:.*]] = arith.constant dense<[1.000000e+00, 5.000000e-02]> : tensor<2xf64>
// CHECK-DAG: %[[LONG:.*]] = arith.constant dense<[5.000000e-01, 5.000000e-03]> : tensor<2xf64>
// CHECK: %[[ROWS:.*]] = tensor.dim %[[X]]
// CHECK: %[[END:.*]] = arith.addi %[[POS]], %[[ROWS]] : index
// CHECK: %[[AFTER:.*]] = arith.constant 4096 : index
// CHECK: %[[USE_LONG:.*]] = arith.cmpi sgt, %[[END]], %[[AFTER]] : index
// CHECK: linalg.generic {{.*}} ins(%[[SHORT]], %[[LONG]] : tensor<2xf64>, tensor<2xf64>)
// CHECK: ^bb0(%[[S:.*]]: f64, %[[L:.*]]: f64,
// CHECK:   %[[F:.*]] = arith.select %[[USE_LONG]], %[[L]], %[[S]] : f64
// CHECK:   arith.mulf %{{.*}}, %[[F]] : f64
// CHECK:   math.cos
func.func @rope_longrope(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[1.0, 0.05]> : tensor<2xf64>) long_frequencies(dense<[0.5, 0.005]> : tensor<2xf64>, after = 4096) attention_factor(1.19) rotate_half : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// CHECK-LABEL: func.func @sinusoidal_pe
// CHECK: tensor.expand_shape {{.*}} into tensor<?x4x2xf32>
// CHECK: linalg.generic
// CHECK:   math.sin {{.*}} : f64
// CHECK:   math.cos {{.*}} : f64
// CHECK:   arith.truncf
// CHECK:   arith.addf
func.func @sinusoidal_pe(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// fairseq's halves: the view is [seq, {sin, cos}, k] and pair k's frequency
// is base^(-k / (D/2 - 1)) = 10000^(-k/3).
// CHECK-LABEL: func.func @sinusoidal_halves
// CHECK: tensor.expand_shape {{.*}} into tensor<?x2x4xf32>
// CHECK: linalg.generic
// CHECK:   %[[K:.*]] = linalg.index 2 : index
// CHECK:   arith.constant -0.33333333333333331 : f64
// CHECK:   math.powf
// CHECK:   %[[WAVE:.*]] = linalg.index 1 : index
// CHECK:   arith.cmpi eq, %[[WAVE]]
// CHECK:   math.sin
// CHECK:   math.cos
func.func @sinusoidal_halves(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) halves : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// T5's bucket once per (query, key) into an i32 tensor, then a gather of
// table[bucket, h] per head. Encoder: both directions.
// CHECK-DAG: #[[$ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$POS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @relative_position_bias_bidirectional
// CHECK-SAME: (%[[TABLE:.*]]: tensor<32x8xf32>, %[[S:.*]]: index)
// Query i sits at position i + (seq_kv - seq_q).
// CHECK: %[[OFFSET:.*]] = arith.subi %[[S]], %[[S]]
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[S]], %[[S]]) : tensor<?x?xi32>
// CHECK: %[[BUCKETS:.*]] = linalg.generic {indexing_maps = [#[[$ID2]]], iterator_types = ["parallel", "parallel"]} outs(%[[EMPTY]] : tensor<?x?xi32>)
// CHECK:   %[[I:.*]] = linalg.index 0
// CHECK:   %[[P:.*]] = arith.addi %[[I]], %[[OFFSET]]
// CHECK:   %[[J:.*]] = linalg.index 1
// CHECK:   %[[RP:.*]] = arith.subi %[[J]], %[[P]]
// Later keys take buckets 16..31; the distance is |rp|.
// CHECK:   %[[NEG:.*]] = arith.subi %{{.*}}, %[[RP]]
// CHECK:   %[[LATER:.*]] = arith.cmpi sgt, %[[RP]]
// CHECK:   %[[FIRST:.*]] = arith.select %[[LATER]], %{{.*}}, %{{.*}} : index
// CHECK:   %[[D:.*]] = arith.maxsi %[[RP]], %[[NEG]]
// The logarithmic bucket in f32: 8 + long(log(d / 8) / float(log(16)) * 8).
// CHECK:   %[[DL:.*]] = arith.maxsi %[[D]]
// CHECK:   %[[DI:.*]] = arith.index_cast %[[DL]] : index to i64
// CHECK:   %[[DF:.*]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK:   %[[EIGHT:.*]] = arith.constant 8.000000e+00 : f32
// CHECK:   %[[RATIO:.*]] = arith.divf %[[DF]], %[[EIGHT]] : f32
// CHECK:   %[[LOG:.*]] = math.log %[[RATIO]] : f32
// CHECK:   %[[RANGE:.*]] = arith.constant 2.77258873 : f32
// CHECK:   %[[Q:.*]] = arith.divf %[[LOG]], %[[RANGE]] : f32
// CHECK:   %[[SCALED:.*]] = arith.mulf %[[Q]], %{{.*}} : f32
// CHECK:   %[[TRUNC:.*]] = arith.fptosi %[[SCALED]] : f32 to i64
// CHECK:   %[[TI:.*]] = arith.index_cast %[[TRUNC]] : i64 to index
// CHECK:   %[[LARGE:.*]] = arith.addi %{{.*}}, %[[TI]]
// CHECK:   %[[LAST:.*]] = arith.constant 15 : index
// CHECK:   %[[CLAMPED:.*]] = arith.minsi %[[LARGE]], %[[LAST]]
// Distances below 8 are their own bucket.
// CHECK:   %[[SMALL:.*]] = arith.cmpi slt, %[[D]]
// CHECK:   %[[BUCKET:.*]] = arith.select %[[SMALL]], %[[D]], %[[CLAMPED]]
// CHECK:   %[[SUM:.*]] = arith.addi %[[FIRST]], %[[BUCKET]]
// CHECK:   %[[B32:.*]] = arith.index_cast %[[SUM]] : index to i32
// CHECK:   linalg.yield %[[B32]] : i32
// CHECK: %[[INIT:.*]] = tensor.empty(%[[S]], %[[S]]) : tensor<8x?x?xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$POS]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[BUCKETS]] : tensor<?x?xi32>) outs(%[[INIT]] : tensor<8x?x?xf32>)
// CHECK:   ^bb0(%[[IN:.*]]: i32, %{{.*}}: f32):
// CHECK:   %[[ROW:.*]] = arith.index_cast %[[IN]] : i32 to index
// CHECK:   %[[H:.*]] = linalg.index 0
// CHECK:   %[[E:.*]] = tensor.extract %[[TABLE]][%[[ROW]], %[[H]]] : tensor<32x8xf32>
// CHECK:   linalg.yield %[[E]]
// CHECK-NOT: attn.
func.func @relative_position_bias_bidirectional(%table: tensor<32x8xf32>, %s: index) -> tensor<8x?x?xf32> {
  %0 = attn.relative_position_bias %table sizes(%s, %s) bidirectional : tensor<32x8xf32> -> tensor<8x?x?xf32>
  return %0 : tensor<8x?x?xf32>
}

// -----

// Decoder step: the query sits at min(kv_len, 64) - 1; it looks back only,
// rp = max(-rp, 0), and the 32 buckets are all one direction.
// CHECK-LABEL: func.func @relative_position_bias_decode
// CHECK-SAME: (%[[TABLE:.*]]: tensor<32x4xf32>, %[[N:.*]]: index)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 64 : index
// CHECK: %[[VALID:.*]] = arith.minui %[[N]], %[[ROWS]]
// CHECK: %[[OFFSET:.*]] = arith.subi %[[VALID]], %[[ONE]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x64xi32>)
// CHECK:   %[[P:.*]] = arith.addi %{{.*}}, %[[OFFSET]]
// CHECK:   %[[RP:.*]] = arith.subi %{{.*}}, %[[P]]
// CHECK:   %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:   %[[NEG:.*]] = arith.subi %[[ZERO]], %[[RP]]
// CHECK:   %[[D:.*]] = arith.maxsi %[[NEG]], %[[ZERO]]
// CHECK-NOT: arith.cmpi sgt
// CHECK:   arith.constant 2.07944155 : f32
// CHECK:   arith.constant 31 : index
// CHECK:   %[[BUCKET:.*]] = arith.select %{{.*}}, %[[D]], %{{.*}} : index
// CHECK:   arith.index_cast %[[BUCKET]] : index to i32
// CHECK: tensor.extract %[[TABLE]]
// CHECK-SAME: tensor<32x4xf32>
func.func @relative_position_bias_decode(%table: tensor<32x4xf32>, %n: index) -> tensor<4x1x64xf32> {
  %0 = attn.relative_position_bias %table kv_len(%n) : tensor<32x4xf32> -> tensor<4x1x64xf32>
  return %0 : tensor<4x1x64xf32>
}

// -----

// Append is an insert_slice at the position; read a slice of the clamped
// length.
// CHECK-LABEL: func.func @kv_cache
// CHECK-SAME: (%[[NEW:.*]]: tensor<?x8xf32>, %[[CACHE:.*]]: tensor<16x8xf32>, %[[POS:.*]]: index, %[[LEN:.*]]: index)
// CHECK: %[[ROWS:.*]] = tensor.dim %[[NEW]]
// CHECK: %[[UPDATED:.*]] = tensor.insert_slice %[[NEW]] into %[[CACHE]][%[[POS]], 0] [%[[ROWS]], 8] [1, 1]
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[LEN]]
// CHECK: tensor.extract_slice %[[UPDATED]][0, 0] [%[[CLAMPED]], 8] [1, 1]
func.func @kv_cache(%new: tensor<?x8xf32>, %cache: tensor<16x8xf32>, %pos: index, %len: index) -> tensor<?x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xf32>
  %1 = attn.kv_cache_read %0[%len] : tensor<16x8xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// A bf16 cache: the f32 rows are rounded (arith.truncf: to nearest, ties to
// even) into a bf16 tensor, which is inserted; the read is a bf16 slice.
// CHECK-LABEL: func.func @kv_cache_bf16
// CHECK-SAME: (%[[NEW:.*]]: tensor<?x8xf32>, %[[CACHE:.*]]: tensor<16x8xbf16>, %[[POS:.*]]: index, %[[LEN:.*]]: index)
// CHECK: %[[EMPTY:.*]] = tensor.empty(%{{.*}}) : tensor<?x8xbf16>
// CHECK: %[[ROUNDED:.*]] = linalg.generic {{.*}} ins(%[[NEW]] : tensor<?x8xf32>) outs(%[[EMPTY]] : tensor<?x8xbf16>)
// CHECK:   arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[UPDATED:.*]] = tensor.insert_slice %[[ROUNDED]] into %[[CACHE]][%[[POS]], 0]
// CHECK: tensor.extract_slice %[[UPDATED]][0, 0] [%{{.*}}, 8] [1, 1] : tensor<16x8xbf16> to tensor<?x8xbf16>
func.func @kv_cache_bf16(%new: tensor<?x8xf32>, %cache: tensor<16x8xbf16>, %pos: index, %len: index) -> tensor<?x8xbf16> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xbf16>
  %1 = attn.kv_cache_read %0[%len] : tensor<16x8xbf16> -> tensor<?x8xbf16>
  return %1 : tensor<?x8xbf16>
}

// -----

// The linalg lowering of attention reads f16 keys and values through
// linalg.matmul, which widens its operands to the f32 accumulator.
// CHECK-LABEL: func.func @attention_f16_keys
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?x4xf16>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x?xf32>, tensor<?x4xf16>) outs(%{{.*}} : tensor<?x4xf32>)
func.func @attention_f16_keys(%q: tensor<?x8xf32>, %k: tensor<?x8xf16>, %v: tensor<?x8xf16>) -> tensor<?x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) causal : tensor<?x8xf32>, tensor<?x8xf16>, tensor<?x8xf16> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_tanh
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the cubic term added by
// one FMA as the kernels' epilogue adds it (Activations.h: one definition).
// CHECK: linalg.generic
// CHECK:   arith.constant 4.471500e-02
// CHECK:   math.fma
// CHECK:   math.tanh
// CHECK-NOT: math.erf
func.func @gelu_tanh(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.gelu %x tanh : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_erf
// 0.5 x (1 + erf(x / sqrt(2)))
// CHECK: linalg.generic
// CHECK:   math.erf
// CHECK-NOT: math.tanh
func.func @gelu_erf(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.gelu %x erf : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// silu(gate) * up = gate / (1 + exp(-gate)) * up
// CHECK-LABEL: func.func @swiglu
// CHECK: linalg.generic
// CHECK:   arith.negf
// CHECK:   math.exp
// CHECK:   arith.addf
// CHECK:   arith.divf
// CHECK:   arith.mulf
func.func @swiglu(%g: tensor<?x8xf32>, %u: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.swiglu %g, %u : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// gelu(gate) * up, the erf form.
// CHECK-LABEL: func.func @geglu
// CHECK: linalg.generic
// CHECK: ^bb0(%{{.*}}: f32, %[[UP:.*]]: f32, %{{.*}}: f32):
// CHECK:   math.erf
// CHECK:   %[[HALF:.*]] = arith.mulf
// CHECK:   arith.addf
// CHECK:   %[[GELU:.*]] = arith.mulf %[[HALF]]
// CHECK:   %[[OUT:.*]] = arith.mulf %[[GELU]], %[[UP]] : f32
// CHECK:   linalg.yield %[[OUT]]
func.func @geglu(%g: tensor<?x8xf32>, %u: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.geglu %g, %u erf : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// max(x, 0), NaN propagating.
// CHECK-LABEL: func.func @relu
// CHECK: linalg.generic
// CHECK:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   arith.maximumf %{{.*}}, %[[ZERO]] : f32
func.func @relu(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.relu %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK: linalg.generic
// CHECK:   math.exp
// CHECK:   arith.divf
func.func @silu(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.silu %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @softmax
// m = rowmax(x), from -inf
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:   arith.maximumf
// e = exp(x - m)
// CHECK: linalg.generic
// CHECK:   arith.subf
// CHECK:   math.exp
// s = rowsum(e); e / s
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:   arith.addf
// CHECK: linalg.generic
// CHECK:   arith.divf
func.func @softmax(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  %0 = attn.softmax %x : tensor<2x?x8xf32>
  return %0 : tensor<2x?x8xf32>
}

// -----

// A tied embedding whose packed table is bf16 (--weight-format bf16): the
// gathered value is widened to f32.
// CHECK-LABEL: func.func @embedding_packed_bf16
// CHECK: linalg.generic
// CHECK:   %[[E:.*]] = tensor.extract %{{.*}} : tensor<4x8x32xbf16>
// CHECK:   %[[F:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK:   linalg.yield %[[F]] : f32
func.func @embedding_packed_bf16(%table: tensor<4x8x32xbf16>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<4x8x32xbf16>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A tied q4_0 table (PackedWeight.h): weight (lane, k) is the nibble of
// byte ((k % 32 / 4 % 4) * NR + lane) * 4 + k % 4 of slab [block, k / 32]
// (high for k % 32 >= 16), minus 8, times the lane's f16 scale stored at
// byte 16 * NR + 2 * lane, little-endian.
// CHECK-LABEL: func.func @embedding_packed_q4_0
// CHECK: linalg.generic
// CHECK:   %[[BYTE:.*]] = tensor.extract %{{.*}} : tensor<4x2x32x18xi8>
// CHECK:   %[[WIDE:.*]] = arith.extui %[[BYTE]] : i8 to i32
// CHECK:   %[[NIBBLE:.*]] = arith.andi %{{.*}}, %c15_i32 : i32
// CHECK:   %[[Q:.*]] = arith.subi %[[NIBBLE]], %c8_i32 : i32
// CHECK:   arith.addi %c512, %{{.*}} : index
// CHECK:   %[[HALF:.*]] = arith.bitcast %{{.*}} : i16 to f16
// CHECK:   %[[D:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK:   %[[QF:.*]] = arith.sitofp %[[Q]] : i32 to f32
// CHECK:   arith.mulf %[[QF]], %[[D]] : f32
func.func @embedding_packed_q4_0(%table: tensor<4x2x32x18xi8>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = attn.embedding %table[%ids] : tensor<4x2x32x18xi8>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
