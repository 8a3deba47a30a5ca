//===- AttnToLinalg.cpp - lower attn ops to linalg on tensors -------------===//
//
// One pattern per op. Attention and the mixture-of-experts ops have their
// own files (AttentionToLinalg.cpp, MoeToLinalg.cpp); the rest are
// projections, row reductions and elementwise maps.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"
#include "attn/Dialect/Attn/Utils/Activations.h"

#include "AttentionToLinalg.h"
#include "LinalgBuilders.h"
#include "MoeToLinalg.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOLINALGPASS
#include "attn/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

//===----------------------------------------------------------------------===//
// Embeddings and projections
//===----------------------------------------------------------------------===//

/// result[s, d] = table[clamp(ids[s]), d], a gather inside a generic.
struct EmbeddingLowering : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getResult().getType();
    Value table = adaptor.getTable(), ids = adaptor.getIds();
    SmallVector<OpFoldResult> sizes = sizesFrom(rewriter, loc, resultType, ids);
    sizes[1] = rewriter.getIndexAttr(resultType.getDimSize(1));
    Value init = emptyTensor(rewriter, loc, sizes);
    auto tableType = cast<RankedTensorType>(table.getType());
    std::optional<PackedWeightInfo> packed;
    if (tableType.getRank() != 2)
      packed = getPackedWeightInfo(tableType);
    int64_t packedBlock = packed ? packed->blockSize : 0;
    // Rows of the table, padding rows of a packed table included (zeros).
    Value lastRow = tensor::DimOp::create(rewriter, loc, table, 0);
    if (packedBlock)
      lastRow = arith::MulIOp::create(
          rewriter, loc, lastRow,
          arith::ConstantIndexOp::create(rewriter, loc, packedBlock));
    lastRow = arith::SubIOp::create(
        rewriter, loc, lastRow, arith::ConstantIndexOp::create(rewriter, loc, 1));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);

    MLIRContext *ctx = rewriter.getContext();
    AffineMap rowMap = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
    FloatAttr scale = op.getScaleAttr();
    // Row `row`, column `col` of the table, times the scale.
    auto element = [&](OpBuilder &b, Location l, Value row, Value col) -> Value {
      Value value =
          packed ? packedElement(b, l, table, *packed, {}, row, col)
                 : tensor::ExtractOp::create(b, l, table, ValueRange{row, col})
                       .getResult();
      if (scale)
        value = arith::MulFOp::create(
            b, l, value, floatConstant(b, l, scale.getValueAsDouble()));
      return value;
    };
    Value offset = adaptor.getOffset();
    Value gathered = buildGeneric(
        rewriter, loc, ids, {rowMap}, init, rewriter.getMultiDimIdentityMap(2),
        iteratorTypes(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value id = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value row = offset ? arith::SubIOp::create(b, l, id, offset).getResult() : id;
          // A bad id must never read outside the table: clamp it.
          Value clamped = arith::MaxSIOp::create(b, l, row, zero);
          clamped = arith::MinSIOp::create(b, l, clamped, lastRow);
          Value value = element(b, l, clamped, linalg::IndexOp::create(b, l, 1));
          if (!offset)
            return value;
          // An id of another rank's shard reads zeros.
          Value inShard = arith::AndIOp::create(
              b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, row, zero),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, row, lastRow));
          return arith::SelectOp::create(b, l, inShard, value, floatConstant(b, l, 0.0))
              .getResult();
        });
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, gathered, resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Tensor parallelism: calls of the runtime's collectives
//===----------------------------------------------------------------------===//

/// The private declaration of collective `name` in the enclosing module.
func::FuncOp collectiveFunction(OpBuilder &b, Operation *op, StringRef name,
                                FunctionType type) {
  auto module = op->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// `buffer` (an identity-layout memref) as memref<?xf32>.
Value flatten(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<ReassociationIndices> all(1);
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    all[0].push_back(dim);
  Value flat = memref::CollapseShapeOp::create(b, loc, buffer, all);
  return memref::CastOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, type.getElementType()), flat);
}

/// A fresh contiguous buffer holding `value` (the collectives work in
/// place on plain memory), and its elements as one dimension.
std::pair<Value, Value> copyToBuffer(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  auto strided = MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, ShapedType::kDynamic}));
  Value source =
      bufferization::ToBufferOp::create(b, loc, strided, value, /*read_only=*/true);
  SmallVector<Value> dynamicSizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      dynamicSizes.push_back(memref::DimOp::create(b, loc, source, dim));
  auto contiguous = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = memref::AllocOp::create(b, loc, contiguous, dynamicSizes);
  memref::CopyOp::create(b, loc, source, buffer);
  return {buffer, flatten(b, loc, buffer)};
}

/// The buffer's contents as a tensor again (nothing else aliases it).
Value bufferAsTensor(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(type.getShape(), type.getElementType()), buffer,
      /*restrict=*/true, /*writable=*/true);
}

/// A copy of the input summed in place by the runtime's all-reduce.
struct AllReduceLowering : OpConversionPattern<AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [buffer, flat] = copyToBuffer(rewriter, loc, adaptor.getInput());
    func::FuncOp callee = collectiveFunction(
        rewriter, op, kAllReduceFunction,
        rewriter.getFunctionType({flat.getType()}, {}));
    func::CallOp::create(rewriter, loc, callee, ValueRange{flat});
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, bufferAsTensor(rewriter, loc, buffer),
                                        op.getResult().getType()));
    return success();
  }
};

