//===- RopeScaling.cpp - RoPE theta and frequency scaling of a config -----===//
//
// Reads Hugging Face's RoPE parameters (rope_theta, rope_scaling or
// rope_parameters) into the family-neutral PositionSpec, and resolves a
// static scaling into the per-pair inverse frequencies attn.rope takes. The
// formulas are those of transformers' modeling_rope_utils.py
// (ROPE_INIT_FUNCTIONS), computed here in f64 where transformers uses f32.
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/ModelConfig.h"

#include "ConfigReader.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// Frequencies
//===----------------------------------------------------------------------===//

/// HF's yarn get_mscale: 0.1 m ln(s) + 1, and 1 for s <= 1.
static double yarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

double mlir::attn::ropeAttentionFactor(const RopeScaling &scaling) {
  if (scaling.kind == RopeScalingKind::LongRope) {
    if (scaling.attentionFactor)
      return *scaling.attentionFactor;
    if (scaling.factor <= 1.0)
      return 1.0;
    return std::sqrt(1.0 + std::log(scaling.factor) /
                               std::log(static_cast<double>(
                                   scaling.originalMaxPositions)));
  }
  if (scaling.kind != RopeScalingKind::Yarn)
    return 1.0;
  if (scaling.attentionFactor)
    return *scaling.attentionFactor;
  // transformers tests truthiness: a zero mscale means "not given".
  if (scaling.mscale != 0.0 && scaling.mscaleAllDim != 0.0)
    return yarnMscale(scaling.factor, scaling.mscale) /
           yarnMscale(scaling.factor, scaling.mscaleAllDim);
  return yarnMscale(scaling.factor, 1.0);
}

/// The pair index (a fraction of a pair) whose wavelength turns
/// `rotations` times over `positions`: yarn's find_correction_dim.
static double yarnCorrectionDim(double rotations, int64_t dims, double theta,
                                int64_t positions) {
  return static_cast<double>(dims) *
         std::log(static_cast<double>(positions) / (rotations * 2.0 * M_PI)) /
         (2.0 * std::log(theta));
}

llvm::SmallVector<double>
mlir::attn::ropeInverseFrequencies(const PositionSpec &positions,
                                   int64_t rotaryDims, bool longTable) {
  const RopeScaling &scaling = positions.scaling;
  assert(scaling.kind != RopeScalingKind::Dynamic &&
         "dynamic NTK frequencies depend on the call's positions");
  int64_t pairs = rotaryDims / 2;
  llvm::SmallVector<double> frequencies(pairs);
  for (int64_t i = 0; i < pairs; ++i)
    frequencies[i] =
        std::pow(positions.theta, -2.0 * static_cast<double>(i) /
                                      static_cast<double>(rotaryDims));
  double factor = scaling.factor;
  switch (scaling.kind) {
  case RopeScalingKind::None:
  case RopeScalingKind::Dynamic:
    break;
  case RopeScalingKind::Linear:
    for (double &f : frequencies)
      f /= factor;
    break;
  case RopeScalingKind::Yarn: {
    // Pairs below `low` keep f_i (extrapolation), pairs above `high` take
    // f_i / factor (interpolation), a linear ramp between.
    double low =
        yarnCorrectionDim(scaling.betaFast, rotaryDims, positions.theta,
                          scaling.originalMaxPositions);
    double high =
        yarnCorrectionDim(scaling.betaSlow, rotaryDims, positions.theta,
                          scaling.originalMaxPositions);
    if (scaling.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(rotaryDims - 1));
    if (low == high)
      high += 0.001; // transformers' guard against a zero-width ramp
    for (int64_t i = 0; i < pairs; ++i) {
      double ramp =
          std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      double f = frequencies[i];
      frequencies[i] = f / factor * ramp + f * (1.0 - ramp);
    }
    break;
  }
  case RopeScalingKind::LongRope: {
    const std::vector<double> &divisors =
        longTable ? scaling.longFactor : scaling.shortFactor;
    for (int64_t i = 0; i < pairs; ++i)
      frequencies[i] /= divisors[i];
    break;
  }
  case RopeScalingKind::Llama3: {
    auto original = static_cast<double>(scaling.originalMaxPositions);
    double lowFreqWavelength = original / scaling.lowFreqFactor;
    double highFreqWavelength = original / scaling.highFreqFactor;
    for (double &f : frequencies) {
      double wavelength = 2.0 * M_PI / f;
      if (wavelength > lowFreqWavelength) {
        f /= factor;
      } else if (wavelength >= highFreqWavelength) {
        double smooth = (original / wavelength - scaling.lowFreqFactor) /
                        (scaling.highFreqFactor - scaling.lowFreqFactor);
        f = (1.0 - smooth) * f / factor + smooth * f;
      }
    }
    break;
  }
  }
  return frequencies;
}

