//===- AttentionToLinalg.cpp - blocked online-softmax attention -----------===//
//
// attn.attention becomes, per head and per block of query rows, an scf.for
// over key blocks carrying the running row maximum m, the running row sum l
// and the unnormalized output acc (FlashAttention's online softmax). The score
// tile is [query-block, kv-block] whatever the sequence length, and for causal
// attention the key loop stops at the diagonal of the query block, so blocks
// that are entirely masked are never visited.
//
// attn.attention_probabilities shares the scoring (maskedScores) and
// softmaxes one [seq_q, valid keys] tile per head: it is for inspection, where
// the whole matrix is the result.
//
//===----------------------------------------------------------------------===//

#include "AttentionToLinalg.h"

#include "LinalgBuilders.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Utils/Activations.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Values every block of one attention op needs.
struct AttentionShape {
  int64_t heads, groupSize, headDim;
  double scale;
  /// Cap of the scaled scores (c tanh(s / c)); 0: none.
  double softcap;
  bool causal;
  /// Keys a query sees with a sliding window (0: no window).
  int64_t window;
  /// ALiBi slopes (empty: none); `slopes` holds them as a tensor constant.
  ArrayRef<float> alibi;
  Value slopes;
  Value query, key, value, bias;
  /// [heads] attention sinks (null: none).
  Value sinks;
  /// Query rows; valid keys: min(kv_len, seq_kv).
  Value seqQ, kvLength;
  /// kv_len - seq_q: query row i sits at position i + diagonalOffset.
  Value diagonalOffset;
  AttentionLoweringOptions options;

  int64_t kvBlockSize() const { return options.kvBlock; }
};

/// min(blockSize, upper - lower) as an affine.min, whose bounds later
/// tiling and vectorization can read. (Built as is: the loop whose induction
/// variable it reads is still under construction, so it cannot be composed.)
static Value blockExtent(OpBuilder &b, Location loc, int64_t blockSize,
                         Value upper, Value lower) {
  MLIRContext *ctx = b.getContext();
  AffineExpr s0 = getAffineSymbolExpr(0, ctx), s1 = getAffineSymbolExpr(1, ctx);
  AffineMap map = AffineMap::get(
      0, 2, {getAffineConstantExpr(blockSize, ctx), s0 - s1}, ctx);
  return affine::AffineMinOp::create(b, loc, map, ValueRange{upper, lower});
}

/// A [rows, cols] slice of a 2-D tensor.
static Value slice2D(OpBuilder &b, Location loc, Value source, Value row,
                     Value col, Value rows, OpFoldResult cols) {
  SmallVector<OpFoldResult> offsets = {row, col}, sizes = {rows, cols};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes, strides);
}

/// C = A B^T (transposeB) or A B, into a zero-filled or given accumulator.
static Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    Value acc, bool transposeB) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j, r;
  bindDims(ctx, i, j, r);
  AffineMap rhsMap = transposeB ? AffineMap::get(3, 0, {j, r}, ctx)
                                : AffineMap::get(3, 0, {r, j}, ctx);
  SmallVector<Attribute> maps = {
      AffineMapAttr::get(AffineMap::get(3, 0, {i, r}, ctx)),
      AffineMapAttr::get(rhsMap),
      AffineMapAttr::get(AffineMap::get(3, 0, {i, j}, ctx))};
  return linalg::MatmulOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{lhs, rhs},
             ValueRange{acc},
             {b.getNamedAttr("indexing_maps", b.getArrayAttr(maps))})
      .getResult(0);
}

/// m, or 0 where m is -inf: exp(x - safe(m)) is then 0 for a row that has
/// seen no visible key yet, instead of exp(-inf - -inf) = NaN.
static Value safeMax(OpBuilder &b, Location loc, Value m) {
  Value isEmpty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                        negativeInfinity(b, loc));
  return arith::SelectOp::create(b, loc, isEmpty, floatConstant(b, loc, 0.0), m);
}