/// The runtime's all-gather into [ranks, rows, K] (rank-major, as each
/// rank's rows lie), then transposed to [rows, ranks * K].
struct AllGatherLowering : OpConversionPattern<AllGatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    int64_t ranks = static_cast<int64_t>(op.getRanks());
    int64_t features = inputType.getDimSize(1);
    auto [buffer, flat] = copyToBuffer(rewriter, loc, input);
    SmallVector<Value> dynamicRows;
    if (inputType.isDynamicDim(0))
      dynamicRows.push_back(memref::DimOp::create(rewriter, loc, buffer, 0));
    auto gatheredType = MemRefType::get({ranks, inputType.getDimSize(0), features},
                                        inputType.getElementType());
    Value gathered = memref::AllocOp::create(rewriter, loc, gatheredType, dynamicRows);
    Value gatheredFlat = flatten(rewriter, loc, gathered);
    func::FuncOp callee = collectiveFunction(
        rewriter, op, kAllGatherFunction,
        rewriter.getFunctionType({flat.getType(), gatheredFlat.getType()}, {}));
    func::CallOp::create(rewriter, loc, callee, ValueRange{flat, gatheredFlat});
    Value stacked = bufferAsTensor(rewriter, loc, gathered);
    SmallVector<OpFoldResult> sizes = {
        inputType.isDynamicDim(0) ? OpFoldResult(dynamicRows.front())
                                  : OpFoldResult(rewriter.getIndexAttr(inputType.getDimSize(0))),
        rewriter.getIndexAttr(ranks), rewriter.getIndexAttr(features)};
    Value init = emptyTensor(rewriter, loc, sizes);
    Value rowMajor = linalg::TransposeOp::create(rewriter, loc, stacked, init,
                                                 ArrayRef<int64_t>{1, 0, 2})
                         .getResult()[0];
    Value result = tensor::CollapseShapeOp::create(
        rewriter, loc, rowMajor, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, result, op.getResult().getType()));
    return success();
  }
};

/// The rank the runtime installed.
struct GroupRankLowering : OpConversionPattern<GroupRankOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GroupRankOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    func::FuncOp callee = collectiveFunction(
        rewriter, op, kGroupRankFunction,
        rewriter.getFunctionType({}, {rewriter.getI64Type()}));
    Value rank = func::CallOp::create(rewriter, op.getLoc(), callee, ValueRange{})
                     .getResult(0);
    rewriter.replaceOpWithNewOp<arith::IndexCastOp>(op, rewriter.getIndexType(), rank);
    return success();
  }
};

/// x W (+ b): a linalg.matmul whose indexing maps read the weight in its
/// stored layout, accumulating into the broadcast bias (or zeros).
struct LinearLowering : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getResult().getType();
    SmallVector<OpFoldResult> sizes =
        sizesFrom(rewriter, loc, resultType, adaptor.getInput());
    if (op.getLayout() == WeightLayout::Packed) {
      // Packed weights are read by the CPU kernel (attn-lower-gemm).
      Value init = emptyTensor(rewriter, loc, sizes);
      auto gemm = GemmOp::create(
          rewriter, loc, TypeRange{init.getType()}, adaptor.getInput(),
          adaptor.getWeight(), /*weight2=*/Value(), /*norm_gamma=*/Value(),
          /*norm_beta=*/Value(), adaptor.getBias(), /*bias2=*/Value(),
          /*row_scale=*/Value(), /*residual=*/Value(), init, GemmEpilogue::None,
          /*norm_epsilon=*/FloatAttr(), /*norm_gain_offset=*/FloatAttr(),
          /*alpha=*/FloatAttr(), /*limit=*/FloatAttr());
      rewriter.replaceOp(op, castIfNeeded(rewriter, loc, gemm.getResult()[0],
                                          resultType));
      return success();
    }
    Value init;
    if (Value bias = adaptor.getBias()) {
      Value empty = emptyTensor(rewriter, loc, sizes);
      init = linalg::BroadcastOp::create(rewriter, loc, bias, empty,
                                         ArrayRef<int64_t>{0})
                 .getResult()[0];
    } else {
      init = filledTensor(rewriter, loc, sizes,
                          floatConstant(rewriter, loc, 0.0));
    }

    MLIRContext *ctx = rewriter.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    AffineMap weightMap = op.getLayout() == WeightLayout::OutIn
                              ? AffineMap::get(3, 0, {n, k}, ctx)
                              : AffineMap::get(3, 0, {k, n}, ctx);
    SmallVector<Attribute> maps = {
        AffineMapAttr::get(AffineMap::get(3, 0, {m, k}, ctx)),
        AffineMapAttr::get(weightMap),
        AffineMapAttr::get(AffineMap::get(3, 0, {m, n}, ctx))};
    auto matmul = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{adaptor.getInput(), adaptor.getWeight()}, ValueRange{init},
        {rewriter.getNamedAttr("indexing_maps", rewriter.getArrayAttr(maps))});
    rewriter.replaceOp(op, castIfNeeded(rewriter, loc, matmul.getResult(0),
                                        resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Sum over the innermost dimension of f(x) for each row.
static Value rowSum(OpBuilder &b, Location loc, Value input,
                    llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
  Value zeros = filledTensor(b, loc, outerSizes(b, loc, input),
                             floatConstant(b, loc, 0.0));
  return buildInnerReduction(
      b, loc, input, zeros, [&](OpBuilder &nb, Location l, ValueRange args) {
        return arith::AddFOp::create(nb, l, args[1], f(nb, l, args[0]))
            .getResult();
      });
}

/// Per row: 1 / sqrt(sum / d + eps).
static Value inverseRootMean(OpBuilder &b, Location loc, Value sums,
                             int64_t d, double eps) {
  Value count = floatConstant(b, loc, static_cast<double>(d));
  Value epsilon = floatConstant(b, loc, eps);
  Value one = floatConstant(b, loc, 1.0);
  return buildElementwise(
      b, loc, sums, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value mean = arith::DivFOp::create(nb, l, args[0], count);
        Value root = math::SqrtOp::create(
            nb, l, arith::AddFOp::create(nb, l, mean, epsilon));
        return arith::DivFOp::create(nb, l, one, root).getResult();
      });
}

/// mean, biased variance (two passes, for accuracy), then
/// (x - mean) * rstd * gamma + beta.
struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    int64_t d = type.getShape().back();
    MLIRContext *ctx = rewriter.getContext();

    Value sums = rowSum(rewriter, loc, x,
                        [](OpBuilder &, Location, Value v) { return v; });
    Value count = floatConstant(rewriter, loc, static_cast<double>(d));
    Value mean = buildElementwise(
        rewriter, loc, sums, [&](OpBuilder &b, Location l, ValueRange args) {
          return arith::DivFOp::create(b, l, args[0], count).getResult();
        });

    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap perRow = dropInnermostMap(ctx, rank);
    Value zeros = filledTensor(rewriter, loc, outerSizes(rewriter, loc, x),
                               floatConstant(rewriter, loc, 0.0));
    Value squares = buildGeneric(
        rewriter, loc, {x, mean}, {identity, perRow}, zeros, perRow,
        iteratorTypes(rank, /*reduceInnermost=*/true),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value diff = arith::SubFOp::create(b, l, args[0], args[1]);
          Value sq = arith::MulFOp::create(b, l, diff, diff);
          return arith::AddFOp::create(b, l, args[2], sq).getResult();
        });
    Value rstd = inverseRootMean(rewriter, loc, squares, d,
                                 op.getEpsilon().convertToDouble());

    AffineMap perFeature = innermostMap(ctx, rank);
    Value init = emptyTensor(rewriter, loc, tensor::getMixedSizes(rewriter, loc, x));
    Value result = buildGeneric(
        rewriter, loc, {x, mean, rstd, adaptor.getGamma(), adaptor.getBeta()},
        {identity, perRow, perRow, perFeature, perFeature}, init, identity,
        iteratorTypes(rank), [&](OpBuilder &b, Location l, ValueRange args) {
          Value centered = arith::SubFOp::create(b, l, args[0], args[1]);
          Value normed = arith::MulFOp::create(b, l, centered, args[2]);
          Value scaled = arith::MulFOp::create(b, l, normed, args[3]);
          return arith::AddFOp::create(b, l, scaled, args[4]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The gain an RMSNorm multiplies by: gamma, plus the offset when given.
static Value rmsGain(OpBuilder &b, Location loc, Value gamma,
                     FloatAttr gainOffset) {
  if (!gainOffset)
    return gamma;
  return arith::AddFOp::create(
      b, loc, gamma, floatConstant(b, loc, gainOffset.getValueAsDouble()));
}

/// x * (1 / sqrt(mean(x^2) + eps)) * gamma over the innermost dimension of
/// `x` (any rank).
static Value buildRmsNorm(OpBuilder &rewriter, Location loc, Value x,
                          Value gamma, double eps, FloatAttr gainOffset) {
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  MLIRContext *ctx = rewriter.getContext();
  Value squares = rowSum(rewriter, loc, x, [](OpBuilder &b, Location l, Value v) {
    return arith::MulFOp::create(b, l, v, v).getResult();
  });
  Value rinv = inverseRootMean(rewriter, loc, squares, type.getShape().back(), eps);
  AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
  Value init = emptyTensor(rewriter, loc, tensor::getMixedSizes(rewriter, loc, x));
  return buildGeneric(
      rewriter, loc, {x, rinv, gamma},
      {identity, dropInnermostMap(ctx, rank), innermostMap(ctx, rank)}, init,
      identity, iteratorTypes(rank),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value normed = arith::MulFOp::create(b, l, args[0], args[1]);
        return arith::MulFOp::create(b, l, normed,
                                     rmsGain(b, l, args[2], gainOffset))
            .getResult();
      });
}

/// `x` [..., D] viewed as [..., D / d, d], and that view's type.
static Value splitInnermost(OpBuilder &b, Location loc, Value x, int64_t d) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() /= d;
  shape.push_back(d);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  sizes.back() = b.getIndexAttr(type.getShape().back() / d);
  sizes.push_back(b.getIndexAttr(d));
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0; i + 1 < type.getRank(); ++i)
    reassociation.push_back({i});
  reassociation.push_back({type.getRank() - 1, type.getRank()});
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x,
      reassociation, sizes);
}

