//===- MoeToLinalg.cpp - mixture-of-experts ops to linalg on tensors ------===//
//
// attn.moe_router and attn.moe_experts to linalg. The reference lowering:
// plain generics whose bodies gather the chosen experts' weights with
// tensor.extract, so only the top_k experts of a token are evaluated. For
// packed SwiGLU experts (what attn-compile emits) the CPU path groups the
// tokens by expert and multiplies each chosen expert's rows with attn.gemm,
// the packed kernels of the dense projections; it is checked against the
// reference semantics.
//
//===----------------------------------------------------------------------===//

#include "MoeToLinalg.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"
#include "attn/Dialect/Attn/Utils/Activations.h"

#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;
constexpr IteratorType kParallel = IteratorType::parallel;
constexpr IteratorType kReduction = IteratorType::reduction;

Value zerosOf(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
              Type elementType) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

/// A generic over `rank` loops (the last `reductions` of them reductions)
/// whose maps are given as lists of loop dimensions.
Value buildLoops(OpBuilder &b, Location loc, unsigned rank, unsigned reductions,
                 ValueRange inputs, ArrayRef<SmallVector<unsigned>> inputDims,
                 Value init, ArrayRef<unsigned> outputDims, GenericBodyFn body) {
  MLIRContext *ctx = b.getContext();
  auto map = [&](ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(rank, 0, exprs, ctx);
  };
  SmallVector<AffineMap> inputMaps;
  for (ArrayRef<unsigned> dims : inputDims)
    inputMaps.push_back(map(dims));
  SmallVector<IteratorType> iterators(rank, kParallel);
  for (unsigned i = rank - reductions; i < rank; ++i)
    iterators[i] = kReduction;
  return buildGeneric(b, loc, inputs, inputMaps, init, map(outputDims),
                      iterators, body);
}

/// `a` ranks before `b`: larger, NaN above every number (torch.topk's
/// order), and of equal values the lower index (`aIndex < bIndex`) first.
Value ranksBefore(OpBuilder &b, Location loc, Value a, Value aIndex, Value bv,
                  Value bIndex) {
  using P = arith::CmpFPredicate;
  Value aNan = arith::CmpFOp::create(b, loc, P::UNO, a, a);
  Value bNan = arith::CmpFOp::create(b, loc, P::UNO, bv, bv);
  Value bNumber = arith::XOrIOp::create(
      b, loc, bNan, arith::ConstantIntOp::create(b, loc, 1, 1));
  Value greater = arith::OrIOp::create(
      b, loc, arith::AndIOp::create(b, loc, aNan, bNumber),
      arith::CmpFOp::create(b, loc, P::OGT, a, bv));
  Value equal = arith::OrIOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, a, bv),
      arith::AndIOp::create(b, loc, aNan, bNan));
  Value lowerIndex = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           aIndex, bIndex);
  return arith::OrIOp::create(b, loc, greater,
                              arith::AndIOp::create(b, loc, equal, lowerIndex));
}