/// softmax along the rows of masked scores: exp(s - max) / sum, and 0 for
/// a row whose every score is -inf (no visible key). With a `sink` logit
/// (an f32 scalar), it joins the max and the sum as a key of its own.
static Value softmaxRows(OpBuilder &b, Location loc, Value scores,
                         Value sink = Value()) {
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap perRow = dropInnermostMap(b.getContext(), 2);
  SmallVector<OpFoldResult> rows = outerSizes(b, loc, scores);
  Value m = buildInnerReduction(
      b, loc, scores,
      filledTensor(b, loc, rows, sink ? sink : negativeInfinity(b, loc)),
      [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::MaximumFOp::create(nb, l, args[1], args[0]).getResult();
      });
  Value e = buildGeneric(b, loc, {scores, m}, {id2, perRow}, scores, id2, iteratorTypes(2),
                         [](OpBuilder &nb, Location l, ValueRange args) {
                           Value shifted = arith::SubFOp::create(nb, l, args[0],
                                                                 safeMax(nb, l, args[1]));
                           return math::ExpOp::create(nb, l, shifted).getResult();
                         });
  Value sumInit = filledTensor(b, loc, rows, floatConstant(b, loc, 0.0));
  if (sink) {
    // e^(sink - m) starts each row's sum; m >= sink is finite.
    AffineMap id1 = b.getMultiDimIdentityMap(1);
    sumInit = buildGeneric(b, loc, {m}, {id1}, sumInit, id1, iteratorTypes(1),
                           [&](OpBuilder &nb, Location l, ValueRange args) {
                             Value shifted = arith::SubFOp::create(nb, l, sink, args[0]);
                             return math::ExpOp::create(nb, l, shifted).getResult();
                           });
  }
  Value sum = buildInnerReduction(
      b, loc, e, sumInit,
      [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::AddFOp::create(nb, l, args[1], args[0]).getResult();
      });
  return buildGeneric(b, loc, {e, sum}, {id2, perRow}, e, id2, iteratorTypes(2),
                      [](OpBuilder &nb, Location l, ValueRange args) {
                        Value zero = floatConstant(nb, l, 0.0);
                        Value empty = arith::CmpFOp::create(
                            nb, l, arith::CmpFPredicate::OEQ, args[1], zero);
                        Value p = arith::DivFOp::create(nb, l, args[0], args[1]);
                        return arith::SelectOp::create(nb, l, empty, zero, p).getResult();
                      });
}

/// The scores of query rows [qb, qb + bq) of one head (`qBlock`) against
/// keys [kb, kb + bk) from column `kCol`: softcap(scale * Q K^T) + bias +
/// slope (j - p_i), -inf where the key is not visible (causal, window).
static Value maskedScores(OpBuilder &b, Location loc, const AttentionShape &shape,
                          Value head, Value qb, Value qBlock, Value kCol, Value kb,
                          Value bk) {
  MLIRContext *ctx = b.getContext();
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  OpFoldResult headDim = b.getIndexAttr(shape.headDim);
  Value bq = tensor::DimOp::create(b, loc, qBlock, 0);

  // S = Q_blk K_blk^T
  Value kBlock = slice2D(b, loc, shape.key, kb, kCol, bk, headDim);
  Value zeros = filledTensor(b, loc, {bq, bk}, floatConstant(b, loc, 0.0));
  Value scores = matmul(b, loc, qBlock, kBlock, zeros, /*transposeB=*/true);

  Value slope;
  if (!shape.alibi.empty())
    slope = tensor::ExtractOp::create(b, loc, shape.slopes, ValueRange{head});
  SmallVector<Value> inputs = {scores};
  SmallVector<AffineMap> maps = {id2};
  if (shape.bias) {
    auto biasType = cast<RankedTensorType>(shape.bias.getType());
    Value biasHead = biasType.getDimSize(0) == 1
                         ? arith::ConstantIndexOp::create(b, loc, 0).getResult()
                         : head;
    SmallVector<OpFoldResult> offsets = {biasHead, qb, kb};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), bq, bk};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    inputs.push_back(tensor::ExtractSliceOp::create(b, loc, shape.bias, offsets,
                                                    sizes, strides));
    AffineExpr i, j;
    bindDims(ctx, i, j);
    maps.push_back(AffineMap::get(2, 0, {getAffineConstantExpr(0, ctx), i, j}, ctx));
  }
  Value scale = floatConstant(b, loc, shape.scale);
  return buildGeneric(
      b, loc, inputs, maps, scores, id2, iteratorTypes(2),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value s = arith::MulFOp::create(nb, l, args[0], scale);
        if (shape.softcap)
          s = buildSoftcap(nb, l, s, shape.softcap);
        if (shape.bias)
          s = arith::AddFOp::create(nb, l, s, args[1]);
        if (!shape.causal && !slope)
          return s;
        // Query qb + i sits at position p = qb + i + offset, key kb + j at
        // kb + j.
        Value row = arith::AddIOp::create(nb, l, qb, linalg::IndexOp::create(nb, l, 0));
        Value col = arith::AddIOp::create(nb, l, kb, linalg::IndexOp::create(nb, l, 1));
        Value last = arith::AddIOp::create(nb, l, row, shape.diagonalOffset);
        if (slope) {
          // The distance is exact as an integer; one rounding in the product.
          Value distance = arith::IndexCastOp::create(
              nb, l, nb.getI64Type(), arith::SubIOp::create(nb, l, col, last));
          Value asFloat = arith::SIToFPOp::create(nb, l, nb.getF32Type(), distance);
          s = arith::AddFOp::create(nb, l, s,
                                    arith::MulFOp::create(nb, l, slope, asFloat));
        }
        if (!shape.causal)
          return s;
        Value visible = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle, col, last);
        if (shape.window) {
          // ... and, with a window, col > p - window.
          Value first = arith::SubIOp::create(
              nb, l, last, arith::ConstantIndexOp::create(nb, l, shape.window - 1));
          visible = arith::AndIOp::create(
              nb, l, visible,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, col, first));
        }
        return arith::SelectOp::create(nb, l, visible, s, negativeInfinity(nb, l))
            .getResult();
      });
}