/// The inverse of splitInnermost.
static Value mergeInnermost(OpBuilder &b, Location loc, Value x,
                            RankedTensorType type) {
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0; i + 1 < type.getRank(); ++i)
    reassociation.push_back({i});
  reassociation.push_back({type.getRank() - 1, type.getRank()});
  return tensor::CollapseShapeOp::create(b, loc, type, x, reassociation);
}

/// x * (1 / sqrt(mean(x^2) + eps)) * gamma, per row or (head_dim) per head.
struct RmsNormLowering : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t group = op.getGroupSize();
    bool perHead = group != type.getShape().back();
    if (perHead)
      x = splitInnermost(rewriter, loc, x, group);
    Value result =
        buildRmsNorm(rewriter, loc, x, adaptor.getGamma(),
                     op.getEpsilon().convertToDouble(), op.getGainOffsetAttr());
    if (perHead)
      result = mergeInnermost(rewriter, loc, result, type);
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Lowers a same-shape op with `N` operands to one elementwise generic whose
/// body is `scalarFn`.
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using ScalarFn =
      std::function<Value(OpTy, OpBuilder &, Location, ValueRange)>;

  ElementwiseLowering(MLIRContext *ctx, ScalarFn scalarFn)
      : OpConversionPattern<OpTy>(ctx), scalarFn(std::move(scalarFn)) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), adaptor.getOperands(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return scalarFn(op, b, l, args.drop_back());
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  ScalarFn scalarFn;
};

static Value residualAddScalar(ResidualAddOp, OpBuilder &b, Location loc,
                               ValueRange args) {
  return arith::AddFOp::create(b, loc, args[0], args[1]);
}

static Value geluScalar(GeluOp op, OpBuilder &b, Location loc,
                        ValueRange args) {
  return buildGelu(b, loc, args[0], op.getApproximation());
}

static Value gegluScalar(GegluOp op, OpBuilder &b, Location loc,
                         ValueRange args) {
  return arith::MulFOp::create(b, loc, buildGelu(b, loc, args[0], op.getApproximation()),
                               args[1]);
}

static Value reluScalar(ReluOp, OpBuilder &b, Location loc, ValueRange args) {
  return arith::MaximumFOp::create(b, loc, args[0], floatConstant(b, loc, 0.0));
}

static Value softcapScalar(SoftcapOp op, OpBuilder &b, Location loc,
                           ValueRange args) {
  return buildSoftcap(b, loc, args[0], op.getCap().convertToDouble());
}

static Value siluScalar(SiluOp, OpBuilder &b, Location loc, ValueRange args) {
  return buildSilu(b, loc, args[0]);
}

static Value swigluScalar(SwigluOp, OpBuilder &b, Location loc,
                          ValueRange args) {
  return arith::MulFOp::create(b, loc, buildSilu(b, loc, args[0]), args[1]);
}

