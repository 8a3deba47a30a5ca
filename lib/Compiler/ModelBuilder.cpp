//===- ModelBuilder.cpp - a model description to attn IR ------------------===//

#include "attn/Compiler/ModelBuilder.h"

#include "attn/Compiler/ModelLayout.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attnrt/model_abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A layer's weights as values, bound from its table entries
/// (LayerEntries, same fields and order); null where the model has none.
struct LayerValues {
  Value attentionNorm, attentionNormBias, qkv, qkvBias, queryNorm, keyNorm,
      output, outputBias, mlpNorm, mlpNormBias, gate, gateBias, up, upBias,
      down, downBias, attentionOutputNorm, attentionOutputNormBias,
      mlpOutputNorm, mlpOutputNormBias, router, expertGate, expertUp,
      expertDown, routerBias, expertGateBias, expertUpBias, expertDownBias,
      sinks, sharedExpertGate;

  /// Binds `values` (the present entries of `entries`, in order).
  static LayerValues bind(const LayerEntries &entries, ValueRange values) {
    LayerValues w;
    Value *fields[] = {&w.attentionNorm, &w.attentionNormBias, &w.qkv,
                       &w.qkvBias,       &w.queryNorm,         &w.keyNorm,
                       &w.output,        &w.outputBias,        &w.mlpNorm,
                       &w.mlpNormBias,   &w.gate,              &w.gateBias,
                       &w.up,            &w.upBias,            &w.down,
                       &w.downBias,      &w.attentionOutputNorm,
                       &w.attentionOutputNormBias,             &w.mlpOutputNorm,
                       &w.mlpOutputNormBias, &w.router,        &w.expertGate,
                       &w.expertUp,      &w.expertDown,        &w.routerBias,
                       &w.expertGateBias, &w.expertUpBias,     &w.expertDownBias,
                       &w.sinks,          &w.sharedExpertGate};
    size_t field = 0, next = 0;
    const_cast<LayerEntries &>(entries).forEachField([&](int64_t &entry) {
      if (entry >= 0)
        *fields[field] = values[next++];
      ++field;
    });
    return w;
  }
};

/// The weights outside the layers as values.
struct GlobalValues {
  Value tokenEmbedding, positionEmbedding, embeddingNorm, embeddingNormBias,
      finalNorm, finalNormBias, head, headBias;
};

/// Builds one function body at a time; `seq` is the static sequence length
/// of the activations, or ShapedType::kDynamic. `cacheRows` is the KV cache
/// length of the layers being built: maxSeq, or a sliding window shorter
/// than maxSeq, whose cache is then a ring; `cacheElement` the type its keys
/// and values are stored in.
class ModelIRBuilder {
public:
  ModelIRBuilder(OpBuilder &b, Location loc, const ModelConfig &config,
                 const ModelLayout &layout, int64_t maxSeq, int64_t cacheRows,
                 Type cacheElement, bool inspect = false, bool localRope = false,
                 bool rotates = true)
      : b(b), loc(loc), config(config), ranks(layout.ranks), maxSeq(maxSeq),
        cacheRows(cacheRows), cacheElement(cacheElement), inspect(inspect),
        layerPositions(localRope ? config.positions.local() : config.positions),
        rotates(rotates) {}

  /// The sum over the tensor-parallel ranks of a row-parallel projection's
  /// partial result (x itself without a split).
  Value allReduce(Value x) {
    return ranks > 1 ? AllReduceOp::create(b, loc, x, ranks).getResult() : x;
  }

  RankedTensorType activations(int64_t seq, int64_t features) const {
    return RankedTensorType::get({seq, features}, b.getF32Type());
  }
  RankedTensorType cacheType() const {
    return RankedTensorType::get({cacheRows, config.kvFeatures()}, cacheElement);
  }
  /// Cached rows read for attention: [?, kv features] of the cache's type.
  RankedTensorType cachedRows() const {
    return RankedTensorType::get({ShapedType::kDynamic, config.kvFeatures()},
                                 cacheElement);
  }
  /// Whether the cache is a ring of a sliding window's rows.
  bool ring() const { return cacheRows < maxSeq; }

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

