//===- LinalgBuilders.cpp - helpers shared by the attn lowerings ----------===//

#include "LinalgBuilders.h"

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

Value mlir::attn::buildSoftcap(OpBuilder &b, Location loc, Value x,
                               double cap) {
  Value c = floatConstant(b, loc, cap, getElementTypeOrSelf(x.getType()));
  Value squashed =
      math::TanhOp::create(b, loc, arith::DivFOp::create(b, loc, x, c));
  return arith::MulFOp::create(b, loc, squashed, c);
}

Value mlir::attn::buildSilu(OpBuilder &b, Location loc, Value x) {
  Value one = floatConstant(b, loc, 1.0);
  Value expNeg = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  Value denom = arith::AddFOp::create(b, loc, one, expNeg);
  return arith::DivFOp::create(b, loc, x, denom);
}