/// exp(x - max) / sum(exp(x - max)) along the innermost dimension.
struct SoftmaxLowering : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    MLIRContext *ctx = rewriter.getContext();
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap perRow = dropInnermostMap(ctx, rank);

    Value lowest = filledTensor(rewriter, loc, outerSizes(rewriter, loc, x),
                                negativeInfinity(rewriter, loc));
    Value maxima = buildInnerReduction(
        rewriter, loc, x, lowest, [](OpBuilder &b, Location l, ValueRange args) {
          return arith::MaximumFOp::create(b, l, args[1], args[0]).getResult();
        });
    Value init = emptyTensor(rewriter, loc, tensor::getMixedSizes(rewriter, loc, x));
    Value exps = buildGeneric(
        rewriter, loc, {x, maxima}, {identity, perRow}, init, identity,
        iteratorTypes(rank), [](OpBuilder &b, Location l, ValueRange args) {
          return math::ExpOp::create(
                     b, l, arith::SubFOp::create(b, l, args[0], args[1]))
              .getResult();
        });
    Value sums = rowSum(rewriter, loc, exps,
                        [](OpBuilder &, Location, Value v) { return v; });
    Value result = buildGeneric(
        rewriter, loc, {exps, sums}, {identity, perRow}, init, identity,
        iteratorTypes(rank), [](OpBuilder &b, Location l, ValueRange args) {
          return arith::DivFOp::create(b, l, args[0], args[1]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Positional encodings
//===----------------------------------------------------------------------===//

/// The position of row `row` as f64: offset + row.
static Value positionAsF64(OpBuilder &b, Location loc, Value offset,
                           Value row) {
  Value position = arith::AddIOp::create(b, loc, offset, row);
  return indexAsFloat(b, loc, position, b.getF64Type());
}

/// base^(-2i/d) * position in f64: the angle of pair i. `base` is an f64
/// value.
static Value pairAngle(OpBuilder &b, Location loc, Value position,
                       Value pairIndex, Value base, int64_t d) {
  Value i = indexAsFloat(b, loc, pairIndex, b.getF64Type());
  Value exponent = arith::MulFOp::create(
      b, loc, i, floatConstant(b, loc, -2.0 / static_cast<double>(d), b.getF64Type()));
  Value freq = math::PowFOp::create(b, loc, base, exponent);
  return arith::MulFOp::create(b, loc, position, freq);
}

/// The base of dynamic NTK scaling for one call, in f64:
/// theta * (k L / M - (k - 1))^(r / (r - 2)) with L = max(offset + seq, M).
static Value dynamicNtkBase(OpBuilder &b, Location loc, RopeOp op, Value x,
                            Value offset, int64_t rotaryDims) {
  Type f64 = b.getF64Type();
  double factor = op.getNtkFactor()->convertToDouble();
  auto maxPositions = static_cast<int64_t>(*op.getNtkMaxPositions());
  Value rows = tensor::DimOp::create(b, loc, x, 0);
  Value length = arith::MaxSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, offset, rows),
      arith::ConstantIndexOp::create(b, loc, maxPositions));
  Value ratio = arith::DivFOp::create(
      b, loc, indexAsFloat(b, loc, length, f64),
      floatConstant(b, loc, static_cast<double>(maxPositions), f64));
  Value growth = arith::SubFOp::create(
      b, loc, arith::MulFOp::create(b, loc, floatConstant(b, loc, factor, f64), ratio),
      floatConstant(b, loc, factor - 1.0, f64));
  double exponent = static_cast<double>(rotaryDims) /
                    static_cast<double>(rotaryDims - 2);
  Value power = math::PowFOp::create(b, loc, growth,
                                     floatConstant(b, loc, exponent, f64));
  double theta = op.getTheta()->convertToDouble();
  return arith::MulFOp::create(b, loc, floatConstant(b, loc, theta, f64), power);
}

/// Rotates each (a, b) pair of the rotary part of each head by the
/// position's angle. The rotary part (the whole head, or the first
/// rotary_dims features: a slice of the [seq, heads, head_dim] view) is
/// viewed as [seq, heads, 2, r/2] (rotate_half) or [seq, heads, r/2, 2]
/// (interleaved), and its pairs' first and second members sliced out of
/// that view; a partial rotation is inserted back into the
/// input, so the other features pass through.
struct RopeLowering : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    auto headDim = static_cast<int64_t>(op.getHeadDim());
    int64_t rotaryDims = op.getNumRotaryDims();
    int64_t half = rotaryDims / 2, heads = type.getDimSize(1) / headDim;
    bool partial = rotaryDims != headDim;
    bool rotateHalf = op.getPairing() == RopePairing::RotateHalf;
    double attentionFactor = op.getEffectiveAttentionFactor();
    Type f64 = rewriter.getF64Type();
    Value offset = adaptor.getOffset();

    // The input norm (per head). With every feature rotating it is applied
    // to the pair members as they are rotated: one reduction over x for the
    // statistics, and the normalized heads never stored. With a pass-through
    // part the heads are normalized first, as attn.rms_norm would.
    Value headRinv, gainFirst, gainSecond;
    FloatAttr gainOffset = op.getNormGainOffsetAttr();
    if (Value gamma = adaptor.getNormGamma()) {
      double eps = op.getNormEpsilonAttr().getValueAsDouble();
      Value heads3 = splitInnermost(rewriter, loc, x, headDim);
      if (partial) {
        x = mergeInnermost(
            rewriter, loc,
            buildRmsNorm(rewriter, loc, heads3, gamma, eps, gainOffset), type);
      } else {
        Value squares =
            rowSum(rewriter, loc, heads3, [](OpBuilder &b, Location l, Value v) {
              return arith::MulFOp::create(b, l, v, v).getResult();
            });
        headRinv = inverseRootMean(rewriter, loc, squares, headDim, eps);
        // The gains of the pairs' first and second members: gamma viewed as
        // [2, half] (rotate_half) or [half, 2] (interleaved), sliced.
        SmallVector<int64_t> gammaShape = {2, half};
        if (!rotateHalf)
          std::swap(gammaShape[0], gammaShape[1]);
        Value gammaView = tensor::ExpandShapeOp::create(
            rewriter, loc, RankedTensorType::get(gammaShape, rewriter.getF32Type()),
            gamma, SmallVector<ReassociationIndices>{{0, 1}});
        unsigned gammaMember = rotateHalf ? 0 : 1;
        auto gainOf = [&](int64_t index) {
          SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
          offsets[gammaMember] = rewriter.getIndexAttr(index);
          SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(gammaShape[0]),
                                             rewriter.getIndexAttr(gammaShape[1])};
          sizes[gammaMember] = rewriter.getIndexAttr(1);
          SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
          return tensor::ExtractSliceOp::create(
                     rewriter, loc, RankedTensorType::get({half}, rewriter.getF32Type()),
                     gammaView, offsets, sizes, strides)
              .getResult();
        };
        gainFirst = gainOf(0);
        gainSecond = gainOf(1);
      }
    }

    // Where pair i's inverse frequency comes from: a constant table, or
    // theta (rescaled for this call by dynamic NTK).
    SmallVector<Value> tableInputs;
    SmallVector<AffineMap> tableMaps;
    if (DenseElementsAttr frequencies = op.getFrequenciesAttr()) {
      tableInputs.push_back(
          arith::ConstantOp::create(rewriter, loc, frequencies));
      tableMaps.push_back(AffineMap::get(2, 0, getAffineDimExpr(1, ctx)));
    }
    // LongRoPE: the long table for the whole call when its last position
    // is past `after`.
    Value useLong;
    if (DenseElementsAttr longFrequencies = op.getLongFrequenciesAttr()) {
      tableInputs.push_back(
          arith::ConstantOp::create(rewriter, loc, longFrequencies));
      tableMaps.push_back(AffineMap::get(2, 0, getAffineDimExpr(1, ctx)));
      Value end = arith::AddIOp::create(
          rewriter, loc, offset, tensor::DimOp::create(rewriter, loc, x, 0));
      useLong = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::sgt, end,
          arith::ConstantIndexOp::create(rewriter, loc,
                                         static_cast<int64_t>(*op.getLongAfter())));
    }
    Value dynamicBase;
    if (op.getNtkFactor())
      dynamicBase = dynamicNtkBase(rewriter, loc, op, x, offset, rotaryDims);

    // cos/sin table [seq, r/2], angles in f64.
    OpFoldResult seq = tensor::getMixedSize(rewriter, loc, x, 0);
    SmallVector<OpFoldResult> tableSizes = {seq, rewriter.getIndexAttr(half)};
    Value cosInit = emptyTensor(rewriter, loc, tableSizes);
    Value sinInit = emptyTensor(rewriter, loc, tableSizes);
    AffineMap id2 = rewriter.getMultiDimIdentityMap(2);
    tableMaps.append({id2, id2});
    auto table = linalg::GenericOp::create(
        rewriter, loc, TypeRange{cosInit.getType(), sinInit.getType()},
        tableInputs, ValueRange{cosInit, sinInit}, tableMaps, iteratorTypes(2),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value position =
              positionAsF64(b, l, offset, linalg::IndexOp::create(b, l, 0));
          Value angle;
          if (!tableInputs.empty()) {
            Value frequency = args[0];
            if (useLong)
              frequency = arith::SelectOp::create(b, l, useLong, args[1], args[0]);
            angle = arith::MulFOp::create(b, l, position, frequency);
          } else {
            Value base = dynamicBase;
            if (!base)
              base = floatConstant(b, l, op.getTheta()->convertToDouble(), f64);
            angle = pairAngle(b, l, position, linalg::IndexOp::create(b, l, 1),
                              base, rotaryDims);
          }
          Value c = math::CosOp::create(b, l, angle);
          Value s = math::SinOp::create(b, l, angle);
          if (attentionFactor != 1.0) {
            Value factor = floatConstant(b, l, attentionFactor, f64);
            c = arith::MulFOp::create(b, l, c, factor);
            s = arith::MulFOp::create(b, l, s, factor);
          }
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::TruncFOp::create(b, l, b.getF32Type(), c),
                         arith::TruncFOp::create(b, l, b.getF32Type(), s)});
        });
    Value cosTable = table.getResult(0), sinTable = table.getResult(1);

    // The rotary part: x itself, or the slice [seq, heads, r] of x viewed as
    // [seq, heads, head_dim].
    Value rotaryPart = x, byHead;
    SmallVector<ReassociationIndices> reassociation = {{0}, {1, 2, 3}};
    SmallVector<ReassociationIndices> splitHeads = {{0}, {1, 2}};
    SmallVector<OpFoldResult> zeros(3, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(3, rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> rotarySizes = {seq, rewriter.getIndexAttr(heads),
                                             rewriter.getIndexAttr(rotaryDims)};
    if (partial) {
      byHead = tensor::ExpandShapeOp::create(
          rewriter, loc,
          RankedTensorType::get({type.getDimSize(0), heads, headDim},
                                type.getElementType()),
          x, splitHeads,
          ArrayRef<OpFoldResult>{seq, rewriter.getIndexAttr(heads),
                                 rewriter.getIndexAttr(headDim)});
      rotaryPart = tensor::ExtractSliceOp::create(
          rewriter, loc,
          RankedTensorType::get({type.getDimSize(0), heads, rotaryDims},
                                type.getElementType()),
          byHead, zeros, rotarySizes, ones);
      reassociation = {{0}, {1}, {2, 3}};
    }

    // View the rotary part as [seq, heads, 2, half] or [seq, heads, half, 2].
    SmallVector<int64_t> viewShape = {type.getDimSize(0), heads, 2, half};
    SmallVector<OpFoldResult> viewSizes = {seq, rewriter.getIndexAttr(heads),
                                           rewriter.getIndexAttr(2),
                                           rewriter.getIndexAttr(half)};
    if (!rotateHalf) {
      std::swap(viewShape[2], viewShape[3]);
      std::swap(viewSizes[2], viewSizes[3]);
    }
    auto viewType = RankedTensorType::get(viewShape, type.getElementType());
    Value view = tensor::ExpandShapeOp::create(rewriter, loc, viewType,
                                               rotaryPart, reassociation,
                                               viewSizes);

    // The pairs' first and second members as [seq, heads, half] slices of
    // the view: plain (projected permutation) indexing maps, which linalg's
    // vectorizer takes.
    unsigned memberDim = rotateHalf ? 2 : 3;
    auto memberType = RankedTensorType::get({type.getDimSize(0), heads, half},
                                            type.getElementType());
    auto member = [&](int64_t index) {
      SmallVector<OpFoldResult> offsets(4, rewriter.getIndexAttr(0));
      offsets[memberDim] = rewriter.getIndexAttr(index);
      SmallVector<OpFoldResult> sizes = viewSizes;
      sizes[memberDim] = rewriter.getIndexAttr(1);
      SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(rewriter, loc, memberType, view, offsets,
                                            sizes, strides)
          .getResult();
    };
    Value firstMembers = member(0), secondMembers = member(1);

    // Loop dims (s, h, p, q): the member index is p (rotate_half) or q.
    AffineExpr s, h, p, q;
    bindDims(ctx, s, h, p, q);
    AffineMap memberMap = rotateHalf ? AffineMap::get(4, 0, {s, h, q}, ctx)
                                     : AffineMap::get(4, 0, {s, h, p}, ctx);
    AffineMap tableMap = rotateHalf ? AffineMap::get(4, 0, {s, q}, ctx)
                                    : AffineMap::get(4, 0, {s, p}, ctx);
    Value init = emptyTensor(rewriter, loc, viewSizes);
    SmallVector<Value> inputs = {firstMembers, secondMembers, cosTable, sinTable};
    SmallVector<AffineMap> maps = {memberMap, memberMap, tableMap, tableMap};
    if (headRinv) {
      AffineMap gainMap = AffineMap::get(4, 0, {rotateHalf ? q : p}, ctx);
      inputs.append({headRinv, gainFirst, gainSecond});
      maps.append({AffineMap::get(4, 0, {s, h}, ctx), gainMap, gainMap});
    }
    Value rotated = buildGeneric(
        rewriter, loc, inputs, maps, init, rewriter.getMultiDimIdentityMap(4),
        iteratorTypes(4), [&](OpBuilder &b, Location l, ValueRange args) {
          Value a = args[0], bv = args[1], c = args[2], sn = args[3];
          if (headRinv) {
            // As attn.rms_norm computes it: (x * rinv) * (offset + gamma).
            a = arith::MulFOp::create(
                b, l, arith::MulFOp::create(b, l, a, args[4]),
                rmsGain(b, l, args[5], gainOffset));
            bv = arith::MulFOp::create(
                b, l, arith::MulFOp::create(b, l, bv, args[4]),
                rmsGain(b, l, args[6], gainOffset));
          }
          // a' = a cos - b sin; b' = b cos + a sin.
          Value first = arith::SubFOp::create(
              b, l, arith::MulFOp::create(b, l, a, c),
              arith::MulFOp::create(b, l, bv, sn));
          Value second = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, bv, c),
              arith::MulFOp::create(b, l, a, sn));
          Value member = linalg::IndexOp::create(b, l, memberDim);
          Value isFirst = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, member,
              arith::ConstantIndexOp::create(b, l, 0));
          return arith::SelectOp::create(b, l, isFirst, first, second)
              .getResult();
        });
    Value result = tensor::CollapseShapeOp::create(
        rewriter, loc, rotaryPart.getType(), rotated, reassociation);
    if (partial) {
      // The pass-through features stay as they are in the input.
      Value merged = tensor::InsertSliceOp::create(
          rewriter, loc, result, byHead, zeros, rotarySizes, ones);
      result = tensor::CollapseShapeOp::create(rewriter, loc, type, merged,
                                               splitHeads);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// x[s, 2i] + sin(p base^(-2i/d)), x[s, 2i+1] + cos(...), over a
/// [seq, d/2, 2] view.
struct SinusoidalPELowering : OpConversionPattern<SinusoidalPEOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SinusoidalPEOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t d = type.getDimSize(1);
    double base = op.getBase().convertToDouble();
    // View x as [seq, pair, {sin, cos}] or, with halves, [seq, {sin, cos}, k].
    bool halves = op.getLayout() == SinusoidalLayout::Halves;
    unsigned pairDim = halves ? 2 : 1, waveDim = halves ? 1 : 2;
    OpFoldResult seq = tensor::getMixedSize(rewriter, loc, x, 0);
    SmallVector<OpFoldResult> viewSizes = {seq, rewriter.getIndexAttr(d / 2),
                                           rewriter.getIndexAttr(2)};
    SmallVector<int64_t> viewShape = {type.getDimSize(0), d / 2, 2};
    if (halves) {
      std::swap(viewSizes[1], viewSizes[2]);
      std::swap(viewShape[1], viewShape[2]);
    }
    auto viewType = RankedTensorType::get(viewShape, type.getElementType());
    SmallVector<ReassociationIndices> reassociation = {{0}, {1, 2}};
    Value view = tensor::ExpandShapeOp::create(rewriter, loc, viewType, x,
                                               reassociation, viewSizes);
    Value offset = adaptor.getOffset();
    Value init = emptyTensor(rewriter, loc, viewSizes);
    AffineMap identity = rewriter.getMultiDimIdentityMap(3);
    Value encoded = buildGeneric(
        rewriter, loc, view, {identity}, init, identity, iteratorTypes(3),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value position =
              positionAsF64(b, l, offset, linalg::IndexOp::create(b, l, 0));
          Value pair = linalg::IndexOp::create(b, l, pairDim);
          Value baseValue = floatConstant(b, l, base, b.getF64Type());
          Value angle;
          if (halves) {
            // position * base^(-k / (D/2 - 1))
            Value exponent = arith::MulFOp::create(
                b, l, indexAsFloat(b, l, pair, b.getF64Type()),
                floatConstant(b, l, -1.0 / static_cast<double>(d / 2 - 1),
                              b.getF64Type()));
            angle = arith::MulFOp::create(
                b, l, position, math::PowFOp::create(b, l, baseValue, exponent));
          } else {
            angle = pairAngle(b, l, position, pair, baseValue, d);
          }
          Value isSin = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, linalg::IndexOp::create(b, l, waveDim),
              arith::ConstantIndexOp::create(b, l, 0));
          Value wave = arith::SelectOp::create(
              b, l, isSin, math::SinOp::create(b, l, angle),
              math::CosOp::create(b, l, angle));
          Value pe = arith::TruncFOp::create(b, l, b.getF32Type(), wave);
          return arith::AddFOp::create(b, l, args[0], pe).getResult();
        });
    Value result = tensor::CollapseShapeOp::create(rewriter, loc, type, encoded,
                                                   reassociation);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// T5's `_relative_position_bucket` of `rp` (key position - query position,