  /// [cached; fresh]: rows read from a cache, then new f32 rows stored as
  /// the cache stores them (appended, so rounded alike), so attention sees
  /// the new keys exactly as later steps will read them back.
  Value concatRows(Value cached, Value fresh) {
    Value cachedCount = tensor::DimOp::create(b, loc, cached, 0);
    Value total = arith::AddIOp::create(
        b, loc, cachedCount, tensor::DimOp::create(b, loc, fresh, 0));
    RankedTensorType type = cachedRows();
    Value out = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType(), ValueRange{total});
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    out = tensor::InsertSliceOp::create(
        b, loc, cached, out, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{cachedCount, b.getIndexAttr(config.kvFeatures())},
        strides);
    return KvCacheAppendOp::create(b, loc, type, fresh, out, cachedCount,
                                   /*ring=*/false);
  }

  Value readCache(Value cache, Value length, Value ringEnd = Value()) {
    return KvCacheReadOp::create(b, loc, cachedRows(), cache, length, ringEnd);
  }

  /// Attention of `q` over the cached keys and values and the new `k`, `v`
  /// (at positions [pos, pos + rows)), which are appended to the caches.
  /// Returns (output, updated caches).
  std::tuple<Value, Value, Value> attendAndCache(Value q, Value k, Value v,
                                                 Value kc, Value vc, Value pos,
                                                 Value rows) {
    if (appendsFirst(q)) {
      Value kc1 = append(k, kc, pos), vc1 = append(v, vc, pos);
      auto read = [&](bool values, Value length) {
        return readCache(values ? vc1 : kc1, length);
      };
      return {attendAppended(q, pos, rows, read), kc1, vc1};
    }
    // Positions [pos - old, pos) from the ring, in order, then the new rows:
    // attention with the window over both, then the new rows into the ring.
    Value old = arith::MinUIOp::create(b, loc, pos, index(cacheRows - 1));
    Value keys = concatRows(readCache(kc, old, pos), k);
    Value values = concatRows(readCache(vc, old, pos), v);
    Value a = attention(q, keys, values, /*causal=*/true, /*window=*/cacheRows);
    return {a, append(k, kc, pos), append(v, vc, pos)};
  }

  /// New rows at positions [pos, ...) appended to a cache (its ring).
  Value append(Value update, Value cache, Value pos) {
    return KvCacheAppendOp::create(b, loc, cacheType(), update, cache, pos, ring());
  }

  /// Whether queries `q` attend over exactly the cache once their keys and
  /// values are appended (attendAppended): with a whole-context cache, and
  /// with a ring for one new position without ALiBi; otherwise the ring's
  /// old rows must be read before the new ones overwrite them.
  bool appendsFirst(Value q) {
    auto qType = cast<RankedTensorType>(q.getType());
    return !ring() ||
           (qType.getDimSize(0) == 1 && config.positions.kind != PositionKind::Alibi);
  }

  /// Attention of `rows` queries at [pos, pos + rows) over caches their
  /// keys and values are already appended to (appendsFirst); `read(values,
  /// n)` gives the first n rows of the keys (values = false) or values.
  Value attendAppended(Value q, Value pos, Value rows,
                       llvm::function_ref<Value(bool, Value)> read) {
    if (!ring()) {
      // Keys [0, pos + rows). A window no shorter than the cache never
      // excludes a key.
      Value length = arith::AddIOp::create(b, loc, pos, rows);
      return attention(q, read(false, length), read(true, length), /*causal=*/true,
                       /*window=*/0);
    }
    // One new position: the ring holds exactly the keys it sees (the
    // window's, or all of them before the ring fills). Their order does not
    // matter to softmax, nor without ALiBi to the scores.
    Value length = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, pos, index(1)), index(cacheRows));
    return attention(q, read(false, length), read(true, length), /*causal=*/false,
                     /*window=*/0);
  }

  /// Attention of `q` over `keys` and `values`; when inspecting, also its
  /// weights over the same keys (in `probabilities`).
  Value attention(Value q, Value keys, Value values, bool causal,
                  int64_t window) {
    auto qType = cast<RankedTensorType>(q.getType());
    IntegerAttr heads = b.getI64IntegerAttr(config.numHeads), kvHeads;
    if (config.numKvHeads != config.numHeads)
      kvHeads = b.getI64IntegerAttr(config.numKvHeads);
    FloatAttr scale, softcap;
    if (config.attention.scale > 0)
      scale = b.getF32FloatAttr(static_cast<float>(config.attention.scale));
    if (config.attention.softcap > 0)
      softcap = b.getF32FloatAttr(static_cast<float>(config.attention.softcap));
    DenseF32ArrayAttr alibi;
    if (config.positions.kind == PositionKind::Alibi)
      alibi = b.getDenseF32ArrayAttr(alibiSlopes(config.numHeads));
    UnitAttr causalAttr = causal ? b.getUnitAttr() : UnitAttr();
    IntegerAttr windowAttr = window ? b.getI64IntegerAttr(window) : IntegerAttr();
    if (inspect) {
      auto type = RankedTensorType::get(
          {config.numHeads, qType.getDimSize(0), ShapedType::kDynamic}, b.getF32Type());
      probabilities = AttentionProbabilitiesOp::create(
          b, loc, type, q, keys, /*bias=*/Value(), sinks, /*kv_len=*/Value(),
          heads, kvHeads,
          scale, softcap, causalAttr, windowAttr, alibi);
    }
    return AttentionOp::create(b, loc, qType, q, keys, values, /*bias=*/Value(),
                               sinks, /*kv_len=*/Value(), heads, kvHeads,
                               scale, softcap,
                               causalAttr, windowAttr, alibi);
  }

  /// Element `r` of an i64 tensor as an index.
  Value indexAt(Value values, Value r) {
    Value value = tensor::ExtractOp::create(b, loc, values, ValueRange{r});
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
  }

  /// `fn(x, pos)` for rows at positions pos, pos + 1, ...; in a batch, `fn`
  /// of each row alone at its own position.
  Value atPositions(Value x, Value pos, llvm::function_ref<Value(Value, Value)> fn) {
    if (!batchPositions)
      return fn(x, pos);
    auto type = cast<RankedTensorType>(x.getType());
    int64_t features = type.getDimSize(1);
    Value n = tensor::DimOp::create(b, loc, x, 0);
    auto loop = scf::ForOp::create(
        b, loc, index(0), n, index(1), ValueRange{x},
        [&](OpBuilder &, Location, Value r, ValueRange carried) {
          Value row = rowOf(x, r, features);
          Value out = fn(row, indexAt(batchPositions, r));
          scf::YieldOp::create(b, loc, ValueRange{insertRow(out, carried[0], r, features)});
        });
    return loop.getResult(0);
  }

  /// Row r of a [?, features] activation as [1, features].
  Value rowOf(Value x, Value r, int64_t features) {
    SmallVector<OpFoldResult> offsets = {r, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(features)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, loc, activations(1, features), x, offsets, sizes,
                                          strides);
  }

  /// `row` [1, features] written over row r of `x`.
  Value insertRow(Value row, Value x, Value r, int64_t features) {
    SmallVector<OpFoldResult> offsets = {r, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(features)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    return tensor::InsertSliceOp::create(b, loc, row, x, offsets, sizes, strides);
  }

  /// The [rows, features] cache at element `offset` of `slot` in a pool
  /// [slots, one whole cache's elements], and (insertSlot) one written back.
  Value slotOf(Value pool, Value slot, Value offset) {
    int64_t elements = cacheRows * config.kvFeatures();
    SmallVector<OpFoldResult> offsets = {slot, offset};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(elements)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    Value flat = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({elements}, cacheElement), pool, offsets, sizes, strides);
    return tensor::ExpandShapeOp::create(b, loc, cacheType(), flat,
                                         ArrayRef<ReassociationIndices>{{0, 1}});
  }
  Value insertSlot(Value cache, Value pool, Value slot, Value offset) {
    int64_t elements = cacheRows * config.kvFeatures();
    Value flat = tensor::CollapseShapeOp::create(b, loc, cache,
                                                 ArrayRef<ReassociationIndices>{{0, 1}});
    SmallVector<OpFoldResult> offsets = {slot, offset};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(elements)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    return tensor::InsertSliceOp::create(b, loc, flat, pool, offsets, sizes, strides);
  }

  /// The first `length` rows [?, features] of the cache at element `offset`
  /// of `slot` in a pool.
  Value poolRows(Value pool, Value slot, Value offset, Value length) {
    int64_t kvf = config.kvFeatures();
    Value elements = arith::MulIOp::create(b, loc, length, index(kvf));
    SmallVector<OpFoldResult> offsets = {slot, offset};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), elements};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    Value flat = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic}, cacheElement), pool, offsets,
        sizes, strides);
    return tensor::ExpandShapeOp::create(b, loc, cachedRows(), flat,
                                         ArrayRef<ReassociationIndices>{{0, 1}},
                                         ArrayRef<OpFoldResult>{length, b.getIndexAttr(kvf)});
  }

  /// A batch's attention: each row of q, k, v (after RoPE) attends over its
  /// own slot's caches in `pool` (this layer's keys at batchKeys, values at
  /// batchValues), which it is appended to, as a decode step of that
  /// sequence alone. Returns (output, updated pool).
  std::pair<Value, Value> attendRows(Value q, Value k, Value v, Value pool) {
    int64_t qf = config.queryFeatures(), kvf = config.kvFeatures();
    Value n = tensor::DimOp::create(b, loc, q, 0);
    Value out = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{ShapedType::kDynamic, qf},
                                        b.getF32Type(), ValueRange{n});
    auto loop = scf::ForOp::create(
        b, loc, index(0), n, index(1), ValueRange{out, pool},
        [&](OpBuilder &, Location, Value r, ValueRange carried) {
          Value pos = indexAt(batchPositions, r), slot = indexAt(batchSlots, r);
          Value slots = carried[1], qr = rowOf(q, r, qf), kr = rowOf(k, r, kvf),
                vr = rowOf(v, r, kvf), a;
          if (appendsFirst(qr)) {
            // Each append written back before the next slice is taken, and
            // attention over the rows it reads of the final pool, so that
            // bufferization keeps every update in place in the pool.
            slots = insertSlot(append(kr, slotOf(slots, slot, batchKeys), pos), slots, slot,
                               batchKeys);
            slots = insertSlot(append(vr, slotOf(slots, slot, batchValues), pos), slots, slot,
                               batchValues);
            auto read = [&](bool values, Value length) {
              return poolRows(slots, slot, values ? batchValues : batchKeys, length);
            };
            a = attendAppended(qr, pos, index(1), read);
          } else {
            Value kc, vc;
            std::tie(a, kc, vc) =
                attendAndCache(qr, kr, vr, slotOf(slots, slot, batchKeys),
                               slotOf(slots, slot, batchValues), pos, index(1));
            slots = insertSlot(kc, slots, slot, batchKeys);
            slots = insertSlot(vc, slots, slot, batchValues);
          }
          scf::YieldOp::create(b, loc, ValueRange{insertRow(a, carried[0], r, qf), slots});
        });
    return {loop.getResult(0), loop.getResult(1)};
  }

  /// The model's norm of `x`.
  Value norm(Value x, Value gain, Value bias) {
    FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.norm.epsilon));
    if (config.norm.kind == NormKind::LayerNorm)
      return LayerNormOp::create(b, loc, x, gain, bias, eps);
    FloatAttr gainOffset;
    if (config.norm.gainOffset != 0)
      gainOffset = b.getF32FloatAttr(static_cast<float>(config.norm.gainOffset));
    return RmsNormOp::create(b, loc, x, gain, eps, gainOffset,
                             /*head_dim=*/IntegerAttr());
  }

  /// The qk-norm of q or k: the model's RMSNorm over each head (null gains:
  /// none).
  Value headNorm(Value x, Value gain) {
    if (!gain)
      return x;
    FloatAttr gainOffset;
    if (config.norm.gainOffset != 0)
      gainOffset = b.getF32FloatAttr(static_cast<float>(config.norm.gainOffset));
    return RmsNormOp::create(
        b, loc, x, gain, b.getF32FloatAttr(static_cast<float>(config.norm.epsilon)),
        gainOffset, b.getI64IntegerAttr(config.headDim));
  }

  /// Rotary embedding of queries or keys: theta, or the per-pair
  /// frequencies a static scaling resolves to; dynamic NTK as the op's
  /// runtime rescaling of theta.
  Value rope(Value x, Value pos) {
    const PositionSpec &positions = layerPositions;
    const RopeScaling &scaling = positions.scaling;
    int64_t rotary = positions.rotaryDimsOf(config.headDim);
    IntegerAttr headDim = b.getI64IntegerAttr(config.headDim);
    IntegerAttr rotaryDims;
    if (rotary != config.headDim)
      rotaryDims = b.getI64IntegerAttr(rotary);
    FloatAttr theta, ntkFactor, attentionFactor;
    IntegerAttr ntkMaxPositions;
    DenseElementsAttr frequencies, longFrequencies;
    IntegerAttr longAfter;
    auto table = [&](bool longTable) {
      llvm::SmallVector<double> values =
          ropeInverseFrequencies(positions, rotary, longTable);
      return DenseElementsAttr::get(
          RankedTensorType::get({rotary / 2}, b.getF64Type()),
          llvm::ArrayRef<double>(values));
    };
    switch (scaling.kind) {
    case RopeScalingKind::None:
      theta = b.getF32FloatAttr(static_cast<float>(positions.theta));
      break;
    case RopeScalingKind::Dynamic:
      theta = b.getF32FloatAttr(static_cast<float>(positions.theta));
      ntkFactor = b.getF64FloatAttr(scaling.factor);
      ntkMaxPositions = b.getI64IntegerAttr(scaling.originalMaxPositions);
      break;
    case RopeScalingKind::Linear:
    case RopeScalingKind::Yarn:
    case RopeScalingKind::Llama3:
    case RopeScalingKind::LongRope:
      frequencies = table(/*longTable=*/false);
      if (scaling.kind == RopeScalingKind::LongRope) {
        longFrequencies = table(/*longTable=*/true);
        longAfter = b.getI64IntegerAttr(scaling.originalMaxPositions);
      }
      if (double factor = ropeAttentionFactor(scaling); factor != 1.0)
        attentionFactor = b.getF64FloatAttr(factor);
      break;
    }
    auto pairing = RopePairingAttr::get(b.getContext(), positions.pairing);
    return RopeOp::create(b, loc, x, pos, headDim, rotaryDims, theta,
                          frequencies, longFrequencies, longAfter, ntkFactor,
                          ntkMaxPositions,
                          attentionFactor, /*norm_gamma=*/Value(),
                          /*norm_epsilon=*/FloatAttr(),
                          /*norm_gain_offset=*/FloatAttr(), pairing);
  }

  /// The activation of the MLP from its input `h`.
  Value mlp(Value h, const LayerValues &w) {
    int64_t f = config.intermediateSize;
    switch (config.mlp.kind) {
    case MlpKind::SwiGlu:
    case MlpKind::GeGlu: {
      Value gate = linear(h, w.gate, w.gateBias, WeightLayout::Packed, f);
      Value up = linear(h, w.up, w.upBias, WeightLayout::Packed, f);
      if (config.mlp.kind == MlpKind::GeGlu)
        return GegluOp::create(b, loc, gate, up, config.mlp.gelu);
      return SwigluOp::create(b, loc, gate, up);
    }
    case MlpKind::Gelu:
      return GeluOp::create(b, loc, linear(h, w.up, w.upBias, WeightLayout::Packed, f),
                            config.mlp.gelu);
    case MlpKind::Relu:
      return ReluOp::create(b, loc, linear(h, w.up, w.upBias, WeightLayout::Packed, f));
    }
    llvm_unreachable("unknown MLP kind");
  }

  /// The attention sublayer of `h` (the normed input, or the input with
  /// post-norm): its output projection, and the updated caches.
  std::tuple<Value, Value, Value> attentionSublayer(Value h, const LayerValues &w,
                                                    Value kc, Value vc,
                                                    Value pos) {
    int64_t d = config.hiddenSize;
    int64_t qf = config.queryFeatures(), kvf = config.kvFeatures();
    Value rows = tensor::DimOp::create(b, loc, h, 0);
    sinks = w.sinks;
    Value qkv = linear(h, w.qkv, w.qkvBias, WeightLayout::Packed, qf + 2 * kvf);
    Value q = columns(qkv, rows, 0, qf);
    Value k = columns(qkv, rows, qf, kvf);
    Value v = columns(qkv, rows, qf + kvf, kvf);
    // The qk-norm right before RoPE (per row of a batch too), where
    // attn-fuse-rope-norms folds it into the rotation.
    if (config.positions.kind == PositionKind::Rotary && rotates) {
      q = atPositions(q, pos, [&](Value x, Value at) {
        return rope(headNorm(x, w.queryNorm), at);
      });
      k = atPositions(k, pos, [&](Value x, Value at) {
        return rope(headNorm(x, w.keyNorm), at);
      });
    } else {
      q = headNorm(q, w.queryNorm);
      k = headNorm(k, w.keyNorm);
    }
    Value a, kc1, vc1;
    if (batchPositions) // kc is the pool of every cache, vc unused
      std::tie(a, kc1) = attendRows(q, k, v, kc);
    else
      std::tie(a, kc1, vc1) = attendAndCache(q, k, v, kc, vc, pos, rows);
    Value o = allReduce(linear(a, w.output, w.outputBias, WeightLayout::Packed, d));
    return {o, kc1, vc1};
  }

  /// The MLP sublayer of `h`: its down projection, or the weighted sum of
  /// the experts the router chose for each row.
  Value mlpSublayer(Value h, const LayerValues &w) {
    if (w.router)
      return mixtureOfExperts(h, w);
    return allReduce(linear(mlp(h, w), w.down, w.downBias, WeightLayout::Packed,
                            config.hiddenSize));
  }

  Value mixtureOfExperts(Value h, const LayerValues &w) {
    const MoeSpec &moe = config.moe;
    int64_t rows = cast<RankedTensorType>(h.getType()).getDimSize(0);
    auto routed = MoeRouterOp::create(
        b, loc, activations(rows, moe.topK),
        RankedTensorType::get({rows, moe.topK}, b.getI32Type()), h, w.router,
        w.routerBias, static_cast<uint64_t>(moe.topK), moe.scoring,
        moe.normalize);
    if (inspect) {
      routingWeights = routed.getWeights();
      routingExperts = routed.getExperts();
    }
    FloatAttr alpha, limit;
    if (moe.activation == MoeActivation::ClampedSwiglu) {
      alpha = b.getF32FloatAttr(static_cast<float>(moe.alpha));
      limit = b.getF32FloatAttr(static_cast<float>(moe.limit));
    }
    // The shared expert (its SwiGLU MLP in the gate, up and down entries)
    // and its gate's logit, which the experts op adds after the routed sum.
    Value shared, sharedGate;
    if (w.down) {
      Value gate = linear(h, w.gate, Value(), WeightLayout::Packed, moe.sharedFfn);
      Value up = linear(h, w.up, Value(), WeightLayout::Packed, moe.sharedFfn);
      shared = linear(SwigluOp::create(b, loc, gate, up), w.down, Value(),
                      WeightLayout::Packed, config.hiddenSize);
      if (w.sharedExpertGate)
        sharedGate = linear(h, w.sharedExpertGate, Value(), WeightLayout::OutIn, 1);
    }
    // Split, each rank's experts (and shared expert) hold a slice of the
    // MLP width: their down projections' partial sums are all-reduced.
    return allReduce(MoeExpertsOp::create(
        b, loc, activations(rows, config.hiddenSize), h, routed.getWeights(),
        routed.getExperts(), w.expertGate, w.expertUp, w.expertDown,
        w.expertGateBias, w.expertUpBias, w.expertDownBias, shared, sharedGate,
        moe.activation, alpha, limit));
  }

  /// One decoder layer as the description says. `w` holds the layer's
  /// table entries (ModelLayout::layers).
  SmallVector<Value> layer(Value x, const LayerValues &w, Value kc, Value vc,
                           Value pos) {
    const BlockSpec &block = config.block;
    auto add = [&](Value a, Value c) {
      return ResidualAddOp::create(b, loc, a, c).getResult();
    };
    if (!block.preNorm) {
      // x1 = norm(x + attention(x)), x2 = norm(x1 + mlp(x1)).
      auto [o, kc1, vc1] = attentionSublayer(x, w, kc, vc, pos);
      Value x1 = norm(add(x, o), w.attentionNorm, w.attentionNormBias);
      Value x2 = norm(add(x1, mlpSublayer(x1, w)), w.mlpNorm, w.mlpNormBias);
      return {x2, kc1, vc1};
    }
    Value h = norm(x, w.attentionNorm, w.attentionNormBias);
    auto [o, kc1, vc1] = attentionSublayer(h, w, kc, vc, pos);
    if (block.parallel) {
      // x + attention(norm1(x)) + mlp(norm2(x)) (or of the one norm).
      Value h2 = block.sharedNorm ? h : norm(x, w.mlpNorm, w.mlpNormBias);
      Value m = mlpSublayer(h2, w);
      return {add(add(x, o), m), kc1, vc1};
    }
    // Gemma 2's sandwich: each sublayer's output normed before its add.
    if (block.outputNorms)
      o = norm(o, w.attentionOutputNorm, w.attentionOutputNormBias);
    Value x1 = add(x, o);
    Value m = mlpSublayer(norm(x1, w.mlpNorm, w.mlpNormBias), w);
    if (block.outputNorms)
      m = norm(m, w.mlpOutputNorm, w.mlpOutputNormBias);
    Value x2 = add(x1, m);
    return {x2, kc1, vc1};
  }

  /// The embedded prompt: token embeddings, plus learned positions.
  Value embed(Value tokens, const GlobalValues &globals, Value pos, int64_t seq) {
    FloatAttr scale;
    if (config.embeddingScale != 1.0)
      scale = b.getF32FloatAttr(static_cast<float>(config.embeddingScale));
    // Split over ranks, each holds a slice of the vocabulary: its rows of
    // the ids it has, zeros for the others, summed.
    Value sliceBegin;
    if (ranks > 1)
      sliceBegin = arith::MulIOp::create(b, loc, GroupRankOp::create(b, loc, ranks),
                                         index(vocabularySlice(config, ranks)));
    Value x = allReduce(EmbeddingOp::create(b, loc, activations(seq, config.hiddenSize),
                                            globals.tokenEmbedding, tokens, sliceBegin,
                                            scale));
    if (config.embeddingNorm)
      x = norm(x, globals.embeddingNorm, globals.embeddingNormBias);
    const PositionSpec &positions = config.positions;
    if (positions.kind == PositionKind::Sinusoidal) {
      return atPositions(x, pos, [&](Value rows, Value at) -> Value {
        Value first = arith::AddIOp::create(b, loc, at, index(positions.offset));
        return SinusoidalPEOp::create(
            b, loc, rows, first, b.getF32FloatAttr(static_cast<float>(positions.theta)),
            SinusoidalLayoutAttr::get(b.getContext(), positions.sinusoidal));
      });
    }
    if (positions.kind != PositionKind::Learned)
      return x;
    // ids = offset + pos + [0, n): the table rows of this call's positions.
    Value rows = tensor::DimOp::create(b, loc, tokens, 0);
    SmallVector<Value> dynamicSizes;
    if (ShapedType::isDynamic(seq))
      dynamicSizes.push_back(rows);
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{seq},
                                         b.getI64Type(), dynamicSizes);
    Value first = arith::AddIOp::create(b, loc, pos, index(positions.offset));
    // In a batch, each row's own position instead: ids = offset + positions.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    if (batchPositions) {
      inputs.push_back(batchPositions);
      maps.push_back(b.getMultiDimIdentityMap(1));
    }
    maps.push_back(b.getMultiDimIdentityMap(1));
    auto ids = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
        ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          if (batchPositions) {
            Value offset = arith::ConstantIntOp::create(nb, l, positions.offset, 64);
            linalg::YieldOp::create(nb, l, ValueRange{arith::AddIOp::create(nb, l, args[0], offset)});
            return;
          }
          Value i = linalg::IndexOp::create(nb, l, 0);
          Value position = arith::AddIOp::create(nb, l, first, i);
          Value asInt = arith::IndexCastOp::create(nb, l, nb.getI64Type(), position);
          linalg::YieldOp::create(nb, l, asInt);
        });
    Value learned =
        EmbeddingOp::create(b, loc, activations(seq, config.hiddenSize),
                            globals.positionEmbedding, ids.getResult(0),
                            /*offset=*/Value(), /*scale=*/FloatAttr());
    return ResidualAddOp::create(b, loc, x, learned);
  }

  /// The final norm of `x` (x itself for a model without one).
  Value finalNorm(Value x, const GlobalValues &globals) {
    return config.block.finalNorm ? norm(x, globals.finalNorm, globals.finalNormBias) : x;
  }

  /// Final norm and output projection of the last `rows` positions.
  Value logits(Value x, const GlobalValues &globals, Value rows) {
    return project(finalNorm(x, globals), globals, rows);
  }

  /// The output projection of the last `rows` positions of normed `h`,
  /// capped as the model caps its logits.
  Value project(Value h, const GlobalValues &globals, Value rows) {
    Value out = projectUncapped(h, globals, rows);
    if (config.logitSoftcap <= 0)
      return out;
    return SoftcapOp::create(b, loc, out,
                             b.getF32FloatAttr(static_cast<float>(config.logitSoftcap)));
  }

  Value projectUncapped(Value h, const GlobalValues &globals, Value rows) {
    auto hType = cast<RankedTensorType>(h.getType());
    Value n = tensor::DimOp::create(b, loc, h, 0);
    Value start = arith::SubIOp::create(b, loc, n, rows);
    SmallVector<OpFoldResult> offsets = {start, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {rows, b.getIndexAttr(config.hiddenSize)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    Value last = tensor::ExtractSliceOp::create(
        b, loc, activations(ShapedType::kDynamic, hType.getDimSize(1)), h,
        offsets, sizes, strides);
    if (ranks == 1)
      return linear(last, globals.head, globals.headBias, WeightLayout::Packed,
                    config.vocabSize);
    // Each rank's slice of the vocabulary, gathered; the last rank's
    // padding rows dropped.
    int64_t slice = vocabularySlice(config, ranks);
    Value shard = linear(last, globals.head, globals.headBias, WeightLayout::Packed, slice);
    Value all = AllGatherOp::create(b, loc, activations(ShapedType::kDynamic, ranks * slice),
                                    shard, ranks);
    if (ranks * slice == config.vocabSize)
      return all;
    SmallVector<OpFoldResult> whole = {b.getIndexAttr(0), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> vocab = {rows, b.getIndexAttr(config.vocabSize)};
    return tensor::ExtractSliceOp::create(
        b, loc, activations(ShapedType::kDynamic, config.vocabSize), all, whole, vocab,
        SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
  }

  OpBuilder &b;
  Location loc;
  /// One rank's model when split over `ranks` (rankLocalConfig).
  const ModelConfig &config;
  int64_t ranks;
  int64_t maxSeq, cacheRows;
  Type cacheElement;
  /// Whether attention also yields its weights: [heads, seq, keys], of the
  /// last attention built.
  bool inspect;
  /// How the layers being built rotate q and k (a copy: local() makes one),
  /// and whether they do (not in a NoPE layer).
  PositionSpec layerPositions;
  bool rotates;
  Value probabilities;
  /// When inspecting a mixture-of-experts layer: its router's weights
  /// [rows, top_k] and chosen experts [rows, top_k] (i32).
  Value routingWeights, routingExperts;
  /// The attention sinks of the layer being built (gpt-oss), or null.
  Value sinks;
  /// A batch of decode steps of several sequences (Entry::Batch): row r is
  /// the token of cache slot batchSlots[r] at position batchPositions[r]
  /// (tensor<?xi64> each), and the layer's keys and values are at elements
  /// batchKeys and batchValues of each slot; null otherwise.
  Value batchPositions, batchSlots, batchKeys, batchValues;
};

/// The element type of a buffer stored in `format`.
Type formatElementType(OpBuilder &b, WeightFormat format) {
  switch (format) {
  case WeightFormat::F32:
    return b.getF32Type();
  case WeightFormat::BF16:
    return b.getBF16Type();
  case WeightFormat::Q8_0:
  case WeightFormat::Q4_0:
    return b.getI8Type();
  }
  llvm_unreachable("unknown weight format");
}

/// The element type compiled code sees for a table entry.
Type entryElementType(OpBuilder &b, const ModelLayout &layout, int64_t entry) {
  return formatElementType(b, layout.format(entry));
}

/// What an entry function computes: a prompt chunk, one decode step, a
/// prompt from position 0 with the inspected values (attention weights,
/// residual stream, final norm) as outputs too, or one decode step of
/// several sequences whose caches are slots of one pool.
enum class Entry { Prefill, Decode, Inspect, Batch };

/// Elements of one whole KV cache (every layer's keys and values): a pool
/// holds one per slot, [slots, cacheElements], laid out as the slots'
/// caches one after another.
int64_t cacheElements(const ModelConfig &config, int64_t maxSeq) {
  return kvCacheBytes(config, maxSeq, KvFormat::F32) / 4;
}

/// What distinguishes the block functions of a model: the cache length of
/// their layers (a sliding window shorter than the context, or the whole
/// context), and whether they rotate with the local RoPE base.
struct BlockVariant {
  int64_t cacheRows;
  bool localRope;
  /// A NoPE layer of a rotary model: q and k are not rotated.
  bool unrotated;
  /// A mixture-of-experts layer (its MLP entries differ from a dense one's).
  bool moe;
  bool operator==(const BlockVariant &other) const {
    return cacheRows == other.cacheRows && localRope == other.localRope &&
           unrotated == other.unrotated && moe == other.moe;
  }
};

BlockVariant blockVariant(const ModelConfig &config, int64_t layer, int64_t maxSeq) {
  return {kvCacheRows(config, layer, maxSeq), config.usesLocalRope(layer),
          config.positions.kind == PositionKind::Rotary && !config.rotatesLayer(layer),
          config.isMoeLayer(layer)};
}

/// A mixture-of-experts layer's routing of `seq` rows, as the inspection
/// block returns it: the router's weights [seq, top_k] (f32) and chosen
/// experts [seq, top_k] (i32).
SmallVector<Type, 2> routingTypes(OpBuilder &b, const ModelConfig &config, int64_t seq) {
  return {RankedTensorType::get({seq, config.moe.topK}, b.getF32Type()),
          RankedTensorType::get({seq, config.moe.topK}, b.getI32Type())};
}

/// func.func private @name(x, layer entries..., kc, vc, pos) -> (x, kc, vc)
/// for the layers whose caches have `cacheRows` rows; for Entry::Inspect
/// with the layer's attention weights [heads, seq, keys] as a fourth result
/// (and, in a mixture-of-experts layer, its routing: routingTypes);
/// for Entry::Batch (x, layer entries..., pool, keys, values, positions,
/// slots) -> (x, pool): the pool of every slot's whole cache, the layer's
/// key and value offsets in a cache (index), each row's position and slot
/// (tensor<?xi64>).
func::FuncOp buildBlockFunction(OpBuilder &b, Location loc, ModuleOp module,
                                StringRef name, const ModelConfig &config,
                                const ModelLayout &layout, int64_t seq,
                                int64_t maxSeq, BlockVariant variant, Type cacheElement,
                                Entry kind) {
  const bool inspect = kind == Entry::Inspect, batch = kind == Entry::Batch;
  int64_t cacheRows = variant.cacheRows;
  ModelIRBuilder ir(b, loc, config, layout, maxSeq, cacheRows, cacheElement, inspect,
                    variant.localRope, !variant.unrotated);
  // Every layer of a variant has the same entries (only their table
  // indices differ).
  int64_t example = 0;
  while (!(blockVariant(config, example, maxSeq) == variant))
    ++example;
  const LayerEntries &exampleEntries = layout.layers[example];
  SmallVector<int64_t, 16> entries = exampleEntries.list();
  SmallVector<Type> inputs = {ir.activations(seq, config.hiddenSize)};
  for (int64_t entry : entries)
    inputs.push_back(RankedTensorType::get(layout.shape(entry), entryElementType(b, layout, entry)));
  auto rowValues = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  auto pool = RankedTensorType::get({ShapedType::kDynamic, cacheElements(config, maxSeq)},
                                    cacheElement);
  SmallVector<Type> results = {ir.activations(seq, config.hiddenSize)};
  if (batch) {
    inputs.append({pool, b.getIndexType(), b.getIndexType(), rowValues, rowValues});
    results.push_back(pool);
  } else {
    inputs.append({ir.cacheType(), ir.cacheType(), b.getIndexType()});
    results.append({ir.cacheType(), ir.cacheType()});
  }
  if (inspect) {
    results.push_back(RankedTensorType::get(
        {config.numHeads, seq, ShapedType::kDynamic}, b.getF32Type()));
    if (variant.moe)
      results.append(routingTypes(b, config, seq));
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  func.setPrivate();
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  Value x = args.front();
  ValueRange weights = args.slice(1, entries.size());
  Value kc = args[1 + entries.size()], vc = args[2 + entries.size()];
  Value pos = args.back();
  if (batch) {
    ir.batchKeys = args[2 + entries.size()];
    ir.batchValues = args[3 + entries.size()];
    ir.batchPositions = args[4 + entries.size()];
    ir.batchSlots = args[5 + entries.size()];
    vc = Value();
    pos = ir.index(0); // unused: each row has its own
  }
  SmallVector<Value> out =
      ir.layer(x, LayerValues::bind(exampleEntries, weights), kc, vc, pos);
  if (batch)
    out.pop_back(); // (x, pool)
  if (inspect) {
    out.push_back(ir.probabilities);
    if (variant.moe)
      out.append({ir.routingWeights, ir.routingExperts});
  }
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

/// True when every element of the integer memref `values` [count] lies in
/// [0, limit) (token ids in the vocabulary, positions in the context).
Value allInRange(OpBuilder &b, Location loc, Value values, Value count, Value limit) {
  Type type = cast<MemRefType>(values.getType()).getElementType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value trueValue = arith::ConstantIntOp::create(b, loc, 1, 1);
  Value lowest = arith::ConstantIntOp::create(b, loc, type, 0);
  if (std::optional<int64_t> constant = getConstantIntValue(limit))
    limit = arith::ConstantIntOp::create(b, loc, type, *constant);
  else
    limit = arith::IndexCastOp::create(b, loc, type, limit);
  Value tokens = values;
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

/// The block function of the layers of `variant`.
std::string blockFunctionName(Entry kind, BlockVariant variant, int64_t maxSeq) {
  std::string name = kind == Entry::Prefill  ? "attn_block_prefill"
                     : kind == Entry::Decode ? "attn_block_decode"
                     : kind == Entry::Batch  ? "attn_block_batch"
                                             : "attn_block_inspect";
  if (variant.cacheRows < maxSeq)
    name += "_window" + std::to_string(variant.cacheRows);
  if (variant.localRope)
    name += "_local";
  if (variant.unrotated)
    name += "_nope";
  if (variant.moe)
    name += "_moe";
  return name;
}

/// The table entries read at run time as arguments of an entry function.
struct WeightArguments {
  /// Appends their memref types to `inputs`.
  WeightArguments(OpBuilder &b, const ModelLayout &layout, SmallVectorImpl<Type> &inputs)
      : layout(layout), argOfEntry(layout.tableSize(), -1) {
    for (int64_t entry = 0; entry < layout.tableSize(); ++entry) {
      if (!layout.readAtRunTime(entry))
        continue;
      argOfEntry[entry] = count++;
      inputs.push_back(MemRefType::get(layout.shape(entry), entryElementType(b, layout, entry)));
    }
  }

  /// Reads the arguments (`count` of them) as tensors.
  void bind(OpBuilder &b, Location loc, ValueRange args) {
    for (Value weight : args)
      weightTensors.push_back(asTensor(b, loc, weight, /*writable=*/false));
  }

  SmallVector<Value> tensors(ArrayRef<int64_t> entries) const {
    SmallVector<Value> values;
    for (int64_t entry : entries)
      values.push_back(weightTensors[argOfEntry[entry]]);
    return values;
  }

  Value tensorOf(int64_t entry) const {
    return entry < 0 ? Value() : weightTensors[argOfEntry[entry]];
  }

  GlobalValues globals() const {
    const GlobalEntries &g = layout.globals;
    return GlobalValues{tensorOf(g.tokenEmbedding), tensorOf(g.positionEmbedding),
                        tensorOf(g.embeddingNorm),  tensorOf(g.embeddingNormBias),
                        tensorOf(g.finalNorm),      tensorOf(g.finalNormBias),
                        tensorOf(g.head),           tensorOf(g.headBias)};
  }

  const ModelLayout &layout;
  SmallVector<int64_t> argOfEntry;
  int64_t count = 0;
  SmallVector<Value> weightTensors;
};

/// Writes tensor `value` into memref `dest` in place.
void storeInto(OpBuilder &b, Location loc, Value value, Value dest) {
  bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, value, dest,
                                                    /*restrict=*/true, /*writable=*/true);
}

/// `part` inserted into `whole` at [index, 0, ...] (as one slice of the
/// leading dimension).
Value insertAt(OpBuilder &b, Location loc, Value part, Value whole, int64_t index) {
  auto partType = cast<RankedTensorType>(part.getType());
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(index)}, sizes = {b.getIndexAttr(1)};
  for (int64_t dim = 0; dim < partType.getRank(); ++dim) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(tensor::getMixedSize(b, loc, part, dim));
  }
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, part, whole, offsets, sizes, strides);
}

/// func.func @name(tokens: memref<SEQxi32>, pos: index, <table entries read
///     at run time>..., caches (k, v per layer)..., [inspected outputs,]
///     logits: memref<?xVxf32>) -> i32
/// Entry::Inspect's outputs are attention memref<L x H x ? x ?> (each
/// layer's weights over the n keys), residual memref<(L + 1) x ? x D> (the
/// first layer's input, then every layer's output) and the final norm
/// memref<? x D>, and for a mixture of experts each layer's chosen experts
/// memref<L x ? x K x i32> and their weights memref<L x ? x K x f32> (-1 and
/// 0 in a dense layer); it is meant for pos = 0 (the attention memref has n
/// keys).
/// Entry::Batch takes, instead of pos, each token's position and cache slot
/// (memref<?xi64> each), and instead of the caches their pool
/// memref<slots x cacheElements> (the slots' caches one after another); its
/// logits have a row per token.
void buildEntryFunction(OpBuilder &b, Location loc, ModuleOp module,
                        StringRef name, Entry kind,
                        const ModelConfig &config, const ModelLayout &layout,
                        int64_t seq, int64_t maxSeq, Type cacheElement) {
  ModelIRBuilder ir(b, loc, config, layout, maxSeq, maxSeq, cacheElement);
  const bool inspect = kind == Entry::Inspect, batch = kind == Entry::Batch;
  const int64_t dynamic = ShapedType::kDynamic, layers = config.numLayers;
  const int64_t kvf = config.kvFeatures();
  Type f32 = b.getF32Type();
  auto rowValues = MemRefType::get({dynamic}, b.getI64Type());
  SmallVector<Type> inputs = {MemRefType::get({seq}, b.getI32Type())};
  if (batch)
    inputs.append({rowValues, rowValues});
  else
    inputs.push_back(b.getIndexType());
  const int64_t lead = static_cast<int64_t>(inputs.size());
  WeightArguments weights(b, layout, inputs);
  if (batch)
    inputs.push_back(MemRefType::get({dynamic, cacheElements(config, maxSeq)}, cacheElement));
  for (int64_t layer = 0; !batch && layer < layers; ++layer) {
    auto cacheType = MemRefType::get({kvCacheRows(config, layer, maxSeq), kvf}, cacheElement);
    inputs.append({cacheType, cacheType});
  }
  // A mixture of experts is inspected with its routing too.
  const bool routing = inspect && config.moe.numExperts > 0;
  const int64_t topK = config.moe.topK;
  if (inspect)
    inputs.append(
        {MemRefType::get({layers, config.numHeads, dynamic, dynamic}, f32),
         MemRefType::get({layers + 1, dynamic, config.hiddenSize}, f32),
         MemRefType::get({dynamic, config.hiddenSize}, f32)});
  if (routing)
    inputs.append({MemRefType::get({layers, dynamic, topK}, b.getI32Type()),
                   MemRefType::get({layers, dynamic, topK}, f32)});
  inputs.push_back(MemRefType::get({dynamic, config.vocabSize}, f32));

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(inputs, {b.getI32Type()}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  Value tokens = args[0], pos = batch ? ir.index(0) : args[1];
  ValueRange weightArgs = args.slice(lead, weights.count);
  ValueRange cacheArgs = args.slice(lead + weights.count, batch ? 1 : 2 * layers);
  Value logitsArg = args.back();
  Value attentionArg, residualArg, finalNormArg, expertsArg, expertWeightsArg;
  if (inspect) {
    // ..., attention, residual, final norm, [experts, their weights,] logits
    size_t afterNorm = args.size() - (routing ? 3 : 1);
    attentionArg = args[afterNorm - 3];
    residualArg = args[afterNorm - 2];
    finalNormArg = args[afterNorm - 1];
  }
  if (routing) {
    expertsArg = args[args.size() - 3];
    expertWeightsArg = args[args.size() - 2];
  }
  // Validate before touching anything: 1 <= n, 0 <= pos, pos + n <= maxSeq
  // (in a batch: every position in [0, maxSeq), every slot in the pools),
  // every token id in [0, vocab).
  Value n = memref::DimOp::create(b, loc, tokens, 0);
  Value end = arith::AddIOp::create(b, loc, pos, n);
  Value positionsOk = arith::AndIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc, compare(b, loc, arith::CmpIPredicate::sge, n, ir.index(1)),
          compare(b, loc, arith::CmpIPredicate::sge, pos, ir.index(0))),
      compare(b, loc, arith::CmpIPredicate::sle, end, ir.index(maxSeq)));
  if (batch) {
    Value slots = memref::DimOp::create(b, loc, cacheArgs[0], 0);
    positionsOk = arith::AndIOp::create(
        b, loc, positionsOk,
        arith::AndIOp::create(b, loc, allInRange(b, loc, args[1], n, ir.index(maxSeq)),
                              allInRange(b, loc, args[2], n, slots)));
  }
  Type i32 = b.getI32Type();
  auto status = scf::IfOp::create(
      b, loc, TypeRange{i32}, positionsOk, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&status.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(
                                 b, loc, ATTN_MODEL_ERROR_POSITION, 32)});

    b.setInsertionPointToStart(&status.getThenRegion().front());
    Value tokensOk = allInRange(b, loc, tokens, n, ir.index(config.vocabSize));
    auto compute = scf::IfOp::create(b, loc, TypeRange{i32}, tokensOk,
                                     /*withElseRegion=*/true);
    scf::YieldOp::create(b, loc, compute.getResults());

    b.setInsertionPointToStart(&compute.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(
                                 b, loc, ATTN_MODEL_ERROR_TOKEN, 32)});

    b.setInsertionPointToStart(&compute.getThenRegion().front());
    weights.bind(b, loc, weightArgs);
    GlobalValues globals = weights.globals();
    if (batch) {
      ir.batchPositions = asTensor(b, loc, args[1], /*writable=*/false);
      ir.batchSlots = asTensor(b, loc, args[2], /*writable=*/false);
    }
    Value x = ir.embed(asTensor(b, loc, tokens, false), globals, pos, seq);
    Value attention, residual, pool, experts, expertWeights;
    if (batch)
      pool = asTensor(b, loc, cacheArgs[0], /*writable=*/true);
    // A layer's keys and values within one whole cache (layer-major, K then V).
    int64_t cacheOffset = 0;
    if (inspect) {
      attention = asTensor(b, loc, attentionArg, /*writable=*/true);
      residual = insertAt(b, loc, x, asTensor(b, loc, residualArg, /*writable=*/true), 0);
    }
    if (routing) {
      // A dense layer of a mixture of experts (mlp_only_layers) routes no
      // token: expert -1, weight 0.
      experts = asTensor(b, loc, expertsArg, /*writable=*/true);
      expertWeights = asTensor(b, loc, expertWeightsArg, /*writable=*/true);
      if (!llvm::all_of(llvm::seq<int64_t>(0, layers),
                        [&](int64_t l) { return config.isMoeLayer(l); })) {
        auto fill = [&](Value value, Value tensor) {
          return linalg::FillOp::create(b, loc, value, tensor).getResult(0);
        };
        experts = fill(arith::ConstantIntOp::create(b, loc, -1, 32), experts);
        expertWeights = fill(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f)),
                             expertWeights);
      }
    }
    for (int64_t layer = 0; layer < layers; ++layer) {
      SmallVector<Value> operands = {x};
      llvm::append_range(operands, weights.tensors(layout.layers[layer].list()));
      BlockVariant variant = blockVariant(config, layer, maxSeq);
      int64_t cacheRows = variant.cacheRows;
      SmallVector<Type> results = {ir.activations(seq, config.hiddenSize)};
      if (batch) {
        operands.append({pool, ir.index(cacheOffset), ir.index(cacheOffset + cacheRows * kvf),
                         ir.batchPositions, ir.batchSlots});
        results.push_back(pool.getType());
        cacheOffset += 2 * cacheRows * kvf;
        auto call = func::CallOp::create(b, loc, blockFunctionName(kind, variant, maxSeq),
                                         results, operands);
        x = call.getResult(0);
        pool = call.getResult(1);
        continue;
      }
      Value kc = asTensor(b, loc, cacheArgs[2 * layer], /*writable=*/true);
      Value vc = asTensor(b, loc, cacheArgs[2 * layer + 1], /*writable=*/true);
      operands.append({kc, vc, pos});
      results.append({kc.getType(), kc.getType()});
      if (inspect)
        results.push_back(RankedTensorType::get({config.numHeads, seq, dynamic}, f32));
      if (inspect && variant.moe)
        results.append(routingTypes(b, config, seq));
      auto call = func::CallOp::create(b, loc, blockFunctionName(kind, variant, maxSeq),
                                       results, operands);
      x = call.getResult(0);
      storeInto(b, loc, call.getResult(1), cacheArgs[2 * layer]);
      storeInto(b, loc, call.getResult(2), cacheArgs[2 * layer + 1]);
      if (inspect) {
        attention = insertAt(b, loc, call.getResult(3), attention, layer);
        residual = insertAt(b, loc, x, residual, layer + 1);
      }
      if (inspect && variant.moe) {
        expertWeights = insertAt(b, loc, call.getResult(4), expertWeights, layer);
        experts = insertAt(b, loc, call.getResult(5), experts, layer);
      }
    }
    if (batch)
      storeInto(b, loc, pool, cacheArgs[0]);
    Value rows = memref::DimOp::create(b, loc, logitsArg, 0);
    Value h = ir.finalNorm(x, globals);
    storeInto(b, loc, ir.project(h, globals, rows), logitsArg);
    if (inspect) {
      storeInto(b, loc, attention, attentionArg);
      storeInto(b, loc, residual, residualArg);
      storeInto(b, loc, h, finalNormArg);
    }
    if (routing) {
      storeInto(b, loc, experts, expertsArg);
      storeInto(b, loc, expertWeights, expertWeightsArg);
    }
    scf::YieldOp::create(
        b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, ATTN_MODEL_OK, 32)});
  }
  func::ReturnOp::create(b, loc, status.getResults());
}