/// Routing in three steps over [tokens, experts] scores: each expert's rank
/// among its token's experts (how many rank before it), then for each slot
/// j < top_k the expert of rank j and its score, then the weights.
struct MoeRouterLowering : OpConversionPattern<MoeRouterOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MoeRouterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    int64_t experts = op.getNumExperts(), topK = op.getTopK();
    auto logitsType = RankedTensorType::get(
        {op.getInput().getType().getDimSize(0), experts}, rewriter.getF32Type());
    // The logits and the softmaxes are attn ops, lowered by their own
    // patterns.
    Value scores = LinearOp::create(rewriter, loc, logitsType, x,
                                    adaptor.getWeight(), adaptor.getBias(),
                                    WeightLayout::OutIn);
    if (op.getScoring() == MoeScoring::SoftmaxTopK)
      scores = SoftmaxOp::create(rewriter, loc, scores);

    Value tokens = tensor::DimOp::create(rewriter, loc, x, 0);
    Type i32 = rewriter.getI32Type();
    SmallVector<OpFoldResult> perExpert = {tokens, rewriter.getIndexAttr(experts)};
    SmallVector<OpFoldResult> perSlot = {tokens, rewriter.getIndexAttr(topK)};

    // rank[t, e] = #{e2 : score[t, e2] ranks before score[t, e]}.
    Value ranks = buildLoops(
        rewriter, loc, 3, 1, {scores, scores}, {{0, 1}, {0, 2}},
        zerosOf(rewriter, loc, perExpert, i32), {0, 1},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value e = linalg::IndexOp::create(b, l, 1);
          Value e2 = linalg::IndexOp::create(b, l, 2);
          Value before = ranksBefore(b, l, args[1], e2, args[0], e);
          return arith::AddIOp::create(
              b, l, args[2], arith::ExtUIOp::create(b, l, i32, before));
        });

    // The expert of rank j and its score: exactly one e matches each j.
    auto pick = [&](Value init, bool wantScore) {
      return buildLoops(
          rewriter, loc, 3, 1, {ranks, scores}, {{0, 2}, {0, 2}}, init, {0, 1},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value j = arith::IndexCastOp::create(
                b, l, i32, linalg::IndexOp::create(b, l, 1));
            Value match = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                args[0], j);
            Value candidate =
                wantScore ? args[1]
                          : arith::IndexCastOp::create(
                                b, l, i32, linalg::IndexOp::create(b, l, 2));
            return arith::SelectOp::create(b, l, match, candidate, args[2]);
          });
    };
    Value chosen = pick(zerosOf(rewriter, loc, perSlot, i32), false);
    Value weights = pick(zerosOf(rewriter, loc, perSlot, rewriter.getF32Type()), true);

    if (op.getScoring() == MoeScoring::TopKSoftmax) {
      weights = SoftmaxOp::create(rewriter, loc, weights);
    } else if (op.getNormalize()) {
      Value sums = buildLoops(
          rewriter, loc, 2, 1, weights, {{0, 1}},
          zerosOf(rewriter, loc, {tokens}, rewriter.getF32Type()), {0},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::AddFOp::create(b, l, args[1], args[0]);
          });
      weights = buildLoops(
          rewriter, loc, 2, 0, {weights, sums}, {{0, 1}, {0}},
          emptyTensor(rewriter, loc, perSlot), {0, 1},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::DivFOp::create(b, l, args[0], args[1]);
          });
    }
    rewriter.replaceOp(
        op, {castIfNeeded(rewriter, loc, weights, op.getWeights().getType()),
             castIfNeeded(rewriter, loc, chosen, op.getExperts().getType())});
    return success();
  }
};

/// `routed` [tokens, hidden] plus the shared expert's output, scaled by the
/// sigmoid of its gate's logit when there is one; `routed` alone without a
/// shared expert. A generic of its own: the shared expert joins after the
/// routed sum, as HF adds it.
static Value addSharedExpert(OpBuilder &b, Location loc, Value routed,
                             Value shared, Value sharedGate) {
  if (!shared)
    return routed;
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  SmallVector<Value> inputs = {routed, shared};
  SmallVector<AffineMap> maps = {identity, identity};
  if (sharedGate) {
    inputs.push_back(sharedGate);
    maps.push_back(AffineMap::get(
        2, 0, {getAffineDimExpr(0, ctx), getAffineConstantExpr(0, ctx)}, ctx));
  }
  auto type = cast<RankedTensorType>(routed.getType());
  return buildGeneric(
      b, loc, inputs, maps,
      emptyTensor(b, loc, sizesFrom(b, loc, type, routed)), identity,
      iteratorTypes(2), [&](OpBuilder &gb, Location l, ValueRange args) -> Value {
        Value s = args[1];
        if (sharedGate)
          s = arith::MulFOp::create(gb, l, buildSigmoid(gb, l, args[2]), s);
        return arith::AddFOp::create(gb, l, args[0], s);
      });
}