/// an index), its logarithmic branch in f32 in the order torch evaluates it.
static Value t5Bucket(OpBuilder &b, Location loc, Value rp,
                      RelativePositionBiasOp op) {
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  int64_t n = op.getBucketsPerDirection(), maxExact = n / 2;
  Value zero = index(0), exactLimit = index(maxExact);
  Value negated = arith::SubIOp::create(b, loc, zero, rp);
  // The first bucket of rp's direction, and the distance within it.
  Value first, distance;
  if (op.getBidirectional()) {
    // Later keys take the upper half of the buckets.
    Value later =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, rp, zero);
    first = arith::SelectOp::create(b, loc, later, index(n), zero);
    distance = arith::MaxSIOp::create(b, loc, rp, negated);
  } else {
    // A decoder looks back: every later key shares bucket 0.
    distance = arith::MaxSIOp::create(b, loc, negated, zero);
  }

  // max_exact + long(log(float(d) / max_exact) / float(log(max_distance /
  // max_exact)) * (n - max_exact)), at most n - 1. The distance is held at
  // max_exact or more here, so that the branch the select drops stays finite.
  Type f32 = b.getF32Type();
  Value logDistance = arith::MaxSIOp::create(b, loc, distance, exactLimit);
  Value ratio = arith::DivFOp::create(
      b, loc, indexAsFloat(b, loc, logDistance, f32),
      floatConstant(b, loc, static_cast<double>(maxExact)));
  // math.log(max_distance / max_exact) is a Python float: f64, rounded to
  // f32 when torch divides the f32 tensor by it (on CPU; its CUDA kernel
  // multiplies by the reciprocal instead, which moves some buckets).
  auto logRange = static_cast<float>(
      std::log(static_cast<double>(op.getMaxDistance()) /
               static_cast<double>(maxExact)));
  Value scaled = arith::MulFOp::create(
      b, loc,
      arith::DivFOp::create(b, loc, math::LogOp::create(b, loc, ratio),
                            floatConstant(b, loc, logRange)),
      floatConstant(b, loc, static_cast<double>(n - maxExact)));
  Value truncated = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      arith::FPToSIOp::create(b, loc, b.getI64Type(), scaled));
  Value logBucket = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, exactLimit, truncated),
      index(n - 1));
  Value exact = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                      distance, exactLimit);
  Value bucket = arith::SelectOp::create(b, loc, exact, distance, logBucket);
  if (!first)
    return bucket;
  return arith::AddIOp::create(b, loc, first, bucket);
}