/// func.func @attn_unembed_impl(hidden: memref<?xDxf32>, <table entries read
///     at run time>..., logits: memref<?xVxf32>) -> i32: the final norm and
///     output projection of any hidden states (the logit lens of a layer's
///     residual stream).
void buildUnembedFunction(OpBuilder &b, Location loc, ModuleOp module,
                          const ModelConfig &config, const ModelLayout &layout,
                          int64_t maxSeq, Type cacheElement) {
  ModelIRBuilder ir(b, loc, config, layout, maxSeq, maxSeq, cacheElement);
  Type f32 = b.getF32Type();
  SmallVector<Type> inputs = {
      MemRefType::get({ShapedType::kDynamic, config.hiddenSize}, f32)};
  WeightArguments weights(b, layout, inputs);
  inputs.push_back(MemRefType::get({ShapedType::kDynamic, config.vocabSize}, f32));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, kUnembedImpl,
                                   b.getFunctionType(inputs, {b.getI32Type()}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  weights.bind(b, loc, args.slice(1, weights.count));
  Value logitsArg = args.back();
  Value rows = memref::DimOp::create(b, loc, logitsArg, 0);
  Value hidden = asTensor(b, loc, args.front(), /*writable=*/false);
  storeInto(b, loc, ir.logits(hidden, weights.globals(), rows), logitsArg);
  func::ReturnOp::create(
      b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, ATTN_MODEL_OK, 32)});
}

