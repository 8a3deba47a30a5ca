// The reference lowering of the mixture-of-experts ops: the router's logits
// and softmax, each expert's rank, the expert of each rank below top_k;
// the experts' products read only the chosen expert's weights (a clamped
// tensor.extract at experts[t, j]); packed experts grouped by expert
// through attn.gemm. The numbers: OpsE2ETest.cpp's Moe and PackedMoe tests.
// RUN: attn-opt %s -split-input-file --convert-attn-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @router
// CHECK-NOT: attn.
// CHECK: %[[LOGITS:.*]] = linalg.matmul
// CHECK: math.exp
// CHECK: %[[PROBS:.*]] = linalg.generic {{.*}} ins({{.*}}) outs({{.*}} : tensor<?x8xf32>)
// The rank of each expert: a reduction over the other experts, ties to the lower index.
// CHECK: %[[RANKS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[PROBS]], %[[PROBS]] : tensor<?x8xf32>, tensor<?x8xf32>) outs({{.*}} : tensor<?x8xi32>)
// CHECK:   arith.cmpf ogt
// CHECK:   arith.cmpi ult
// CHECK: %[[IDS:.*]] = linalg.generic {{.*}} ins(%[[RANKS]], %[[PROBS]] : tensor<?x8xi32>, tensor<?x8xf32>) outs({{.*}} : tensor<?x2xi32>)
// CHECK: %[[CHOSEN:.*]] = linalg.generic {{.*}} ins(%[[RANKS]], %[[PROBS]] : tensor<?x8xi32>, tensor<?x8xf32>) outs({{.*}} : tensor<?x2xf32>)
// normalize: the chosen weights over their sum.
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[CHOSEN]] : tensor<?x2xf32>)
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[CHOSEN]], %[[SUM]] : tensor<?x2xf32>, tensor<?xf32>)
// CHECK:   arith.divf
// CHECK-NOT: attn.
// CHECK: return %[[W]], %[[IDS]]
func.func @router(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  %w, %e = attn.moe_router %x, %r top_k(2) softmax_top_k normalize : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %e : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

// top_k_softmax: the chosen logits go through a softmax, not a division by
// their sum.
// CHECK-LABEL: func.func @router_top_k_first
// CHECK: linalg.matmul
// CHECK-NOT: math.exp
// CHECK: outs({{.*}} : tensor<?x4xf32>)
// CHECK: math.exp
// CHECK: return
func.func @router_top_k_first(%x: tensor<?x64xf32>, %r: tensor<32x64xf32>, %b: tensor<32xf32>) -> (tensor<?x4xf32>, tensor<?x4xi32>) {
  %w, %e = attn.moe_router %x, %r, %b top_k(4) top_k_softmax : tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  return %w, %e : tensor<?x4xf32>, tensor<?x4xi32>
}

// -----

// CHECK-LABEL: func.func @experts
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W:.*]]: tensor<?x2xf32>, %[[E:.*]]: tensor<?x2xi32>, %[[G:.*]]: tensor<8x96x64xf32>, %[[U:.*]]: tensor<8x96x64xf32>, %[[D:.*]]: tensor<8x64x96xf32>)
// CHECK-NOT: attn.
// The gate product over (t, j, f, k): the expert id clamped into [0, 7].
// CHECK: %[[GATE:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[X]], %[[E]] : tensor<?x64xf32>, tensor<?x2xi32>) outs({{.*}} : tensor<?x2x96xf32>)
// CHECK:   arith.minsi
// CHECK:   arith.maxsi
// CHECK:   tensor.extract %[[G]]
// CHECK: %[[UP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[E]] : {{.*}}) outs({{.*}} : tensor<?x2x96xf32>)
// CHECK:   tensor.extract %[[U]]
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[GATE]], %[[UP]], %[[E]] : {{.*}}) outs({{.*}} : tensor<?x2x96xf32>)
// CHECK:   math.exp
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[E]] : {{.*}}) outs({{.*}} : tensor<?x2x64xf32>)
// CHECK:   tensor.extract %[[D]]
// The weighted sum over the slots (t, d, j).
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[W]], %[[OUT]], %[[E]] : {{.*}}) outs({{.*}} : tensor<?x64xf32>)
// CHECK-NOT: attn.
// CHECK: return %[[Y]]
func.func @experts(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// gpt-oss's activation: the biases gathered per expert, gate clamped above,
// up on both sides, (up + 1) times the gated unit.
// CHECK-LABEL: func.func @clamped
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK:   tensor.extract
// CHECK:   arith.addf
// CHECK:   tensor.extract
// CHECK:   arith.addf
// CHECK:   arith.minimumf
// CHECK:   arith.minimumf
// CHECK:   arith.maximumf
// CHECK:   arith.mulf
// CHECK:   math.exp
// CHECK: return
func.func @clamped(%x: tensor<?x64xf32>, %w: tensor<?x4xf32>, %e: tensor<?x4xi32>, %g: tensor<32x48x64xf32>, %u: tensor<32x48x64xf32>, %d: tensor<32x64x48xf32>, %gb: tensor<32x48xf32>, %ub: tensor<32x48xf32>, %db: tensor<32x64xf32>) -> tensor<?x64xf32> {
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d biases(%gb, %ub, %db : tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x64xf32>) clamped_swiglu alpha(1.702) limit(7.0) : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<32x48x64xf32>, tensor<32x48x64xf32>, tensor<32x64x48xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Packed SwiGLU experts take the CPU path: the (token, slot) pairs counted
// per expert, each expert's first row, and each pair's row in expert order
// (scalar loops); then for every expert some pair chose, its rows gathered
// and multiplied by attn.gemm on its slab (gate and up fused with SwiGLU,
// down scaled per row by the routing weight) into its rows of a
// [pairs, hidden] buffer; an expert no pair chose is skipped. Last, each
// token's top_k rows summed.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %{{[^:]*}}: tensor<?x2xf32>, %{{[^:]*}}: tensor<?x2xi32>, %[[G:[^:]*]]: tensor<8x3x2x32x34xi8>, %[[U:[^:]*]]: tensor<8x3x2x32x34xi8>, %[[D:[^:]*]]: tensor<8x2x3x32x34xi8>)
// CHECK-NOT: attn.moe
// CHECK: %[[COUNTS:.*]] = scf.for {{.*}} -> (tensor<8xindex>)
// CHECK:   tensor.insert
// CHECK: %[[STARTS:.*]]:2 = scf.for {{.*}} -> (tensor<8xindex>, index)
// CHECK: %[[PAIRS:.*]]:4 = scf.for {{.*}} -> (tensor<8xindex>, tensor<?xindex>, tensor<?xf32>, tensor<?x2xindex>)
// CHECK: %[[ROWS:.*]] = scf.for %[[EXPERT:[^ ]*]] = {{.*}} -> (tensor<?x64xf32>)
// CHECK:   %[[N:.*]] = tensor.extract %[[COUNTS]][%[[EXPERT]]]
// CHECK:   %[[START:.*]] = tensor.extract %[[STARTS]]#0[%[[EXPERT]]]
// CHECK:   %[[USED:.*]] = arith.cmpi ne, %[[N]]
// CHECK:   scf.if %[[USED]]
// CHECK:     %[[IN:.*]] = linalg.generic {{.*}} outs({{.*}} : tensor<?x64xf32>)
// CHECK:       tensor.extract %[[PAIRS]]#1
// CHECK:       tensor.extract %[[X]]
// CHECK:     %[[GATE:.*]] = tensor.extract_slice %[[G]][%[[EXPERT]], 0, 0, 0, 0] [1, 3, 2, 32, 34] [1, 1, 1, 1, 1] : tensor<8x3x2x32x34xi8> to tensor<3x2x32x34xi8>
// CHECK:     %[[UP:.*]] = tensor.extract_slice %[[U]][%[[EXPERT]], 0, 0, 0, 0]
// CHECK:     %[[ACTS:.*]] = attn.gemm swiglu ins(%[[IN]], %[[GATE]], %[[UP]] : {{.*}}) outs({{.*}} : tensor<?x96xf32>)
// CHECK:     %[[SCALE:.*]] = tensor.extract_slice %[[PAIRS]]#2[%[[START]]] [%[[N]]] [1]
// CHECK:     %[[BLOCK:.*]] = tensor.extract_slice %{{.*}}[%[[START]], 0] [%[[N]], 64] [1, 1]
// CHECK:     %[[DOWN:.*]] = tensor.extract_slice %[[D]][%[[EXPERT]], 0, 0, 0, 0] [1, 2, 3, 32, 34]
// CHECK:     %[[OUT:.*]] = attn.gemm none ins(%[[ACTS]], %[[DOWN]] : {{.*}}) row_scale(%[[SCALE]] : tensor<?xf32>) outs(%[[BLOCK]] : tensor<?x64xf32>)
// CHECK:     tensor.insert_slice %[[OUT]] into %{{.*}}[%[[START]], 0] [%[[N]], 64] [1, 1]
// CHECK:   } else {
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[PAIRS]]#3 : tensor<?x2xindex>) outs({{.*}} : tensor<?x64xf32>)
// CHECK:   tensor.extract %[[ROWS]]
// CHECK: return %[[Y]]
func.func @packed(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x3x2x32x34xi8>, %u: tensor<8x3x2x32x34xi8>, %d: tensor<8x2x3x32x34xi8>) -> tensor<?x64xf32> {
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x3x2x32x34xi8>, tensor<8x3x2x32x34xi8>, tensor<8x2x3x32x34xi8> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// gpt-oss's packed experts take the same path: gate and up through the
// clamped_swiglu epilogue with each expert's gate and up biases, down with
// its bias and no row scale (the bias comes before the routing weight), the
// weight applied where each token's rows are summed.
// CHECK-LABEL: func.func @packed_clamped
// CHECK-SAME: %[[GB:[^:]*]]: tensor<4x48xf32>, %[[UB:[^:]*]]: tensor<4x48xf32>, %[[DB:[^:]*]]: tensor<4x64xf32>)
// CHECK: scf.if
// CHECK:   %[[GBE:.*]] = tensor.extract_slice %[[GB]][%[[E:.*]], 0] [1, 48] [1, 1] : tensor<4x48xf32> to tensor<48xf32>
// CHECK:   %[[UBE:.*]] = tensor.extract_slice %[[UB]][%[[E]], 0] [1, 48] [1, 1] : tensor<4x48xf32> to tensor<48xf32>
// CHECK:   attn.gemm clamped_swiglu ins({{.*}}) bias(%[[GBE]] : tensor<48xf32>) bias2(%[[UBE]] : tensor<48xf32>) alpha(1.702000e+00) limit(7.000000e+00) outs({{.*}} : tensor<?x48xf32>)
// CHECK:   %[[DBE:.*]] = tensor.extract_slice %[[DB]][%[[E]], 0] [1, 64] [1, 1] : tensor<4x64xf32> to tensor<64xf32>
// CHECK:   attn.gemm none ins({{.*}}) bias(%[[DBE]] : tensor<64xf32>) outs(
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x2xindex>, tensor<?x2xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
func.func @packed_clamped(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<4x3x64x16xf32>, %u: tensor<4x3x64x16xf32>, %d: tensor<4x4x48x16xf32>, %gb: tensor<4x48xf32>, %ub: tensor<4x48xf32>, %db: tensor<4x64xf32>) -> tensor<?x64xf32> {
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d biases(%gb, %ub, %db : tensor<4x48xf32>, tensor<4x48xf32>, tensor<4x64xf32>) clamped_swiglu alpha(1.702) limit(7.0) : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<4x3x64x16xf32>, tensor<4x3x64x16xf32>, tensor<4x4x48x16xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A shared expert joins after the routed sum, on both paths: one more
// elementwise generic adds sigmoid(gate logit) times its output, the logit
// broadcast along the row.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @shared_expert
// CHECK-SAME: %[[S:[^:]*]]: tensor<?x64xf32>, %[[SG:[^:]*]]: tensor<?x1xf32>)
// CHECK: %[[ROUTED:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[ROW]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[ROUTED]], %[[S]], %[[SG]] : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x1xf32>)
// CHECK:   ^bb0(%[[R:[^:]*]]: f32, %[[SV:[^:]*]]: f32, %[[LOGIT:[^:]*]]: f32,
// CHECK:   %[[NEG:.*]] = arith.negf %[[LOGIT]]
// CHECK:   %[[EXP:.*]] = math.exp %[[NEG]]
// CHECK:   %[[DEN:.*]] = arith.addf %{{.*}}, %[[EXP]]
// CHECK:   %[[SIG:.*]] = arith.divf %{{.*}}, %[[DEN]]
// CHECK:   %[[SCALED:.*]] = arith.mulf %[[SIG]], %[[SV]]
// CHECK:   arith.addf %[[R]], %[[SCALED]]
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func @packed_shared_expert
// CHECK: scf.if
// CHECK: %[[ROUTED:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[ROUTED]], %{{.*}} : tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK-NOT: math.exp
// CHECK: return %[[Y]]
func.func @shared_expert(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %s: tensor<?x64xf32>, %sg: tensor<?x1xf32>) -> tensor<?x64xf32> {
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d shared(%s : tensor<?x64xf32>) shared_gate(%sg : tensor<?x1xf32>) swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
func.func @packed_shared_expert(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x3x2x32x34xi8>, %u: tensor<8x3x2x32x34xi8>, %d: tensor<8x2x3x32x34xi8>, %s: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d shared(%s : tensor<?x64xf32>) swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x3x2x32x34xi8>, tensor<8x3x2x32x34xi8>, tensor<8x2x3x32x34xi8> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
