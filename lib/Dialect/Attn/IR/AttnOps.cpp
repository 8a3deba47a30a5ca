//===- AttnOps.cpp - attn dialect: verifiers, folders, canonicalizations --===//

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/Attn/IR/AttnEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Shape helpers shared by the verifiers
//===----------------------------------------------------------------------===//

/// Prints a dimension size as IR does: a number or '?'.
static std::string dimToString(int64_t dim) {
  return ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
}

/// Prints a float as the shortest decimal that reads back to it.
static std::string floatToString(const APFloat &value) {
  SmallString<16> text;
  value.toString(text);
  return std::string(text);
}

/// True when two dimension sizes may be equal at run time.
static bool dimsCompatible(int64_t lhs, int64_t rhs) {
  return ShapedType::isDynamic(lhs) || ShapedType::isDynamic(rhs) || lhs == rhs;
}

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static ShapedType shapedType(Value value) {
  return cast<ShapedType>(value.getType());
}

/// Keys and values are read together, so they are held in one precision.
static LogicalResult verifyKeyValueElementTypes(Operation *op, ShapedType key,
                                                ShapedType value) {
  if (key.getElementType() == value.getElementType())
    return success();
  return op->emitOpError() << "requires key and value of one element type, got "
                           << key.getElementType() << " and "
                           << value.getElementType();
}

/// Checks that dimension `dim` of `name` is static: head splits and weight
/// shapes are verified against it.
static LogicalResult verifyStaticDim(Operation *op, StringRef name,
                                     ShapedType type, unsigned dim) {
  if (!type.isDynamicDim(dim))
    return success();
  return op->emitOpError() << "requires a static size for dimension " << dim
                           << " of " << name << ", got " << type;
}

/// Checks that dimension `lhsDim` of `lhsName` can equal dimension `rhsDim`
/// of `rhsName`; the message names both sizes.
static LogicalResult verifyDimsMatch(Operation *op, StringRef lhsName,
                                     ShapedType lhs, unsigned lhsDim,
                                     StringRef rhsName, ShapedType rhs,
                                     unsigned rhsDim) {
  int64_t lhsSize = lhs.getDimSize(lhsDim), rhsSize = rhs.getDimSize(rhsDim);
  if (dimsCompatible(lhsSize, rhsSize))
    return success();
  return op->emitOpError() << "dimension " << lhsDim << " of " << lhsName
                           << " (" << dimToString(lhsSize)
                           << ") does not match dimension " << rhsDim << " of "
                           << rhsName << " (" << dimToString(rhsSize) << ")";
}

/// Checks a strictly positive, finite float attribute.
static LogicalResult verifyPositive(Operation *op, StringRef name,
                                    FloatAttr attr) {
  double value = attr.getValueAsDouble();
  if (value > 0.0 && std::isfinite(value))
    return success();
  return op->emitOpError() << name << " must be positive and finite, got "
                           << floatToString(attr.getValue());
}

/// Checks that an optional attribute, when present, is finite.
static LogicalResult verifyFinite(Operation *op, StringRef name,
                                  FloatAttr attr) {
  if (!attr || std::isfinite(attr.getValueAsDouble()))
    return success();
  return op->emitOpError() << name << " must be finite, got "
                           << floatToString(attr.getValue());
}