/// One online-softmax step over keys [kb, kb + bk) for the query rows
/// [qb, qb + bq). Returns the new (acc, m, l).
static SmallVector<Value> onlineSoftmaxStep(OpBuilder &b, Location loc,
                                            const AttentionShape &shape,
                                            Value head, Value qb, Value qBlock,
                                            Value kCol, Value kb, Value bk,
                                            Value acc, Value m, Value l) {
  MLIRContext *ctx = b.getContext();
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap perRow = dropInnermostMap(ctx, 2);
  Value bq = tensor::DimOp::create(b, loc, qBlock, 0);
  Value scores = maskedScores(b, loc, shape, head, qb, qBlock, kCol, kb, bk);
  Value vBlock = slice2D(b, loc, shape.value, kb, kCol, bk, b.getIndexAttr(shape.headDim));

  // m' = max(m, rowmax(S))
  Value mNew = buildInnerReduction(
      b, loc, scores, m, [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::MaximumFOp::create(nb, l, args[1], args[0]).getResult();
      });
  // exp(args[0] - safe(args[1])), the body of P and alpha.
  auto expShifted = [](OpBuilder &nb, Location l, ValueRange args) {
    Value shifted = arith::SubFOp::create(nb, l, args[0], safeMax(nb, l, args[1]));
    return math::ExpOp::create(nb, l, shifted).getResult();
  };
  // P = exp(S - m')
  Value probs = buildGeneric(b, loc, {scores, mNew}, {id2, perRow}, scores, id2,
                             iteratorTypes(2), expShifted);
  // alpha = exp(m - m'): how much the old partial results shrink.
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  Value alpha = buildGeneric(b, loc, {m, mNew}, {id1, id1},
                             emptyTensor(b, loc, {bq}), id1, iteratorTypes(1),
                             expShifted);
  // l' = alpha l + rowsum(P)
  Value lScaled = buildGeneric(
      b, loc, {l, alpha}, {id1, id1}, l, id1, iteratorTypes(1),
      [](OpBuilder &nb, Location loc2, ValueRange args) {
        return arith::MulFOp::create(nb, loc2, args[0], args[1]).getResult();
      });
  Value lNew = buildInnerReduction(
      b, loc, probs, lScaled, [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::AddFOp::create(nb, l, args[1], args[0]).getResult();
      });
  // acc' = alpha acc + P V_blk
  Value accScaled = buildGeneric(
      b, loc, {acc, alpha}, {id2, perRow}, acc, id2, iteratorTypes(2),
      [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::MulFOp::create(nb, l, args[0], args[1]).getResult();
      });
  Value accNew = matmul(b, loc, probs, vBlock, accScaled, /*transposeB=*/false);
  return {accNew, mNew, lNew};
}