/// The chosen experts' MLPs as four generics over [tokens, top_k, ...]:
/// gate and up products, the activation (with the biases), the down
/// product, and the weighted sum over the slots. Each body reads its
/// expert's weights at experts[t, j] (clamped into range).
struct MoeExpertsLowering : OpConversionPattern<MoeExpertsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MoeExpertsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), chosen = adaptor.getExperts();
    int64_t experts = op.getNumExperts(), ffn = op.getFfnSize();
    int64_t hidden = op.getInput().getType().getDimSize(1);
    int64_t topK = op.getWeights().getType().getDimSize(1);
    Value tokens = tensor::DimOp::create(rewriter, loc, x, 0);
    Type f32 = rewriter.getF32Type();

    // experts[t, j] as an index in [0, experts).
    auto expertIndex = [&](OpBuilder &b, Location l, Value id) -> Value {
      Value clamped = arith::MaxSIOp::create(
          b, l, arith::ConstantIntOp::create(b, l, 0, 32),
          arith::MinSIOp::create(
              b, l, id, arith::ConstantIntOp::create(b, l, experts - 1, 32)));
      return arith::IndexCastOp::create(b, l, b.getIndexType(), clamped);
    };
    auto index = [](OpBuilder &b, Location l, unsigned dim) -> Value {
      return linalg::IndexOp::create(b, l, dim);
    };

    // Packed experts: one slab of attn.linear's packed layout per expert.
    const bool packed = op.hasPackedExperts();
    auto slab = [](Value stacked) {
      auto type = cast<RankedTensorType>(stacked.getType());
      return getPackedWeightInfo(RankedTensorType::get(
          type.getShape().drop_front(), type.getElementType()));
    };
    // out[t, j, n] = sum_k in[t, (j,) k] * W[e, n, k] over loops (t, j, n, k),
    // `in` indexed by `inDims`.
    auto expertProduct = [&](Value in, SmallVector<unsigned> inDims,
                             Value weight, int64_t outFeatures) {
      SmallVector<OpFoldResult> sizes = {tokens, rewriter.getIndexAttr(topK),
                                         rewriter.getIndexAttr(outFeatures)};
      return buildLoops(
          rewriter, loc, 4, 1, {in, chosen}, {inDims, {0, 1}},
          zerosOf(rewriter, loc, sizes, f32), {0, 1, 2},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value e = expertIndex(b, l, args[1]);
            Value n = index(b, l, 2), k = index(b, l, 3);
            Value w = packed ? packedElement(b, l, weight, *slab(weight), e, n, k)
                             : tensor::ExtractOp::create(
                                   b, l, weight, ValueRange{e, n, k})
                                   .getResult();
            return arith::AddFOp::create(
                b, l, args[2], arith::MulFOp::create(b, l, args[0], w));
          });
    };
    SmallVector<OpFoldResult> perFeature = {tokens, rewriter.getIndexAttr(topK),
                                            rewriter.getIndexAttr(ffn)};
    Value gate = expertProduct(x, {0, 3}, adaptor.getGate(), ffn);
    Value up = expertProduct(x, {0, 3}, adaptor.getUp(), ffn);

    // h[t, j, f] = act(gate + gate_bias[e, f], up + up_bias[e, f]).
    Value gateBias = adaptor.getGateBias(), upBias = adaptor.getUpBias();
    MoeActivation activation = op.getActivation();
    double alpha = op.getAlpha() ? op.getAlpha()->convertToDouble() : 0.0;
    double limit = op.getLimit() ? op.getLimit()->convertToDouble() : 0.0;
    Value hiddenActs = buildLoops(
        rewriter, loc, 3, 0, {gate, up, chosen}, {{0, 1, 2}, {0, 1, 2}, {0, 1}},
        emptyTensor(rewriter, loc, perFeature), {0, 1, 2},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value g = args[0], u = args[1];
          if (gateBias) {
            SmallVector<Value, 2> at = {expertIndex(b, l, args[2]), index(b, l, 2)};
            g = arith::AddFOp::create(
                b, l, g, tensor::ExtractOp::create(b, l, gateBias, at));
            u = arith::AddFOp::create(
                b, l, u, tensor::ExtractOp::create(b, l, upBias, at));
          }
          if (activation == MoeActivation::Swiglu)
            return arith::MulFOp::create(b, l, buildSilu(b, l, g), u);
          return buildClampedSwiglu(b, l, g, u, alpha, limit);
        });

    // out[t, j, d] = sum_f h[t, j, f] * down[e, d, f].
    Value outputs = expertProduct(hiddenActs, {0, 1, 3}, adaptor.getDown(), hidden);

    // result[t, d] = sum_j weights[t, j] * (out[t, j, d] + down_bias[e, d]);
    // loops (t, d, j).
    Value downBias = adaptor.getDownBias();
    Value result = buildLoops(
        rewriter, loc, 3, 1, {adaptor.getWeights(), outputs, chosen},
        {{0, 2}, {0, 2, 1}, {0, 2}},
        zerosOf(rewriter, loc, {tokens, rewriter.getIndexAttr(hidden)}, f32),
        {0, 1}, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value v = args[1];
          if (downBias)
            v = arith::AddFOp::create(
                b, l, v,
                tensor::ExtractOp::create(
                    b, l, downBias,
                    ValueRange{expertIndex(b, l, args[2]), index(b, l, 1)}));
          return arith::AddFOp::create(b, l, args[3],
                                       arith::MulFOp::create(b, l, args[0], v));
        });
    result = addSharedExpert(rewriter, loc, result, adaptor.getShared(),
                             adaptor.getSharedGate());
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, result,
                                        op.getResult().getType()));
    return success();
  }
};

