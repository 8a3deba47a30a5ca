//===- AttnBase.td - attn dialect definition and shared constraints -------===//
//
// The dialect record, the base class of every attn op and the type
// constraints the ops share. Ops live in AttnOps.td, enums in AttnEnums.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_BASE_TD
#define ATTN_BASE_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Transformer inference ops on tensors";
  let description = [{
    The `attn` dialect models the building blocks of decoder-only transformer
    inference at the level a model author thinks in: embeddings, projections,
    normalization, positional encodings, multi-head and grouped-query
    attention, the KV cache and the MLP activations.

    All ops have value semantics on ranked `f32` tensors. Activations of one
    sequence are `[seq, features]`; heads are folded into the feature
    dimension (`[seq, heads * head_dim]`) and named by attributes where they
    matter. The sequence dimension may be dynamic; feature dimensions are
    static so that every head split can be verified.

    `convert-attn-to-linalg` lowers each op to `linalg`/`tensor`/`arith`/
    `math`, where tiling (TilingInterface) and bufferization
    (destination-passing style) take over.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

// Base class of all attn ops.
class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

// Activations are f32. Weights are f32, or in the packed layout the CPU
// kernels stream bf16 (half the bytes per decode step; widened to f32
// before the FMA, so accumulation stays f32) or i8 bytes holding llama.cpp's
// q8_0 and q4_0 blocks (include/attn/Dialect/Attn/IR/PackedWeight.h).
def Attn_Tensor : RankedTensorOf<[F32]>;
def Attn_Tensor1D : TensorRankOf<[F32], [1]>;
def Attn_Tensor2D : TensorRankOf<[F32], [2]>;
def Attn_Tensor3D : TensorRankOf<[F32], [3]>;
def Attn_WeightTensor : RankedTensorOf<[F32, BF16, I8]>;
def Attn_TokenIds : TensorRankOf<[I32, I64], [1]>;
// The experts a mixture-of-experts router chose: [tokens, top_k] indices.
def Attn_ExpertIds : TensorRankOf<[I32], [2]>;
// Cached keys and values: f32, or bf16 / f16 (half the bytes a decode step
// reads from a long cache; widened to f32 where attention loads them).
def Attn_CacheTensor2D : TensorRankOf<[F32, BF16, F16], [2]>;

// Operands of code generation ops: f32 tensors before bufferization, f32
// memrefs (any layout) after.
def Attn_TensorOrMemRef : AnyTypeOf<[RankedTensorOf<[F32]>, MemRefOf<[F32]>],
                                    "f32 tensor or memref">;
// Keys and values of a code generation op: f32, bf16 or f16.
def Attn_CacheTensorOrMemRef
    : AnyTypeOf<[RankedTensorOf<[F32, BF16, F16]>, MemRefOf<[F32, BF16, F16]>],
                "f32, bf16 or f16 tensor or memref">;
// A packed weight of a code generation op: f32, bf16, or q8_0/q4_0 bytes.
def Attn_WeightTensorOrMemRef
    : AnyTypeOf<[RankedTensorOf<[F32, BF16, I8]>, MemRefOf<[F32, BF16, I8]>],
                "f32, bf16 or i8 tensor or memref">;

// Range checks of attribute values (positive epsilon, even head_dim, ...) are
// in the C++ verifiers, whose messages name the offending value.

#endif // ATTN_BASE_TD