/// Attention of query rows [qb, qb + bq) of one head; returns the
/// [bq, head_dim] output block.
static Value attendQueryBlock(OpBuilder &b, Location loc,
                              const AttentionShape &shape, Value head,
                              Value qCol, Value kCol, Value qb, Value bq) {
  OpFoldResult headDim = b.getIndexAttr(shape.headDim);
  Value qBlock = slice2D(b, loc, shape.query, qb, qCol, bq, headDim);

  // Keys past the causal diagonal of the block's last row, and before the
  // window of its first row, are never visited.
  Value kvBegin = arith::ConstantIndexOp::create(b, loc, 0);
  if (shape.window) {
    Value first = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, qb, shape.diagonalOffset),
        arith::ConstantIndexOp::create(b, loc, shape.window - 1));
    kvBegin = arith::MaxSIOp::create(b, loc, first, kvBegin);
  }
  Value kvEnd = shape.kvLength;
  if (shape.causal) {
    Value end = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, qb, bq), shape.diagonalOffset);
    end = arith::MaxSIOp::create(b, loc, end,
                                 arith::ConstantIndexOp::create(b, loc, 0));
    kvEnd = arith::MinSIOp::create(b, loc, end, shape.kvLength);
  }

  Value acc = filledTensor(b, loc, {bq, headDim}, floatConstant(b, loc, 0.0));
  Value m = filledTensor(b, loc, {bq}, negativeInfinity(b, loc));
  Value l = filledTensor(b, loc, {bq}, floatConstant(b, loc, 0.0));
  Value kvStep = arith::ConstantIndexOp::create(b, loc, shape.kvBlockSize());
  auto kvLoop = scf::ForOp::create(
      b, loc, kvBegin, kvEnd, kvStep, ValueRange{acc, m, l},
      [&](OpBuilder &nb, Location l2, Value kb, ValueRange carried) {
        Value bk = blockExtent(nb, l2, shape.kvBlockSize(), kvEnd, kb);
        SmallVector<Value> next =
            onlineSoftmaxStep(nb, l2, shape, head, qb, qBlock, kCol, kb, bk,
                              carried[0], carried[1], carried[2]);
        scf::YieldOp::create(nb, l2, next);
      });

  // out = acc / l, and 0 for a row that saw no key.
  Value accFinal = kvLoop.getResult(0), lFinal = kvLoop.getResult(2);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  if (shape.sinks) {
    // The sink joins the row's max and sum: with M = max(m, sink),
    // out = acc e^(m - M) / (l e^(m - M) + e^(sink - M)); a row that saw no
    // key (m = -inf) gets acc = 0.
    Value sink = tensor::ExtractOp::create(b, loc, shape.sinks, ValueRange{head});
    AffineMap perRow = dropInnermostMap(b.getContext(), 2);
    return buildGeneric(
        b, loc, {accFinal, kvLoop.getResult(1), lFinal}, {id2, perRow, perRow},
        emptyTensor(b, loc, {bq, headDim}), id2, iteratorTypes(2),
        [&](OpBuilder &nb, Location l2, ValueRange args) {
          Value top = safeMax(nb, l2, arith::MaximumFOp::create(nb, l2, args[1], sink));
          Value keep = math::ExpOp::create(
              nb, l2, arith::SubFOp::create(nb, l2, args[1], top));
          Value sinkShare = math::ExpOp::create(
              nb, l2, arith::SubFOp::create(nb, l2, sink, top));
          Value denominator = math::FmaOp::create(nb, l2, args[2], keep, sinkShare);
          Value numerator = arith::MulFOp::create(nb, l2, args[0], keep);
          // 0 only when no key was seen and the sink is -inf.
          Value zero = floatConstant(nb, l2, 0.0);
          Value empty = arith::CmpFOp::create(nb, l2, arith::CmpFPredicate::OEQ,
                                              denominator, zero);
          Value out = arith::DivFOp::create(nb, l2, numerator, denominator);
          return arith::SelectOp::create(nb, l2, empty, zero, out).getResult();
        });
  }
  return buildGeneric(
      b, loc, {accFinal, lFinal}, {id2, dropInnermostMap(b.getContext(), 2)},
      emptyTensor(b, loc, {bq, headDim}), id2, iteratorTypes(2),
      [](OpBuilder &nb, Location l2, ValueRange args) {
        Value zero = floatConstant(nb, l2, 0.0);
        Value empty = arith::CmpFOp::create(nb, l2, arith::CmpFPredicate::OEQ,
                                            args[1], zero);
        Value normalized = arith::DivFOp::create(nb, l2, args[0], args[1]);
        return arith::SelectOp::create(nb, l2, empty, zero, normalized).getResult();
      });
}

