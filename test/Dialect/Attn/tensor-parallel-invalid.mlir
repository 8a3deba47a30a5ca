// The tensor-parallel ops' verifiers, one broken invariant per chunk.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @gather_features(%x: tensor<?x768xf32>) -> tensor<?x1024xf32> {
  // expected-error @+1 {{result has 1024 features but 2 ranks of 768 gather 1536}}
  %g = attn.all_gather %x ranks(2) : tensor<?x768xf32> -> tensor<?x1024xf32>
  return %g : tensor<?x1024xf32>
}

// -----

func.func @gather_rows(%x: tensor<3x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dimension 0 of result (4) does not match dimension 0 of input (3)}}
  %g = attn.all_gather %x ranks(2) : tensor<3x8xf32> -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

func.func @gather_dynamic_features(%x: tensor<3x?xf32>) -> tensor<3x16xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of input}}
  %g = attn.all_gather %x ranks(2) : tensor<3x?xf32> -> tensor<3x16xf32>
  return %g : tensor<3x16xf32>
}

// -----

func.func @reduce_one_rank(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{attribute 'ranks' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 2}}
  %s = attn.all_reduce %x ranks(1) : tensor<3x8xf32>
  return %s : tensor<3x8xf32>
}

// -----

func.func @reduce_types(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{all of {input, result} have same type}}
  %s = "attn.all_reduce"(%x) {ranks = 2 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %s : tensor<3x4xf32>
}

// -----

func.func @rank_of_one() -> index {
  // expected-error @+1 {{attribute 'ranks' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 2}}
  %r = attn.group_rank ranks(0) : index
  return %r : index
}

// -----

func.func @embedding_offset_not_index(%t: tensor<100x8xf32>, %ids: tensor<4xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.embedding' op operand #2 must be index, but got 'tensor<4xi32>'}}
  %0 = "attn.embedding"(%t, %ids, %ids) : (tensor<100x8xf32>, tensor<4xi32>, tensor<4xi32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