/// Stores `value` at element `n` (output feature) and `k` of a packed
/// [blocks, K, NR] buffer.
void storePacked(OpBuilder &b, Location loc, Value value, Value dst, Value n,
                 Value k, int64_t blockSize) {
  // A bf16 buffer holds each f32 weight rounded to the nearest bf16 (ties
  // to even), as torch's .to(torch.bfloat16) does.
  Type element = cast<MemRefType>(dst.getType()).getElementType();
  if (value.getType() != element)
    value = arith::TruncFOp::create(b, loc, element, value);
  Value size = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value block = arith::DivUIOp::create(b, loc, n, size);
  Value lane = arith::RemUIOp::create(b, loc, n, size);
  memref::StoreOp::create(b, loc, value, dst, ValueRange{block, k, lane});
}

/// The weight's row of packed row `r` (PackedWeight::Source::sourceRow) as
/// index arithmetic, before a tensor-parallel rank's offset.
Value sourceRowIndex(OpBuilder &b, Location loc,
                     const PackedWeight::Source &source, Value r) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value row = r;
  if (source.heads > 0) {
    Value perGroup = c(source.heads * source.headDim);
    Value group = arith::DivUIOp::create(b, loc, r, perGroup);
    Value head = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, r, c(source.headDim)),
        c(source.heads));
    Value lane = arith::RemUIOp::create(b, loc, r, c(source.headDim));
    Value slot = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, head, c(source.groups)), group);
    row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, slot, c(source.headDim)), lane);
  }
  if (source.rowBegin != 0)
    row = arith::AddIOp::create(b, loc, row, c(source.rowBegin));
  return row;
}