/// The shape of attention or attention_probabilities `op` over the
/// converted operands.
template <typename OpTy>
static AttentionShape scoringShape(OpTy op, Value query, Value key, Value bias,
                                   Value sinks, Value kvLen, OpBuilder &b,
                                   const AttentionLoweringOptions &options) {
  Location loc = op.getLoc();
  AttentionShape shape{};
  shape.heads = static_cast<int64_t>(op.getHeads());
  shape.groupSize = shape.heads / op.getNumKvHeads();
  shape.headDim = op.getHeadDim();
  shape.scale = op.getEffectiveScale();
  shape.softcap = op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0;
  shape.causal = op.getCausal();
  shape.window = static_cast<int64_t>(op.getWindow().value_or(0));
  if (std::optional<ArrayRef<float>> alibi = op.getAlibi()) {
    shape.alibi = *alibi;
    auto type = RankedTensorType::get({static_cast<int64_t>(alibi->size())},
                                      b.getF32Type());
    shape.slopes = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, *alibi));
  }
  shape.query = query;
  shape.key = key;
  shape.bias = bias;
  shape.sinks = sinks;
  shape.options = options;
  shape.seqQ = tensor::DimOp::create(b, loc, query, 0);
  shape.kvLength = tensor::DimOp::create(b, loc, key, 0);
  if (kvLen)
    shape.kvLength = arith::MinUIOp::create(b, loc, kvLen, shape.kvLength);
  shape.diagonalOffset = arith::SubIOp::create(b, loc, shape.kvLength, shape.seqQ);
  return shape;
}

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, const AttentionLoweringOptions &options)
      : OpConversionPattern<AttentionOp>(ctx), options(options) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    AttentionShape shape =
        scoringShape(op, adaptor.getQuery(), adaptor.getKey(), adaptor.getBias(),
                     adaptor.getSinks(), adaptor.getKvLen(), rewriter, options);
    shape.value = adaptor.getValue();
    Value seqQ = shape.seqQ;

    RankedTensorType resultType = op.getResult().getType();
    Value init = emptyTensor(rewriter, loc,
                             sizesFrom(rewriter, loc, resultType, shape.query));
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value numHeads = arith::ConstantIndexOp::create(rewriter, loc, shape.heads);
    Value qStep = arith::ConstantIndexOp::create(rewriter, loc, options.queryBlock);
    Value headDim = arith::ConstantIndexOp::create(rewriter, loc, shape.headDim);
    Value groupSize = arith::ConstantIndexOp::create(rewriter, loc, shape.groupSize);

    auto headLoop = scf::ForOp::create(
        rewriter, loc, c0, numHeads, c1, ValueRange{init},
        [&](OpBuilder &b, Location l, Value head, ValueRange headCarried) {
          // Query head h reads KV head h / (heads / kv_heads): GQA by index.
          Value kvHead = arith::DivUIOp::create(b, l, head, groupSize);
          Value qCol = arith::MulIOp::create(b, l, head, headDim);
          Value kCol = arith::MulIOp::create(b, l, kvHead, headDim);
          auto queryLoop = scf::ForOp::create(
              b, l, c0, seqQ, qStep, headCarried,
              [&](OpBuilder &qbld, Location ql, Value qb, ValueRange carried) {
                Value bq = blockExtent(qbld, ql, options.queryBlock, seqQ, qb);
                Value out = attendQueryBlock(qbld, ql, shape, head, qCol, kCol,
                                             qb, bq);
                SmallVector<OpFoldResult> offsets = {qb, qCol};
                SmallVector<OpFoldResult> sizes = {bq, qbld.getIndexAttr(shape.headDim)};
                SmallVector<OpFoldResult> strides(2, qbld.getIndexAttr(1));
                Value updated = tensor::InsertSliceOp::create(
                    qbld, ql, out, carried[0], offsets, sizes, strides);
                scf::YieldOp::create(qbld, ql, updated);
              });
          scf::YieldOp::create(b, l, queryLoop.getResults());
        });
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, headLoop.getResult(0),
                                        resultType));
    return success();
  }

  AttentionLoweringOptions options;
};

/// attention_probabilities: per head, the masked scores of every query
/// against the valid keys in one tile, their softmax, into a zero-filled
/// [heads, seq_q, seq_kv] result.
struct AttentionProbabilitiesLowering : OpConversionPattern<AttentionProbabilitiesOp> {
  AttentionProbabilitiesLowering(MLIRContext *ctx, const AttentionLoweringOptions &options)
      : OpConversionPattern<AttentionProbabilitiesOp>(ctx), options(options) {}