/// Checks that a normalized input has a static innermost dimension that
/// matches the per-feature parameter `paramName`.
static LogicalResult verifyNormShapes(Operation *op, Value input, Value param,
                                      StringRef paramName) {
  RankedTensorType inputType = tensorType(input);
  if (inputType.getRank() < 1)
    return op->emitOpError("requires an input of rank 1 or more");
  unsigned inner = inputType.getRank() - 1;
  if (failed(verifyStaticDim(op, "input", inputType, inner)))
    return failure();
  return verifyDimsMatch(op, "input", inputType, inner, paramName,
                         tensorType(param), 0);
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = getTable().getType(), result = getResult().getType();
  if (table.getRank() == 2) {
    if (!table.getElementType().isF32())
      return emitOpError() << "requires an f32 [rows, dim] table (a bf16 or "
                              "quantized table must be packed), got "
                           << table;
    if (failed(verifyStaticDim(*this, "table", table, 1)) ||
        failed(verifyDimsMatch(*this, "result", result, 1, "table", table, 1)))
      return failure();
  } else {
    std::optional<PackedWeightInfo> info = getPackedWeightInfo(table);
    if (!info)
      return emitOpError() << "requires a [rows, dim] table or a packed table "
                              "(as a packed attn.linear weight), got "
                           << table;
    if (!dimsCompatible(result.getDimSize(1), info->inFeatures))
      return emitOpError() << "result has " << dimToString(result.getDimSize(1))
                           << " features but the packed table " << table
                           << " holds rows of " << info->inFeatures;
  }
  if (failed(verifyDimsMatch(*this, "result", result, 0, "ids",
                             getIds().getType(), 0)) ||
      failed(verifyFinite(*this, "scale", getScaleAttr())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// AllGatherOp
//===----------------------------------------------------------------------===//

LogicalResult AllGatherOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (failed(verifyStaticDim(*this, "input", input, 1)) ||
      failed(verifyDimsMatch(*this, "result", result, 0, "input", input, 0)))
    return failure();
  int64_t expected = input.getDimSize(1) * static_cast<int64_t>(getRanks());
  if (!dimsCompatible(result.getDimSize(1), expected))
    return emitOpError() << "result has " << dimToString(result.getDimSize(1))
                         << " features but " << getRanks() << " ranks of "
                         << input.getDimSize(1) << " gather " << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

int64_t LinearOp::getInFeatures() {
  unsigned dim = getLayout() == WeightLayout::InOut ? 0 : 1;
  return getWeight().getType().getDimSize(dim);
}

int64_t LinearOp::getOutFeatures() {
  switch (getLayout()) {
  case WeightLayout::OutIn:
    return getWeight().getType().getDimSize(0);
  case WeightLayout::InOut:
    return getWeight().getType().getDimSize(1);
  case WeightLayout::Packed:
    return getResult().getType().getDimSize(1);
  }
  llvm_unreachable("unknown weight layout");
}

/// Checks a packed weight (PackedWeight.h) against K input features and N
/// output features.
static LogicalResult verifyPackedWeight(Operation *op, StringRef name,
                                        ShapedType weight, int64_t k,
                                        int64_t n) {
  std::optional<PackedWeightInfo> info = getPackedWeightInfo(weight);
  if (!info)
    return op->emitOpError()
           << "requires a static packed " << name
           << " [blocks, in_features, NR] of f32 or bf16, or [blocks, "
              "in_features / 32, NR, 34 (q8_0) or 18 (q4_0)] of i8, got "
           << weight;
  if (!dimsCompatible(k, info->inFeatures))
    return op->emitOpError() << "input has " << dimToString(k)
                             << " features but the packed " << name
                             << " of shape " << weight << " expects "
                             << info->inFeatures;
  int64_t block = info->blockSize;
  if (ShapedType::isDynamic(n))
    return op->emitOpError() << "requires a static number of output features "
                                "with a packed "
                             << name;
  int64_t blocks = (n + block - 1) / block;
  if (info->blocks != blocks)
    return op->emitOpError() << n << " output features in blocks of " << block
                             << " need " << blocks << " blocks, but the packed "
                             << name << " has " << info->blocks;
  return success();
}

LogicalResult LinearOp::verify() {
  RankedTensorType input = getInput().getType(), weight = getWeight().getType(),
                   result = getResult().getType();
  if (failed(verifyDimsMatch(*this, "result", result, 0, "input", input, 0)))
    return failure();
  if (getLayout() == WeightLayout::Packed) {
    if (failed(verifyPackedWeight(*this, "weight", weight, input.getDimSize(1),
                                  result.getDimSize(1))))
      return failure();
    if (Value bias = getBias())
      return verifyDimsMatch(*this, "bias", tensorType(bias), 0, "result",
                             result, 1);
    return success();
  }
  if (!weight.getElementType().isF32())
    return emitOpError() << "requires an f32 weight for layout "
                         << stringifyWeightLayout(getLayout())
                         << " (a bf16 or quantized weight must be packed), got "
                         << weight;
  if (weight.getRank() != 2)
    return emitOpError() << "requires a rank-2 weight for layout "
                         << stringifyWeightLayout(getLayout()) << ", got "
                         << weight;
  if (!weight.hasStaticShape())
    return emitOpError() << "requires a statically shaped weight, got "
                         << weight;
  bool outIn = getLayout() == WeightLayout::OutIn;
  unsigned inDim = outIn ? 1 : 0, outDim = outIn ? 0 : 1;
  StringRef layoutName = stringifyWeightLayout(getLayout());
  if (!dimsCompatible(input.getDimSize(1), weight.getDimSize(inDim)))
    return emitOpError() << "input has " << dimToString(input.getDimSize(1))
                         << " features but the " << layoutName
                         << " weight of shape " << weight
                         << " expects " << weight.getDimSize(inDim)
                         << " (dimension " << inDim << ")";
  if (failed(verifyDimsMatch(*this, "result", result, 1, "weight", weight,
                             outDim)))
    return failure();
  if (Value bias = getBias())
    return verifyDimsMatch(*this, "bias", tensorType(bias), 0, "weight",
                           weight, outDim);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  if (failed(verifyPositive(*this, "epsilon", getEpsilonAttr())))
    return failure();
  return verifyNormShapes(*this, getInput(), getGamma(), "gamma");
}

int64_t RmsNormOp::getGroupSize() {
  if (std::optional<uint64_t> headDim = getHeadDim())
    return static_cast<int64_t>(*headDim);
  return getInput().getType().getShape().back();
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyPositive(*this, "epsilon", getEpsilonAttr())) ||
      failed(verifyFinite(*this, "gain_offset", getGainOffsetAttr())))
    return failure();
  std::optional<uint64_t> headDim = getHeadDim();
  if (!headDim)
    return verifyNormShapes(*this, getInput(), getGamma(), "gamma");
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 1)
    return emitOpError("requires an input of rank 1 or more");
  unsigned inner = input.getRank() - 1;
  if (failed(verifyStaticDim(*this, "input", input, inner)))
    return failure();
  auto d = static_cast<int64_t>(*headDim);
  int64_t features = input.getDimSize(inner);
  if (d <= 0 || features % d != 0)
    return emitOpError() << "head_dim must be positive and divide the "
                            "innermost dimension "
                         << features << ", got " << d;
  int64_t gains = getGamma().getType().getDimSize(0);
  if (gains != d)
    return emitOpError() << "gamma has " << dimToString(gains)
                         << " gains but head_dim is " << d
                         << " (one gain per feature of a head)";
  return success();
}

//===----------------------------------------------------------------------===//
// ResidualAddOp
//===----------------------------------------------------------------------===//

/// True for a constant whose every element is +0.0 or -0.0.
static bool isZeroTensor(Attribute attr) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  return splat && isa<FloatType>(splat.getElementType()) &&
         splat.getSplatValue<APFloat>().isZero();
}

OpFoldResult ResidualAddOp::fold(FoldAdaptor adaptor) {
  // x + 0 = x: the op leaves the sign of a zero result unspecified, so this
  // holds for -0 + +0 too.
  if (isZeroTensor(adaptor.getRhs()))
    return getLhs();
  if (isZeroTensor(adaptor.getLhs()))
    return getRhs();
  return {};
}

//===----------------------------------------------------------------------===//
// Positional encodings
//===----------------------------------------------------------------------===//

int64_t RopeOp::getNumRotaryDims() {
  std::optional<uint64_t> rotaryDims = getRotaryDims();
  return rotaryDims ? static_cast<int64_t>(*rotaryDims)
                    : static_cast<int64_t>(getHeadDim());
}

double RopeOp::getEffectiveAttentionFactor() {
  std::optional<APFloat> factor = getAttentionFactor();
  return factor ? factor->convertToDouble() : 1.0;
}