/// Quantizes the kQuantBlock weights of output feature `n` from input
/// kQuantBlock * `group` into the slab of a [NB, K/32, NR, bytes] buffer,
/// as llama.cpp's quantize_row_q8_0_ref / q4_0_ref round them: q8_0
/// d = amax / 127, q = roundf(w / d); q4_0 d = max / -8 (max: the weight of
/// largest magnitude, signed), q = min(15, trunc(w / d + 8.5)); d is then
/// stored as f16. `value(t)` loads weight t of the block.
void quantizeBlock(OpBuilder &b, Location loc, const PackedWeight &packed,
                   Value dst, Value n, Value group,
                   llvm::function_ref<Value(OpBuilder &, Location, Value)> value) {
  auto index = [&](OpBuilder &ib, Location il, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, il, v);
  };
  auto f32 = [&](OpBuilder &fb, Location fl, double v) -> Value {
    return arith::ConstantOp::create(fb, fl, fb.getF32FloatAttr(v));
  };
  const bool q8 = packed.format == WeightFormat::Q8_0;
  const int64_t nr = packed.blockSize, bytes = quantBlockBytes(packed.format);
  Value nrValue = index(b, loc, nr);
  Value block = arith::DivUIOp::create(b, loc, n, nrValue);
  Value lane = arith::RemUIOp::create(b, loc, n, nrValue);
  // Byte `offset` of the slab as [block, group, offset / bytes, offset % bytes].
  auto storeByte = [&](OpBuilder &sb, Location sl, Value byte, Value offset) {
    Value bytesValue = index(sb, sl, bytes);
    memref::StoreOp::create(
        sb, sl, byte, dst,
        ValueRange{block, group, arith::DivUIOp::create(sb, sl, offset, bytesValue),
                   arith::RemUIOp::create(sb, sl, offset, bytesValue)});
  };
  // Byte of input t (t % 4 of quad t / 4; q4_0 folds quads q and q + 4).
  auto weightOffset = [&](OpBuilder &ob, Location ol, Value t) -> Value {
    Value quad = arith::DivUIOp::create(ob, ol, t, index(ob, ol, 4));
    if (!q8)
      quad = arith::RemUIOp::create(ob, ol, quad, index(ob, ol, 4));
    Value word = arith::AddIOp::create(
        ob, ol, arith::MulIOp::create(ob, ol, quad, nrValue), lane);
    return arith::AddIOp::create(
        ob, ol, arith::MulIOp::create(ob, ol, word, index(ob, ol, 4)),
        arith::RemUIOp::create(ob, ol, t, index(ob, ol, 4)));
  };

  Value zero = index(b, loc, 0), one = index(b, loc, 1);
  Value zeroF = f32(b, loc, 0.0);
  auto extremes = scf::ForOp::create(
      b, loc, zero, index(b, loc, kQuantBlock), one, ValueRange{zeroF, zeroF},
      [&](OpBuilder &fb, Location fl, Value t, ValueRange carried) {
        Value v = value(fb, fl, t);
        Value magnitude = math::AbsFOp::create(fb, fl, v);
        Value larger = arith::CmpFOp::create(fb, fl, arith::CmpFPredicate::OLT,
                                             carried[0], magnitude);
        scf::YieldOp::create(
            fb, fl,
            ValueRange{arith::SelectOp::create(fb, fl, larger, magnitude, carried[0]),
                       arith::SelectOp::create(fb, fl, larger, v, carried[1])});
      });
  Value d = q8 ? arith::DivFOp::create(b, loc, extremes.getResult(0), f32(b, loc, 127.0))
               : arith::DivFOp::create(b, loc, extremes.getResult(1), f32(b, loc, -8.0));
  Value nonzero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, d, zeroF);
  Value id = arith::SelectOp::create(
      b, loc, nonzero, arith::DivFOp::create(b, loc, f32(b, loc, 1.0), d), zeroF);

  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto quantize = [&](OpBuilder &qb, Location ql, Value t) -> Value {
    Value scaled = arith::MulFOp::create(qb, ql, value(qb, ql, t), id);
    if (q8) {
      Value q = arith::FPToSIOp::create(qb, ql, i32, math::RoundOp::create(qb, ql, scaled));
      q = arith::AddIOp::create(qb, ql, q, arith::ConstantIntOp::create(qb, ql, 128, 32));
      return arith::TruncIOp::create(qb, ql, i8, q);
    }
    Value q = arith::FPToSIOp::create(
        qb, ql, i32, arith::AddFOp::create(qb, ql, scaled, f32(qb, ql, 8.5)));
    q = arith::MinSIOp::create(qb, ql, q, arith::ConstantIntOp::create(qb, ql, 15, 32));
    return arith::TruncIOp::create(qb, ql, i8, q);
  };
  int64_t stored = q8 ? kQuantBlock : kQuantBlock / 2;
  scf::ForOp::create(
      b, loc, zero, index(b, loc, stored), one, ValueRange{},
      [&](OpBuilder &fb, Location fl, Value t, ValueRange) {
        Value byte = quantize(fb, fl, t);
        if (!q8) {
          // Input t + 16 (quad q + 4) is the high nibble.
          Value high = quantize(fb, fl, arith::AddIOp::create(fb, fl, t, index(fb, fl, 16)));
          high = arith::ShLIOp::create(fb, fl, high, arith::ConstantIntOp::create(fb, fl, 4, 8));
          byte = arith::OrIOp::create(fb, fl, byte, high);
        }
        storeByte(fb, fl, byte, weightOffset(fb, fl, t));
        scf::YieldOp::create(fb, fl);
      });
  // The f16 scale, little-endian, after the slab's weights.
  Value half = arith::TruncFOp::create(b, loc, b.getF16Type(), d);
  Value bits = arith::BitcastOp::create(b, loc, b.getI16Type(), half);
  Value scaleOffset = arith::AddIOp::create(
      b, loc, index(b, loc, quantWeightBytes(packed.format) * nr),
      arith::MulIOp::create(b, loc, lane, index(b, loc, 2)));
  storeByte(b, loc, arith::TruncIOp::create(b, loc, i8, bits), scaleOffset);
  Value highByte = arith::ShRUIOp::create(
      b, loc, bits, arith::ConstantIntOp::create(b, loc, 8, 16));
  storeByte(b, loc, arith::TruncIOp::create(b, loc, i8, highByte),
            arith::AddIOp::create(b, loc, scaleOffset, index(b, loc, 1)));
}

