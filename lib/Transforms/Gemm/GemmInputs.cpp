//===- GemmInputs.cpp - the input rows the microkernels read --------------===//
//
// Prepared once per gemm, a prefill's rows on every thread: the rows
// normalized by a fused input norm (rms_norm / layer_norm, in the unfused
// ops' arithmetic), quantized to int8 per block of 32 as llama.cpp quantizes
// activations, or rounded to bf16 for AMX and vdpbf16ps.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gemm {

namespace {

/// Runs `body` for each of the `rows` input rows: a prefill's on every
/// thread, decode's one row on the calling thread.
void forEachInputRow(OpBuilder &b, Location loc, const GemmKernel &g, Value rows,
                     llvm::function_ref<void(OpBuilder &, Location, Value)> body) {
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  if (ShapedType::isDynamic(cast<MemRefType>(g.output.getType()).getDimSize(0))) {
    scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{rows}, ValueRange{one},
                            [&](OpBuilder &pb, Location pl, ValueRange ivs) {
                              body(pb, pl, ivs[0]);
                            });
    return;
  }
  scf::ForOp::create(b, loc, zero, rows, one, ValueRange{},
                     [&](OpBuilder &rb, Location rl, Value row, ValueRange) {
                       body(rb, rl, row);
                       scf::YieldOp::create(rb, rl);
                     });
}

/// `scalar` (f32) as a value of `like`'s type: itself, or broadcast.
Value broadcastLike(OpBuilder &b, Location loc, Value scalar, Value like) {
  if (auto type = dyn_cast<VectorType>(like.getType()))
    return vector::BroadcastOp::create(b, loc, type, scalar);
  return scalar;
}

/// One row's input-norm statistics: the normalized value is
/// (x - mean) * scale, with no mean for an RMS norm.
struct RowNorm {
  Value mean, scale;
};

/// The input norm's statistics of row `row`, in the arithmetic of
/// convert-attn-to-linalg's attn.rms_norm / attn.layer_norm (sum / K, + eps,
/// sqrt, 1 / root; a layer norm's variance in a second pass, about the mean);
/// the sums are taken in vectors of the kernel's width, then across lanes.
RowNorm emitRowNorm(OpBuilder &b, Location loc, const GemmKernel &g, Value row) {
  auto scalar = [&](OpBuilder &nb, Location l, double v) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
  };
  const int64_t vectorEnd = g.k / g.width * g.width;
  // sum_k f(x[row, k]), f applied to vectors, then to the scalar tail.
  auto rowSum = [&](llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, vectorEnd),
        indexConstant(b, loc, g.width), ValueRange{splat(b, loc, g.vectorType, 0.0)},
        [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
          Value x = vector::LoadOp::create(nb, l, g.vectorType, g.input,
                                           ValueRange{row, k});
          scf::YieldOp::create(
              nb, l, ValueRange{arith::AddFOp::create(nb, l, carried[0], f(nb, l, x))});
        });
    Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            loop.getResult(0));
    for (int64_t k = vectorEnd; k < g.k; ++k) {
      Value x = memref::LoadOp::create(b, loc, g.input,
                                       ValueRange{row, indexConstant(b, loc, k)});
      sum = arith::AddFOp::create(b, loc, sum, f(b, loc, x));
    }
    return sum;
  };
  Value count = scalar(b, loc, static_cast<double>(g.k));
  auto inverseRootMean = [&](Value sum) -> Value {
    Value mean = arith::DivFOp::create(b, loc, sum, count);
    Value root = math::SqrtOp::create(
        b, loc, arith::AddFOp::create(b, loc, mean, scalar(b, loc, g.normEpsilon)));
    return arith::DivFOp::create(b, loc, scalar(b, loc, 1.0), root);
  };
  if (!g.normBeta)
    return {Value(), inverseRootMean(rowSum([](OpBuilder &nb, Location l, Value x) {
              return arith::MulFOp::create(nb, l, x, x).getResult();
            }))};
  Value mean = arith::DivFOp::create(
      b, loc, rowSum([](OpBuilder &, Location, Value x) { return x; }), count);
  Value scale = inverseRootMean(rowSum([&](OpBuilder &nb, Location l, Value x) {
    Value diff = arith::SubFOp::create(nb, l, x, broadcastLike(nb, l, mean, x));
    return arith::MulFOp::create(nb, l, diff, diff).getResult();
  }));
  return {mean, scale};
}

