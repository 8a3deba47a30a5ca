//===- LinalgBuilders.cpp - helpers shared by the attn lowerings ----------===//

#include "LinalgBuilders.h"

#include "attn/Dialect/Attn/IR/PackedWeight.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::attn;

Value mlir::attn::floatConstant(OpBuilder &b, Location loc, double value,
                                Type type) {
  auto floatType = type ? cast<FloatType>(type) : b.getF32Type();
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
}

Value mlir::attn::negativeInfinity(OpBuilder &b, Location loc) {
  APFloat inf = APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/true);
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(inf.convertToFloat()));
}

SmallVector<OpFoldResult> mlir::attn::sizesFrom(OpBuilder &b, Location loc,
                                                RankedTensorType type,
                                                Value source) {
  SmallVector<OpFoldResult> sizes;
  for (auto [dim, size] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(size)) {
      sizes.push_back(b.getIndexAttr(size));
      continue;
    }
    sizes.push_back(tensor::getMixedSize(b, loc, source, dim));
  }
  return sizes;
}

Value mlir::attn::emptyTensor(OpBuilder &b, Location loc,
                              ArrayRef<OpFoldResult> sizes) {
  return tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
}

Value mlir::attn::filledTensor(OpBuilder &b, Location loc,
                               ArrayRef<OpFoldResult> sizes, Value value) {
  Value empty = emptyTensor(b, loc, sizes);
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

Value mlir::attn::castIfNeeded(OpBuilder &b, Location loc, Value value,
                               Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

Value mlir::attn::buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                               ArrayRef<AffineMap> inputMaps, Value init,
                               AffineMap outputMap,
                               ArrayRef<utils::IteratorType> iterators,
                               GenericBodyFn body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(outputMap);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args);
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value mlir::attn::buildElementwise(OpBuilder &b, Location loc,
                                   ValueRange inputs, GenericBodyFn body) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  unsigned rank = type.getRank();
  Value init = emptyTensor(b, loc, tensor::getMixedSizes(b, loc, inputs.front()));
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> inputMaps(inputs.size(), identity);
  return buildGeneric(b, loc, inputs, inputMaps, init, identity,
                      iteratorTypes(rank), body);
}

Value mlir::attn::buildInnerReduction(OpBuilder &b, Location loc, Value input,
                                      Value init, GenericBodyFn body) {
  unsigned rank = cast<RankedTensorType>(input.getType()).getRank();
  return buildGeneric(b, loc, input, {b.getMultiDimIdentityMap(rank)}, init,
                      dropInnermostMap(b.getContext(), rank),
                      iteratorTypes(rank, /*reduceInnermost=*/true), body);
}

SmallVector<OpFoldResult> mlir::attn::outerSizes(OpBuilder &b, Location loc,
                                                 Value value) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  sizes.pop_back();
  return sizes;
}

AffineMap mlir::attn::dropInnermostMap(MLIRContext *ctx, unsigned rank) {
  SmallVector<AffineExpr> results;
  for (unsigned dim = 0; dim + 1 < rank; ++dim)
    results.push_back(getAffineDimExpr(dim, ctx));
  return AffineMap::get(rank, 0, results, ctx);
}

AffineMap mlir::attn::innermostMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx));
}

SmallVector<utils::IteratorType> mlir::attn::iteratorTypes(unsigned rank,
                                                          bool reduceInnermost) {
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  if (reduceInnermost && rank > 0)
    iterators.back() = utils::IteratorType::reduction;
  return iterators;
}

Value mlir::attn::indexAsFloat(OpBuilder &b, Location loc, Value index,
                               Type floatType) {
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return arith::SIToFPOp::create(b, loc, floatType, asInt);
}

/// Weight (lane of `block`, input `k`) of a q8_0 / q4_0 packed table, in
/// f32: (byte - 128) * d or (nibble - 8) * d, as PackedWeight.h lays out.
static Value dequantizeElement(OpBuilder &b, Location l, Value table,
                               const PackedWeightInfo &packed, ValueRange prefix,
                               Value block, Value lane, Value k) {
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, l, v); };
  const bool q8 = packed.format == PackedFormat::Q8_0;
  const int64_t nr = packed.blockSize, bytes = quantBlockBytes(packed.format);
  Value group = arith::DivUIOp::create(b, l, k, c(kQuantBlock));
  Value t = arith::RemUIOp::create(b, l, k, c(kQuantBlock));
  Value quad = arith::DivUIOp::create(b, l, t, c(4));
  Value storedQuad = q8 ? quad : arith::RemUIOp::create(b, l, quad, c(4));
  Value offset = arith::AddIOp::create(
      b, l,
      arith::MulIOp::create(
          b, l, arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, storedQuad, c(nr)), lane),
          c(4)),
      arith::RemUIOp::create(b, l, t, c(4)));
  auto byteAt = [&](Value at) -> Value {
    SmallVector<Value, 5> indices(prefix);
    indices.append({block, group, arith::DivUIOp::create(b, l, at, c(bytes)),
                    arith::RemUIOp::create(b, l, at, c(bytes))});
    Value byte = tensor::ExtractOp::create(b, l, table, indices);
    return arith::ExtUIOp::create(b, l, b.getI32Type(), byte);
  };
  Value stored = byteAt(offset);
  if (!q8) {
    // Quads 4..7 are the high nibbles.
    Value high = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, quad, c(4));
    Value shift = arith::SelectOp::create(
        b, l, high, arith::ConstantIntOp::create(b, l, 4, 32),
        arith::ConstantIntOp::create(b, l, 0, 32));
    stored = arith::AndIOp::create(b, l, arith::ShRUIOp::create(b, l, stored, shift),
                                   arith::ConstantIntOp::create(b, l, 15, 32));
  }
  Value q = arith::SubIOp::create(
      b, l, stored, arith::ConstantIntOp::create(b, l, quantOffset(packed.format), 32));
  Value scaleAt = arith::AddIOp::create(
      b, l, c(quantWeightBytes(packed.format) * nr),
      arith::MulIOp::create(b, l, lane, c(2)));
  Value bits = arith::OrIOp::create(
      b, l, byteAt(scaleAt),
      arith::ShLIOp::create(b, l, byteAt(arith::AddIOp::create(b, l, scaleAt, c(1))),
                            arith::ConstantIntOp::create(b, l, 8, 32)));
  Value half = arith::BitcastOp::create(
      b, l, b.getF16Type(), arith::TruncIOp::create(b, l, b.getI16Type(), bits));
  Value d = arith::ExtFOp::create(b, l, b.getF32Type(), half);
  return arith::MulFOp::create(
      b, l, arith::SIToFPOp::create(b, l, b.getF32Type(), q), d);
}

Value mlir::attn::packedElement(OpBuilder &b, Location l, Value table,
                                const PackedWeightInfo &packed,
                                ValueRange prefix, Value n, Value k) {
  // Feature n is lane n % NR of block n / NR.
  Value size = arith::ConstantIndexOp::create(b, l, packed.blockSize);
  Value block = arith::DivUIOp::create(b, l, n, size);
  Value lane = arith::RemUIOp::create(b, l, n, size);
  if (isQuantized(packed.format))
    return dequantizeElement(b, l, table, packed, prefix, block, lane, k);
  SmallVector<Value, 4> indices(prefix);
  indices.append({block, k, lane});
  Value value = tensor::ExtractOp::create(b, l, table, indices);
  if (!value.getType().isF32())
    value = arith::ExtFOp::create(b, l, b.getF32Type(), value);
  return value;
}