/// Checks where the inverse frequencies come from: theta (optionally
/// rescaled at run time by dynamic NTK) or an explicit per-pair table.
static LogicalResult verifyRopeFrequencies(RopeOp op, int64_t rotaryDims) {
  FloatAttr theta = op.getThetaAttr();
  DenseElementsAttr table = op.getFrequenciesAttr();
  if (theta && table)
    return op.emitOpError("takes theta or frequencies, not both");
  if (!theta && !table)
    return op.emitOpError("requires theta or frequencies");
  if (theta && failed(verifyPositive(op, "theta", theta)))
    return failure();
  // A table of rotary_dims / 2 finite, non-negative frequencies.
  auto verifyTable = [&](llvm::StringRef name,
                         DenseElementsAttr frequencies) -> LogicalResult {
    if (frequencies.getType().getRank() != 1 ||
        frequencies.getNumElements() != rotaryDims / 2)
      return op.emitOpError()
             << name << " must be a tensor of rotary_dims / 2 = "
             << rotaryDims / 2 << " elements, got " << frequencies.getType();
    for (auto [index, frequency] :
         llvm::enumerate(frequencies.getValues<APFloat>()))
      if ((frequency.isNegative() && !frequency.isZero()) ||
          !frequency.isFinite())
        return op.emitOpError()
               << name << "[" << index
               << "] must be finite and non-negative, got "
               << floatToString(frequency);
    return success();
  };
  if (table && failed(verifyTable("frequencies", table)))
    return failure();
  if (DenseElementsAttr longTable = op.getLongFrequenciesAttr()) {
    if (!table)
      return op.emitOpError("long_frequencies switches from a frequencies "
                            "table: it needs frequencies, not theta");
    if (failed(verifyTable("long_frequencies", longTable)))
      return failure();
    if (op.getLongAfterAttr().getInt() <= 0)
      return op.emitOpError() << "long_frequencies after must be positive, got "
                              << op.getLongAfterAttr().getInt();
  } else if (op.getLongAfterAttr()) {
    return op.emitOpError("takes long_frequencies' after only with "
                          "long_frequencies");
  }

  FloatAttr ntkFactor = op.getNtkFactorAttr();
  IntegerAttr ntkMaxPositions = op.getNtkMaxPositionsAttr();
  if (!ntkFactor && !ntkMaxPositions)
    return success();
  if (!ntkFactor || !ntkMaxPositions)
    return op.emitOpError("dynamic_ntk needs both factor and max_positions");
  if (!theta)
    return op.emitOpError("dynamic_ntk rescales theta: it needs theta, not "
                          "frequencies");
  if (failed(verifyPositive(op, "dynamic_ntk factor", ntkFactor)))
    return failure();
  if (ntkMaxPositions.getInt() <= 0)
    return op.emitOpError() << "dynamic_ntk max_positions must be positive, got "
                            << ntkMaxPositions.getInt();
  if (rotaryDims <= 2)
    return op.emitOpError() << "dynamic_ntk needs rotary_dims > 2 (its "
                               "exponent is r / (r - 2)), got "
                            << rotaryDims;
  return success();
}

/// The attributes of an input norm (attn.gemm's, attn.rope's): a positive
/// epsilon, a finite gain offset.
static LogicalResult verifyInputNormAttrs(Operation *op, FloatAttr epsilon,
                                          FloatAttr gainOffset) {
  if (!epsilon)
    return op->emitOpError("requires norm_epsilon with an input norm");
  if (failed(verifyPositive(op, "norm_epsilon", epsilon)) ||
      failed(verifyFinite(op, "norm_gain_offset", gainOffset)))
    return failure();
  return success();
}

LogicalResult RopeOp::verify() {
  int64_t headDim = getHeadDim();
  if (Value gamma = getNormGamma()) {
    if (failed(verifyInputNormAttrs(*this, getNormEpsilonAttr(),
                                    getNormGainOffsetAttr())))
      return failure();
    int64_t gains = tensorType(gamma).getDimSize(0);
    if (gains != headDim)
      return emitOpError() << "input norm has " << dimToString(gains)
                           << " gains but head_dim is " << headDim
                           << " (the norm is per head)";
  } else if (getNormEpsilonAttr() || getNormGainOffsetAttr()) {
    return emitOpError("takes norm_epsilon and norm_gain_offset only with a "
                       "norm_gamma");
  }
  if (headDim <= 0)
    return emitOpError() << "head_dim must be positive, got " << headDim;
  if (headDim % 2 != 0)
    return emitOpError() << "head_dim must be even to form rotation pairs, got "
                         << headDim;
  int64_t rotaryDims = getNumRotaryDims();
  if (rotaryDims <= 0 || rotaryDims % 2 != 0 || rotaryDims > headDim)
    return emitOpError() << "rotary_dims must be even, positive and at most "
                            "head_dim ("
                         << headDim << "), got " << rotaryDims;
  if (failed(verifyRopeFrequencies(*this, rotaryDims)))
    return failure();
  if (FloatAttr factor = getAttentionFactorAttr();
      factor && failed(verifyPositive(*this, "attention_factor", factor)))
    return failure();
  RankedTensorType input = getInput().getType();
  if (failed(verifyStaticDim(*this, "input", input, 1)))
    return failure();
  if (input.getDimSize(1) % headDim != 0)
    return emitOpError() << "head_dim " << headDim
                         << " does not divide the feature dimension "
                         << input.getDimSize(1);
  return success();
}

LogicalResult SinusoidalPEOp::verify() {
  if (failed(verifyPositive(*this, "base", getBaseAttr())))
    return failure();
  RankedTensorType input = getInput().getType();
  if (failed(verifyStaticDim(*this, "input", input, 1)))
    return failure();
  if (input.getDimSize(1) % 2 != 0)
    return emitOpError() << "requires an even feature dimension for sin/cos "
                            "pairs, got "
                         << input.getDimSize(1);
  if (getLayout() == SinusoidalLayout::Halves && input.getDimSize(1) < 4)
    return emitOpError() << "with halves requires at least 4 features (its "
                            "frequencies divide by D/2 - 1), got "
                         << input.getDimSize(1);
  return success();
}

int64_t RelativePositionBiasOp::getBucketsPerDirection() {
  auto buckets = static_cast<int64_t>(getNumBuckets());
  return getBidirectional() ? buckets / 2 : buckets;
}