/// Input elements `x` (a vector, or one scalar) from feature `k0` on,
/// normalized: ((x - mean) * scale) * (gamma + offset) (+ beta), in the
/// order of the unfused norm's ops.
Value emitNormalized(OpBuilder &b, Location loc, const GemmKernel &g,
                     const RowNorm &norm, Value x, Value k0) {
  auto param = [&](Value buffer) -> Value {
    if (auto type = dyn_cast<VectorType>(x.getType()))
      return vector::LoadOp::create(b, loc, type, buffer, ValueRange{k0});
    return memref::LoadOp::create(b, loc, buffer, ValueRange{k0});
  };
  if (norm.mean)
    x = arith::SubFOp::create(b, loc, x, broadcastLike(b, loc, norm.mean, x));
  x = arith::MulFOp::create(b, loc, x, broadcastLike(b, loc, norm.scale, x));
  Value gain = param(g.normGamma);
  if (g.normGainOffset)
    gain = arith::AddFOp::create(
        b, loc, gain,
        broadcastLike(b, loc,
                      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(*g.normGainOffset)),
                      gain));
  x = arith::MulFOp::create(b, loc, x, gain);
  if (g.normBeta)
    x = arith::AddFOp::create(b, loc, x, param(g.normBeta));
  return x;
}

} // namespace

void emitNormalizedInput(OpBuilder &b, Location loc, GemmKernel &g, Value rows) {
  Value normalized = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic, g.k}, b.getF32Type()),
      ValueRange{rows});
  const int64_t vectorEnd = g.k / g.width * g.width;
  forEachInputRow(b, loc, g, rows, [&](OpBuilder &rb, Location rl, Value row) {
    RowNorm norm = emitRowNorm(rb, rl, g, row);
    scf::ForOp::create(
        rb, rl, indexConstant(rb, rl, 0), indexConstant(rb, rl, vectorEnd),
        indexConstant(rb, rl, g.width), ValueRange{},
        [&](OpBuilder &nb, Location l, Value k, ValueRange) {
          Value x = vector::LoadOp::create(nb, l, g.vectorType, g.input,
                                           ValueRange{row, k});
          vector::StoreOp::create(nb, l, emitNormalized(nb, l, g, norm, x, k),
                                  normalized, ValueRange{row, k});
          scf::YieldOp::create(nb, l);
        });
    for (int64_t k = vectorEnd; k < g.k; ++k) {
      Value index = indexConstant(rb, rl, k);
      Value x = memref::LoadOp::create(rb, rl, g.input, ValueRange{row, index});
      memref::StoreOp::create(rb, rl, emitNormalized(rb, rl, g, norm, x, index),
                              normalized, ValueRange{row, index});
    }
  });
  g.input = g.normalizedInput = normalized;
}