/// func.func @attn_pack_impl_<kind>(<sources>..., %packed): one packed
/// buffer of each kind filled from its checkpoint weights (zero padding
/// included), one parallel loop per source in its storage order.
void buildPackFunctions(OpBuilder &b, Location loc, ModuleOp module,
                        const ModelLayout &layout) {
  Type f32 = b.getF32Type();
  std::vector<int64_t> kinds = packKinds(layout);
  int64_t built = 0;
  for (size_t p = 0; p < layout.packed.size(); ++p) {
    if (kinds[p] < built)
      continue; // this kind's function exists
    ++built;
    const PackedWeight &packed = layout.packed[p];
    const bool quantized = isQuantized(packed.format);
    SmallVector<Type> inputs;
    for (const PackedWeight::Source &source : packed.sources)
      inputs.push_back(MemRefType::get(layout.weights[source.weight].shape, f32));
    inputs.push_back(MemRefType::get(packed.shape(), formatElementType(b, packed.format)));

    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    auto func = func::FuncOp::create(
        b, loc, (kPackImpl + "_" + llvm::Twine(kinds[p])).str(),
        b.getFunctionType(inputs, {}));
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    auto index = [&](int64_t value) -> Value {
      return arith::ConstantIndexOp::create(b, loc, value);
    };
    Value zero = index(0), one = index(1);
    Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value dstAll = entry->getArguments().back();
    // Where source `s` goes: the whole buffer, or its expert's slab of a
    // stacked one.
    auto destination = [&](int64_t s) -> Value {
      if (!packed.experts)
        return dstAll;
      auto type = cast<MemRefType>(dstAll.getType());
      int64_t rank = type.getRank();
      SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()),
          strides(rank, 1);
      offsets[0] = s;
      sizes[0] = 1;
      MemRefType slab = memref::SubViewOp::inferRankReducedResultType(
          type.getShape().drop_front(), type, offsets, sizes, strides);
      return memref::SubViewOp::create(b, loc, slab, dstAll, offsets, sizes,
                                       strides);
    };
    // The last block's lanes past the output features are zero.
    auto zeroPadding = [&](Value dst) {
      int64_t padded = packed.blocks() * packed.blockSize;
      int64_t kSteps = quantized ? packed.inFeatures / kQuantBlock : packed.inFeatures;
      if (padded <= packed.outFeatures)
        return;
      scf::ForOp::create(
          b, loc, index(packed.outFeatures), index(padded), one, ValueRange{},
          [&](OpBuilder &nb, Location nl, Value n, ValueRange) {
            scf::ForOp::create(
                nb, nl, zero, index(kSteps), one, ValueRange{},
                [&](OpBuilder &fb, Location fl, Value k, ValueRange) {
                  if (quantized)
                    quantizeBlock(fb, fl, packed, dst, n, k,
                                  [&](OpBuilder &, Location, Value) { return zeroF; });
                  else
                    storePacked(fb, fl, zeroF, dst, n, k, packed.blockSize);
                  scf::YieldOp::create(fb, fl);
                });
            scf::YieldOp::create(nb, nl);
          });
    };
    // The tensor-parallel rank, when a source is sliced by it.
    Value rank;
    if (llvm::any_of(packed.sources, [](const PackedWeight::Source &source) {
          return source.rankDependent();
        }))
      rank = GroupRankOp::create(b, loc, layout.ranks);
    int64_t offset = 0;
    for (size_t s = 0; s < packed.sources.size(); ++s) {
      const PackedWeight::Source &source = packed.sources[s];
      Value src = entry->getArgument(s);
      Value dst = destination(s);
      if (packed.experts)
        offset = 0;
      Value rowOffset = index(offset);
      // This rank's element [row, k] of the source (k for a matrix):
      // shifted to its slice, zero past the valid rows or off rank 0.
      auto loadSlice = [&](OpBuilder &lb, Location ll, Value r, Value k) -> Value {
        auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(lb, ll, v); };
        Value row = sourceRowIndex(lb, ll, source, r);
        if (source.rankRows)
          row = arith::AddIOp::create(
              lb, ll, row, arith::MulIOp::create(lb, ll, rank, c(source.rankRows)));
        if (k && source.rankColumns)
          k = arith::AddIOp::create(
              lb, ll, k, arith::MulIOp::create(lb, ll, rank, c(source.rankColumns)));
        Value valid;
        auto also = [&](Value condition) {
          valid = valid ? arith::AndIOp::create(lb, ll, valid, condition).getResult()
                        : condition;
        };
        if (source.validRows) {
          also(arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::ult, row,
                                     c(source.validRows)));
          row = arith::MinUIOp::create(lb, ll, row, c(source.validRows - 1));
        }
        if (source.firstRankOnly)
          also(arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::eq, rank, c(0)));
        SmallVector<Value, 3> at;
        if (!k)
          at = {row};
        else
          at = source.outIn ? SmallVector<Value, 3>{row, k} : SmallVector<Value, 3>{k, row};
        if (source.expert >= 0) // a slice of a stacked [experts, ...] tensor
          at.insert(at.begin(), c(source.expert));
        Value value = memref::LoadOp::create(lb, ll, src, at);
        if (valid)
          value = arith::SelectOp::create(lb, ll, valid, value, zeroF);
        return value;
      };
      if (packed.vector) {
        scf::ForOp::create(
            b, loc, zero, index(source.rows), one, ValueRange{},
            [&](OpBuilder &fb, Location fl, Value r, ValueRange) {
              Value value = loadSlice(fb, fl, r, Value());
              memref::StoreOp::create(
                  fb, fl, value, dst,
                  ValueRange{arith::AddIOp::create(fb, fl, r, rowOffset)});
              scf::YieldOp::create(fb, fl);
            });
        offset += source.rows;
        continue;
      }
      // One parallel loop over the weight's storage-major dimension (of
      // quantization blocks along k for a quantized [in, out] weight, so
      // that consecutive iterations of the inner loop read adjacent
      // features).
      int64_t kSteps = quantized ? packed.inFeatures / kQuantBlock : packed.inFeatures;
      int64_t outer = source.outIn ? source.rows : kSteps;
      int64_t inner = source.outIn ? kSteps : source.rows;
      scf::ParallelOp::create(
          b, loc, ValueRange{zero}, ValueRange{index(outer)}, ValueRange{one},
          [&](OpBuilder &pb, Location pl, ValueRange ivs) {
            scf::ForOp::create(
                pb, pl, zero, index(inner), one, ValueRange{},
                [&](OpBuilder &fb, Location fl, Value j, ValueRange) {
                  Value i = ivs[0];
                  Value r = source.outIn ? i : j, k = source.outIn ? j : i;
                  Value n = arith::AddIOp::create(fb, fl, r, rowOffset);
                  auto load = [&](OpBuilder &lb, Location ll, Value kk) -> Value {
                    return loadSlice(lb, ll, r, kk);
                  };
                  if (quantized) {
                    Value k0 = arith::MulIOp::create(
                        fb, fl, k, arith::ConstantIndexOp::create(fb, fl, kQuantBlock));
                    quantizeBlock(fb, fl, packed, dst, n, k,
                                  [&](OpBuilder &vb, Location vl, Value t) {
                                    return load(vb, vl, arith::AddIOp::create(vb, vl, k0, t));
                                  });
                  } else {
                    storePacked(fb, fl, load(fb, fl, k), dst, n, k, packed.blockSize);
                  }
                  scf::YieldOp::create(fb, fl);
                });
          });
      offset += source.rows;
      if (packed.experts)
        zeroPadding(dst);
    }
    if (!packed.vector && !packed.experts)
      zeroPadding(dstAll);
    func::ReturnOp::create(b, loc);
  }
}

} // namespace