LogicalResult RelativePositionBiasOp::verify() {
  auto numBuckets = static_cast<int64_t>(getNumBuckets());
  if (getBidirectional() && (numBuckets < 4 || numBuckets % 2 != 0))
    return emitOpError() << "num_buckets must be even and at least 4 with "
                            "bidirectional (half for each direction), got "
                         << numBuckets;
  if (numBuckets < 2)
    return emitOpError() << "num_buckets must be at least 2, got "
                         << numBuckets;
  // Distances below max_exact have a bucket each; the logarithmic buckets
  // divide by log(max_distance / max_exact), which must be positive.
  int64_t maxExact = getBucketsPerDirection() / 2;
  auto maxDistance = static_cast<int64_t>(getMaxDistance());
  if (maxDistance <= maxExact)
    return emitOpError() << "max_distance must exceed the " << maxExact
                         << " exact distances (num_buckets / "
                         << (getBidirectional() ? 4 : 2) << "), got "
                         << maxDistance;

  RankedTensorType table = getTable().getType(), result = getResult().getType();
  if (failed(verifyStaticDim(*this, "table", table, 0)) ||
      failed(verifyStaticDim(*this, "table", table, 1)) ||
      failed(verifyStaticDim(*this, "result", result, 0)))
    return failure();
  if (table.getDimSize(0) != numBuckets)
    return emitOpError() << "table has " << table.getDimSize(0)
                         << " rows, expected one per bucket (num_buckets = "
                         << numBuckets << ")";
  if (table.getDimSize(1) != result.getDimSize(0))
    return emitOpError() << "result has " << result.getDimSize(0)
                         << " heads but the table has " << table.getDimSize(1)
                         << " columns, one per head";
  int64_t dynamicDims = result.getNumDynamicDims();
  if (static_cast<int64_t>(getSizes().size()) != dynamicDims)
    return emitOpError() << "requires one size per dynamic dimension of the "
                            "result ("
                         << dynamicDims << "), got " << getSizes().size();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp, AttentionProbabilitiesOp
//===----------------------------------------------------------------------===//

/// The two ops score keys alike, so their attributes read and verify alike.
template <typename OpTy> static int64_t numKvHeads(OpTy op) {
  std::optional<uint64_t> kvHeads = op.getKvHeads();
  return static_cast<int64_t>(kvHeads ? *kvHeads : op.getHeads());
}

template <typename OpTy> static int64_t headDim(OpTy op) {
  return op.getQuery().getType().getDimSize(1) / static_cast<int64_t>(op.getHeads());
}

template <typename OpTy> static double effectiveScale(OpTy op) {
  if (std::optional<APFloat> scale = op.getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(headDim(op)));
}

int64_t AttentionOp::getNumKvHeads() { return numKvHeads(*this); }
int64_t AttentionOp::getHeadDim() { return headDim(*this); }
double AttentionOp::getEffectiveScale() { return effectiveScale(*this); }
int64_t AttentionProbabilitiesOp::getNumKvHeads() { return numKvHeads(*this); }
int64_t AttentionProbabilitiesOp::getHeadDim() { return headDim(*this); }
double AttentionProbabilitiesOp::getEffectiveScale() { return effectiveScale(*this); }

/// The window and ALiBi slopes of attention and flash_attention: a window
/// of at least one key on causal attention, one finite slope per head.
static LogicalResult verifyPositionTerms(Operation *op, int64_t heads,
                                         bool causal,
                                         std::optional<uint64_t> window,
                                         std::optional<ArrayRef<float>> alibi) {
  if (window) {
    if (static_cast<int64_t>(*window) < 1)
      return op->emitOpError() << "window must be at least 1, got "
                               << static_cast<int64_t>(*window);
    if (!causal)
      return op->emitOpError("window requires causal attention");
  }
  if (alibi) {
    if (static_cast<int64_t>(alibi->size()) != heads)
      return op->emitOpError() << "alibi has " << alibi->size()
                               << " slopes, expected one per head (" << heads
                               << ")";
    for (auto [h, slope] : llvm::enumerate(*alibi))
      if (!std::isfinite(slope))
        return op->emitOpError() << "alibi slope of head " << h
                                 << " must be finite, got "
                                 << floatToString(APFloat(slope));
  }
  return success();
}

/// What the scores of attention and attention_probabilities need: heads
/// that kv_heads divides, a usable scale, the position terms, query and key
/// features that fit the heads, a bias of [1 or heads, seq_q, seq_kv], and
/// a causal query block no larger than its keys.
/// Attention sinks: one f32 logit per query head, [heads].
static LogicalResult verifySinks(Operation *op, Value sinks, int64_t heads) {
  if (!sinks)
    return success();
  auto type = cast<ShapedType>(sinks.getType());
  if (type.getRank() == 1 && type.getDimSize(0) == heads &&
      type.getElementType().isF32())
    return success();
  return op->emitOpError() << "requires sinks of shape [" << heads
                           << "] (one f32 logit per query head), got " << type;
}

template <typename OpTy> static LogicalResult verifyScoring(OpTy op) {
  auto heads = static_cast<int64_t>(op.getHeads());
  if (heads <= 0)
    return op.emitOpError() << "heads must be positive, got " << heads;
  int64_t kvHeads = op.getNumKvHeads();
  if (kvHeads <= 0)
    return op.emitOpError() << "kv_heads must be positive, got " << kvHeads;
  if (heads % kvHeads != 0)
    return op.emitOpError() << "kv_heads " << kvHeads
                            << " does not divide heads " << heads;
  if (std::optional<APFloat> scale = op.getScale()) {
    if (!scale->isFinite() || scale->isZero())
      return op.emitOpError() << "scale must be finite and non-zero, got "
                              << floatToString(*scale);
  }
  if (failed(verifyPositionTerms(op, heads, op.getCausal(), op.getWindow(),
                                 op.getAlibi())) ||
      failed(verifySinks(op, op.getSinks(), heads)) ||
      (op.getSoftcapAttr() &&
       failed(verifyPositive(op, "softcap", op.getSoftcapAttr()))))
    return failure();

  RankedTensorType query = op.getQuery().getType(), key = op.getKey().getType();
  if (failed(verifyStaticDim(op, "query", query, 1)) ||
      failed(verifyStaticDim(op, "key", key, 1)))
    return failure();
  int64_t qFeatures = query.getDimSize(1);
  if (qFeatures % heads != 0)
    return op.emitOpError() << "heads " << heads
                            << " does not divide the query feature dimension "
                            << qFeatures;
  int64_t headDim = qFeatures / heads;
  if (key.getDimSize(1) != kvHeads * headDim)
    return op.emitOpError() << "key has " << key.getDimSize(1)
                            << " features, expected kv_heads * head_dim = "
                            << kvHeads << " * " << headDim << " = "
                            << kvHeads * headDim;

  if (Value bias = op.getBias()) {
    RankedTensorType biasType = tensorType(bias);
    int64_t biasHeads = biasType.getDimSize(0);
    if (biasHeads != 1 && biasHeads != heads)
      return op.emitOpError() << "bias must have 1 or heads (" << heads
                              << ") rows in dimension 0, got "
                              << dimToString(biasHeads);
    if (failed(verifyDimsMatch(op, "bias", biasType, 1, "query", query, 0)) ||
        failed(verifyDimsMatch(op, "bias", biasType, 2, "key", key, 0)))
      return failure();
  }

  // Without kv_len every key is valid, so a causal query block larger than
  // the key block leaves its first rows with nothing to attend to.
  if (op.getCausal() && !op.getKvLen() && !query.isDynamicDim(0) &&
      !key.isDynamicDim(0) && query.getDimSize(0) > key.getDimSize(0))
    return op.emitOpError() << "causal attention with more queries ("
                            << query.getDimSize(0) << ") than keys ("
                            << key.getDimSize(0)
                            << ") leaves rows with nothing to attend to";
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyScoring(*this)))
    return failure();
  RankedTensorType query = getQuery().getType(), key = getKey().getType(),
                   value = getValue().getType(), result = getResult().getType();
  if (failed(verifyStaticDim(*this, "value", value, 1)))
    return failure();
  int64_t kvFeatures = key.getDimSize(1);
  if (value.getDimSize(1) != kvFeatures)
    return emitOpError() << "value has " << value.getDimSize(1)
                         << " features, expected kv_heads * head_dim = "
                         << getNumKvHeads() << " * " << getHeadDim() << " = "
                         << kvFeatures;
  if (failed(verifyKeyValueElementTypes(*this, key, value)) ||
      failed(verifyDimsMatch(*this, "value", value, 0, "key", key, 0)) ||
      failed(verifyDimsMatch(*this, "result", result, 0, "query", query, 0)) ||
      failed(verifyDimsMatch(*this, "result", result, 1, "query", query, 1)))
    return failure();
  return success();
}