/// The bucket of every (query, key) pair, once for all heads (an i32
/// [seq_q, seq_kv] generic), then result[h, i, j] = table[bucket[i, j], h],
/// a gather inside a generic as for embeddings.
struct RelativePositionBiasLowering
    : OpConversionPattern<RelativePositionBiasOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RelativePositionBiasOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getResult().getType();
    SmallVector<OpFoldResult> sizes;
    ValueRange dynamicSizes = adaptor.getSizes();
    for (int64_t size : resultType.getShape()) {
      if (!ShapedType::isDynamic(size)) {
        sizes.push_back(rewriter.getIndexAttr(size));
        continue;
      }
      sizes.push_back(dynamicSizes.front());
      dynamicSizes = dynamicSizes.drop_front();
    }
    Value seqQ = getValueOrCreateConstantIndexOp(rewriter, loc, sizes[1]);
    Value seqKv = getValueOrCreateConstantIndexOp(rewriter, loc, sizes[2]);
    // Query row i sits at position L - seq_q + i, L = min(kv_len, seq_kv),
    // where attn.attention puts it.
    Value validKeys = seqKv;
    if (Value kvLen = adaptor.getKvLen())
      validKeys = arith::MinUIOp::create(rewriter, loc, kvLen, seqKv);
    Value queryOffset = arith::SubIOp::create(rewriter, loc, validKeys, seqQ);

    Value bucketInit = tensor::EmptyOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{sizes[1], sizes[2]},
        rewriter.getI32Type());
    Value buckets = buildGeneric(
        rewriter, loc, ValueRange{}, {}, bucketInit,
        rewriter.getMultiDimIdentityMap(2), iteratorTypes(2),
        [&](OpBuilder &b, Location l, ValueRange) {
          Value query = arith::AddIOp::create(
              b, l, linalg::IndexOp::create(b, l, 0), queryOffset);
          Value rp =
              arith::SubIOp::create(b, l, linalg::IndexOp::create(b, l, 1), query);
          return arith::IndexCastOp::create(b, l, b.getI32Type(),
                                            t5Bucket(b, l, rp, op))
              .getResult();
        });

    MLIRContext *ctx = rewriter.getContext();
    AffineMap perPosition = AffineMap::get(
        3, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx);
    Value table = adaptor.getTable();
    Value bias = buildGeneric(
        rewriter, loc, buckets, {perPosition}, emptyTensor(rewriter, loc, sizes),
        rewriter.getMultiDimIdentityMap(3), iteratorTypes(3),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          return tensor::ExtractOp::create(
                     b, l, table, ValueRange{row, linalg::IndexOp::create(b, l, 0)})
              .getResult();
        });
    rewriter.replaceOp(op, bias);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