//===----------------------------------------------------------------------===//
// Reading config.json
//===----------------------------------------------------------------------===//

namespace {

/// A number as config.json would write it.
std::string text(double value) {
  return ConfigReader::render(JsonValue(value));
}

/// The rope_type names transformers knows and what we make of them.
struct RopeTypeEntry {
  const char *name;
  std::optional<RopeScalingKind> kind; ///< nullopt: known, not supported
};

const RopeTypeEntry ropeTypes[] = {
    {"default", RopeScalingKind::None},
    {"linear", RopeScalingKind::Linear},
    {"dynamic", RopeScalingKind::Dynamic},
    {"yarn", RopeScalingKind::Yarn},
    {"llama3", RopeScalingKind::Llama3},
    {"longrope", RopeScalingKind::LongRope},
    {"su", std::nullopt}, // Phi-3's first name for longrope
};

/// Reads a required positive number of the scaling object.
double requiredPositive(ConfigReader &params, llvm::StringRef key,
                        llvm::StringRef ropeType) {
  if (!params.has(key)) {
    params.fail("missing key '" + params.name(key) + "' (rope_type '" +
                ropeType + "' needs it)");
    return 1.0;
  }
  return params.positiveNumber(key, 1.0);
}

/// The rope_type of the scaling object: `rope_type`, else `type`, else
/// "default". transformers v4 lets `type` overwrite `rope_type` and v5 the
/// reverse, so both present and different is an error.
std::string readRopeType(ConfigReader &params) {
  std::string ropeType = params.string("rope_type", "");
  std::string oldType = params.string("type", "");
  if (!ropeType.empty() && !oldType.empty() && ropeType != oldType)
    params.fail("keys '" + params.name("rope_type") + "' (" +
                ConfigReader::quote(ropeType) + ") and '" +
                params.name("type") + "' (" + ConfigReader::quote(oldType) +
                ") disagree");
  if (ropeType.empty())
    ropeType = oldType.empty() ? "default" : oldType;
  return ropeType;
}

/// The pre-training length: the scaling object's
/// original_max_position_embeddings, the top-level one (Phi-3 keeps it
/// there), or max_position_embeddings. transformers v5 prefers the
/// top-level key and v4 the nested one, so two different values are an
/// error.
int64_t readOriginalMaxPositions(ConfigReader &reader, ConfigReader &params,
                                 int64_t maxPositions) {
  const char *key = "original_max_position_embeddings";
  int64_t nested = params.positive(key, 0, kMaxPositions);
  int64_t topLevel = reader.positive(key, 0, kMaxPositions);
  if (nested && topLevel && nested != topLevel)
    reader.fail("keys '" + params.name(key) + "' (" + llvm::Twine(nested) +
                ") and '" + key + "' (" + llvm::Twine(topLevel) + ") disagree");
  if (nested)
    return nested;
  return topLevel ? topLevel : maxPositions;
}

void readYarn(ConfigReader &reader, ConfigReader &params, RopeScaling &scaling,
              double theta) {
  // transformers reads `get("beta_fast") or 32`: 0 means the default too.
  for (auto [key, value] : {std::pair{"beta_fast", &scaling.betaFast},
                            std::pair{"beta_slow", &scaling.betaSlow}}) {
    std::optional<double> beta = params.number(key);
    if (beta && *beta < 0.0)
      params.fail("key '" + params.name(key) + "' must not be negative, got " +
                  text(*beta));
    else if (beta && *beta != 0.0)
      *value = *beta;
  }
  if (scaling.betaFast < scaling.betaSlow)
    params.fail("key '" + params.name("beta_fast") + "' (" +
                text(scaling.betaFast) + ") must be at least '" +
                params.name("beta_slow") + "' (" + text(scaling.betaSlow) +
                ")");
  scaling.truncate = params.boolean("truncate", true);
  if (params.has("attention_factor"))
    scaling.attentionFactor = params.positiveNumber("attention_factor", 1.0);
  for (auto [key, value] :
       {std::pair{"mscale", &scaling.mscale},
        std::pair{"mscale_all_dim", &scaling.mscaleAllDim}}) {
    *value = params.number(key).value_or(0.0);
    if (*value < 0.0)
      params.fail("key '" + params.name(key) + "' must not be negative, got " +
                  text(*value));
  }
  double attentionFactor = ropeAttentionFactor(scaling);
  if (!(attentionFactor > 0.0) || !std::isfinite(attentionFactor))
    params.fail("keys '" + params.name("mscale") + "' and '" +
                params.name("mscale_all_dim") +
                "' give a non-positive attention factor");
  // find_correction_dim divides by ln(theta).
  if (!(theta > 1.0))
    reader.fail("rope_theta (" + text(theta) +
                ") must be greater than 1 for yarn scaling");
}

void readLlama3(ConfigReader &params, RopeScaling &scaling) {
  scaling.lowFreqFactor = requiredPositive(params, "low_freq_factor", "llama3");
  scaling.highFreqFactor =
      requiredPositive(params, "high_freq_factor", "llama3");
  if (scaling.highFreqFactor <= scaling.lowFreqFactor)
    params.fail("key '" + params.name("high_freq_factor") + "' (" +
                text(scaling.highFreqFactor) + ") must be greater than '" +
                params.name("low_freq_factor") + "' (" +
                text(scaling.lowFreqFactor) + ")");
}

/// Phi-3's longrope, as transformers 5 computes it: the factor is the
/// scaling's own when given, else max_position_embeddings over the
/// pre-training length (transformers 4 took that ratio whenever the config
/// had original_max_position_embeddings); it only sets the default
/// attention factor.
void readLongRope(ConfigReader &reader, ConfigReader &params,
                  ModelConfig &config) {
  RopeScaling &scaling = config.positions.scaling;
  // Phi3Config has its own original_max_position_embeddings, default 4096.
  scaling.originalMaxPositions = readOriginalMaxPositions(
      reader, params, config.architecture == "phi3" ? 4096 : config.maxPositions);
  int64_t pairs = config.positions.rotaryDimsOf(config.headDim) / 2;
  scaling.shortFactor = readLongRopeFactors(params, "short_factor", pairs);
  scaling.longFactor = readLongRopeFactors(params, "long_factor", pairs);
  scaling.factor = params.has("factor")
                       ? params.positiveNumber("factor", 1.0)
                       : static_cast<double>(config.maxPositions) /
                             static_cast<double>(scaling.originalMaxPositions);
  if (params.has("attention_factor"))
    scaling.attentionFactor = params.positiveNumber("attention_factor", 1.0);
  if (scaling.originalMaxPositions < 2 && !scaling.attentionFactor &&
      scaling.factor > 1.0)
    reader.fail("original_max_position_embeddings must be at least 2 for "
                "longrope's attention factor (it divides by its log)");
}

} // namespace