  LogicalResult
  matchAndRewrite(AttentionProbabilitiesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    AttentionShape shape =
        scoringShape(op, adaptor.getQuery(), adaptor.getKey(), adaptor.getBias(),
                     adaptor.getSinks(), adaptor.getKvLen(), rewriter, options);
    Value seqQ = shape.seqQ;
    Value seqKv = tensor::DimOp::create(rewriter, loc, shape.key, 0);
    Value init = filledTensor(rewriter, loc,
                              {rewriter.getIndexAttr(shape.heads), seqQ, seqKv},
                              floatConstant(rewriter, loc, 0.0));
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto headLoop = scf::ForOp::create(
        rewriter, loc, c0, arith::ConstantIndexOp::create(rewriter, loc, shape.heads), c1,
        ValueRange{init}, [&](OpBuilder &b, Location l, Value head, ValueRange carried) {
          Value headDim = arith::ConstantIndexOp::create(b, l, shape.headDim);
          Value kvHead = arith::DivUIOp::create(
              b, l, head, arith::ConstantIndexOp::create(b, l, shape.groupSize));
          Value qCol = arith::MulIOp::create(b, l, head, headDim);
          Value kCol = arith::MulIOp::create(b, l, kvHead, headDim);
          Value qBlock = slice2D(b, l, shape.query, c0, qCol, seqQ,
                                 b.getIndexAttr(shape.headDim));
          Value scores =
              maskedScores(b, l, shape, head, c0, qBlock, kCol, c0, shape.kvLength);
          Value sink;
          if (shape.sinks)
            sink = tensor::ExtractOp::create(b, l, shape.sinks, ValueRange{head});
          Value probabilities = softmaxRows(b, l, scores, sink);
          SmallVector<OpFoldResult> offsets = {head, b.getIndexAttr(0), b.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), seqQ, shape.kvLength};
          SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
          Value updated = tensor::InsertSliceOp::create(b, l, probabilities, carried[0],
                                                        offsets, sizes, strides);
          scf::YieldOp::create(b, l, updated);
        });
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, headLoop.getResult(0),
                                        op.getResult().getType()));
    return success();
  }

  AttentionLoweringOptions options;
};

/// attention without a bias -> attn.flash_attention over the valid keys.
struct AttentionToKernel : OpConversionPattern<AttentionOp> {
  AttentionToKernel(MLIRContext *ctx)
      : OpConversionPattern<AttentionOp>(ctx, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (adaptor.getBias())
      return rewriter.notifyMatchFailure(op, "the kernel takes no bias");
    Location loc = op.getLoc();
    Value key = adaptor.getKey(), value = adaptor.getValue();
    if (Value kvLen = adaptor.getKvLen()) {
      // Only the valid keys: the kernel's kv_len is the rows it is given.
      Value rows = tensor::DimOp::create(rewriter, loc, key, 0);
      Value valid = arith::MinUIOp::create(rewriter, loc, kvLen, rows);
      OpFoldResult features =
          rewriter.getIndexAttr(cast<RankedTensorType>(key.getType()).getDimSize(1));
      key = slice2D(rewriter, loc, key, arith::ConstantIndexOp::create(rewriter, loc, 0),
                    arith::ConstantIndexOp::create(rewriter, loc, 0), valid, features);
      value = slice2D(rewriter, loc, value, arith::ConstantIndexOp::create(rewriter, loc, 0),
                      arith::ConstantIndexOp::create(rewriter, loc, 0), valid, features);
    }
    RankedTensorType resultType = op.getResult().getType();
    Value init = emptyTensor(rewriter, loc,
                             sizesFrom(rewriter, loc, resultType, adaptor.getQuery()));
    auto kernel = FlashAttentionOp::create(
        rewriter, loc, TypeRange{init.getType()}, adaptor.getQuery(), key,
        value, adaptor.getSinks(), init, rewriter.getI64IntegerAttr(op.getHeads()),
        rewriter.getI64IntegerAttr(op.getNumKvHeads()),
        rewriter.getF32FloatAttr(static_cast<float>(op.getEffectiveScale())),
        op.getSoftcapAttr(), op.getCausal() ? rewriter.getUnitAttr() : UnitAttr(),
        op.getWindowAttr(),
        op.getAlibiAttr());
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, kernel.getResult()[0],
                                        resultType));
    return success();
  }
};

} // namespace

void mlir::attn::populateAttentionToLinalgPatterns(
    RewritePatternSet &patterns, const AttentionLoweringOptions &options) {
  patterns.add<AttentionLowering, AttentionProbabilitiesLowering>(patterns.getContext(),
                                                                 options);
  if (options.useKernel)
    patterns.add<AttentionToKernel>(patterns.getContext());
}
