//===- ModelBuilder.cpp - a model description to attn IR ------------------===//

#include "attn/Compiler/ModelBuilder.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Builds one function body at a time; `seq` is the static sequence length
/// of the activations, or ShapedType::kDynamic.
class ModelIRBuilder {
public:
  ModelIRBuilder(OpBuilder &b, Location loc, const ModelConfig &config,
                 int64_t maxSeq)
      : b(b), loc(loc), config(config), maxSeq(maxSeq) {}

  RankedTensorType activations(int64_t seq, int64_t features) const {
    return RankedTensorType::get({seq, features}, b.getF32Type());
  }
  RankedTensorType cacheType() const {
    return RankedTensorType::get({maxSeq, config.kvFeatures()}, b.getF32Type());
  }
  RankedTensorType weightType(const WeightSpec &weight) const {
    return RankedTensorType::get(weight.shape, b.getF32Type());
  }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }

  Value linear(Value x, Value weight, Value bias, WeightLayout layout,
               int64_t outFeatures) {
    auto xType = cast<RankedTensorType>(x.getType());
    return LinearOp::create(b, loc, activations(xType.getDimSize(0), outFeatures),
                            x, weight, bias, layout);
  }

  /// Columns [begin, begin + count) of a [seq, *] activation.
  Value columns(Value x, Value rows, int64_t begin, int64_t count) {
    auto xType = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(begin)};
    SmallVector<OpFoldResult> sizes = {rows, b.getIndexAttr(count)};
    if (!xType.isDynamicDim(0))
      sizes[0] = b.getIndexAttr(xType.getDimSize(0));
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(
        b, loc, activations(xType.getDimSize(0), count), x, offsets, sizes,
        strides);
  }

  /// Appends `k`/`v` at `pos` and returns (updated caches, valid prefixes).
  std::tuple<Value, Value, Value, Value> cacheStep(Value k, Value v, Value kc,
                                                   Value vc, Value pos,
                                                   Value rows) {
    Value kc1 = KvCacheAppendOp::create(b, loc, cacheType(), k, kc, pos);
    Value vc1 = KvCacheAppendOp::create(b, loc, cacheType(), v, vc, pos);
    Value length = arith::AddIOp::create(b, loc, pos, rows);
    Value keys = KvCacheReadOp::create(
        b, loc, activations(ShapedType::kDynamic, config.kvFeatures()), kc1, length);
    Value values = KvCacheReadOp::create(
        b, loc, activations(ShapedType::kDynamic, config.kvFeatures()), vc1, length);
    return {kc1, vc1, keys, values};
  }

  Value attention(Value q, Value keys, Value values, std::optional<double> scale) {
    auto qType = cast<RankedTensorType>(q.getType());
    IntegerAttr kvHeads;
    if (config.numKvHeads != config.numHeads)
      kvHeads = b.getI64IntegerAttr(config.numKvHeads);
    FloatAttr scaleAttr;
    if (scale)
      scaleAttr = b.getF32FloatAttr(static_cast<float>(*scale));
    return AttentionOp::create(b, loc, qType, q, keys, values, /*bias=*/Value(),
                               /*kv_len=*/Value(),
                               b.getI64IntegerAttr(config.numHeads), kvHeads,
                               scaleAttr, b.getUnitAttr());
  }

  /// One GPT-2 layer: pre-LayerNorm attention and GELU MLP with Conv1D
  /// weights and biases. `w` holds the layer's 12 weights in modelWeights
  /// order.
  SmallVector<Value> gpt2Layer(Value x, ValueRange w, Value kc, Value vc,
                               Value pos) {
    int64_t d = config.hiddenSize, f = config.intermediateSize;
    FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.normEpsilon));
    Value rows = tensor::DimOp::create(b, loc, x, 0);
    Value h = LayerNormOp::create(b, loc, x, w[0], w[1], eps);
    Value qkv = linear(h, w[2], w[3], WeightLayout::InOut, 3 * d);
    Value q = columns(qkv, rows, 0, d);
    Value k = columns(qkv, rows, d, d);
    Value v = columns(qkv, rows, 2 * d, d);
    auto [kc1, vc1, keys, values] = cacheStep(k, v, kc, vc, pos, rows);
    Value a = attention(q, keys, values, std::nullopt);
    Value o = linear(a, w[4], w[5], WeightLayout::InOut, d);
    Value x1 = ResidualAddOp::create(b, loc, x, o);
    Value h2 = LayerNormOp::create(b, loc, x1, w[6], w[7], eps);
    Value up = linear(h2, w[8], w[9], WeightLayout::InOut, f);
    Value act = GeluOp::create(b, loc, up, config.gelu);
    Value down = linear(act, w[10], w[11], WeightLayout::InOut, d);
    Value x2 = ResidualAddOp::create(b, loc, x1, down);
    return {x2, kc1, vc1};
  }

  /// One LLaMA layer: RMSNorm, RoPE'd grouped-query attention, SwiGLU MLP,
  /// nn.Linear weights without biases. `w` holds the layer's 9 weights.
  SmallVector<Value> llamaLayer(Value x, ValueRange w, Value kc, Value vc,
                                Value pos) {
    int64_t d = config.hiddenSize, f = config.intermediateSize;
    int64_t qf = config.queryFeatures(), kvf = config.kvFeatures();
    FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.normEpsilon));
    FloatAttr theta = b.getF32FloatAttr(static_cast<float>(config.ropeTheta));
    Value rows = tensor::DimOp::create(b, loc, x, 0);
    Value h = RmsNormOp::create(b, loc, x, w[0], eps);
    Value q = linear(h, w[1], Value(), WeightLayout::OutIn, qf);
    Value k = linear(h, w[2], Value(), WeightLayout::OutIn, kvf);
    Value v = linear(h, w[3], Value(), WeightLayout::OutIn, kvf);
    IntegerAttr headDim = b.getI64IntegerAttr(config.headDim);
    auto pairing = RopePairingAttr::get(b.getContext(), RopePairing::RotateHalf);
    q = RopeOp::create(b, loc, q, pos, headDim, theta, pairing);
    k = RopeOp::create(b, loc, k, pos, headDim, theta, pairing);
    auto [kc1, vc1, keys, values] = cacheStep(k, v, kc, vc, pos, rows);
    Value a = attention(q, keys, values, std::nullopt);
    Value o = linear(a, w[4], Value(), WeightLayout::OutIn, d);
    Value x1 = ResidualAddOp::create(b, loc, x, o);
    Value h2 = RmsNormOp::create(b, loc, x1, w[5], eps);
    Value gate = linear(h2, w[6], Value(), WeightLayout::OutIn, f);
    Value up = linear(h2, w[7], Value(), WeightLayout::OutIn, f);
    Value act = SwigluOp::create(b, loc, gate, up);
    Value down = linear(act, w[8], Value(), WeightLayout::OutIn, d);
    Value x2 = ResidualAddOp::create(b, loc, x1, down);
    return {x2, kc1, vc1};
  }

  /// The embedded prompt: token embeddings, plus learned positions for GPT-2.
  Value embed(Value tokens, ValueRange globals, Value pos, int64_t seq) {
    Value x = EmbeddingOp::create(b, loc, activations(seq, config.hiddenSize),
                                  globals[0], tokens);
    if (config.family != ModelFamily::Gpt2)
      return x;
    // ids = pos + [0, n): the positions of this call's tokens.
    Value rows = tensor::DimOp::create(b, loc, tokens, 0);
    SmallVector<Value> dynamicSizes;
    if (ShapedType::isDynamic(seq))
      dynamicSizes.push_back(rows);
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{seq},
                                         b.getI64Type(), dynamicSizes);
    auto ids = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
        ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange) {
          Value i = linalg::IndexOp::create(nb, l, 0);
          Value position = arith::AddIOp::create(nb, l, pos, i);
          Value asInt = arith::IndexCastOp::create(nb, l, nb.getI64Type(), position);
          linalg::YieldOp::create(nb, l, asInt);
        });
    Value positions = EmbeddingOp::create(
        b, loc, activations(seq, config.hiddenSize), globals[1], ids.getResult(0));
    return ResidualAddOp::create(b, loc, x, positions);
  }

  /// Final norm and output projection of the last `rows` positions.
  Value logits(Value x, ValueRange globals, ArrayRef<Value> weightsByIndex,
               Value rows) {
    FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.normEpsilon));
    Value h;
    if (config.family == ModelFamily::Gpt2)
      h = LayerNormOp::create(b, loc, x, globals[2], globals[3], eps);
    else
      h = RmsNormOp::create(b, loc, x, globals[1], eps);
    auto hType = cast<RankedTensorType>(h.getType());
    Value n = tensor::DimOp::create(b, loc, h, 0);
    Value start = arith::SubIOp::create(b, loc, n, rows);
    SmallVector<OpFoldResult> offsets = {start, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {rows, b.getIndexAttr(config.hiddenSize)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    Value last = tensor::ExtractSliceOp::create(
        b, loc, activations(ShapedType::kDynamic, hType.getDimSize(1)), h,
        offsets, sizes, strides);
    // GPT-2 and tied LLaMA project with the token embedding [vocab, hidden].
    Value output = config.tieEmbeddings ? weightsByIndex.front()
                                        : weightsByIndex.back();
    return linear(last, output, Value(), WeightLayout::OutIn, config.vocabSize);
  }

  OpBuilder &b;
  Location loc;
  const ModelConfig &config;
  int64_t maxSeq;
};