LogicalResult AttentionProbabilitiesOp::verify() {
  if (failed(verifyScoring(*this)))
    return failure();
  RankedTensorType query = getQuery().getType(), key = getKey().getType(),
                   result = getResult().getType();
  int64_t heads = static_cast<int64_t>(getHeads());
  if (!dimsCompatible(result.getDimSize(0), heads))
    return emitOpError() << "result dimension 0 is "
                         << dimToString(result.getDimSize(0))
                         << ", expected the heads (" << heads << ")";
  if (failed(verifyDimsMatch(*this, "result", result, 1, "query", query, 0)) ||
      failed(verifyDimsMatch(*this, "result", result, 2, "key", key, 0)))
    return failure();
  return success();
}

namespace {
/// Drops a kv_len operand that is a constant equal to the static key count:
/// every key is valid, which is what no kv_len means.
struct DropFullKvLen : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value kvLen = op.getKvLen();
    if (!kvLen)
      return rewriter.notifyMatchFailure(op, "no kv_len");
    APInt length;
    if (!matchPattern(kvLen, m_ConstantInt(&length)))
      return rewriter.notifyMatchFailure(op, "kv_len is not a constant");
    int64_t keys = op.getKey().getType().getDimSize(0);
    if (ShapedType::isDynamic(keys) || length.getSExtValue() != keys)
      return rewriter.notifyMatchFailure(op, "kv_len masks some keys");
    rewriter.modifyOpInPlace(op, [&] { op.getKvLenMutable().clear(); });
    return success();
  }
};
} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropFullKvLen>(context);
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

LogicalResult KvCacheAppendOp::verify() {
  RankedTensorType update = getUpdate().getType(), cache = getCache().getType();
  if (failed(verifyStaticDim(*this, "cache", cache, 1)) ||
      failed(verifyDimsMatch(*this, "update", update, 1, "cache", cache, 1)))
    return failure();
  if (!getRing() && !update.isDynamicDim(0) && !cache.isDynamicDim(0) &&
      update.getDimSize(0) > cache.getDimSize(0))
    return emitOpError() << "update of " << update.getDimSize(0)
                         << " rows does not fit a cache of "
                         << cache.getDimSize(0) << " rows";
  return success();
}

OpFoldResult KvCacheAppendOp::fold(FoldAdaptor) {
  // Appending no rows leaves the cache as it was.
  if (getUpdate().getType().getDimSize(0) == 0)
    return getCache();
  return {};
}