/// Rows [position, position + n) of the cache := update.
/// Rows [row, row + count) of a [rows, features] tensor.
static Value rowSlice(OpBuilder &b, Location loc, Value source, Value row,
                      Value count) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> offsets = {row, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {count, b.getIndexAttr(type.getDimSize(1))};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(
      b, loc,
      RankedTensorType::get({ShapedType::kDynamic, type.getDimSize(1)},
                            type.getElementType()),
      source, offsets, sizes, strides);
}

/// `rows` (a [count, features] tensor) written into `dest` from row `row`.
static Value insertRows(OpBuilder &b, Location loc, Value rows, Value dest,
                        Value row) {
  SmallVector<OpFoldResult> offsets = {row, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, rows);
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, rows, dest, offsets, sizes,
                                       strides);
}

/// The f32 `update` in the cache's element type: as is, or rounded to
/// nearest even by arith.truncf for a bf16 / f16 cache.
static Value toCacheElementType(OpBuilder &b, Location loc, Value update,
                                Type elementType) {
  auto type = cast<RankedTensorType>(update.getType());
  if (type.getElementType() == elementType)
    return update;
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, update),
                                       elementType);
  AffineMap id = b.getMultiDimIdentityMap(2);
  return buildGeneric(b, loc, update, {id}, init, id,
                      iteratorTypes(2),
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        return arith::TruncFOp::create(nb, l, elementType, args[0]);
                      });
}

