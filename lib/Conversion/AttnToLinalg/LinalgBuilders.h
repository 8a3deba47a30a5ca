//===- LinalgBuilders.h - helpers shared by the attn lowerings --*- C++ -*-===//
//
// Small builders for the linalg/tensor/arith IR the attn lowerings emit:
// empty tensors sized from values, fills, elementwise and row-reduction
// generics. Private to lib/Conversion/AttnToLinalg.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H
#define ATTN_LIB_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir {
namespace attn {

/// Body of a linalg.generic: receives the block arguments (inputs, then
/// outputs) and returns the value to yield.
using GenericBodyFn =
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange args)>;

/// An f32 constant (or of `type` when given).
Value floatConstant(OpBuilder &b, Location loc, double value,
                    Type type = Type());

/// Negative infinity in f32: the identity of max and a masked score.
Value negativeInfinity(OpBuilder &b, Location loc);

/// Sizes for a tensor of `type`: static dimensions from the type, dynamic
/// ones from the same dimension of `source`.
SmallVector<OpFoldResult> sizesFrom(OpBuilder &b, Location loc,
                                    RankedTensorType type, Value source);

/// `tensor.empty` of `sizes` with f32 elements.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes);

/// `linalg.fill` of `value` into a new tensor of `sizes`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Value value);

/// `tensor.cast` to `type` when the static information differs.
Value castIfNeeded(OpBuilder &b, Location loc, Value value, Type type);

/// A linalg.generic with one output (`init`) and the given maps/iterators.
Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                   ArrayRef<AffineMap> inputMaps, Value init,
                   AffineMap outputMap,
                   ArrayRef<utils::IteratorType> iterators, GenericBodyFn body);

/// An elementwise generic over tensors of one rank: every input and the
/// output use the identity map. The output has the sizes of `inputs[0]`.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       GenericBodyFn body);

/// Reduces the innermost dimension of `input` into `init` (rank - 1):
/// `body(args = {element, accumulator})` returns the new accumulator.
Value buildInnerReduction(OpBuilder &b, Location loc, Value input, Value init,
                          GenericBodyFn body);

/// Sizes of all but the innermost dimension of `value`.
SmallVector<OpFoldResult> outerSizes(OpBuilder &b, Location loc, Value value);

/// Maps (d0..d{rank-1}) to (d0..d{rank-2}): a per-row value broadcast along
/// the innermost dimension.
AffineMap dropInnermostMap(MLIRContext *ctx, unsigned rank);

/// Maps (d0..d{rank-1}) to (d{rank-1}): a per-feature parameter.
AffineMap innermostMap(MLIRContext *ctx, unsigned rank);

/// The iterator types of a loop nest of `rank` parallel dimensions, the last
/// one a reduction when `reduceInnermost`.
SmallVector<utils::IteratorType> iteratorTypes(unsigned rank,
                                               bool reduceInnermost = false);

/// `linalg.index dim` cast to i64 and converted to `floatType`.
Value indexAsFloat(OpBuilder &b, Location loc, Value index, Type floatType);

struct PackedWeightInfo;

/// W[n, k] in f32 of a packed weight (attn.linear's `packed` layout: f32,
/// bf16, q8_0 or q4_0 blocks, PackedWeight.h), read inside a generic's body;
/// `prefix` indexes the dimensions before the packed ones (an expert).
Value packedElement(OpBuilder &b, Location loc, Value table,
                    const PackedWeightInfo &packed, ValueRange prefix, Value n,
                    Value k);

} // namespace attn
} // namespace mlir

#endif // ATTN_LIB_CONVERSION_ATTNTOLINALG_LINALGBUILDERS_H