int64_t mlir::attn::kvCacheRows(const ModelConfig &config, int64_t layer,
                                int64_t maxSeq) {
  int64_t window = config.attention.windowOf(layer);
  return window > 0 && window < maxSeq ? window : maxSeq;
}

int64_t mlir::attn::kvCacheBytes(const ModelConfig &config, int64_t maxSeq,
                                  KvFormat format) {
  int64_t rows = 0;
  for (int64_t layer = 0; layer < config.numLayers; ++layer)
    rows += kvCacheRows(config, layer, maxSeq);
  return 2 * rows * config.kvFeatures() * kvElementBytes(format);
}

Type mlir::attn::kvElementType(MLIRContext *context, KvFormat format) {
  switch (format) {
  case KvFormat::F32:
    return Float32Type::get(context);
  case KvFormat::BF16:
    return BFloat16Type::get(context);
  case KvFormat::F16:
    return Float16Type::get(context);
  }
  llvm_unreachable("unknown KV cache format");
}

const char *mlir::attn::kvFormatName(KvFormat format) {
  switch (format) {
  case KvFormat::F32:
    return "f32";
  case KvFormat::BF16:
    return "bf16";
  case KvFormat::F16:
    return "f16";
  }
  llvm_unreachable("unknown KV cache format");
}

