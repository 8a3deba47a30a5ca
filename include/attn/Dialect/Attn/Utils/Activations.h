//===- Activations.h - the math of the attn activations, written once -*- C++ -*-===//
//
// GELU (both forms), SiLU, sigmoid, the logit soft cap and gpt-oss's clamped
// GLU, built for an f32 scalar (a linalg body: the reference lowering) or a
// vector of f32 (the kernels' fused epilogues and the attention kernel) from
// one definition each, so that both paths round alike and a change to one
// reaches the other. exp, tanh and erf stay math ops: attn-approximate-math
// turns them into polynomials for every user at once.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_UTILS_ACTIVATIONS_H
#define ATTN_DIALECT_ATTN_UTILS_ACTIVATIONS_H

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// `value` as a constant of `like`'s type (a splat for a vector).
Value floatConstantLike(OpBuilder &b, Location loc, Value like, double value);

/// 0.5 x (1 + erf(x / sqrt(2))), or with tanh: 0.5 x (1 + tanh(sqrt(2/pi)
/// (x + 0.044715 x^3))), the cubic term added by one FMA.
Value buildGelu(OpBuilder &b, Location loc, Value x,
                GeluApproximation approximation);

/// x * sigmoid(x) written as x / (1 + exp(-x)): at large negative x exp
/// overflows to inf and the quotient is -0, not NaN.
Value buildSilu(OpBuilder &b, Location loc, Value x);

/// sigmoid(x) as 1 / (1 + exp(-x)), which tends to 0 where exp overflows.
Value buildSigmoid(OpBuilder &b, Location loc, Value x);

/// cap * tanh(x / cap), as Gemma 2 caps scores and logits (x / cap, then
/// tanh, then * cap: torch's order).
Value buildSoftcap(OpBuilder &b, Location loc, Value x, double cap);

/// gpt-oss's GLU: g = min(gate, limit), u = clamp(up, -limit, limit),
/// g sigmoid(alpha g) (u + 1), the sigmoid's product written as
/// g / (1 + exp(-alpha g)) (one rounding fewer).
Value buildClampedSwiglu(OpBuilder &b, Location loc, Value gate, Value up,
                         double alpha, double limit);

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_UTILS_ACTIVATIONS_H