/// Weights per layer in modelWeights order.
int64_t weightsPerLayer(const ModelConfig &config) {
  return config.family == ModelFamily::Gpt2 ? 12 : 9;
}

/// Weights before the first layer (embeddings).
int64_t leadingWeights(const ModelConfig &config) {
  return config.family == ModelFamily::Gpt2 ? 2 : 1;
}

/// func.func private @name(x, layer weights..., kc, vc, pos) -> (x, kc, vc)
func::FuncOp buildBlockFunction(OpBuilder &b, Location loc, ModuleOp module,
                                StringRef name, const ModelConfig &config,
                                ArrayRef<WeightSpec> layerWeights, int64_t seq,
                                int64_t maxSeq) {
  ModelIRBuilder ir(b, loc, config, maxSeq);
  SmallVector<Type> inputs = {ir.activations(seq, config.hiddenSize)};
  for (const WeightSpec &weight : layerWeights)
    inputs.push_back(ir.weightType(weight));
  inputs.append({ir.cacheType(), ir.cacheType(), b.getIndexType()});
  SmallVector<Type> results = {ir.activations(seq, config.hiddenSize),
                               ir.cacheType(), ir.cacheType()};
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  func.setPrivate();
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  Value x = args.front();
  ValueRange weights = args.slice(1, layerWeights.size());
  Value kc = args[1 + layerWeights.size()], vc = args[2 + layerWeights.size()];
  Value pos = args.back();
  SmallVector<Value> out = config.family == ModelFamily::Gpt2
                               ? ir.gpt2Layer(x, weights, kc, vc, pos)
                               : ir.llamaLayer(x, weights, kc, vc, pos);
  func::ReturnOp::create(b, loc, out);
  return func;
}