std::optional<KvFormat> mlir::attn::parseKvFormat(llvm::StringRef name) {
  for (KvFormat format : {KvFormat::F32, KvFormat::BF16, KvFormat::F16})
    if (name == kvFormatName(format))
      return format;
  return std::nullopt;
}

llvm::SmallVector<float> mlir::attn::alibiSlopes(int64_t heads) {
  // In f32, as torch computes them: base^k for a float base.
  auto powers = [](int64_t n, int64_t count, int64_t first, int64_t step,
                   llvm::SmallVector<float> &out) {
    float base = static_cast<float>(std::exp2(-8.0 / static_cast<double>(n)));
    for (int64_t k = 0; k < count; ++k)
      out.push_back(static_cast<float>(
          std::pow(static_cast<double>(base), static_cast<double>(first + k * step))));
  };
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  llvm::SmallVector<float> slopes;
  powers(n, n, 1, 1, slopes);
  // The rest: odd powers of the base for 2n heads.
  powers(2 * n, heads - n, 1, 2, slopes);
  return slopes;
}

OwningOpRef<ModuleOp> mlir::attn::buildModelModule(MLIRContext &context,
                                                   const ModelConfig &wholeConfig,
                                                   const ModelBuildOptions &options) {
  context.loadDialect<AttnDialect, arith::ArithDialect,
                      bufferization::BufferizationDialect, func::FuncDialect,
                      linalg::LinalgDialect, math::MathDialect,
                      memref::MemRefDialect, scf::SCFDialect,
                      tensor::TensorDialect>();
  OpBuilder b(&context);
  Location loc = FileLineColLoc::get(&context, "attn-compile", 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);

  // Split over ranks, the IR is one rank's: its heads, KV heads and MLP
  // columns, and collectives where the slices meet.
  ModelLayout layout =
      planModelLayout(wholeConfig, options.blockSize, options.weightFormat,
                      options.tensorParallel, options.headFormat);
  ModelConfig config = rankLocalConfig(wholeConfig, options.tensorParallel);
  // One block function per cache length (layers with and without a
  // sliding window), each compiled once and called by its layers.
  int64_t maxSeq = options.maxSeq;
  llvm::SmallVector<BlockVariant> variants;
  for (int64_t layer = 0; layer < config.numLayers; ++layer) {
    BlockVariant variant = blockVariant(config, layer, maxSeq);
    if (!llvm::is_contained(variants, variant))
      variants.push_back(variant);
  }
  Type cacheElement = kvElementType(&context, options.kvFormat);
  for (BlockVariant variant : variants) {
    SmallVector<Entry> kinds = {Entry::Prefill, Entry::Decode, Entry::Batch};
    if (options.inspect)
      kinds.push_back(Entry::Inspect);
    for (Entry kind : kinds)
      buildBlockFunction(b, loc, *module, blockFunctionName(kind, variant, maxSeq), config,
                         layout, kind == Entry::Decode ? 1 : ShapedType::kDynamic, maxSeq,
                         variant, cacheElement, kind);
  }
  buildEntryFunction(b, loc, *module, kPrefillImpl, Entry::Prefill, config,
                     layout, ShapedType::kDynamic, maxSeq, cacheElement);
  buildEntryFunction(b, loc, *module, kDecodeImpl, Entry::Decode, config,
                     layout, 1, maxSeq, cacheElement);
  buildEntryFunction(b, loc, *module, kDecodeBatchImpl, Entry::Batch, config, layout,
                     ShapedType::kDynamic, maxSeq, cacheElement);
  if (options.inspect) {
    buildEntryFunction(b, loc, *module, kInspectImpl, Entry::Inspect, config,
                       layout, ShapedType::kDynamic, maxSeq, cacheElement);
    buildUnembedFunction(b, loc, *module, config, layout, maxSeq, cacheElement);
  }
  buildPackFunctions(b, loc, *module, layout);
  return module;
}