/// A slice insert; with `ring`, the last min(n, R) update rows in at most
/// two slices: from row (pos + skipped) mod R to the ring's end, then from 0.
struct KvCacheAppendLowering : OpConversionPattern<KvCacheAppendOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KvCacheAppendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache();
    Value update = toCacheElementType(
        rewriter, loc, adaptor.getUpdate(),
        cast<RankedTensorType>(cache.getType()).getElementType());
    Value position = adaptor.getPosition();
    if (!op.getRing()) {
      rewriter.replaceOp(op, insertRows(rewriter, loc, update, cache, position));
      return success();
    }
    auto index = [&](int64_t value) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, value);
    };
    Value ringRows = tensor::DimOp::create(rewriter, loc, cache, 0);
    Value n = tensor::DimOp::create(rewriter, loc, update, 0);
    Value kept = arith::MinUIOp::create(rewriter, loc, n, ringRows);
    Value skipped = arith::SubIOp::create(rewriter, loc, n, kept);
    Value start = arith::RemUIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, position, skipped),
        ringRows);
    Value first = arith::MinUIOp::create(
        rewriter, loc, kept, arith::SubIOp::create(rewriter, loc, ringRows, start));
    Value second = arith::SubIOp::create(rewriter, loc, kept, first);
    Value written = insertRows(rewriter, loc,
                               rowSlice(rewriter, loc, update, skipped, first),
                               cache, start);
    written = insertRows(
        rewriter, loc,
        rowSlice(rewriter, loc, update,
                 arith::AddIOp::create(rewriter, loc, skipped, first), second),
        written, index(0));
    rewriter.replaceOp(op, written);
    return success();
  }
};

/// Rows [0, min(length, max_seq)): a slice, so a bad length cannot read past
/// the cache.
struct KvCacheReadLowering : OpConversionPattern<KvCacheReadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KvCacheReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache();
    Value rows = tensor::DimOp::create(rewriter, loc, cache, 0);
    Value length =
        arith::MinUIOp::create(rewriter, loc, adaptor.getLength(), rows);
    if (Value end = adaptor.getRingEnd()) {
      // Positions [end - n, end) from row (end - n) mod R on, wrapping once.
      Value n = arith::MinUIOp::create(rewriter, loc, length, end);
      Value start = arith::RemUIOp::create(
          rewriter, loc, arith::SubIOp::create(rewriter, loc, end, n), rows);
      Value first = arith::MinUIOp::create(
          rewriter, loc, n, arith::SubIOp::create(rewriter, loc, rows, start));
      Value second = arith::SubIOp::create(rewriter, loc, n, first);
      auto resultType = op.getResult().getType();
      Value gathered = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                               resultType.getElementType(),
                                               ValueRange{n});
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      gathered = insertRows(rewriter, loc, rowSlice(rewriter, loc, cache, start, first),
                            gathered, zero);
      gathered = insertRows(rewriter, loc, rowSlice(rewriter, loc, cache, zero, second),
                            gathered, first);
      rewriter.replaceOp(op, gathered);
      return success();
    }
    auto cacheType = cast<RankedTensorType>(cache.getType());
    SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {
        length, rewriter.getIndexAttr(cacheType.getDimSize(1))};
    SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getResult().getType(), cache, offsets, sizes, strides);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertAttnToLinalgPass
    : mlir::attn::impl::ConvertAttnToLinalgPassBase<ConvertAttnToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    AttentionLoweringOptions options;
    options.queryBlock = queryBlock;
    options.kvBlock = kvBlock;
    options.useKernel = attentionKernel;
    if (options.queryBlock <= 0 || options.kvBlock <= 0) {
      // At the op's location, without printing the whole module after it.
      emitError(getOperation()->getLoc())
          << "convert-attn-to-linalg: block sizes must be positive, got "
             "query-block="
          << options.queryBlock << " kv-block=" << options.kvBlock;
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<AttnDialect>();
    // Destination-style code generation ops are this level's output.
    target.addLegalOp<FlashAttentionOp, GemmOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    populateAttnToLinalgPatterns(patterns, options);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateAttnToLinalgPatterns(
    RewritePatternSet &patterns, const AttentionLoweringOptions &options) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<EmbeddingLowering, LinearLowering, LayerNormLowering,
               RmsNormLowering, SoftmaxLowering, RopeLowering,
               SinusoidalPELowering, RelativePositionBiasLowering,
               KvCacheAppendLowering, KvCacheReadLowering, AllReduceLowering,
               AllGatherLowering, GroupRankLowering>(ctx);
  patterns.add<ElementwiseLowering<ResidualAddOp>>(ctx, residualAddScalar);
  patterns.add<ElementwiseLowering<GeluOp>>(ctx, geluScalar);
  patterns.add<ElementwiseLowering<SiluOp>>(ctx, siluScalar);
  patterns.add<ElementwiseLowering<SwigluOp>>(ctx, swigluScalar);
  patterns.add<ElementwiseLowering<GegluOp>>(ctx, gegluScalar);
  patterns.add<ElementwiseLowering<ReluOp>>(ctx, reluScalar);
  patterns.add<ElementwiseLowering<SoftcapOp>>(ctx, softcapScalar);
  populateAttentionToLinalgPatterns(patterns, options);
  populateMoeToLinalgPatterns(patterns);
}
