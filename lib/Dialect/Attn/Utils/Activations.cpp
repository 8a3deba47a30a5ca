//===- Activations.cpp - the math of the attn activations, written once ---===//

#include "attn/Dialect/Attn/Utils/Activations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

Value mlir::attn::floatConstantLike(OpBuilder &b, Location loc, Value like,
                                    double value) {
  Type type = like.getType();
  TypedAttr attr = b.getFloatAttr(getElementTypeOrSelf(type), value);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = DenseElementsAttr::get(shaped, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

Value mlir::attn::buildGelu(OpBuilder &b, Location loc, Value x,
                            GeluApproximation approximation) {
  auto c = [&](double value) { return floatConstantLike(b, loc, x, value); };
  Value inner;
  if (approximation == GeluApproximation::Erf) {
    inner = math::ErfOp::create(b, loc, arith::MulFOp::create(b, loc, c(M_SQRT1_2), x));
  } else {
    Value x3 = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x), x);
    Value poly = math::FmaOp::create(b, loc, c(0.044715), x3, x);
    inner = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, c(std::sqrt(2.0 / M_PI)), poly));
  }
  Value halfX = arith::MulFOp::create(b, loc, c(0.5), x);
  return arith::MulFOp::create(b, loc, halfX,
                               arith::AddFOp::create(b, loc, c(1.0), inner));
}

Value mlir::attn::buildSilu(OpBuilder &b, Location loc, Value x) {
  Value expNeg = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  Value denominator =
      arith::AddFOp::create(b, loc, floatConstantLike(b, loc, x, 1.0), expNeg);
  return arith::DivFOp::create(b, loc, x, denominator);
}

Value mlir::attn::buildSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConstantLike(b, loc, x, 1.0);
  Value expNeg = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, expNeg));
}

Value mlir::attn::buildSoftcap(OpBuilder &b, Location loc, Value x,
                               double cap) {
  Value c = floatConstantLike(b, loc, x, cap);
  Value squashed =
      math::TanhOp::create(b, loc, arith::DivFOp::create(b, loc, x, c));
  return arith::MulFOp::create(b, loc, squashed, c);
}

Value mlir::attn::buildClampedSwiglu(OpBuilder &b, Location loc, Value gate,
                                     Value up, double alpha, double limit) {
  auto c = [&](double value) { return floatConstantLike(b, loc, gate, value); };
  Value g = arith::MinimumFOp::create(b, loc, gate, c(limit));
  Value u = arith::MaximumFOp::create(
      b, loc, arith::MinimumFOp::create(b, loc, up, c(limit)), c(-limit));
  Value e = math::ExpOp::create(b, loc, arith::MulFOp::create(b, loc, g, c(-alpha)));
  Value glu = arith::DivFOp::create(b, loc, g, arith::AddFOp::create(b, loc, c(1.0), e));
  return arith::MulFOp::create(b, loc, glu, arith::AddFOp::create(b, loc, u, c(1.0)));
}
