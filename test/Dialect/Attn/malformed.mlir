// Broken textual IR: each chunk must end in a located diagnostic, never a crash.
// RUN: attn-opt %s -split-input-file -verify-diagnostics
// The whole file without -verify-diagnostics fails with a non-zero exit.
// RUN: not attn-opt %s -split-input-file 2>&1 | FileCheck %s --check-prefix=EXIT
// EXIT: malformed.mlir:{{[0-9]+}}:{{[0-9]+}}: error:

func.func @unknown_op(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{custom op 'attn.attend' is unknown}}
  %0 = attn.attend %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @missing_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected ':'}}
  %0 = attn.silu %x
  return %0 : tensor<4x8xf32>
}

// -----

func.func @heads_not_integer(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %0 = attn.attention %q, %q, %q heads("two") : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @heads_float(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{floating point value not valid for specified type}}
  %0 = attn.attention %q, %q, %q heads(2.5) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @missing_heads(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{expected 'heads'}}
  %0 = attn.attention %q, %q, %q causal : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @missing_value_operand(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = attn.attention %q, %q heads(2) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @undefined_value(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{use of undeclared SSA value name}}
  %0 = attn.residual_add %x, %nothing : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @operand_type_conflict(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%x' expects different type than prior uses: 'tensor<4x16xf32>' vs 'tensor<4x8xf32>'}}
  %0 = attn.silu %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @epsilon_string(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %0 = attn.rms_norm %x, %g epsilon("small") : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @bias_without_type(%q: tensor<3x8xf32>, %b: tensor<2x3x3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{expected ':'}}
  %0 = attn.attention %q, %q, %q heads(2) bias(%b) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @negative_dimension(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected non-function type}}
  %0 = attn.silu %x : tensor<-4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @wrong_result_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operation defines 1 results but was provided 2 to bind}}
  %0, %1 = attn.silu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @generic_missing_properties(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires attribute 'epsilon'}}
  %0 = "attn.rms_norm"(%x, %g) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @generic_wrong_segment_sizes(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{operand count (3) does not match with the total size (4) specified in attribute 'operandSegmentSizes'}}
  %0 = "attn.attention"(%q, %q, %q) <{heads = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}> : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @truncated(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected SSA operand}}
  %0 = attn.layer_norm %x,