LogicalResult emitQuantizedInput(OpBuilder &b, Location loc, GemmKernel &g,
                                 Value rows) {
  auto inputType = cast<MemRefType>(g.input.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(inputType.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return g.op.emitOpError("with a quantized weight needs an input with "
                            "contiguous rows, got ")
           << inputType;
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), i8 = b.getI8Type();
  int64_t dyn = ShapedType::kDynamic;
  g.quads = memref::AllocOp::create(b, loc, MemRefType::get({dyn, g.k / 4}, i32),
                                    ValueRange{rows});
  g.scales = memref::AllocOp::create(b, loc, MemRefType::get({dyn, g.groups}, f32),
                                     ValueRange{rows});
  if (!g.signedWeights())
    g.corrections = memref::AllocOp::create(
        b, loc, MemRefType::get({dyn, g.groups}, i32), ValueRange{rows});
  auto valuesType = VectorType::get({kQuantBlock}, f32);
  auto intsType = VectorType::get({kQuantBlock}, i32);
  auto bytesType = VectorType::get({kQuantBlock}, i8);
  auto quadsType = VectorType::get({kQuantBlock / 4}, i32);
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto quantizeRow = [&](OpBuilder &rb, Location rl, Value row) {
    RowNorm norm;
    if (g.normGamma)
      norm = emitRowNorm(rb, rl, g, row);
    scf::ForOp::create(
        rb, rl, zero, indexConstant(rb, rl, g.groups), one, ValueRange{},
        [&](OpBuilder &nb, Location l, Value group, ValueRange) {
          Value k0 = arith::MulIOp::create(nb, l, group,
                                           indexConstant(nb, l, kQuantBlock));
          Value x = vector::LoadOp::create(nb, l, valuesType, g.input,
                                           ValueRange{row, k0});
          if (g.normGamma)
            x = emitNormalized(nb, l, g, norm, x, k0);
          Value amax = vector::ReductionOp::create(
              nb, l, vector::CombiningKind::MAXNUMF,
              math::AbsFOp::create(nb, l, x));
          auto scalar = [&](double v) -> Value {
            return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
          };
          Value d = arith::DivFOp::create(nb, l, amax, scalar(127.0));
          Value nonzero = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNE,
                                                d, scalar(0.0));
          Value id = arith::SelectOp::create(
              nb, l, nonzero, arith::DivFOp::create(nb, l, scalar(1.0), d),
              scalar(0.0));
          Value scaled = arith::MulFOp::create(
              nb, l, x, vector::BroadcastOp::create(nb, l, valuesType, id));
          Value q = arith::FPToSIOp::create(
              nb, l, intsType, math::RoundEvenOp::create(nb, l, scaled));
          Value bytes = arith::TruncIOp::create(nb, l, bytesType, q);
          Value firstQuad = arith::MulIOp::create(
              nb, l, group, indexConstant(nb, l, kQuantBlock / 4));
          vector::StoreOp::create(nb, l,
                                  vector::BitCastOp::create(nb, l, quadsType, bytes),
                                  g.quads, ValueRange{row, firstQuad});
          memref::StoreOp::create(nb, l, d, g.scales, ValueRange{row, group});
          if (g.corrections) {
            Value sum = vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD, q);
            Value correction = arith::MulIOp::create(
                nb, l, sum,
                arith::ConstantIntOp::create(nb, l, quantOffset(g.format), 32));
            memref::StoreOp::create(nb, l, correction, g.corrections,
                                    ValueRange{row, group});
          }
          scf::YieldOp::create(nb, l);
        });
  };
  forEachInputRow(b, loc, g, rows, quantizeRow);
  return success();
}

void emitBf16Input(OpBuilder &b, Location loc, GemmKernel &g, Value rows,
                   bool asPairs) {
  Value rounded = memref::AllocOp::create(
      b, loc,
      asPairs ? MemRefType::get({ShapedType::kDynamic, g.k / 2}, b.getI32Type())
              : MemRefType::get({ShapedType::kDynamic, g.k}, b.getBF16Type()),
      ValueRange{rows});
  (asPairs ? g.inputPairs : g.inputBf16) = rounded;
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto halfType = VectorType::get({g.width}, b.getBF16Type());
  scf::ParallelOp::create(
      b, loc, ValueRange{zero}, ValueRange{rows}, ValueRange{one},
      [&](OpBuilder &pb, Location pl, ValueRange ivs) {
        scf::ForOp::create(
            pb, pl, zero, indexConstant(pb, pl, g.k), indexConstant(pb, pl, g.width),
            ValueRange{}, [&](OpBuilder &nb, Location l, Value k, ValueRange) {
              Value x = vector::LoadOp::create(nb, l, g.vectorType, g.input,
                                               ValueRange{ivs[0], k});
              Value half = arith::TruncFOp::create(nb, l, halfType, x);
              if (asPairs) {
                half = vector::BitCastOp::create(
                    nb, l, VectorType::get({g.width / 2}, nb.getI32Type()), half);
                k = arith::DivUIOp::create(nb, l, k, indexConstant(nb, l, 2));
              }
              vector::StoreOp::create(nb, l, half, rounded, ValueRange{ivs[0], k});
              scf::YieldOp::create(nb, l);
            });
      });
}

} // namespace mlir::attn::gemm