/// The CPU path of attn.moe_experts with packed experts: the (token, slot)
/// pairs are grouped by expert (a counting sort, O(tokens * top_k + experts)
/// scalar steps), then each chosen expert runs
/// two attn.gemm over its tokens' rows, gathered into one block: the gate
/// and up products with the SwiGLU epilogue, and the down product scaled
/// per row by the routing weight. So an expert's weights are streamed once
/// per call by the packed kernels (their prefetching, threads over output
/// blocks, int8 dot products for q8_0 / q4_0), whether one token chose it
/// or all of them, and an expert no token chose is never read. Each pair's
/// output lands in its own row of a [pairs, hidden] buffer, in expert order,
/// and a last generic sums each token's top_k rows: no scatter. A shared
/// expert's output joins that sum in one more elementwise generic.
///
/// Two parallel regions per chosen expert is not what holds decode back:
/// one scf.forall per projection over (chosen expert, column slice) gave
/// the same logits, the same decode speed and 7-15% slower prefill (each
/// slice quantizes its rows again and tiles fewer columns), measured side
/// by side on Qwen3-30B-A3B's layer shape (Zen 5, q4_0 and q8_0).
struct MoeExpertsGroupedLowering : OpConversionPattern<MoeExpertsOp> {
  MoeExpertsGroupedLowering(MLIRContext *ctx)
      : OpConversionPattern(ctx, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(MoeExpertsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.hasPackedExperts())
      return rewriter.notifyMatchFailure(op, "experts not packed");
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), chosen = adaptor.getExperts(),
          routeWeights = adaptor.getWeights();
    int64_t experts = op.getNumExperts(), ffn = op.getFfnSize();
    int64_t hidden = op.getInput().getType().getDimSize(1);
    int64_t topK = op.getWeights().getType().getDimSize(1);
    Type f32 = rewriter.getF32Type(), indexType = rewriter.getIndexType();
    auto constant = [](OpBuilder &b, Location l, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, l, v);
    };
    Value zero = constant(rewriter, loc, 0), one = constant(rewriter, loc, 1);
    Value slots = constant(rewriter, loc, topK);
    Value tokens = tensor::DimOp::create(rewriter, loc, x, 0);
    Value pairs = arith::MulIOp::create(rewriter, loc, tokens, slots);
    auto zeros = [&](ArrayRef<OpFoldResult> sizes, Type type) {
      return zerosOf(rewriter, loc, sizes, type);
    };
    OpFoldResult expertCount = rewriter.getIndexAttr(experts);

    // (t, j) of pair p, and its expert clamped into [0, experts) as the
    // reference lowering clamps it.
    auto pairAt = [&](OpBuilder &b, Location l, Value p) {
      Value t = arith::DivUIOp::create(b, l, p, slots);
      Value j = arith::RemUIOp::create(b, l, p, slots);
      Value id = tensor::ExtractOp::create(b, l, chosen, ValueRange{t, j});
      Value clamped = arith::MaxSIOp::create(
          b, l, arith::ConstantIntOp::create(b, l, 0, 32),
          arith::MinSIOp::create(
              b, l, id, arith::ConstantIntOp::create(b, l, experts - 1, 32)));
      Value e = arith::IndexCastOp::create(b, l, b.getIndexType(), clamped);
      return std::array<Value, 3>{t, j, e};
    };
    auto increment = [&](OpBuilder &b, Location l, Value table, Value at) {
      Value v = tensor::ExtractOp::create(b, l, table, at);
      Value next = arith::AddIOp::create(b, l, v, constant(b, l, 1));
      return tensor::InsertOp::create(b, l, next, table, at).getResult();
    };

    // counts[e]: how many pairs chose e.
    Value counts =
        scf::ForOp::create(
            rewriter, loc, zero, pairs, one, zeros({expertCount}, indexType),
            [&](OpBuilder &b, Location l, Value p, ValueRange carried) {
              Value e = pairAt(b, l, p)[2];
              scf::YieldOp::create(b, l, increment(b, l, carried[0], e));
            })
            .getResult(0);
    // starts[e]: the first row of e's group.
    Value starts =
        scf::ForOp::create(
            rewriter, loc, zero, constant(rewriter, loc, experts), one,
            ValueRange{zeros({expertCount}, indexType), zero},
            [&](OpBuilder &b, Location l, Value e, ValueRange carried) {
              Value table = tensor::InsertOp::create(b, l, carried[1],
                                                     carried[0], e);
              Value next = arith::AddIOp::create(
                  b, l, carried[1], tensor::ExtractOp::create(b, l, counts, e));
              scf::YieldOp::create(b, l, ValueRange{table, next});
            })
            .getResult(0);
    // Each pair's row in expert order: the token it reads, its routing
    // weight, and (per pair) where its output lands.
    SmallVector<OpFoldResult> perPair = {pairs};
    SmallVector<OpFoldResult> perSlot = {tokens, rewriter.getIndexAttr(topK)};
    auto grouped = scf::ForOp::create(
        rewriter, loc, zero, pairs, one,
        ValueRange{starts, zeros(perPair, indexType), zeros(perPair, f32),
                   zeros(perSlot, indexType)},
        [&](OpBuilder &b, Location l, Value p, ValueRange carried) {
          auto [t, j, e] = pairAt(b, l, p);
          Value row = tensor::ExtractOp::create(b, l, carried[0], e);
          Value weight = tensor::ExtractOp::create(b, l, routeWeights,
                                                   ValueRange{t, j});
          scf::YieldOp::create(
              b, l,
              ValueRange{increment(b, l, carried[0], e),
                         tensor::InsertOp::create(b, l, t, carried[1], row),
                         tensor::InsertOp::create(b, l, weight, carried[2], row),
                         tensor::InsertOp::create(b, l, row, carried[3],
                                                  ValueRange{t, j})});
        });
    Value rowToken = grouped.getResult(1), rowWeight = grouped.getResult(2),
          pairRow = grouped.getResult(3);

    // One expert's slab of a stacked [experts, <packed shape>] weight.
    auto slabOf = [&](OpBuilder &b, Location l, Value stacked, Value e) {
      auto type = cast<RankedTensorType>(stacked.getType());
      int64_t rank = type.getRank();
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
          strides(rank, b.getIndexAttr(1));
      offsets[0] = e;
      sizes.push_back(b.getIndexAttr(1));
      for (int64_t size : type.getShape().drop_front())
        sizes.push_back(b.getIndexAttr(size));
      auto slabType = RankedTensorType::get(type.getShape().drop_front(),
                                            type.getElementType());
      return tensor::ExtractSliceOp::create(b, l, slabType, stacked, offsets,
                                            sizes, strides)
          .getResult();
    };
    // gpt-oss: the clamped SwiGLU, and biases on every projection. A down
    // bias is added before the routing weight scales the row, so the weight
    // is then applied where the rows are summed.
    const bool clamped = op.getActivation() == MoeActivation::ClampedSwiglu;
    const bool scaleAtSum = static_cast<bool>(adaptor.getDownBias());
    GemmEpilogue gatedEpilogue =
        clamped ? GemmEpilogue::ClampedSwiglu : GemmEpilogue::Swiglu;
    FloatAttr alpha = clamped ? op.getAlphaAttr() : FloatAttr(),
              limit = clamped ? op.getLimitAttr() : FloatAttr();
    auto gemm = [&](OpBuilder &b, Location l, Value in, Value w, Value w2,
                    Value bias, Value bias2, Value rowScale, Value init,
                    GemmEpilogue epilogue) {
      bool gated = epilogue != GemmEpilogue::None;
      return GemmOp::create(b, l, TypeRange{init.getType()}, in, w, w2,
                            /*norm_gamma=*/Value(), /*norm_beta=*/Value(), bias,
                            bias2, rowScale, /*residual=*/Value(), init, epilogue,
                            /*norm_epsilon=*/FloatAttr(),
                            /*norm_gain_offset=*/FloatAttr(),
                            gated ? alpha : FloatAttr(), gated ? limit : FloatAttr())
          .getResult()[0];
    };
    // Expert e's row of a [experts, N] bias, or null.
    auto biasOf = [&](OpBuilder &b, Location l, Value stacked, Value e) {
      return stacked ? slabOf(b, l, stacked, e) : Value();
    };

    // Every row of `rows` is written by its expert below.
    Value rows = tensor::EmptyOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{pairs, rewriter.getIndexAttr(hidden)},
        f32);
    rows = scf::ForOp::create(
               rewriter, loc, zero, constant(rewriter, loc, experts), one, rows,
               [&](OpBuilder &b, Location l, Value e, ValueRange carried) {
                 Value n = tensor::ExtractOp::create(b, l, counts, e);
                 Value start = tensor::ExtractOp::create(b, l, starts, e);
                 Value used = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne,
                                                    n, constant(b, l, 0));
                 auto expert = scf::IfOp::create(
                     b, l, used,
                     [&](OpBuilder &tb, Location tl) {
                       // The group's input rows, gathered.
                       Value inputs = buildLoops(
                           tb, tl, 2, 0, {}, {},
                           tensor::EmptyOp::create(
                               tb, tl,
                               ArrayRef<OpFoldResult>{n, tb.getIndexAttr(hidden)},
                               tb.getF32Type()),
                           {0, 1},
                           [&](OpBuilder &gb, Location gl, ValueRange) -> Value {
                             Value i = linalg::IndexOp::create(gb, gl, 0);
                             Value d = linalg::IndexOp::create(gb, gl, 1);
                             Value token = tensor::ExtractOp::create(
                                 gb, gl, rowToken,
                                 ValueRange{arith::AddIOp::create(gb, gl, start, i)});
                             return tensor::ExtractOp::create(
                                 gb, gl, x, ValueRange{token, d});
                           });
                       Value acts = gemm(
                           tb, tl, inputs, slabOf(tb, tl, adaptor.getGate(), e),
                           slabOf(tb, tl, adaptor.getUp(), e),
                           biasOf(tb, tl, adaptor.getGateBias(), e),
                           biasOf(tb, tl, adaptor.getUpBias(), e), Value(),
                           tensor::EmptyOp::create(
                               tb, tl,
                               ArrayRef<OpFoldResult>{n, tb.getIndexAttr(ffn)},
                               tb.getF32Type()),
                           gatedEpilogue);
                       SmallVector<OpFoldResult> at = {start, tb.getIndexAttr(0)},
                                                 size = {n, tb.getIndexAttr(hidden)},
                                                 unit = {tb.getIndexAttr(1),
                                                         tb.getIndexAttr(1)};
                       Value scale = tensor::ExtractSliceOp::create(
                           tb, tl, rowWeight, ArrayRef<OpFoldResult>{start},
                           ArrayRef<OpFoldResult>{n},
                           ArrayRef<OpFoldResult>{tb.getIndexAttr(1)});
                       Value block = tensor::ExtractSliceOp::create(
                           tb, tl, carried[0], at, size, unit);
                       Value out = gemm(tb, tl, acts,
                                        slabOf(tb, tl, adaptor.getDown(), e),
                                        Value(), biasOf(tb, tl, adaptor.getDownBias(), e),
                                        Value(), scaleAtSum ? Value() : scale, block,
                                        GemmEpilogue::None);
                       scf::YieldOp::create(
                           tb, tl,
                           tensor::InsertSliceOp::create(tb, tl, out, carried[0],
                                                         at, size, unit)
                               .getResult());
                     },
                     [&](OpBuilder &eb, Location el) {
                       scf::YieldOp::create(eb, el, carried[0]);
                     });
                 scf::YieldOp::create(b, l, expert.getResult(0));
               })
               .getResult(0);

    // result[t, d] = sum_j rows[pairRow[t, j], d] (times weights[t, j]
    // when the rows are not scaled yet); loops (t, d, j).
    SmallVector<Value> sumInputs = {pairRow};
    SmallVector<SmallVector<unsigned>> sumDims = {{0, 2}};
    if (scaleAtSum) {
      sumInputs.push_back(routeWeights);
      sumDims.push_back({0, 2});
    }
    Value result = buildLoops(
        rewriter, loc, 3, 1, sumInputs, sumDims,
        zerosOf(rewriter, loc, {tokens, rewriter.getIndexAttr(hidden)}, f32),
        {0, 1}, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value d = linalg::IndexOp::create(b, l, 1);
          Value v = tensor::ExtractOp::create(b, l, rows, ValueRange{args[0], d});
          if (scaleAtSum)
            v = arith::MulFOp::create(b, l, args[1], v);
          return arith::AddFOp::create(b, l, args.back(), v);
        });
    result = addSharedExpert(rewriter, loc, result, adaptor.getShared(),
                             adaptor.getSharedGate());
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, result,
                                        op.getResult().getType()));
    return success();
  }
};

} // namespace

void mlir::attn::populateMoeToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MoeRouterLowering, MoeExpertsLowering, MoeExpertsGroupedLowering>(
      patterns.getContext());
}