std::vector<double> mlir::attn::readLongRopeFactors(ConfigReader &params,
                                                   llvm::StringRef key,
                                                   int64_t count) {
  const llvm::json::Value *value = params.entries().get(key);
  if (!value) {
    params.fail("missing key '" + params.name(key) +
                "' (longrope needs it)");
    return {};
  }
  const llvm::json::Array *list = value->getAsArray();
  if (!list || static_cast<int64_t>(list->size()) != count) {
    params.fail("key '" + params.name(key) + "' must be a list of " +
                llvm::Twine(count) +
                " numbers, one per rotary pair (rotary features / 2)" +
                (list ? ", got " + llvm::Twine(list->size()) : llvm::Twine()));
    return {};
  }
  std::vector<double> factors;
  for (size_t i = 0; i < list->size(); ++i) {
    std::optional<double> number = (*list)[i].getAsNumber();
    if (!number || !(*number > 0.0) || !std::isfinite(*number)) {
      params.fail("key '" + params.name(key) + "' entry " + llvm::Twine(i) +
                  " must be a positive number, got " +
                  ConfigReader::render((*list)[i]));
      return {};
    }
    factors.push_back(*number);
  }
  return factors;
}

void mlir::attn::readRopeParameters(ConfigReader &reader, ModelConfig &config,
                                    bool perLayerTypes) {
  PositionSpec &positions = config.positions;
  positions.theta = reader.positiveNumber("rope_theta", positions.theta);

  // transformers v5 turns a (v4) rope_scaling into rope_parameters and
  // prefers it; two different ones are an error.
  llvm::StringRef key =
      reader.has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  const llvm::json::Object &top = reader.entries();
  if (reader.has("rope_scaling") && reader.has("rope_parameters") &&
      *top.get("rope_scaling") != *top.get("rope_parameters"))
    return reader.fail("keys 'rope_scaling' and 'rope_parameters' disagree");
  const llvm::json::Object *object = reader.objectAt(key);
  if (!object)
    return;
  ConfigReader params = reader.nested(*object, key);
  const llvm::json::Object::value_type *nestedEntry = nullptr;
  // The alphabetically first nested key names the error (JSON objects
  // keep no order here).
  for (const auto &entry : params.entries())
    if (entry.second.getAsObject() &&
        (!nestedEntry || entry.first.str() < nestedEntry->first.str()))
      nestedEntry = &entry;
  if (!nestedEntry)
    return readRopeDict(reader, params, config);
  if (!perLayerTypes)
    return params.fail("key '" + params.name(nestedEntry->first) +
                       "': RoPE parameters per layer type are not "
                       "supported");

  // transformers v5's per-layer-type form (Gemma 3): the full-attention
  // layers' parameters are the model's; the sliding layers' may only give
  // them another base, which they then rotate with, unscaled.
  params.onlyKeys({"full_attention", "sliding_attention"});
  if (const llvm::json::Object *full = params.objectAt("full_attention")) {
    ConfigReader fullParams = params.nested(*full, "full_attention");
    readRopeDict(reader, fullParams, config);
  } else {
    return params.fail("missing key '" + params.name("full_attention") + "'");
  }
  if (const llvm::json::Object *sliding = params.objectAt("sliding_attention")) {
    ConfigReader local = params.nested(*sliding, "sliding_attention");
    std::string type = readRopeType(local);
    if (type != "default")
      return local.fail("key '" + local.name("rope_type") + "' is " +
                        ConfigReader::quote(type) +
                        "; the sliding layers rotate unscaled ('default')");
    local.onlyKeys({"rope_type", "type", "rope_theta"});
    config.positions.localTheta =
        local.positiveNumber("rope_theta", config.positions.theta);
  }
}