/// Reads a memref argument as a tensor; `writable` for the KV caches the
/// entry point updates in place.
Value asTensor(OpBuilder &b, Location loc, Value memref, bool writable) {
  auto type = cast<MemRefType>(memref.getType());
  auto tensorType = RankedTensorType::get(type.getShape(), type.getElementType());
  return bufferization::ToTensorOp::create(
      b, loc, tensorType, memref, b.getUnitAttr(),
      writable ? b.getUnitAttr() : UnitAttr());
}

/// arith.cmpi on index values.
Value compare(OpBuilder &b, Location loc, arith::CmpIPredicate predicate,
              Value lhs, Value rhs) {
  return arith::CmpIOp::create(b, loc, predicate, lhs, rhs);
}

/// True when every token id lies in [0, vocab).
Value tokensInRange(OpBuilder &b, Location loc, Value tokens, Value count,
                    int64_t vocab) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value trueValue = arith::ConstantIntOp::create(b, loc, 1, 1);
  Value lowest = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value limit = arith::ConstantIntOp::create(b, loc, vocab, 32);
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{trueValue},
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        Value token = memref::LoadOp::create(nb, l, tokens, ValueRange{i});
        Value geZero = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge,
                                             token, lowest);
        Value ltVocab = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                              token, limit);
        Value ok = arith::AndIOp::create(nb, l, geZero, ltVocab);
        scf::YieldOp::create(nb, l, ValueRange{arith::AndIOp::create(nb, l, carried[0], ok)});
      });
  return loop.getResult(0);
}