LogicalResult KvCacheReadOp::verify() {
  RankedTensorType cache = getCache().getType(), result = getResult().getType();
  if (!result.isDynamicDim(0))
    return emitOpError() << "requires a dynamic row count in the result (its "
                            "length is a run-time value), got "
                         << result;
  if (failed(verifyStaticDim(*this, "cache", cache, 1)))
    return failure();
  if (result.getElementType() != cache.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " differs from the cache's " << cache.getElementType();
  return verifyDimsMatch(*this, "result", result, 1, "cache", cache, 1);
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  if (getInput().getType().getRank() < 1)
    return emitOpError("requires an input of rank 1 or more");
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

/// Checks the rank of an operand of a code generation op.
static LogicalResult verifyRank(Operation *op, StringRef name, ShapedType type,
                                int64_t rank) {
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << "requires " << name << " of rank " << rank
                           << ", got " << type;
}

/// Reads every memref operand, writes the init: the memory effects of a
/// destination-style codegen op after bufferization (none on tensors).
static void getDstOpEffects(
    Operation *op, OpOperand &init,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (!isa<MemRefType>(init.get().getType()))
    return;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
  }
  effects.emplace_back(MemoryEffects::Write::get(), &init,
                       SideEffects::DefaultResource::get());
}

MutableOperandRange GemmOp::getDpsInitsMutable() { return getInitMutable(); }

/// An input norm (of attn.gemm, or attn.rope's RMS-only one), written as
/// the op it replaces:
///   rms_norm(%g : type) epsilon(e) [gain_offset(c)]
///   layer_norm(%g, %b : type, type) epsilon(e)
/// or nothing. A layer norm is the one with a beta.
static ParseResult
parseNormClause(OpAsmParser &parser, bool allowLayerNorm,
                std::optional<OpAsmParser::UnresolvedOperand> &gamma,
                Type &gammaType,
                std::optional<OpAsmParser::UnresolvedOperand> &beta,
                Type &betaType, FloatAttr &epsilon, FloatAttr &gainOffset) {
  bool layer =
      allowLayerNorm && succeeded(parser.parseOptionalKeyword("layer_norm"));
  if (!layer && failed(parser.parseOptionalKeyword("rms_norm")))
    return success();
  Type f32 = parser.getBuilder().getF32Type();
  OpAsmParser::UnresolvedOperand gammaOperand, betaOperand;
  if (parser.parseLParen() || parser.parseOperand(gammaOperand))
    return failure();
  gamma = gammaOperand;
  if (layer) {
    if (parser.parseComma() || parser.parseOperand(betaOperand))
      return failure();
    beta = betaOperand;
  }
  if (parser.parseColonType(gammaType))
    return failure();
  if (layer && (parser.parseComma() || parser.parseType(betaType)))
    return failure();
  if (parser.parseRParen() || parser.parseKeyword("epsilon") ||
      parser.parseLParen() || parser.parseAttribute(epsilon, f32) ||
      parser.parseRParen())
    return failure();
  if (!layer && succeeded(parser.parseOptionalKeyword("gain_offset"))) {
    if (parser.parseLParen() || parser.parseAttribute(gainOffset, f32) ||
        parser.parseRParen())
      return failure();
  }
  return success();
}

static ParseResult
parseInputNorm(OpAsmParser &parser,
               std::optional<OpAsmParser::UnresolvedOperand> &gamma,
               Type &gammaType,
               std::optional<OpAsmParser::UnresolvedOperand> &beta,
               Type &betaType, FloatAttr &epsilon, FloatAttr &gainOffset) {
  return parseNormClause(parser, /*allowLayerNorm=*/true, gamma, gammaType,
                         beta, betaType, epsilon, gainOffset);
}

static ParseResult
parseRmsInputNorm(OpAsmParser &parser,
                  std::optional<OpAsmParser::UnresolvedOperand> &gamma,
                  Type &gammaType, FloatAttr &epsilon, FloatAttr &gainOffset) {
  std::optional<OpAsmParser::UnresolvedOperand> noBeta;
  Type noBetaType;
  return parseNormClause(parser, /*allowLayerNorm=*/false, gamma, gammaType,
                         noBeta, noBetaType, epsilon, gainOffset);
}

static void printInputNorm(OpAsmPrinter &p, Operation *, Value gamma,
                           Type gammaType, Value beta, Type betaType,
                           FloatAttr epsilon, FloatAttr gainOffset) {
  // The format puts no space before the directive: none without a norm.
  if (!gamma)
    return;
  p << (beta ? " layer_norm(" : " rms_norm(") << gamma;
  if (beta)
    p << ", " << beta;
  p << " : " << gammaType;
  if (beta)
    p << ", " << betaType;
  p << ") epsilon(";
  if (epsilon)
    p.printAttributeWithoutType(epsilon);
  p << ")";
  if (gainOffset) {
    p << " gain_offset(";
    p.printAttributeWithoutType(gainOffset);
    p << ")";
  }
}

static void printRmsInputNorm(OpAsmPrinter &p, Operation *op, Value gamma,
                              Type gammaType, FloatAttr epsilon,
                              FloatAttr gainOffset) {
  printInputNorm(p, op, gamma, gammaType, Value(), Type(), epsilon,
                 gainOffset);
}

LogicalResult GemmOp::verify() {
  ShapedType input = shapedType(getInput()), weight = shapedType(getWeight()),
             init = shapedType(getInit());
  if (failed(verifyRank(*this, "input", input, 2)) ||
      failed(verifyRank(*this, "init", init, 2)) ||
      failed(verifyDimsMatch(*this, "init", init, 0, "input", input, 0)) ||
      failed(verifyPackedWeight(*this, "weight", weight, input.getDimSize(1),
                                init.getDimSize(1))))
    return failure();
  bool onTensors = isa<RankedTensorType>(init);
  for (Value operand : getOperation()->getOperands()) {
    if (isa<RankedTensorType>(operand.getType()) != onTensors)
      return emitOpError("requires all shaped operands to be tensors, or all "
                         "to be memrefs");
  }
  if (onTensors != (getNumResults() == 1))
    return emitOpError("has one result on tensors and none on memrefs");
  if (onTensors && getResult()[0].getType() != init)
    return emitOpError() << "result type " << getResult()[0].getType()
                         << " differs from the init type " << init;

  if (isGatedEpilogue(getEpilogue()) != static_cast<bool>(getWeight2()))
    return emitOpError("takes a second weight if and only if its epilogue is "
                       "gated (swiglu, geglu_tanh, geglu_erf, clamped_swiglu)");
  if (getBias2() && !getWeight2())
    return emitOpError("takes a bias2 only with a second weight");
  bool clamped = getEpilogue() == GemmEpilogue::ClampedSwiglu;
  if (clamped != (getAlphaAttr() && getLimitAttr()) ||
      (!clamped && (getAlphaAttr() || getLimitAttr())))
    return emitOpError("takes alpha and limit if and only if its epilogue is "
                       "clamped_swiglu");
  if (clamped && (failed(verifyPositive(*this, "alpha", getAlphaAttr())) ||
                  failed(verifyPositive(*this, "limit", getLimitAttr()))))
    return failure();
  if (Value weight2 = getWeight2()) {
    if (weight2.getType() != weight)
      return emitOpError() << "requires both weights of one type, got "
                           << weight << " and " << weight2.getType();
  }
  if (Value gamma = getNormGamma()) {
    if (failed(verifyInputNormAttrs(*this, getNormEpsilonAttr(),
                                    getNormGainOffsetAttr())))
      return failure();
    if (getNormBeta() && getNormGainOffset())
      return emitOpError("takes a norm_gain_offset only with an RMS norm (no "
                         "norm_beta)");
    for (auto [name, param] : {std::pair<StringRef, Value>{"norm_gamma", gamma},
                               {"norm_beta", getNormBeta()}}) {
      if (!param)
        continue;
      ShapedType type = shapedType(param);
      if (failed(verifyRank(*this, name, type, 1)) ||
          failed(verifyDimsMatch(*this, name, type, 0, "input", input, 1)))
        return failure();
    }
  } else if (getNormBeta() || getNormEpsilon() || getNormGainOffset()) {
    return emitOpError("takes norm_beta, norm_epsilon and norm_gain_offset "
                       "only with a norm_gamma");
  }
  for (auto [name, bias] : {std::pair<StringRef, Value>{"bias", getBias()},
                             {"bias2", getBias2()}}) {
    if (bias && (failed(verifyRank(*this, name, shapedType(bias), 1)) ||
                 failed(verifyDimsMatch(*this, name, shapedType(bias), 0, "init",
                                        init, 1))))
      return failure();
  }
  if (Value scale = getRowScale()) {
    if (failed(verifyRank(*this, "row_scale", shapedType(scale), 1)) ||
        failed(verifyDimsMatch(*this, "row_scale", shapedType(scale), 0,
                               "init", init, 0)))
      return failure();
  }
  if (Value residual = getResidual()) {
    ShapedType residualType = shapedType(residual);
    if (failed(verifyRank(*this, "residual", residualType, 2)) ||
        failed(verifyDimsMatch(*this, "residual", residualType, 0, "init",
                               init, 0)) ||
        failed(verifyDimsMatch(*this, "residual", residualType, 1, "init",
                               init, 1)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// FlashAttentionOp
//===----------------------------------------------------------------------===//

MutableOperandRange FlashAttentionOp::getDpsInitsMutable() {
  return getInitMutable();
}

void FlashAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getDstOpEffects(getOperation(), getInitMutable(), effects);
}

void GemmOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getDstOpEffects(getOperation(), getInitMutable(), effects);
}

LogicalResult FlashAttentionOp::verify() {
  ShapedType query = shapedType(getQuery()), key = shapedType(getKey()),
             value = shapedType(getValue()), init = shapedType(getInit());
  for (auto [name, type] : {std::pair<StringRef, ShapedType>{"query", query},
                            {"key", key},
                            {"value", value},
                            {"init", init}})
    if (failed(verifyRank(*this, name, type, 2)) ||
        failed(verifyStaticDim(*this, name, type, 1)))
      return failure();
  auto heads = static_cast<int64_t>(getHeads()),
       kvHeads = static_cast<int64_t>(getKvHeads());
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return emitOpError() << "requires kv_heads (" << kvHeads
                         << ") to divide heads (" << heads << ")";
  int64_t features = query.getDimSize(1);
  if (features % heads != 0)
    return emitOpError() << "heads " << heads
                         << " does not divide the query features " << features;
  int64_t headDim = features / heads;
  if (key.getDimSize(1) != kvHeads * headDim ||
      value.getDimSize(1) != kvHeads * headDim)
    return emitOpError() << "requires key and value of kv_heads * head_dim = "
                         << kvHeads * headDim << " features";
  if (failed(verifyKeyValueElementTypes(*this, key, value)) ||
      failed(verifyDimsMatch(*this, "value", value, 0, "key", key, 0)) ||
      failed(verifyDimsMatch(*this, "init", init, 0, "query", query, 0)) ||
      failed(verifyDimsMatch(*this, "init", init, 1, "query", query, 1)))
    return failure();
  bool onTensors = isa<RankedTensorType>(init);
  for (Value operand : getOperation()->getOperands())
    if (isa<RankedTensorType>(operand.getType()) != onTensors)
      return emitOpError("requires all operands to be tensors, or all to be "
                         "memrefs");
  if (onTensors != (getNumResults() == 1))
    return emitOpError("has one result on tensors and none on memrefs");
  if ((getSoftcapAttr() &&
       failed(verifyPositive(*this, "softcap", getSoftcapAttr()))) ||
      failed(verifySinks(*this, getSinks(), heads)))
    return failure();
  return verifyPositionTerms(*this, heads, getCausal(), getWindow(), getAlibi());
}

LogicalResult SoftcapOp::verify() {
  return verifyPositive(*this, "cap", getCapAttr());
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// Checks that `type` has the static shape `expected`; the message names
/// the operand and what each dimension is.
static LogicalResult verifyExactShape(Operation *op, StringRef name,
                                      ShapedType type,
                                      ArrayRef<int64_t> expected,
                                      StringRef meaning) {
  if (type.hasStaticShape() && type.getShape() == expected)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << "requires " << name << " of shape [";
  llvm::interleave(expected, diag, [&](int64_t d) { diag << dimToString(d); }, ", ");
  return diag << "] (" << meaning << "), got " << type;
}

LogicalResult MoeRouterOp::verify() {
  RankedTensorType input = getInput().getType(), weight = getWeight().getType();
  if (failed(verifyStaticDim(*this, "weight", weight, 0)) ||
      failed(verifyStaticDim(*this, "input", input, 1)) ||
      failed(verifyDimsMatch(*this, "weight", weight, 1, "input", input, 1)))
    return failure();
  int64_t experts = weight.getDimSize(0);
  if (Value bias = getBias())
    if (failed(verifyDimsMatch(*this, "bias", tensorType(bias), 0, "weight",
                               weight, 0)))
      return failure();
  int64_t topK = static_cast<int64_t>(getTopK());
  if (topK < 1 || topK > experts)
    return emitOpError() << "top_k must be in [1, " << experts
                         << "] (the number of experts), got " << topK;
  if (getNormalize() && getScoring() == MoeScoring::TopKSoftmax)
    return emitOpError("normalize applies to softmax_top_k: top_k_softmax's "
                       "weights already sum to 1");
  for (auto [name, result] :
       {std::pair<StringRef, Value>{"weights", getWeights()},
        {"experts", getExperts()}}) {
    auto type = tensorType(result);
    if (failed(verifyDimsMatch(*this, name, type, 0, "input", input, 0)))
      return failure();
    if (type.getDimSize(1) != topK)
      return emitOpError() << "requires " << name << " with top_k (" << topK
                           << ") columns, got " << type;
  }
  return success();
}

/// One expert's slab of a stacked packed weight: the type without its
/// leading (expert) dimension.
static RankedTensorType expertSlab(RankedTensorType stacked) {
  return RankedTensorType::get(stacked.getShape().drop_front(),
                               stacked.getElementType());
}

bool MoeExpertsOp::hasPackedExperts() {
  RankedTensorType gate = cast<RankedTensorType>(getGate().getType());
  return gate.getRank() != 3 || !gate.getElementType().isF32();
}

int64_t MoeExpertsOp::getFfnSize() {
  if (!hasPackedExperts())
    return cast<ShapedType>(getGate().getType()).getDimSize(1);
  std::optional<PackedWeightInfo> down = getPackedWeightInfo(
      expertSlab(cast<RankedTensorType>(getDown().getType())));
  return down ? down->inFeatures : ShapedType::kDynamic;
}

LogicalResult MoeExpertsOp::verify() {
  RankedTensorType input = getInput().getType(),
                   gate = cast<RankedTensorType>(getGate().getType());
  if (failed(verifyStaticDim(*this, "input", input, 1)) ||
      failed(verifyStaticDim(*this, "gate", gate, 0)) ||
      failed(verifyStaticDim(*this, "gate", gate, 1)))
    return failure();
  int64_t experts = gate.getDimSize(0), hidden = input.getDimSize(1);
  int64_t ffn = getFfnSize();
  if (hasPackedExperts()) {
    auto up = cast<RankedTensorType>(getUp().getType()),
         down = cast<RankedTensorType>(getDown().getType());
    for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"gate", gate},
                              {"up", up},
                              {"down", down}})
      if (type.getRank() < 4 || type.getDimSize(0) != experts)
        return emitOpError() << "requires packed " << name << " of " << experts
                             << " expert slabs [experts, <packed shape>], got "
                             << type;
    if (ShapedType::isDynamic(ffn))
      return verifyPackedWeight(*this, "down expert", expertSlab(down), ffn, hidden);
    if (failed(verifyPackedWeight(*this, "gate expert", expertSlab(gate), hidden, ffn)) ||
        failed(verifyPackedWeight(*this, "up expert", expertSlab(up), hidden, ffn)) ||
        failed(verifyPackedWeight(*this, "down expert", expertSlab(down), ffn, hidden)))
      return failure();
  } else if (failed(verifyExactShape(*this, "gate", gate, {experts, ffn, hidden},
                                     "experts, ffn, hidden")) ||
             failed(verifyExactShape(*this, "up", shapedType(getUp()),
                                     {experts, ffn, hidden}, "experts, ffn, hidden")) ||
             failed(verifyExactShape(*this, "down", shapedType(getDown()),
                                     {experts, hidden, ffn}, "experts, hidden, ffn"))) {
    return failure();
  }

  RankedTensorType weights = getWeights().getType(),
                   chosen = getExperts().getType();
  if (failed(verifyStaticDim(*this, "weights", weights, 1)) ||
      failed(verifyDimsMatch(*this, "weights", weights, 0, "input", input, 0)) ||
      failed(verifyDimsMatch(*this, "experts", chosen, 0, "input", input, 0)) ||
      failed(verifyDimsMatch(*this, "experts", chosen, 1, "weights", weights, 1)) ||
      failed(verifyDimsMatch(*this, "result", getResult().getType(), 0, "input",
                             input, 0)) ||
      failed(verifyDimsMatch(*this, "result", getResult().getType(), 1, "input",
                             input, 1)))
    return failure();
  if (weights.getDimSize(1) < 1)
    return emitOpError() << "requires at least one expert per token, got "
                         << weights;

  Value gateBias = getGateBias(), upBias = getUpBias(), downBias = getDownBias();
  if (gateBias || upBias || downBias) {
    if (!gateBias || !upBias || !downBias)
      return emitOpError("requires the gate, up and down biases together");
    if (failed(verifyExactShape(*this, "gate_bias", shapedType(gateBias),
                                {experts, ffn}, "experts, ffn")) ||
        failed(verifyExactShape(*this, "up_bias", shapedType(upBias),
                                {experts, ffn}, "experts, ffn")) ||
        failed(verifyExactShape(*this, "down_bias", shapedType(downBias),
                                {experts, hidden}, "experts, hidden")))
      return failure();
  }

  if (Value shared = getShared()) {
    if (failed(verifyDimsMatch(*this, "shared", shapedType(shared), 0, "input",
                               input, 0)) ||
        failed(verifyDimsMatch(*this, "shared", shapedType(shared), 1, "input",
                               input, 1)))
      return failure();
  }
  if (Value sharedGate = getSharedGate()) {
    if (!getShared())
      return emitOpError("shared_gate requires the shared expert's output");
    auto gateType = cast<RankedTensorType>(sharedGate.getType());
    if (failed(verifyDimsMatch(*this, "shared_gate", gateType, 0, "input", input, 0)))
      return failure();
    if (gateType.getDimSize(1) != 1)
      return emitOpError() << "requires shared_gate of one logit per token "
                              "[tokens, 1], got "
                           << gateType;
  }

  bool clamped = getActivation() == MoeActivation::ClampedSwiglu;
  if (!clamped) {
    if (getAlphaAttr() || getLimitAttr())
      return emitOpError("alpha and limit belong to clamped_swiglu");
    return success();
  }
  if (!getAlphaAttr() || !getLimitAttr())
    return emitOpError("clamped_swiglu requires alpha and limit");
  if (failed(verifyPositive(*this, "alpha", getAlphaAttr())))
    return failure();
  return verifyPositive(*this, "limit", getLimitAttr());
}

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"