void mlir::attn::readRopeDict(ConfigReader &reader, ConfigReader &params,
                              ModelConfig &config) {
  PositionSpec &positions = config.positions;
  if (params.has("rope_theta")) {
    double theta = params.positiveNumber("rope_theta", positions.theta);
    if (reader.has("rope_theta") && theta != positions.theta)
      return params.fail("keys '" + params.name("rope_theta") + "' (" +
                         text(theta) + ") and 'rope_theta' (" +
                         text(positions.theta) + ") disagree");
    positions.theta = theta;
  }
  if (params.has("partial_rotary_factor")) {
    double fraction = params.positiveNumber("partial_rotary_factor", 1.0);
    // As transformers: int(head_dim * partial_rotary_factor).
    auto rotaryDims =
        static_cast<int64_t>(static_cast<double>(config.headDim) * fraction);
    if (fraction > 1.0 || rotaryDims <= 0 || rotaryDims % 2 != 0)
      return params.fail("key '" + params.name("partial_rotary_factor") +
                         "' (" + text(fraction) + ") gives " +
                         llvm::Twine(rotaryDims) + " rotary features of " +
                         llvm::Twine(config.headDim) +
                         "; need an even count in (0, head_dim]");
    positions.rotaryDims = rotaryDims == config.headDim ? 0 : rotaryDims;
  }

  std::string ropeType = readRopeType(params);
  // Phi3Config renames its first configs' names for longrope.
  if (config.architecture == "phi3" && (ropeType == "su" || ropeType == "yarn")) {
    config.notes.push_back("rope_scaling type '" + ropeType +
                           "' is read as 'longrope', as Phi3Config renames it");
    ropeType = "longrope";
  }
  const RopeTypeEntry *entry = nullptr;
  std::string supported;
  for (const RopeTypeEntry &candidate : ropeTypes) {
    if (ropeType == candidate.name)
      entry = &candidate;
    if (candidate.kind)
      supported +=
          (supported.empty() ? "" : ", ") + std::string(candidate.name);
  }
  llvm::StringRef typeKey = params.has("rope_type") ? "rope_type" : "type";
  if (!entry)
    return params.fail("key '" + params.name(typeKey) + "' is " +
                       ConfigReader::quote(ropeType) +
                       "; supported: " + supported);
  if (!entry->kind)
    return params.fail("key '" + params.name(typeKey) + "' is " +
                       ConfigReader::quote(ropeType) +
                       ": Phi-3's first name for longrope, which only phi3 "
                       "models may use; write 'longrope'");

  RopeScaling &scaling = positions.scaling;
  scaling.kind = *entry->kind;
  if (scaling.kind == RopeScalingKind::None)
    return;
  if (scaling.kind == RopeScalingKind::LongRope)
    return readLongRope(reader, params, config);
  scaling.factor = requiredPositive(params, "factor", ropeType);
  switch (scaling.kind) {
  case RopeScalingKind::None:
  case RopeScalingKind::Linear:
  case RopeScalingKind::LongRope:
    break;
  case RopeScalingKind::Dynamic:
    // transformers measures dynamic NTK against max_position_embeddings.
    scaling.originalMaxPositions = config.maxPositions;
    if (positions.rotaryDimsOf(config.headDim) <= 2)
      params.fail("rope_type 'dynamic' needs more than 2 rotary features "
                  "(its exponent is d / (d - 2))");
    break;
  case RopeScalingKind::Yarn:
    scaling.originalMaxPositions =
        readOriginalMaxPositions(reader, params, config.maxPositions);
    readYarn(reader, params, scaling, positions.theta);
    break;
  case RopeScalingKind::Llama3:
    scaling.originalMaxPositions =
        readOriginalMaxPositions(reader, params, config.maxPositions);
    readLlama3(params, scaling);
    break;
  }
}