/// func.func @name(tokens: memref<SEQxi32>, pos: index, weights...,
///                 caches (k, v per layer)..., logits: memref<?xVxf32>) -> i32
void buildEntryFunction(OpBuilder &b, Location loc, ModuleOp module,
                        StringRef name, StringRef blockName,
                        const ModelConfig &config,
                        ArrayRef<WeightSpec> weights, int64_t seq,
                        int64_t maxSeq) {
  ModelIRBuilder ir(b, loc, config, maxSeq);
  Type f32 = b.getF32Type();
  SmallVector<Type> inputs = {MemRefType::get({seq}, b.getI32Type()),
                              b.getIndexType()};
  for (const WeightSpec &weight : weights)
    inputs.push_back(MemRefType::get(weight.shape, f32));
  auto cacheType = MemRefType::get({maxSeq, config.kvFeatures()}, f32);
  for (int64_t i = 0; i < 2 * config.numLayers; ++i)
    inputs.push_back(cacheType);
  inputs.push_back(MemRefType::get({ShapedType::kDynamic, config.vocabSize}, f32));

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(inputs, {b.getI32Type()}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  Value tokens = args[0], pos = args[1];
  ValueRange weightArgs = args.slice(2, weights.size());
  ValueRange cacheArgs = args.slice(2 + weights.size(), 2 * config.numLayers);
  Value logitsArg = args.back();

  // Validate before touching anything: 1 <= n, 0 <= pos, pos + n <= maxSeq,
  // every token id in [0, vocab).
  Value n = memref::DimOp::create(b, loc, tokens, 0);
  Value end = arith::AddIOp::create(b, loc, pos, n);
  Value positionsOk = arith::AndIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc, compare(b, loc, arith::CmpIPredicate::sge, n, ir.index(1)),
          compare(b, loc, arith::CmpIPredicate::sge, pos, ir.index(0))),
      compare(b, loc, arith::CmpIPredicate::sle, end, ir.index(maxSeq)));
  Type i32 = b.getI32Type();
  auto status = scf::IfOp::create(
      b, loc, TypeRange{i32}, positionsOk, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&status.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 1, 32)});

    b.setInsertionPointToStart(&status.getThenRegion().front());
    Value tokensOk = tokensInRange(b, loc, tokens, n, config.vocabSize);
    auto compute = scf::IfOp::create(b, loc, TypeRange{i32}, tokensOk,
                                     /*withElseRegion=*/true);
    scf::YieldOp::create(b, loc, compute.getResults());

    b.setInsertionPointToStart(&compute.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 2, 32)});

    b.setInsertionPointToStart(&compute.getThenRegion().front());
    SmallVector<Value> weightTensors;
    for (Value weight : weightArgs)
      weightTensors.push_back(asTensor(b, loc, weight, /*writable=*/false));
    ArrayRef<Value> all(weightTensors);
    int64_t leading = leadingWeights(config), perLayer = weightsPerLayer(config);
    Value x = ir.embed(asTensor(b, loc, tokens, false), all, pos, seq);
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      SmallVector<Value> operands = {x};
      llvm::append_range(operands, all.slice(leading + layer * perLayer, perLayer));
      Value kc = asTensor(b, loc, cacheArgs[2 * layer], /*writable=*/true);
      Value vc = asTensor(b, loc, cacheArgs[2 * layer + 1], /*writable=*/true);
      operands.append({kc, vc, pos});
      auto call = func::CallOp::create(
          b, loc, blockName,
          TypeRange{ir.activations(seq, config.hiddenSize), ir.cacheType(),
                    ir.cacheType()},
          operands);
      x = call.getResult(0);
      bufferization::MaterializeInDestinationOp::create(
          b, loc, TypeRange{}, call.getResult(1), cacheArgs[2 * layer],
          /*restrict=*/true, /*writable=*/true);
      bufferization::MaterializeInDestinationOp::create(
          b, loc, TypeRange{}, call.getResult(2), cacheArgs[2 * layer + 1],
          /*restrict=*/true, /*writable=*/true);
    }
    SmallVector<Value> globals(all.take_front(leading));
    llvm::append_range(globals, all.drop_front(leading + config.numLayers * perLayer));
    Value rows = memref::DimOp::create(b, loc, logitsArg, 0);
    Value logits = ir.logits(x, globals, weightTensors, rows);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, logits, logitsArg, /*restrict=*/true,
        /*writable=*/true);
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 32)});
  }
  func::ReturnOp::create(b, loc, status.getResults());
}

} // namespace

int64_t mlir::attn::kvCacheBytes(const ModelConfig &config, int64_t maxSeq) {
  return config.numLayers * 2 * maxSeq * config.kvFeatures() *
         static_cast<int64_t>(sizeof(float));
}

OwningOpRef<ModuleOp> mlir::attn::buildModelModule(MLIRContext &context,
                                                   const ModelConfig &config,
                                                   const ModelBuildOptions &options) {
  context.loadDialect<AttnDialect, arith::ArithDialect,
                      bufferization::BufferizationDialect, func::FuncDialect,
                      linalg::LinalgDialect, memref::MemRefDialect,
                      scf::SCFDialect, tensor::TensorDialect>();
  OpBuilder b(&context);
  Location loc = FileLineColLoc::get(&context, "attn-compile", 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);

  std::vector<WeightSpec> weights = modelWeights(config);
  int64_t leading = leadingWeights(config);
  ArrayRef<WeightSpec> firstLayer =
      ArrayRef<WeightSpec>(weights).slice(leading, weightsPerLayer(config));
  buildBlockFunction(b, loc, *module, "attn_block_prefill", config, firstLayer,
                     ShapedType::kDynamic, options.maxSeq);
  buildBlockFunction(b, loc, *module, "attn_block_decode", config, firstLayer,
                     1, options.maxSeq);
  buildEntryFunction(b, loc, *module, kPrefillImpl, "attn_block_prefill",
                     config, weights, ShapedType::kDynamic, options.maxSeq);
  buildEntryFunction(b, loc, *module, kDecodeImpl, "attn_block_decode", config,
                     weights, 1, options.maxSeq);
  return module;
}
