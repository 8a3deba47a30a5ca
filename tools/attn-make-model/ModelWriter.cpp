//===- ModelWriter.cpp - Random Hugging Face style test models ------------===//
//
// See ModelWriter.h. This file must be compiled with -ffp-contract=off (the
// CMake target sets it): the generator's log/sin/cos are polynomial
// evaluations whose bits would otherwise depend on whether the target fuses
// multiply-adds.
//
//===----------------------------------------------------------------------===//

#include "ModelWriter.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>

namespace attn {
namespace modelgen {

namespace {

//===----------------------------------------------------------------------===//
// Deterministic elementary functions
//===----------------------------------------------------------------------===//
//
// libm's log/sin/cos/exp are not correctly rounded and differ in the last
// bit between implementations; these use only +, -, *, /, sqrt, frexp and
// ldexp, which IEEE 754 fixes exactly. Their accuracy (~1 ulp of double) is
// far beyond what a float32 sample needs.

const double kLn2 = 0.69314718055994530942;
const double kPiOver4 = 0.78539816339744830962;
const double kSqrtHalf = 0.70710678118654752440;

/// Series coefficients, computed once with correctly rounded divisions so
/// that the hot loops only multiply and add.
struct SeriesTables {
  double logOdd[12];  ///< 1 / (2j + 1), j = 0..11.
  double sinStep[11]; ///< 1 / ((n + 1) n), n = 2j, j = 1..10.
  double cosStep[11]; ///< 1 / (n (n - 1)), n = 2j, j = 1..10.
  double expStep[21]; ///< 1 / n, n = 1..20.
  SeriesTables() {
    for (int j = 0; j < 12; ++j)
      logOdd[j] = 1.0 / (2 * j + 1);
    for (int j = 1; j <= 10; ++j) {
      int n = 2 * j;
      sinStep[j] = 1.0 / ((n + 1) * n);
      cosStep[j] = 1.0 / (n * (n - 1));
    }
    for (int n = 1; n <= 20; ++n)
      expStep[n] = 1.0 / n;
  }
};

const SeriesTables &tables() {
  static const SeriesTables t;
  return t;
}

/// Natural log of a positive normal double.
double detLog(double x) {
  int e = 0;
  double m = std::frexp(x, &e); // x = m * 2^e, m in [0.5, 1).
  if (m < kSqrtHalf) {
    m *= 2.0;
    --e;
  }
  // m in [sqrt(1/2), sqrt(2)): log m = 2 atanh(s), |s| <= 0.1716, and the
  // series s + s^3/3 + ... has converged to 1e-18 after s^23.
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  const double *c = tables().logOdd;
  double p = c[11];
  for (int j = 10; j >= 0; --j)
    p = p * s2 + c[j];
  return e * kLn2 + 2.0 * s * p;
}

/// e^x for |x| < 700.
double detExp(double x) {
  double k = std::floor(x / kLn2 + 0.5);
  double r = x - k * kLn2; // |r| <= ~0.35.
  double p = 1.0;
  for (int n = 20; n >= 1; --n)
    p = 1.0 + p * r * tables().expStep[n];
  return std::ldexp(p, static_cast<int>(k));
}

/// sin and cos of x in [0, pi/4] by their Taylor series (error < 1e-18).
void sinCosSmall(double x, double &s, double &c) {
  double x2 = x * x;
  const SeriesTables &t = tables();
  double ps = 1.0, pc = 1.0;
  for (int j = 10; j >= 1; --j) {
    ps = 1.0 - ps * x2 * t.sinStep[j]; // sin(x) / x
    pc = 1.0 - pc * x2 * t.cosStep[j]; // cos(x)
  }
  s = x * ps;
  c = pc;
}

/// sin and cos of 2 pi t for t in [0, 1). The reduction is exact: t * 8
/// splits into an octant and a fraction without rounding.
void sinCosTurns(double t, double &s, double &c) {
  double y = t * 8.0;
  int octant = static_cast<int>(std::floor(y));
  double f = y - octant;
  double sinPhi, cosPhi; // phi = the angle within its quadrant.
  if (octant % 2 == 0) {
    sinCosSmall(f * kPiOver4, sinPhi, cosPhi);
  } else {
    // phi = pi/2 - x' with x' in (0, pi/4]; swap instead of subtracting.
    sinCosSmall((1.0 - f) * kPiOver4, cosPhi, sinPhi);
  }
  switch (octant / 2) {
  case 0:
    s = sinPhi, c = cosPhi;
    break;
  case 1:
    s = cosPhi, c = -sinPhi;
    break;
  case 2:
    s = -sinPhi, c = -cosPhi;
    break;
  default:
    s = -cosPhi, c = sinPhi;
    break;
  }
}

//===----------------------------------------------------------------------===//
// Random streams
//===----------------------------------------------------------------------===//

uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string &text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

/// xoshiro256** seeded through splitmix64, with Box-Muller normals.
class NormalStream {
public:
  explicit NormalStream(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t &word : state)
      word = splitMix64(x);
  }

  double next() {
    if (hasSpare) {
      hasSpare = false;
      return spare;
    }
    // u1 in (0, 1] so that its log is finite; u2 in [0, 1).
    double u1 = static_cast<double>((nextBits() >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(nextBits() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * detLog(u1));
    double s, c;
    sinCosTurns(u2, s, c);
    spare = r * s;
    hasSpare = true;
    return r * c;
  }

private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t nextBits() {
    uint64_t result = rotl(state[1] * 5, 7) * 9;
    uint64_t t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return result;
  }

  uint64_t state[4];
  bool hasSpare = false;
  double spare = 0.0;
};

uint64_t tensorStreamSeed(uint64_t seed, const std::string &canonicalName) {
  uint64_t x = seed;
  return splitMix64(x) ^ fnv1a64(canonicalName);
}

/// Produces a tensor's values in order, a block at a time, so that writing a
/// large model never holds more than one block.
class TensorFiller {
public:
  TensorFiller(const ModelSpec &spec, const TensorDesc &tensor)
      : tensor(tensor), dtype(spec.dtype),
        stream(tensorStreamSeed(spec.seed, tensor.canonicalName)) {
    if (!tensor.lineStd.empty() && !tensor.shape.empty()) {
      lineCount = tensor.lineAxis == 0 ? tensor.shape.front()
                                       : tensor.shape.back();
      int64_t n = 1;
      for (int64_t d : tensor.shape)
        n *= d;
      lineStride = tensor.lineAxis == 0 && lineCount > 0 ? n / lineCount : 1;
    }
    if (tensor.init == TensorInit::CausalMask)
      maskSide = tensor.shape.empty() ? 1 : tensor.shape.back();
    if (tensor.init == TensorInit::InvFreq) {
      invFreqHeadDim = 2 * (tensor.shape.empty() ? 1 : tensor.shape.back());
      logTheta = detLog(spec.ropeTheta);
    }
  }

  void fill(float *out, size_t count) {
    for (size_t i = 0; i < count; ++i, ++index) {
      // Always drawn, so an override leaves every other element unchanged.
      out[i] = value(index);
      for (const auto &[at, poison] : tensor.overrides)
        if (at == index)
          out[i] = poison;
    }
  }

private:
  float value(int64_t i) {
    switch (tensor.init) {
    case TensorInit::Normal: {
      double stddev = tensor.stddev;
      if (lineCount > 0) {
        int64_t line = tensor.lineAxis == 0 ? i / lineStride : i % lineCount;
        stddev = tensor.lineStd[static_cast<size_t>(line)];
      }
      double z = stream.next();
      float v = static_cast<float>(tensor.mean + stddev * z);
      if (tensor.nonZero && storedAsZero(v))
        v = std::signbit(z) ? -0x1.0p-14f : 0x1.0p-14f;
      return v;
    }
    case TensorInit::CausalMask: {
      int64_t row = (i / maskSide) % maskSide, col = i % maskSide;
      return col <= row ? 1.0f : 0.0f;
    }
    case TensorInit::Constant:
      return static_cast<float>(tensor.mean);
    case TensorInit::InvFreq:
      return static_cast<float>(
          detExp(-2.0 * static_cast<double>(i) / invFreqHeadDim * logTheta));
    }
    return 0.0f;
  }

  /// Whether `v` is written as +-0 in the file's dtype.
  bool storedAsZero(float v) const {
    switch (dtype) {
    case DType::F32:
      return v == 0.0f;
    case DType::F16:
      return (floatToHalf(v) & 0x7FFF) == 0;
    case DType::BF16:
      return (floatToBFloat16(v) & 0x7FFF) == 0;
    }
    return false;
  }

  const TensorDesc &tensor;
  DType dtype;
  NormalStream stream;
  int64_t lineCount = 0, lineStride = 1;
  int64_t index = 0;
  int64_t maskSide = 1;
  int64_t invFreqHeadDim = 2;
  double logTheta = 0.0;
};

//===----------------------------------------------------------------------===//
// JSON text
//===----------------------------------------------------------------------===//

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    switch (ch) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (ch < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
        out += buf;
      } else {
        out += static_cast<char>(ch);
      }
    }
  }
  return out + "\"";
}

/// The shortest decimal that reads back as `value`, with a ".0" on
/// integral values as Python's json writes floats (rope_theta: 10000.0).
std::string jsonDouble(double value) {
  char buf[64];
  if (std::isfinite(value) && value == std::floor(value) &&
      std::fabs(value) < 1e16) {
    std::snprintf(buf, sizeof(buf), "%.1f", value);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  return buf;
}

std::string jsonInt(int64_t value) { return std::to_string(value); }

/// Appends `"key": value` lines of a flat, pretty-printed object.
class JsonObjectWriter {
public:
  void add(const std::string &key, const std::string &rawValue) {
    text += first ? "{\n" : ",\n";
    first = false;
    text += "  " + jsonString(key) + ": " + rawValue;
  }
  std::string finish() { return (first ? "{" : text + "\n") + "}\n"; }

private:
  std::string text;
  bool first = true;
};

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

struct FileCloser {
  void operator()(std::FILE *f) const {
    if (f)
      std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

std::string errnoText() { return std::strerror(errno); }

bool writeTextFile(const std::string &path, const std::string &text,
                   std::string &error) {
  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) {
    error = "cannot create '" + path + "': " + errnoText();
    return false;
  }
  if (std::fwrite(text.data(), 1, text.size(), f.get()) != text.size() ||
      std::fclose(f.release()) != 0) {
    error = "cannot write '" + path + "': " + errnoText();
    return false;
  }
  return true;
}

void storeLE16(unsigned char *out, uint16_t v) {
  out[0] = static_cast<unsigned char>(v);
  out[1] = static_cast<unsigned char>(v >> 8);
}

void storeLE32(unsigned char *out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

const int64_t kMaxDim = int64_t(1) << 24;

} // namespace

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  }
  return "F32";
}

size_t dtypeSize(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

bool parseDType(const std::string &text, DType &dtype) {
  std::string lower;
  for (char ch : text)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "f32" || lower == "float32" || lower == "fp32")
    dtype = DType::F32;
  else if (lower == "f16" || lower == "float16" || lower == "fp16")
    dtype = DType::F16;
  else if (lower == "bf16" || lower == "bfloat16")
    dtype = DType::BF16;
  else
    return false;
  return true;
}

uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7FFFFFFF;
  if (abs >= 0x7F800000) {
    if (abs == 0x7F800000)
      return sign | 0x7C00;
    // NaN: keep the top payload bits and force the quiet bit so that a
    // payload living only in the low bits cannot turn into infinity.
    return sign | 0x7E00 | static_cast<uint16_t>((abs >> 13) & 0x3FF);
  }
  int32_t exponent = static_cast<int32_t>(abs >> 23) - 127 + 15;
  uint32_t mantissa = abs & 0x7FFFFF;
  if (exponent >= 31)
    return sign | 0x7C00;
  if (exponent <= 0) {
    // Half subnormal: the value in units of 2^-24 is the 24-bit significand
    // shifted right by 14 - exponent; anything below 2^-25 rounds to zero.
    int shift = 14 - exponent;
    if (shift > 24)
      return sign;
    uint32_t significand = mantissa | 0x800000;
    uint32_t result = significand >> shift;
    uint32_t rest = significand & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1)))
      ++result; // May carry into the smallest normal, which is correct.
    return sign | static_cast<uint16_t>(result);
  }
  uint32_t result = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (result & 1)))
    ++result; // A carry out of the mantissa bumps the exponent, up to inf.
  return sign | static_cast<uint16_t>(result);
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000)
    return static_cast<uint16_t>((bits >> 16) | 0x0040); // quiet NaN
  uint32_t lsb = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7FFF + lsb) >> 16);
}

std::vector<double> standardNormals(uint64_t streamSeed, size_t count) {
  NormalStream stream(streamSeed);
  std::vector<double> out(count);
  for (double &v : out)
    v = stream.next();
  return out;
}

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

const char *familyName(Family family) {
  switch (family) {
  case Family::GPT2:
    return "gpt2";
  case Family::Llama:
    return "llama";
  case Family::Mistral:
    return "mistral";
  case Family::Qwen2:
    return "qwen2";
  case Family::Qwen3:
    return "qwen3";
  case Family::Qwen3Moe:
    return "qwen3_moe";
  case Family::Qwen2Moe:
    return "qwen2_moe";
  case Family::Mixtral:
    return "mixtral";
  case Family::GptOss:
    return "gpt_oss";
  case Family::SmolLM3:
    return "smollm3";
  case Family::Gemma:
    return "gemma";
  case Family::Gemma2:
    return "gemma2";
  case Family::Gemma3:
    return "gemma3_text";
  case Family::Phi3:
    return "phi3";
  case Family::GPTNeoX:
    return "gpt_neox";
  case Family::GPTJ:
    return "gptj";
  case Family::OPT:
    return "opt";
  case Family::Bloom:
    return "bloom";
  case Family::XGLM:
    return "xglm";
  }
  return "?";
}

bool familyTiesByDefault(Family family) {
  // The config classes' tie_word_embeddings defaults (PretrainedConfig's
  // True unless the class passes False).
  switch (family) {
  case Family::GPT2:
  case Family::SmolLM3:
  case Family::Gemma:
  case Family::Gemma2:
  case Family::Gemma3:
  case Family::OPT:
  case Family::Bloom:
  case Family::XGLM:
    return true;
  default:
    return false;
  }
}

namespace {

/// model.layers.* with separate q/k/v projections, a gated MLP and RMSNorm.
bool isLlamaLike(Family f) {
  return f == Family::Llama || f == Family::Mistral || f == Family::Qwen2 ||
         f == Family::Qwen3 || f == Family::SmolLM3 || f == Family::Gemma ||
         f == Family::Qwen3Moe || f == Family::Qwen2Moe || f == Family::Mixtral ||
         f == Family::GptOss;
}
/// use_sliding_window, max_window_layers (and qwen3's layer_types).
bool isQwen(Family f) {
  return f == Family::Qwen2 || f == Family::Qwen3 || f == Family::Qwen3Moe ||
         f == Family::Qwen2Moe;
}
/// A mixture of experts in (some of) the layers.
bool isMoe(Family f) {
  return f == Family::Qwen3Moe || f == Family::Qwen2Moe || f == Family::Mixtral ||
         f == Family::GptOss;
}
/// Gemma's block with four norms, query_pre_attn_scalar, softcaps and
/// windows by pattern or layer_types.
bool isGemma2Like(Family f) {
  return f == Family::Gemma2 || f == Family::Gemma3;
}
/// GeGLU with gelu_pytorch_tanh and (1 + w) norms.
bool isGemmaFamily(Family f) { return f == Family::Gemma || isGemma2Like(f); }
bool hasGqa(Family f) {
  return isLlamaLike(f) || isGemma2Like(f) || f == Family::Phi3;
}
bool hasRope(Family f) {
  return isLlamaLike(f) || isGemma2Like(f) || f == Family::Phi3 ||
         f == Family::GPTNeoX || f == Family::GPTJ;
}
/// linear, dynamic, yarn, llama3; phi3 takes longrope only.
bool hasRopeScaling(Family f) { return isLlamaLike(f) || isGemma2Like(f); }
/// head_dim may differ from hidden / heads.
bool hasHeadDim(Family f) { return isLlamaLike(f) || isGemma2Like(f); }
bool hasNormEps(Family f) { return f != Family::OPT && f != Family::XGLM; }
/// MLP width from 4 * hidden when not given (gpt2, gptj: n_inner null;
/// bloom: always).
bool ffnDefaultsToFour(Family f) {
  return f == Family::GPT2 || f == Family::GPTJ || f == Family::Bloom;
}
const char *ffnKey(Family f) {
  return f == Family::OPT || f == Family::XGLM ? "ffn_dim"
                                               : "intermediate_size";
}
/// Families whose config names their activation function; the others fix
/// it (gated: silu or gemma's gelu_pytorch_tanh; bloom's tanh GELU).
bool hasActivationKey(Family f) {
  return f == Family::GPT2 || f == Family::GPTNeoX || f == Family::GPTJ ||
         f == Family::OPT || f == Family::XGLM;
}

std::string familyList(std::initializer_list<Family> families) {
  std::string out;
  size_t i = 0, n = families.size();
  for (Family f : families) {
    if (i > 0)
      out += i + 1 == n ? " and " : ", ";
    out += familyName(f);
    ++i;
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Specs and presets
//===----------------------------------------------------------------------===//

int64_t effectiveKvHeads(const ModelSpec &spec) {
  return spec.kvHeads > 0 ? spec.kvHeads : spec.heads;
}

int64_t effectiveFfn(const ModelSpec &spec) {
  if (spec.ffn > 0)
    return spec.ffn;
  return ffnDefaultsToFour(spec.family) ? 4 * spec.hidden : 0;
}

int64_t effectiveHeadDim(const ModelSpec &spec) {
  if (spec.headDim > 0)
    return spec.headDim;
  return spec.heads > 0 ? spec.hidden / spec.heads : 0;
}

std::string effectiveActivation(const ModelSpec &spec) {
  if (!spec.activation.empty())
    return spec.activation;
  switch (spec.family) {
  case Family::GPT2:
  case Family::GPTJ:
    return "gelu_new";
  case Family::GPTNeoX:
  case Family::XGLM:
    return "gelu";
  case Family::OPT:
    return "relu";
  case Family::Gemma:
  case Family::Gemma2:
  case Family::Gemma3:
  case Family::Bloom: // bloom_gelu_forward: the tanh form.
    return "gelu_pytorch_tanh";
  default:
    return "silu";
  }
}

int64_t effectiveRotaryDims(const ModelSpec &spec) {
  int64_t hd = effectiveHeadDim(spec);
  switch (spec.family) {
  case Family::Phi3:
    return spec.rotaryFraction > 0
               ? static_cast<int64_t>(static_cast<double>(hd) *
                                      spec.rotaryFraction)
               : hd;
  case Family::GPTNeoX:
    return static_cast<int64_t>(
        static_cast<double>(hd) *
        (spec.rotaryFraction > 0 ? spec.rotaryFraction : 0.25));
  case Family::GPTJ:
    return spec.rotaryDim > 0 ? spec.rotaryDim : hd;
  default:
    return hasRope(spec.family) ? hd : 0;
  }
}

void longRopeDefaultFactors(int64_t pairs, std::vector<double> &shortFactor,
                            std::vector<double> &longFactor) {
  shortFactor.clear();
  longFactor.clear();
  const double last = static_cast<double>(std::max<int64_t>(pairs - 1, 1));
  for (int64_t i = 0; i < pairs; ++i) {
    shortFactor.push_back(1.0 + 0.5 * static_cast<double>(i) / last);
    longFactor.push_back(std::pow(20.0, static_cast<double>(i) / last));
  }
}

void effectiveLongRopeFactors(const ModelSpec &spec,
                              std::vector<double> &shortFactor,
                              std::vector<double> &longFactor) {
  shortFactor.clear();
  longFactor.clear();
  const RopeScaling &r = spec.ropeScaling;
  if (r.type != RopeScaling::Type::LongRope)
    return;
  if (!r.shortFactor.empty() || !r.longFactor.empty()) {
    shortFactor = r.shortFactor;
    longFactor = r.longFactor;
    return;
  }
  longRopeDefaultFactors(effectiveRotaryDims(spec) / 2, shortFactor,
                         longFactor);
}

int64_t effectiveMaxWindowLayers(const ModelSpec &spec) {
  if (spec.maxWindowLayers >= 0)
    return spec.maxWindowLayers;
  return spec.slidingWindow > 0 ? 0 : spec.layers;
}

std::vector<bool> effectiveSlidingLayers(const ModelSpec &spec) {
  if (!isGemma2Like(spec.family))
    return {};
  std::vector<bool> out(static_cast<size_t>(std::max<int64_t>(spec.layers, 0)));
  int64_t pattern = spec.family == Family::Gemma2 ? 2
                    : spec.slidingWindowPattern > 0 ? spec.slidingWindowPattern
                                                    : 6;
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = spec.layerTypes.size() == out.size()
                 ? spec.layerTypes[i] == "sliding_attention"
                 : (static_cast<int64_t>(i) + 1) % pattern != 0;
  return out;
}

std::vector<bool> effectiveRopeLayers(const ModelSpec &spec) {
  if (spec.family != Family::SmolLM3)
    return {};
  std::vector<bool> out(static_cast<size_t>(std::max<int64_t>(spec.layers, 0)));
  int64_t interval =
      spec.noRopeLayerInterval > 0 ? spec.noRopeLayerInterval : 4;
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = i < spec.noRopeLayers.size()
                 ? spec.noRopeLayers[i] == 1
                 : (static_cast<int64_t>(i) + 1) % interval != 0;
  return out;
}

double effectiveQueryPreAttnScalar(const ModelSpec &spec) {
  return spec.queryPreAttnScalar > 0
             ? spec.queryPreAttnScalar
             : static_cast<double>(effectiveHeadDim(spec));
}

std::vector<std::string> presetNames() {
  return {"tiny-gpt2",
          "tiny-llama",
          "tiny-llama-tied",
          "gpt2-small",
          "llama-15m",
          "llama-110m",
          "tiny-mistral",
          "tiny-mistral-mqa",
          "tiny-qwen2",
          "tiny-qwen2-swa",
          "tiny-qwen3",
          "tiny-qwen3-swa",
          "tiny-qwen3-bias",
          "tiny-qwen3-moe",
          "tiny-qwen3-moe-sparse",
          "tiny-qwen2-moe",
          "tiny-mixtral",
          "tiny-gpt-oss",
          "qwen3-0.6b",
          "qwen3-30b-a3b",
          "tiny-smollm3",
          "tiny-smollm3-list",
          "tiny-gemma",
          "tiny-gemma-mqa",
          "tiny-gemma2",
          "tiny-gemma3",
          "tiny-gemma3-mm",
          "gemma3-1b",
          "tiny-phi3",
          "tiny-phi3-partial",
          "tiny-phi3-longrope",
          "phi4-mini",
          "tiny-gpt_neox",
          "tiny-gpt_neox-sequential",
          "tiny-gptj",
          "tiny-opt",
          "tiny-opt-postln",
          "tiny-bloom",
          "tiny-xglm"};
}

/// Token embeddings of tied presets. With a tied output projection and
/// unit-variance embeddings the input token's own logit (|e_t|^2 ~ hidden)
/// dominates every row, so argmaxes ignore what the layers compute; at 0.25
/// a mask or layout bug flips most argmaxes (ModelReference.BugsAreVisible).
constexpr double kTiedEmbeddingStd = 0.25;
/// Gemma and XGLM multiply the embeddings by sqrt(hidden) before the first
/// layer: 0.25 / sqrt(64) gives the tiny tied presets the residual stream
/// of the 0.25 above.
constexpr double kScaledTiedEmbeddingStd = 0.03125;

bool presetSpec(const std::string &name, ModelSpec &spec) {
  ModelSpec s;
  if (name == "tiny-gpt2") {
    s.family = Family::GPT2;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.vocab = 97;
    s.maxPositions = 64;
    s.embeddingStd = kTiedEmbeddingStd;
  } else if (name == "tiny-llama" || name == "tiny-llama-tied") {
    s.family = Family::Llama;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 172, s.vocab = 101;
    s.maxPositions = 64;
    bool tied = name == "tiny-llama-tied";
    s.kvHeads = tied ? 1 : 2;
    s.tieEmbeddings = tied;
    if (tied)
      s.embeddingStd = kTiedEmbeddingStd;
  } else if (name == "gpt2-small") {
    s.family = Family::GPT2;
    s.layers = 12, s.hidden = 768, s.heads = 12, s.vocab = 50257;
    s.maxPositions = 1024;
    s.embeddingStd = kTiedEmbeddingStd;
  } else if (name == "llama-15m") {
    // The shape of llama2.c's stories15M: the demo's default model.
    s.family = Family::Llama;
    s.layers = 6, s.hidden = 288, s.heads = 6, s.kvHeads = 0;
    s.ffn = 768, s.vocab = 32000, s.maxPositions = 256;
  } else if (name == "llama-110m") {
    // The shape of llama2.c's stories110M.
    s.family = Family::Llama;
    // kvHeads 0 = heads (12), so that --heads alone keeps it multi-head.
    s.layers = 12, s.hidden = 768, s.heads = 12, s.kvHeads = 0;
    s.ffn = 2048, s.vocab = 32000, s.maxPositions = 1024;
  } else if (name == "tiny-mistral" || name == "tiny-mistral-mqa") {
    // Mistral-Nemo style: head_dim 32 with 4 heads of a 64 wide model
    // (q_proj [128, 64]), and Mistral-7B-v0.1's sliding window.
    s.family = Family::Mistral;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 172, s.vocab = 101;
    s.kvHeads = name == "tiny-mistral-mqa" ? 1 : 2;
    s.headDim = 32;
    s.maxPositions = 64, s.slidingWindow = 16;
  } else if (name == "tiny-qwen2" || name == "tiny-qwen2-swa") {
    s.family = Family::Qwen2;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64;
    s.ropeTheta = 1000000.0, s.normEps = 1e-6;
    if (name == "tiny-qwen2-swa") // layer 0 full, layer 1 windowed
      s.slidingWindow = 8, s.maxWindowLayers = 1;
  } else if (name == "tiny-qwen3" || name == "tiny-qwen3-swa" ||
             name == "tiny-qwen3-bias") {
    // Three layers; head_dim 32 != 64 / 4 (Qwen3-0.6B: 1024 wide, 16 heads
    // of 128). The swa variant windows layers 1 and 2 by max_window_layers;
    // the bias variant has q/k/v/o biases and windows layers 0 and 2 by
    // layer_types, which max_window_layers cannot express. Windows of 8
    // are shorter than the tests' prompts.
    s.family = Family::Qwen3;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64, s.headDim = 32;
    s.ropeTheta = 1000000.0, s.normEps = 1e-6;
    if (name == "tiny-qwen3-swa")
      s.slidingWindow = 8, s.maxWindowLayers = 1;
    if (name == "tiny-qwen3-bias") {
      s.attentionBias = true, s.slidingWindow = 8;
      s.layerTypes = {"sliding_attention", "full_attention",
                      "sliding_attention"};
    }
  } else if (name == "tiny-qwen3-moe" || name == "tiny-qwen3-moe-sparse") {
    // tiny-qwen3's attention; 8 experts of 48, 3 per token, renormalized,
    // layer 1 dense (mlp_only_layers). The sparse variant: 4 layers, MoE
    // on every second (decoder_sparse_step 2), the probabilities as they
    // are (norm_topk_prob false), a window of 8 (on every layer: Qwen3-MoE
    // has no max_window_layers or layer_types).
    s.family = Family::Qwen3Moe;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64, s.headDim = 32;
    s.ropeTheta = 1000000.0, s.normEps = 1e-6;
    s.experts = 8, s.expertsPerToken = 3, s.moeFfn = 48;
    s.normTopkProb = true, s.mlpOnlyLayers = {1};
    if (name == "tiny-qwen3-moe-sparse") {
      s.layers = 4, s.normTopkProb = false, s.mlpOnlyLayers = {};
      s.decoderSparseStep = 2, s.slidingWindow = 8;
    }
  } else if (name == "tiny-qwen2-moe") {
    // Qwen1.5-MoE's layer: q/k/v biases, 8 experts of 48, 3 per token, not
    // renormalized (norm_topk_prob false, as Qwen1.5-MoE-A2.7B), a shared
    // expert of 96 under its sigmoid gate, layer 1 dense, and a window of
    // 8 on layer 0 (Qwen2-MoE's default layer_types: even layers below
    // max_window_layers 2).
    s.family = Family::Qwen2Moe;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64;
    s.ropeTheta = 1000000.0, s.normEps = 1e-6;
    s.experts = 8, s.expertsPerToken = 3, s.moeFfn = 48, s.sharedExpertFfn = 96;
    s.mlpOnlyLayers = {1};
    s.slidingWindow = 8, s.maxWindowLayers = 2;
  } else if (name == "tiny-mixtral") {
    // Mixtral's layer with 4 experts of 96, 2 per token, and a window of 8.
    s.family = Family::Mixtral;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 96;
    s.vocab = 101, s.maxPositions = 64, s.slidingWindow = 8;
    s.ropeTheta = 1000000.0;
    s.experts = 4, s.expertsPerToken = 2;
  } else if (name == "tiny-gpt-oss") {
    // gpt-oss's layer: q/k/v/o biases, a sink per head, a window of 8 on
    // layers 0 and 2, 6 experts of 48 (intermediate_size), 2 per token,
    // yarn not truncated over 16 positions (the ramp inside head_dim 32),
    // and a clamp of 1.5 (gpt-oss: 7) that this small model's gates and ups
    // cross often, so that the clamp shows in its logits.
    s.family = Family::GptOss;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 48;
    s.vocab = 101, s.maxPositions = 64, s.headDim = 32;
    s.ropeTheta = 150000.0, s.normEps = 1e-5;
    s.attentionBias = true, s.slidingWindow = 8;
    s.experts = 6, s.expertsPerToken = 2, s.swigluLimit = 1.5;
    s.ropeScaling.type = RopeScaling::Type::Yarn;
    s.ropeScaling.factor = 4.0;
    s.ropeScaling.originalMaxPositions = 16;
    s.ropeScaling.betaFast = 32.0;
    s.ropeScaling.betaSlow = 1.0;
    s.ropeScaling.truncate = false;
  } else if (name == "qwen3-30b-a3b") {
    // The shape of Qwen/Qwen3-30B-A3B (bf16, as it ships): 48 layers of
    // 128 experts of 768, 8 per token, renormalized; 60 GB. Benchmarks
    // take fewer of its layers (attn-bench --models qwen3-30b-a3b:8).
    s.family = Family::Qwen3Moe;
    s.layers = 48, s.hidden = 2048, s.heads = 32, s.kvHeads = 4;
    s.headDim = 128, s.ffn = 6144, s.vocab = 151936, s.maxPositions = 40960;
    s.ropeTheta = 1000000.0, s.normEps = 1e-6;
    s.experts = 128, s.expertsPerToken = 8, s.moeFfn = 768;
    s.normTopkProb = true;
    s.dtype = DType::BF16;
  } else if (name == "qwen3-0.6b") {
    // The shape of Qwen/Qwen3-0.6B, for benchmarks.
    s.family = Family::Qwen3;
    s.layers = 28, s.hidden = 1024, s.heads = 16, s.kvHeads = 8;
    s.headDim = 128, s.ffn = 3072, s.vocab = 151936, s.maxPositions = 40960;
    s.ropeTheta = 1000000.0, s.normEps = 1e-6;
    s.tieEmbeddings = true, s.embeddingStd = kTiedEmbeddingStd;
  } else if (name == "tiny-smollm3" || name == "tiny-smollm3-list") {
    // Tied (as SmolLM3-3B), head_dim 16 = 64 / 4 (no head_dim key, as
    // SmolLM3Config has none), SmolLM3Config's rope_theta 2e6. Three layers
    // with no_rope_layer_interval 2: layer 1 is NoPE. The list variant has
    // four layers and writes no_rope_layers [1, 0, 1, 1] (real checkpoints
    // write the list): a pattern no interval gives. Sharp random models of
    // four layers are too ill-conditioned for the format tests (a q8_0
    // input-rounding flip at row 9 moved every later row by 5-18%; bf16 6%
    // from f32) and, with the default interval 4 (only layer 3 NoPE), for
    // the f32 one (the runtime's own prefill and token-by-token decode
    // differ by 1.7e-5 of the largest logit on one row): the three-layer
    // preset is the one those tests use.
    s.family = Family::SmolLM3;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64;
    s.ropeTheta = 2000000.0, s.normEps = 1e-6;
    s.tieEmbeddings = true, s.embeddingStd = kTiedEmbeddingStd;
    if (name == "tiny-smollm3-list") {
      s.layers = 4;
      s.noRopeLayers = {1, 0, 1, 1};
    } else {
      s.noRopeLayerInterval = 2;
    }
  } else if (name == "tiny-gemma" || name == "tiny-gemma-mqa") {
    // head_dim 32 != 64 / 4 (gemma-7b: 3072 wide, 16 heads of 256); tied;
    // the mqa variant has gemma-2b's single kv head.
    s.family = Family::Gemma;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 172, s.vocab = 101;
    s.kvHeads = name == "tiny-gemma-mqa" ? 1 : 2;
    s.headDim = 32, s.maxPositions = 64, s.normEps = 1e-6;
    s.tieEmbeddings = true, s.embeddingStd = kScaledTiedEmbeddingStd;
  } else if (name == "tiny-gemma2") {
    // Three layers, 0 and 2 windowed (8, shorter than the tests' prompts);
    // head_dim 32 != 64 / 4 and query_pre_attn_scalar 16 = 64 / 4, as
    // gemma-2-27b's 144 = 4608 / 32 with head_dim 128; softcaps
    // 5 and 3 (gemma-2: 50 and 30) so that with --sharp both bite: scores
    // reach several times 5, and the untied head's logits are O(1), which
    // a tied head (embedding std 0.03125) would keep near 0.25.
    s.family = Family::Gemma2;
    s.layers = 3, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64, s.headDim = 32, s.normEps = 1e-6;
    s.queryPreAttnScalar = 16, s.attnSoftcap = 5.0, s.finalSoftcap = 3.0;
    s.slidingWindow = 8;
    // Embeddings times sqrt(64) start the stream at RMS 1, as large as what
    // each sandwich-normed sublayer adds (with std 1 they would drown it).
    s.embeddingStd = 0.125;
  } else if (name == "tiny-gemma3" || name == "tiny-gemma3-mm") {
    // Six layers with sliding_window_pattern 3: 0, 1, 3, 4 local (window
    // 8), 2 and 5 global; global RoPE 1e6 with linear 8 (Gemma 3 4B-27B),
    // local 1e4; tied like Gemma 3; no softcaps, as Gemma 3. The mm
    // variant is the same text model as a gemma3 multimodal checkpoint.
    s.family = Family::Gemma3;
    s.layers = 6, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64, s.headDim = 32, s.normEps = 1e-6;
    s.queryPreAttnScalar = 24, s.slidingWindow = 8, s.slidingWindowPattern = 3;
    s.ropeTheta = 1000000.0, s.ropeLocalTheta = 10000.0;
    s.ropeScaling.type = RopeScaling::Type::Linear, s.ropeScaling.factor = 8;
    s.tieEmbeddings = true, s.embeddingStd = kScaledTiedEmbeddingStd;
    s.multimodal = name == "tiny-gemma3-mm";
  } else if (name == "gemma3-1b") {
    // The shape of google/gemma-3-1b-pt, for benchmarks.
    s.family = Family::Gemma3;
    s.layers = 26, s.hidden = 1152, s.heads = 4, s.kvHeads = 1;
    s.headDim = 256, s.ffn = 6912, s.vocab = 262144, s.maxPositions = 32768;
    s.normEps = 1e-6, s.queryPreAttnScalar = 256;
    s.slidingWindow = 512, s.slidingWindowPattern = 6;
    s.ropeTheta = 1000000.0, s.ropeLocalTheta = 10000.0;
    s.tieEmbeddings = true;
    // 0.25 / sqrt(1152): the residual stream of the other tied presets.
    s.embeddingStd = 0.25 / std::sqrt(1152.0);
  } else if (name == "tiny-phi3" || name == "tiny-phi3-partial" ||
             name == "tiny-phi3-longrope") {
    s.family = Family::Phi3;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.kvHeads = 2, s.ffn = 172;
    s.vocab = 101, s.maxPositions = 64;
    if (name != "tiny-phi3") // Phi-4-mini's partial_rotary_factor
      s.rotaryFraction = 0.75;
    if (name == "tiny-phi3-longrope") {
      // Phi-4-mini's longrope scaled down: 12 of 16 dims rotate (6 pairs),
      // original_max_position_embeddings 16 of 64 (prompts of 17-40 tokens
      // cross it), the generated tables (short 1-1.5, long 1-20) and no
      // factor: attention factor sqrt(1 + ln 4 / ln 16) = sqrt(1.5).
      s.ropeScaling.type = RopeScaling::Type::LongRope;
      s.ropeScaling.originalMaxPositions = 16;
    }
  } else if (name == "phi4-mini") {
    // The shape of microsoft/Phi-4-mini-instruct, for benchmarks: head_dim
    // 128 of which 96 rotate, tied (embedding std 0.25), and its longrope
    // tables verbatim (short all 1; original 4096 of 131072). Its
    // sliding_window 262144 (longer than any position) is left null.
    s.family = Family::Phi3;
    s.layers = 32, s.hidden = 3072, s.heads = 24, s.kvHeads = 8;
    s.ffn = 8192, s.vocab = 200064, s.maxPositions = 131072;
    s.rotaryFraction = 0.75, s.ropeTheta = 10000.0, s.normEps = 1e-5;
    s.tieEmbeddings = true, s.embeddingStd = kTiedEmbeddingStd;
    s.ropeScaling.type = RopeScaling::Type::LongRope;
    s.ropeScaling.originalMaxPositions = 4096;
    s.ropeScaling.shortFactor.assign(48, 1.0);
    s.ropeScaling.longFactor = {
        1,           1.118320672, 1.250641126, 1.398617824, 1.564103225,
        1.74916897,  1.956131817, 2.187582649, 2.446418898, 2.735880826,
        3.059592084, 3.421605075, 3.826451687, 4.279200023, 4.785517845,
        5.351743533, 5.984965424, 6.693110555, 7.485043894, 8.370679318,
        9.36110372,  10.4687158,  11.70738129, 13.09260651, 14.64173252,
        16.37415215, 18.31155283, 20.47818807, 22.90118105, 25.61086418,
        28.64115884, 32.03,       32.1,        32.13,       32.23,
        32.6,        32.61,       32.64,       32.66,       32.7,
        32.71,       32.93,       32.97,       33.28,       33.49,
        33.5,        44.16,       47.77};
  } else if (name == "tiny-gpt_neox" || name == "tiny-gpt_neox-sequential") {
    // Pythia's rotary_pct 0.25: 4 of each head's 16 dims rotate.
    s.family = Family::GPTNeoX;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 256, s.vocab = 97;
    s.maxPositions = 64, s.rotaryFraction = 0.25;
    s.parallelResidual = name == "tiny-gpt_neox";
  } else if (name == "tiny-gptj") {
    // rotary_dim 8 of 16 (GPT-J 6B: 64 of 256), n_inner null.
    s.family = Family::GPTJ;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.vocab = 97;
    s.maxPositions = 64, s.rotaryDim = 8;
  } else if (name == "tiny-opt" || name == "tiny-opt-postln") {
    // The postln variant has OPT-350m's blocks: post-LN, no final layer
    // norm (its 512-wide embeddings projected in and out are not supported,
    // so this one is not).
    s.family = Family::OPT;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 256, s.vocab = 97;
    s.maxPositions = 64, s.tieEmbeddings = true;
    s.embeddingStd = kTiedEmbeddingStd;
    if (name == "tiny-opt-postln")
      s.layerNormBefore = false;
  } else if (name == "tiny-bloom") {
    // Tied; the embedding std scales word_embeddings_layernorm here.
    s.family = Family::Bloom;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.vocab = 97;
    s.tieEmbeddings = true, s.embeddingStd = kTiedEmbeddingStd;
  } else if (name == "tiny-xglm") {
    s.family = Family::XGLM;
    s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 256, s.vocab = 97;
    s.maxPositions = 64, s.tieEmbeddings = true;
    s.embeddingStd = kScaledTiedEmbeddingStd;
  } else {
    return false;
  }
  spec = s;
  return true;
}

namespace {

/// phi3's longrope: its original length and tables.
std::string validateLongRope(const ModelSpec &spec) {
  const RopeScaling &r = spec.ropeScaling;
  if (r.factor != 1.0)
    return "longrope rope_scaling takes no factor (transformers derives "
           "max_position_embeddings / original_max_position_embeddings)";
  if (r.originalMaxPositions < 1 || r.originalMaxPositions > kMaxDim)
    return "longrope rope_scaling needs original_max_position_embeddings in "
           "[1, " + std::to_string(kMaxDim) + "]";
  if (r.shortFactor.empty() != r.longFactor.empty())
    return "longrope rope_scaling needs both short_factor and long_factor, "
           "or neither";
  const size_t pairs = static_cast<size_t>(effectiveRotaryDims(spec) / 2);
  for (const auto *list : {&r.shortFactor, &r.longFactor}) {
    const char *key = list == &r.shortFactor ? "short_factor" : "long_factor";
    if (!list->empty() && list->size() != pairs)
      return std::string("longrope ") + key + " has " +
             std::to_string(list->size()) + " numbers; the " +
             std::to_string(2 * pairs) + " rotary dims need " +
             std::to_string(pairs);
    for (double v : *list)
      if (!std::isfinite(v) || !(v > 0))
        return std::string("longrope ") + key +
               " values must be finite and positive, got " + jsonDouble(v);
  }
  return "";
}

std::string validateRopeScaling(const ModelSpec &spec) {
  const RopeScaling &r = spec.ropeScaling;
  if (r.type == RopeScaling::Type::None)
    return "";
  const bool longrope = r.type == RopeScaling::Type::LongRope;
  if (spec.family == Family::Phi3 && !longrope)
    return std::string("phi3 rope_scaling must be longrope (Phi3Config "
                       "allows no other), got ") +
           ropeScalingName(r.type);
  if (longrope && spec.family != Family::Phi3)
    return "longrope rope_scaling applies only to phi3 models";
  if (longrope) {
    if (r.betaFast > 0 || r.betaSlow > 0 || r.attentionFactor > 0 ||
        r.lowFreqFactor > 0 || r.highFreqFactor > 0)
      return "longrope rope_scaling takes only original_max_position_"
             "embeddings, short_factor and long_factor";
    return validateLongRope(spec);
  }
  if (!r.shortFactor.empty() || !r.longFactor.empty())
    return "short_factor and long_factor apply only to longrope "
           "rope_scaling";
  if (!hasRopeScaling(spec.family))
    return "rope_scaling applies only to " +
           familyList({Family::Llama, Family::Mistral, Family::Qwen2,
                       Family::Qwen3, Family::SmolLM3, Family::Gemma,
                       Family::Gemma2, Family::Gemma3}) +
           " models";
  if (!std::isfinite(r.factor) || r.factor < 1.0)
    return "rope_scaling factor must be finite and >= 1, got " +
           jsonDouble(r.factor);
  if (r.originalMaxPositions < 0 || r.originalMaxPositions > kMaxDim)
    return "rope_scaling original_max_position_embeddings out of range";
  for (double v : {r.betaFast, r.betaSlow, r.attentionFactor,
                   r.lowFreqFactor, r.highFreqFactor})
    if (!std::isfinite(v) || v < 0)
      return "rope_scaling parameters must be finite and positive";
  bool yarn = r.type == RopeScaling::Type::Yarn;
  bool llama3 = r.type == RopeScaling::Type::Llama3;
  if (!yarn && (r.betaFast > 0 || r.betaSlow > 0 || r.attentionFactor > 0))
    return "beta_fast, beta_slow and attention_factor apply only to yarn "
           "rope_scaling";
  if (!llama3 && (r.lowFreqFactor > 0 || r.highFreqFactor > 0))
    return "low_freq_factor and high_freq_factor apply only to llama3 "
           "rope_scaling";
  if (!yarn && !llama3 && r.originalMaxPositions > 0)
    return std::string("original_max_position_embeddings does not apply to ") +
           ropeScalingName(r.type) + " rope_scaling";
  if (llama3) {
    if (r.originalMaxPositions < 1)
      return "llama3 rope_scaling needs original_max_position_embeddings";
    if (!(r.lowFreqFactor > 0) || !(r.highFreqFactor > r.lowFreqFactor))
      return "llama3 rope_scaling needs 0 < low_freq_factor < "
             "high_freq_factor";
  }
  return "";
}

/// The settings of one family checked on every other: each is an error
/// where it has no meaning, so that a test asking for it never silently
/// tests nothing.
std::string validateFamilyOptions(const ModelSpec &spec) {
  Family f = spec.family;
  const char *name = familyName(f);
  if (!spec.prefix.empty() && f != Family::GPT2)
    return "a tensor name prefix applies only to gpt2 models";
  if (spec.extraBuffers && f != Family::GPT2 && f != Family::Llama)
    return "non-weight buffers (extra buffers) apply only to gpt2 and llama "
           "models";
  if (std::string e = validateRopeScaling(spec); !e.empty())
    return e;
  if (spec.slidingWindow != 0 && f != Family::Mistral && !isQwen(f) &&
      f != Family::SmolLM3 && !isGemma2Like(f) && f != Family::Mixtral &&
      f != Family::GptOss)
    return "a sliding window applies only to " +
           familyList({Family::Mistral, Family::Qwen2, Family::Qwen3,
                       Family::SmolLM3, Family::Gemma2, Family::Gemma3}) +
           " models";
  if (spec.slidingWindow < 0 || spec.slidingWindow > kMaxDim)
    return "sliding window out of range";
  if (spec.maxWindowLayers != -1) {
    if (!isQwen(f))
      return "max_window_layers applies only to qwen2 and qwen3 models";
    if (spec.maxWindowLayers < 0 || spec.maxWindowLayers > spec.layers)
      return "max_window_layers must be in [0, layers], got " +
             std::to_string(spec.maxWindowLayers);
  }
  const std::string withLayerTypes = familyList(
      {Family::Qwen3, Family::SmolLM3, Family::Gemma2, Family::Gemma3});
  if (!spec.layerTypes.empty()) {
    if (f != Family::Qwen3 && f != Family::SmolLM3 && !isGemma2Like(f) &&
        f != Family::GptOss)
      return "layer_types applies only to " + withLayerTypes + " models";
    if (static_cast<int64_t>(spec.layerTypes.size()) != spec.layers)
      return "layer_types needs one entry per layer (" +
             std::to_string(spec.layers) + "), got " +
             std::to_string(spec.layerTypes.size());
    for (const std::string &type : spec.layerTypes) {
      if (type != "full_attention" && type != "sliding_attention")
        return "layer_types entries must be full_attention or "
               "sliding_attention, got '" +
               type + "'";
      // Qwen3Config drops sliding_window unless use_sliding_window.
      if (type == "sliding_attention" && spec.slidingWindow == 0)
        return "layer_types has sliding_attention layers but no sliding "
               "window";
    }
  }
  if (!isMoe(f) && (spec.experts || spec.expertsPerToken || spec.moeFfn ||
                    spec.normTopkProb || spec.decoderSparseStep ||
                    !spec.mlpOnlyLayers.empty()))
    return "experts apply only to qwen3_moe, qwen2_moe, mixtral and gpt_oss models";
  if (isMoe(f)) {
    if (spec.experts < 1 || spec.experts > 4096 || spec.expertsPerToken < 1 ||
        spec.expertsPerToken > spec.experts)
      return "a mixture of experts needs 1 <= experts per token <= experts "
             "<= 4096";
    if ((f == Family::Mixtral || f == Family::GptOss) &&
        (spec.moeFfn || spec.normTopkProb ||
                                 spec.decoderSparseStep ||
                                 !spec.mlpOnlyLayers.empty()))
      return "mixtral's experts are ffn wide, always renormalized, in every "
             "layer";
    if ((f == Family::Qwen3Moe || f == Family::Qwen2Moe) &&
        (spec.moeFfn < 1 || spec.moeFfn > kMaxDim))
      return std::string(familyName(f)) + " needs a moe_intermediate_size";
    if (f == Family::Qwen2Moe &&
        (spec.sharedExpertFfn < 1 || spec.sharedExpertFfn > kMaxDim))
      return "qwen2_moe needs a shared_expert_intermediate_size";
    if (spec.decoderSparseStep < 0 || spec.decoderSparseStep > spec.layers)
      return "decoder_sparse_step out of range";
    for (int64_t layer : spec.mlpOnlyLayers)
      if (layer < 0 || layer >= spec.layers)
        return "mlp_only_layers entries must be layer indices";
  }
  if (spec.sharedExpertFfn != 0 && f != Family::Qwen2Moe)
    return "a shared expert applies only to qwen2_moe models";
  if (spec.swigluLimit != 7.0 && f != Family::GptOss)
    return "swiglu_limit applies only to gpt_oss models";
  if (!(spec.swigluLimit > 0) || !std::isfinite(spec.swigluLimit))
    return "swiglu_limit must be positive";
  if (spec.attentionBias && f != Family::Qwen3 && f != Family::SmolLM3 &&
      f != Family::Qwen3Moe && !isGemma2Like(f) && f != Family::GptOss)
    return "attention_bias applies only to " + withLayerTypes + " models";
  if (f != Family::SmolLM3 &&
      (!spec.noRopeLayers.empty() || spec.noRopeLayerInterval != 0))
    return "no_rope_layers and no_rope_layer_interval apply only to smollm3 "
           "models";
  if (!spec.noRopeLayers.empty()) {
    if (static_cast<int64_t>(spec.noRopeLayers.size()) != spec.layers)
      return "no_rope_layers needs one entry per layer (" +
             std::to_string(spec.layers) + "), got " +
             std::to_string(spec.noRopeLayers.size());
    for (int v : spec.noRopeLayers)
      if (v != 0 && v != 1)
        return "no_rope_layers entries must be 0 (NoPE) or 1 (RoPE), got " +
               std::to_string(v);
    if (spec.noRopeLayerInterval != 0)
      return "no_rope_layers and no_rope_layer_interval are exclusive (the "
             "list wins in transformers)";
  }
  if (spec.noRopeLayerInterval < 0 || spec.noRopeLayerInterval > kMaxDim)
    return "no_rope_layer_interval out of range";
  if (f == Family::SmolLM3 && spec.slidingWindow > 0 &&
      spec.layerTypes.empty()) {
    std::vector<bool> rope = effectiveRopeLayers(spec);
    if (std::find(rope.begin(), rope.end(), false) == rope.end())
      return "smollm3 slides only its NoPE layers (without layer_types): a "
             "sliding window needs one";
  }
  const std::string gemmas = familyList({Family::Gemma2, Family::Gemma3});
  if (!isGemma2Like(f) && (spec.queryPreAttnScalar != 0 ||
                           spec.attnSoftcap != 0 || spec.finalSoftcap != 0))
    return "query_pre_attn_scalar and the softcaps apply only to " + gemmas +
           " models";
  for (double v :
       {spec.queryPreAttnScalar, spec.attnSoftcap, spec.finalSoftcap})
    if (!std::isfinite(v) || v < 0)
      return "query_pre_attn_scalar and the softcaps must be finite and >= 0 "
             "(0: the default / null)";
  if (f != Family::Gemma3 &&
      (spec.slidingWindowPattern != 0 || spec.ropeLocalTheta != 10000.0 ||
       spec.multimodal))
    return "sliding_window_pattern, rope_local_base_freq and the multimodal "
           "form apply only to gemma3_text models";
  if (spec.slidingWindowPattern < 0 || spec.slidingWindowPattern > kMaxDim)
    return "sliding_window_pattern out of range";
  if (!(spec.ropeLocalTheta > 0) || !std::isfinite(spec.ropeLocalTheta))
    return "rope_local_base_freq must be positive and finite";
  if (isGemma2Like(f) && spec.slidingWindow == 0) {
    std::vector<bool> sliding = effectiveSlidingLayers(spec);
    if (std::find(sliding.begin(), sliding.end(), true) != sliding.end())
      return std::string(name) +
             " slides some layers (by its pattern or layer_types): they "
             "need a sliding window";
  }
  if (spec.rotaryFraction != 0 && f != Family::GPTNeoX && f != Family::Phi3)
    return "a rotary fraction (rotary_pct, partial_rotary_factor) applies "
           "only to gpt_neox and phi3 models";
  if (spec.rotaryDim != 0 && f != Family::GPTJ)
    return "rotary_dim applies only to gptj models";
  if (!spec.parallelResidual && f != Family::GPTNeoX)
    return "use_parallel_residual applies only to gpt_neox models";
  if (!spec.layerNormBefore && f != Family::OPT)
    return "do_layer_norm_before applies only to opt models";
  if (!spec.scaleEmbedding && f != Family::XGLM)
    return "scale_embedding applies only to xglm models";
  if (!hasRope(f) && spec.ropeTheta != 10000.0)
    return std::string(name) + " has no rotary embeddings: rope theta does "
                               "not apply";
  if (f == Family::GPTJ && spec.ropeTheta != 10000.0)
    return "gptj has no rope theta setting (its rotary base is 10000)";
  if (!hasNormEps(f) && spec.normEps != 1e-5)
    return std::string(name) +
           " has no layer norm epsilon setting (nn.LayerNorm's 1e-5)";
  return "";
}

} // namespace

std::string validateSpec(const ModelSpec &spec) {
  auto positive = [](const char *what, int64_t v) -> std::string {
    if (v < 1 || v > kMaxDim)
      return std::string(what) + " must be in [1, " + std::to_string(kMaxDim) +
             "], got " + std::to_string(v);
    return "";
  };
  for (auto [what, v] :
       {std::pair<const char *, int64_t>{"layers", spec.layers},
        {"hidden size", spec.hidden},
        {"heads", spec.heads},
        {"vocab size", spec.vocab},
        {"max positions", spec.maxPositions}})
    if (std::string e = positive(what, v); !e.empty())
      return e;
  if (spec.kvHeads < 0 || spec.ffn < 0 || spec.headDim < 0)
    return "kv heads, ffn and head dim must not be negative";
  if (spec.ffn > kMaxDim || spec.headDim > kMaxDim || spec.kvHeads > kMaxDim)
    return "ffn, head dim or kv heads too large";
  if (!(spec.embeddingStd > 0) || !std::isfinite(spec.embeddingStd))
    return "embedding std must be positive and finite, got " +
           jsonDouble(spec.embeddingStd);
  if (!std::isfinite(spec.normEps) || spec.normEps < 0)
    return "norm epsilon must be finite and >= 0, got " +
           jsonDouble(spec.normEps);

  Family family = spec.family;
  const std::string name = familyName(family);
  int64_t kvHeads = effectiveKvHeads(spec);
  if (family == Family::GPT2) {
    if (spec.hidden % spec.heads != 0)
      return "heads (" + std::to_string(spec.heads) +
             ") must divide the hidden size (" + std::to_string(spec.hidden) +
             ")";
    if (kvHeads != spec.heads)
      return "gpt2 has no grouped-query attention: kv heads must equal heads";
    if (spec.headDim != 0 && spec.headDim != spec.hidden / spec.heads)
      return "gpt2 has no head_dim setting: head dim must be hidden / heads";
    std::string act = effectiveActivation(spec);
    if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu")
      return "unsupported gpt2 activation_function '" + act +
             "' (expected gelu_new, gelu_pytorch_tanh or gelu)";
    if (int64_t f = effectiveFfn(spec); f > kMaxDim)
      return "ffn too large";
    return validateFamilyOptions(spec);
  }

  // Heads and head dims.
  if (hasHeadDim(family)) {
    if (spec.headDim == 0 && spec.hidden % spec.heads != 0)
      return "heads (" + std::to_string(spec.heads) +
             ") must divide the hidden size (" + std::to_string(spec.hidden) +
             ") unless head dim is given";
    // GemmaAttention raises on it even with an explicit head_dim, as do
    // Gemma2Attention (transformers 4) and the gemma2 / gemma3 configs (5).
    if (isGemmaFamily(family) && spec.hidden % spec.heads != 0)
      return name + ": heads (" + std::to_string(spec.heads) +
             ") must divide the hidden size (" + std::to_string(spec.hidden) +
             "), which transformers checks even with head_dim";
  } else {
    if (spec.hidden % spec.heads != 0)
      return "heads (" + std::to_string(spec.heads) +
             ") must divide the hidden size (" + std::to_string(spec.hidden) +
             ")";
    if (spec.headDim != 0 && spec.headDim != spec.hidden / spec.heads)
      return name + " has no head_dim setting: head dim must be hidden / heads";
  }
  if (hasGqa(family)) {
    if (spec.heads % kvHeads != 0)
      return "kv heads (" + std::to_string(kvHeads) + ") must divide heads (" +
             std::to_string(spec.heads) + ")";
  } else if (kvHeads != spec.heads) {
    return name + " has no grouped-query attention: kv heads must equal heads";
  }

  // Rotary dims.
  int64_t hd = effectiveHeadDim(spec);
  if (spec.rotaryFraction != 0 &&
      !(spec.rotaryFraction > 0 && spec.rotaryFraction <= 1))
    return "the rotary fraction must be in (0, 1], got " +
           jsonDouble(spec.rotaryFraction);
  if (hasRope(family)) {
    if (hd % 2 != 0)
      return "head dim (" + std::to_string(hd) +
             ") must be even for rotary embeddings";
    int64_t rot = effectiveRotaryDims(spec);
    if (rot < 2 || rot > hd || rot % 2 != 0)
      return "rotary dims (" + std::to_string(rot) + " of head dim " +
             std::to_string(hd) + ") must be even, >= 2 and <= the head dim";
    if (!(spec.ropeTheta > 0) || !std::isfinite(spec.ropeTheta))
      return "rope theta must be positive and finite, got " +
             jsonDouble(spec.ropeTheta);
  }

  // The MLP.
  if (family == Family::Bloom) {
    if (spec.ffn != 0 && spec.ffn != 4 * spec.hidden)
      return "bloom has no ffn setting: its MLP is 4 * hidden wide";
  } else if (!ffnDefaultsToFour(family) && spec.ffn < 1) {
    return name + " needs an ffn (" + ffnKey(family) + ") >= 1";
  }
  if (effectiveFfn(spec) > kMaxDim)
    return "ffn too large";
  std::string act = effectiveActivation(spec);
  if (hasActivationKey(family)) {
    if (act != "gelu" && act != "gelu_new" && act != "gelu_pytorch_tanh" &&
        act != "relu")
      return "unsupported " + name + " activation '" + act +
             "' (expected gelu, gelu_new, gelu_pytorch_tanh or relu)";
  } else if (family == Family::Bloom) {
    if (!spec.activation.empty())
      return "bloom has no activation setting (its MLP uses the tanh GELU)";
  } else {
    std::string fixed = isGemmaFamily(family) ? "gelu_pytorch_tanh" : "silu";
    if (act != fixed)
      return name + " models use hidden_act " + fixed + ", got '" +
             spec.activation + "'";
  }
  if (family == Family::XGLM && spec.hidden < 4)
    return "xglm's sinusoidal positions need a hidden size >= 4";
  return validateFamilyOptions(spec);
}

//===----------------------------------------------------------------------===//
// rope_scaling
//===----------------------------------------------------------------------===//

const char *ropeScalingName(RopeScaling::Type type) {
  switch (type) {
  case RopeScaling::Type::None:
    return "";
  case RopeScaling::Type::Linear:
    return "linear";
  case RopeScaling::Type::Dynamic:
    return "dynamic";
  case RopeScaling::Type::Yarn:
    return "yarn";
  case RopeScaling::Type::Llama3:
    return "llama3";
  case RopeScaling::Type::LongRope:
    return "longrope";
  }
  return "";
}

namespace {

std::vector<std::string> splitOn(const std::string &text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at - start));
    if (at == std::string::npos)
      return parts;
    start = at + 1;
  }
}

bool parseNumber(const std::string &text, double &out) {
  errno = 0;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && errno != ERANGE &&
         std::isfinite(out);
}

bool parseCount(const std::string &text, int64_t &out) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  out = v;
  return !text.empty() && *end == '\0' && errno != ERANGE && v >= 1;
}

} // namespace

bool parseRopeScaling(const std::string &text, RopeScaling &out,
                      std::string &error) {
  const std::string usage =
      " (expected linear:F, dynamic:F, yarn:F[:ORIGINAL_MAX][,beta_fast=X]"
      "[,beta_slow=X][,attention_factor=X], llama3:F:LOW:HIGH:ORIGINAL_MAX "
      "or longrope:ORIGINAL_MAX[,short=A/B/...,long=A/B/...])";
  std::vector<std::string> options = splitOn(text, ',');
  std::vector<std::string> fields = splitOn(options[0], ':');
  RopeScaling r;
  const std::string &type = fields[0];
  if (type == "longrope") {
    r.type = RopeScaling::Type::LongRope;
    if (fields.size() != 2) {
      error = "malformed rope scaling '" + text + "'" + usage;
      return false;
    }
    if (!parseCount(fields[1], r.originalMaxPositions)) {
      error = "longrope original max positions must be an integer >= 1, "
              "got '" +
              fields[1] + "'";
      return false;
    }
    for (size_t i = 1; i < options.size(); ++i) {
      size_t eq = options[i].find('=');
      std::string key = options[i].substr(0, eq);
      std::vector<double> *slot = key == "short"  ? &r.shortFactor
                                  : key == "long" ? &r.longFactor
                                                  : nullptr;
      if (!slot || eq == std::string::npos || !slot->empty()) {
        error = "unknown rope scaling option '" + options[i] + "'" + usage;
        return false;
      }
      for (const std::string &item : splitOn(options[i].substr(eq + 1), '/')) {
        double v = 0;
        if (!parseNumber(item, v) || !(v > 0)) {
          error = "longrope " + key + " factors must be positive numbers, "
                  "got '" + item + "'";
          return false;
        }
        slot->push_back(v);
      }
    }
    if (r.shortFactor.empty() != r.longFactor.empty()) {
      error = "longrope needs both short= and long= factors, or neither";
      return false;
    }
    out = r;
    return true;
  }
  size_t minFields = 2, maxFields = 2;
  if (type == "linear") {
    r.type = RopeScaling::Type::Linear;
  } else if (type == "dynamic") {
    r.type = RopeScaling::Type::Dynamic;
  } else if (type == "yarn") {
    r.type = RopeScaling::Type::Yarn;
    maxFields = 3;
  } else if (type == "llama3") {
    r.type = RopeScaling::Type::Llama3;
    minFields = maxFields = 5;
  } else {
    error = "unknown rope scaling type '" + type + "'" + usage;
    return false;
  }
  if (fields.size() < minFields || fields.size() > maxFields) {
    error = "malformed rope scaling '" + text + "'" + usage;
    return false;
  }
  if (!parseNumber(fields[1], r.factor)) {
    error = "rope scaling factor must be a number, got '" + fields[1] + "'";
    return false;
  }
  if (r.type == RopeScaling::Type::Yarn && fields.size() == 3 &&
      !parseCount(fields[2], r.originalMaxPositions)) {
    error = "yarn original max positions must be an integer >= 1, got '" +
            fields[2] + "'";
    return false;
  }
  if (r.type == RopeScaling::Type::Llama3) {
    if (!parseNumber(fields[2], r.lowFreqFactor) ||
        !parseNumber(fields[3], r.highFreqFactor)) {
      error = "llama3 low and high frequency factors must be numbers, got '" +
              fields[2] + "' and '" + fields[3] + "'";
      return false;
    }
    if (!parseCount(fields[4], r.originalMaxPositions)) {
      error = "llama3 original max positions must be an integer >= 1, got '" +
              fields[4] + "'";
      return false;
    }
  }
  for (size_t i = 1; i < options.size(); ++i) {
    size_t eq = options[i].find('=');
    std::string key = options[i].substr(0, eq);
    double *slot = key == "beta_fast"          ? &r.betaFast
                   : key == "beta_slow"        ? &r.betaSlow
                   : key == "attention_factor" ? &r.attentionFactor
                                               : nullptr;
    if (r.type != RopeScaling::Type::Yarn || !slot ||
        eq == std::string::npos) {
      error = "unknown rope scaling option '" + options[i] + "'" + usage;
      return false;
    }
    double v = 0;
    if (!parseNumber(options[i].substr(eq + 1), v) || !(v > 0)) {
      error = "rope scaling " + key + " must be a positive number, got '" +
              options[i].substr(eq + 1) + "'";
      return false;
    }
    *slot = v;
  }
  out = r;
  return true;
}

//===----------------------------------------------------------------------===//
// Tensor plans
//===----------------------------------------------------------------------===//

int64_t numElements(const TensorDesc &tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.shape)
    n *= d;
  return n;
}

std::vector<float> tensorValues(const ModelSpec &spec,
                                const TensorDesc &tensor) {
  std::vector<float> out(static_cast<size_t>(numElements(tensor)));
  if (!tensor.parts.empty()) {
    size_t at = 0;
    for (const TensorDesc &part : tensor.parts) {
      std::vector<float> values = tensorValues(spec, part);
      std::copy(values.begin(), values.end(), out.begin() + at);
      at += values.size();
    }
    return out;
  }
  TensorFiller filler(spec, tensor);
  filler.fill(out.data(), out.size());
  return out;
}

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

namespace {

/// rope_scaling as save_pretrained writes it (keys sorted), or null.
std::string ropeScalingJson(const ModelSpec &spec) {
  const RopeScaling &r = spec.ropeScaling;
  if (r.type == RopeScaling::Type::None)
    return "null";
  std::map<std::string, std::string> m;
  // Nested one level in config.json.
  auto object = [&m] {
    std::string out = "{";
    bool first = true;
    for (const auto &[key, value] : m) {
      out += std::string(first ? "\n" : ",\n") + "    " + jsonString(key) +
             ": " + value;
      first = false;
    }
    return out + "\n  }";
  };
  if (r.type == RopeScaling::Type::LongRope) {
    // As Phi-3.5-mini's and Phi-4-mini's: the legacy "type", no factor.
    std::vector<double> shortFactor, longFactor;
    effectiveLongRopeFactors(spec, shortFactor, longFactor);
    auto list = [](const std::vector<double> &v) {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + jsonDouble(v[i]);
      return out + "]";
    };
    m["long_factor"] = list(longFactor);
    m["short_factor"] = list(shortFactor);
    m["type"] = jsonString("longrope");
    return object();
  }
  m["rope_type"] = jsonString(ropeScalingName(r.type));
  m["factor"] = jsonDouble(r.factor);
  if (r.originalMaxPositions > 0)
    m["original_max_position_embeddings"] = jsonInt(r.originalMaxPositions);
  if (r.type == RopeScaling::Type::Llama3) {
    m["low_freq_factor"] = jsonDouble(r.lowFreqFactor);
    m["high_freq_factor"] = jsonDouble(r.highFreqFactor);
  }
  if (r.betaFast > 0)
    m["beta_fast"] = jsonDouble(r.betaFast);
  if (r.betaSlow > 0)
    m["beta_slow"] = jsonDouble(r.betaSlow);
  if (r.attentionFactor > 0)
    m["attention_factor"] = jsonDouble(r.attentionFactor);
  if (r.type == RopeScaling::Type::Yarn && !r.truncate)
    m["truncate"] = "false";
  return object();
}

/// An integral double as Python writes an int-typed default (10000), other
/// values as floats.
std::string jsonIntegralOrDouble(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<long long>(value));
  return jsonDouble(value);
}

std::string jsonBool(bool b) { return b ? "true" : "false"; }

/// `"key": value` members, sorted, as one JSON object.
std::string jsonObject(const std::map<std::string, std::string> &members) {
  JsonObjectWriter w;
  for (const auto &[key, value] : members)
    w.add(key, value);
  return w.finish();
}

/// "layer_types" when the spec gives them.
void writeLayerTypes(const ModelSpec &spec, std::map<std::string, std::string> &c) {
  if (spec.layerTypes.empty())
    return;
  std::string types;
  for (const std::string &t : spec.layerTypes)
    types += (types.empty() ? "" : ", ") + jsonString(t);
  c["layer_types"] = "[" + types + "]";
}

/// qwen2/qwen3/smollm3's window keys (sliding_window null when off), a null
/// rope_scaling unless set, and layer_types.
void writeQwenStyleWindow(const ModelSpec &spec,
                          std::map<std::string, std::string> &c) {
  c["use_sliding_window"] = jsonBool(spec.slidingWindow > 0);
  c["sliding_window"] =
      spec.slidingWindow > 0 ? jsonInt(spec.slidingWindow) : "null";
  if (!c.count("rope_scaling"))
    c["rope_scaling"] = "null";
  writeLayerTypes(spec, c);
}

/// qwen2_moe's and qwen3_moe's expert keys, as their checkpoints write them.
void writeQwenMoeKeys(const ModelSpec &spec, std::map<std::string, std::string> &c) {
  c["num_experts"] = jsonInt(spec.experts);
  c["num_experts_per_tok"] = jsonInt(spec.expertsPerToken);
  c["moe_intermediate_size"] = jsonInt(spec.moeFfn);
  c["norm_topk_prob"] = jsonBool(spec.normTopkProb);
  c["decoder_sparse_step"] =
      jsonInt(spec.decoderSparseStep > 0 ? spec.decoderSparseStep : 1);
  std::string list;
  for (int64_t layer : spec.mlpOnlyLayers)
    list += (list.empty() ? "" : ", ") + std::to_string(layer);
  c["mlp_only_layers"] = "[" + list + "]";
  c["router_aux_loss_coef"] = "0.001";
  c["output_router_logits"] = "false";
}

/// gemma2 (as google/gemma-2-2b's config.json, transformers 4.42) and
/// gemma3_text (as google/gemma-3-1b-pt's, 4.50); the multimodal form as
/// google/gemma-3-4b-pt's, with the text keys (all of them, where the real
/// file leaves out those equal to Gemma3TextConfig's defaults) in
/// text_config.
std::string gemma2ConfigJson(const ModelSpec &spec,
                             const std::string &torchDtype) {
  const bool g3 = spec.family == Family::Gemma3;
  int64_t v = spec.vocab;
  auto id = [&](int64_t token) {
    return jsonInt(std::min<int64_t>(token, v - 1));
  };
  auto orNull = [](double value) {
    return value > 0 ? jsonDouble(value) : std::string("null");
  };
  std::map<std::string, std::string> c;
  c["model_type"] = jsonString(familyName(spec.family));
  c["architectures"] =
      g3 ? "[\"Gemma3ForCausalLM\"]" : "[\"Gemma2ForCausalLM\"]";
  c["torch_dtype"] = torchDtype;
  c["transformers_version"] = g3 ? "\"4.50.0.dev0\"" : "\"4.42.4\"";
  c["use_cache"] = "true";
  c["vocab_size"] = jsonInt(v);
  c["initializer_range"] = "0.02";
  c["hidden_size"] = jsonInt(spec.hidden);
  c["intermediate_size"] = jsonInt(spec.ffn);
  c["num_hidden_layers"] = jsonInt(spec.layers);
  c["num_attention_heads"] = jsonInt(spec.heads);
  c["num_key_value_heads"] = jsonInt(effectiveKvHeads(spec));
  c["head_dim"] = jsonInt(effectiveHeadDim(spec));
  c["max_position_embeddings"] = jsonInt(spec.maxPositions);
  c["rms_norm_eps"] = jsonDouble(spec.normEps);
  // Gemma2MLP reads hidden_activation; the checkpoints carry both.
  c["hidden_act"] = jsonString("gelu_pytorch_tanh");
  c["hidden_activation"] = jsonString("gelu_pytorch_tanh");
  c["attention_bias"] = jsonBool(spec.attentionBias);
  c["attention_dropout"] = "0.0";
  c["query_pre_attn_scalar"] =
      jsonIntegralOrDouble(effectiveQueryPreAttnScalar(spec));
  c["attn_logit_softcapping"] = orNull(spec.attnSoftcap);
  c["final_logit_softcapping"] = orNull(spec.finalSoftcap);
  c["sliding_window"] =
      spec.slidingWindow > 0 ? jsonInt(spec.slidingWindow) : "null";
  c["cache_implementation"] = "\"hybrid\"";
  c["bos_token_id"] = id(2);
  c["eos_token_id"] = id(1);
  c["pad_token_id"] = id(0);
  if (!spec.tieEmbeddings)
    c["tie_word_embeddings"] = "false";
  if (g3) {
    c["rope_theta"] = jsonIntegralOrDouble(spec.ropeTheta);
    c["rope_local_base_freq"] = jsonIntegralOrDouble(spec.ropeLocalTheta);
    c["sliding_window_pattern"] = jsonInt(
        spec.slidingWindowPattern > 0 ? spec.slidingWindowPattern : 6);
    c["rope_scaling"] = ropeScalingJson(spec);
  } else {
    c["rope_theta"] = jsonDouble(spec.ropeTheta);
    if (spec.ropeScaling.type != RopeScaling::Type::None)
      c["rope_scaling"] = ropeScalingJson(spec);
  }
  writeLayerTypes(spec, c);
  if (!spec.multimodal)
    return jsonObject(c);
  std::map<std::string, std::string> top;
  for (const char *key : {"torch_dtype", "transformers_version",
                          "initializer_range", "bos_token_id",
                          "eos_token_id", "pad_token_id"}) {
    top[key] = c[key];
    if (std::string(key) != "initializer_range")
      c.erase(key);
  }
  c.erase("architectures");
  if (spec.multimodalCurrentNames)
    top["transformers_version"] = "\"4.53.0\"";
  top["model_type"] = jsonString("gemma3");
  top["architectures"] = "[\"Gemma3ForConditionalGeneration\"]";
  top["boi_token_index"] = id(3);
  top["eoi_token_index"] = id(4);
  top["image_token_index"] = id(5);
  top["mm_tokens_per_image"] = "256";
  // Both flags when untied: transformers versions differ in which one
  // tie_weights reads.
  if (!spec.tieEmbeddings)
    top["tie_word_embeddings"] = "false";
  // Nested objects, indented one more level, without their newline.
  auto nested = [](std::string text) {
    text.pop_back();
    std::string out;
    for (char ch : text)
      out += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
    return out;
  };
  top["text_config"] = nested(jsonObject(c));
  top["vision_config"] = nested(jsonObject(
      {{"model_type", jsonString("siglip_vision_model")},
       {"hidden_size", "16"},
       {"image_size", "896"},
       {"intermediate_size", "64"},
       {"num_attention_heads", "2"},
       {"num_hidden_layers", "1"},
       {"patch_size", "14"},
       {"vision_use_head", "false"}}));
  return jsonObject(top);
}

/// config.json of the families after gpt2 and llama, as save_pretrained
/// writes them: keys sorted, every key of the config class.
std::string familyConfigJson(const ModelSpec &spec,
                             const std::string &torchDtype) {
  if (isGemma2Like(spec.family))
    return gemma2ConfigJson(spec, torchDtype);
  std::map<std::string, std::string> c;
  Family family = spec.family;
  int64_t v = spec.vocab;
  auto id = [&](int64_t token) {
    return jsonInt(std::min<int64_t>(token, v - 1));
  };
  c["model_type"] = jsonString(familyName(family));
  c["torch_dtype"] = torchDtype;
  c["transformers_version"] = "\"4.50.0\"";
  c["use_cache"] = "true";
  c["vocab_size"] = jsonInt(v);
  c["initializer_range"] = "0.02";
  // save_pretrained writes only the values that differ from
  // PretrainedConfig's defaults or the class's own: a tied model of a
  // family that ties by default has no tie_word_embeddings key.
  if (!(spec.tieEmbeddings && familyTiesByDefault(family)))
    c["tie_word_embeddings"] = jsonBool(spec.tieEmbeddings);

  int64_t kv = effectiveKvHeads(spec);
  if (isLlamaLike(family) || family == Family::Phi3) {
    c["hidden_size"] = jsonInt(spec.hidden);
    c["intermediate_size"] = jsonInt(spec.ffn);
    c["num_hidden_layers"] = jsonInt(spec.layers);
    c["num_attention_heads"] = jsonInt(spec.heads);
    c["num_key_value_heads"] = jsonInt(kv);
    c["max_position_embeddings"] = jsonInt(spec.maxPositions);
    c["rms_norm_eps"] = jsonDouble(spec.normEps);
    c["rope_theta"] = jsonDouble(spec.ropeTheta);
    c["attention_dropout"] = "0.0";
    c["hidden_act"] = jsonString(effectiveActivation(spec));
    c["bos_token_id"] = id(1);
    c["eos_token_id"] = id(2);
    if (spec.ropeScaling.type != RopeScaling::Type::None)
      c["rope_scaling"] = ropeScalingJson(spec);
  }
  switch (family) {
  case Family::Mixtral:
    // As mistralai/Mixtral-8x7B-v0.1's: no head_dim key unless given.
    c["architectures"] = "[\"MixtralForCausalLM\"]";
    if (spec.headDim > 0)
      c["head_dim"] = jsonInt(spec.headDim);
    c["sliding_window"] =
        spec.slidingWindow > 0 ? jsonInt(spec.slidingWindow) : "null";
    c["num_local_experts"] = jsonInt(spec.experts);
    c["num_experts_per_tok"] = jsonInt(spec.expertsPerToken);
    c["router_aux_loss_coef"] = "0.02";
    c["output_router_logits"] = "false";
    break;
  case Family::GptOss: {
    // As openai/gpt-oss-20b's (unquantized): head_dim, attention_bias, the
    // window and layer_types, the experts, swiglu_limit; rope_scaling (yarn)
    // above when set, else GptOssConfig's default.
    c["architectures"] = "[\"GptOssForCausalLM\"]";
    c["transformers_version"] = "\"4.55.0\"";
    c["head_dim"] = jsonInt(effectiveHeadDim(spec));
    c["attention_bias"] = jsonBool(spec.attentionBias);
    c["sliding_window"] =
        spec.slidingWindow > 0 ? jsonInt(spec.slidingWindow) : "null";
    if (!spec.layerTypes.empty()) {
      std::string list;
      for (const std::string &type : spec.layerTypes)
        list += (list.empty() ? "" : ", ") + jsonString(type);
      c["layer_types"] = "[" + list + "]";
    }
    c["num_local_experts"] = jsonInt(spec.experts);
    c["num_experts_per_tok"] = jsonInt(spec.expertsPerToken);
    c["experts_per_token"] = jsonInt(spec.expertsPerToken);
    c["swiglu_limit"] = jsonDouble(spec.swigluLimit);
    c["router_aux_loss_coef"] = "0.9";
    c["output_router_logits"] = "false";
    c["rope_theta"] = jsonIntegralOrDouble(spec.ropeTheta);
    c["eos_token_id"] = id(v - 1);
    c["pad_token_id"] = id(v - 2);
    c.erase("bos_token_id");
    break;
  }
  case Family::Mistral:
    c["architectures"] = "[\"MistralForCausalLM\"]";
    c["head_dim"] = jsonInt(effectiveHeadDim(spec));
    c["sliding_window"] =
        spec.slidingWindow > 0 ? jsonInt(spec.slidingWindow) : "null";
    break;
  case Family::Qwen2:
    c["architectures"] = "[\"Qwen2ForCausalLM\"]";
    if (spec.headDim > 0)
      c["head_dim"] = jsonInt(spec.headDim);
    c["use_sliding_window"] = jsonBool(spec.slidingWindow > 0);
    // Qwen2 checkpoints carry a window even when it is off.
    c["sliding_window"] = jsonInt(spec.slidingWindow > 0 ? spec.slidingWindow
                                                         : spec.maxPositions);
    c["max_window_layers"] = jsonInt(effectiveMaxWindowLayers(spec));
    break;
  case Family::Qwen2Moe:
    // As Qwen/Qwen1.5-MoE-A2.7B's (no qkv_bias key: true).
    c["architectures"] = "[\"Qwen2MoeForCausalLM\"]";
    c["use_sliding_window"] = jsonBool(spec.slidingWindow > 0);
    c["sliding_window"] = jsonInt(spec.slidingWindow > 0 ? spec.slidingWindow
                                                         : spec.maxPositions);
    c["max_window_layers"] = jsonInt(effectiveMaxWindowLayers(spec));
    c["rope_theta"] = jsonIntegralOrDouble(spec.ropeTheta);
    writeQwenMoeKeys(spec, c);
    c["shared_expert_intermediate_size"] = jsonInt(spec.sharedExpertFfn);
    writeLayerTypes(spec, c);
    break;
  case Family::Qwen3Moe:
    // As Qwen/Qwen3-30B-A3B's, with the qwen3 keys below.
    writeQwenMoeKeys(spec, c);
    [[fallthrough]];
  case Family::Qwen3:
    // As Qwen3's checkpoints (transformers 4.51): head_dim always (absent
    // means 128), a null window when it is off, rope_scaling null and an
    // integral rope_theta written as an int.
    c["architectures"] = family == Family::Qwen3Moe
                             ? "[\"Qwen3MoeForCausalLM\"]"
                             : "[\"Qwen3ForCausalLM\"]";
    c["transformers_version"] = "\"4.51.0\"";
    c["head_dim"] = jsonInt(effectiveHeadDim(spec));
    c["attention_bias"] = jsonBool(spec.attentionBias);
    c["max_window_layers"] = jsonInt(effectiveMaxWindowLayers(spec));
    c["rope_theta"] = jsonIntegralOrDouble(spec.ropeTheta);
    writeQwenStyleWindow(spec, c);
    break;
  case Family::SmolLM3: {
    // As HuggingFaceTB/SmolLM3-3B's (transformers 4.53): no head_dim key
    // unless given, a null window when off, mlp_bias false, the
    // no_rope_layers list or interval when set, rope_scaling null.
    c["architectures"] = "[\"SmolLM3ForCausalLM\"]";
    c["transformers_version"] = "\"4.53.0\"";
    if (spec.headDim > 0)
      c["head_dim"] = jsonInt(spec.headDim);
    c["attention_bias"] = jsonBool(spec.attentionBias);
    c["mlp_bias"] = "false";
    if (spec.noRopeLayerInterval > 0)
      c["no_rope_layer_interval"] = jsonInt(spec.noRopeLayerInterval);
    if (!spec.noRopeLayers.empty()) {
      std::string list;
      for (int v : spec.noRopeLayers)
        list += (list.empty() ? "" : ", ") + std::to_string(v);
      c["no_rope_layers"] = "[" + list + "]";
    }
    writeQwenStyleWindow(spec, c);
    break;
  }
  case Family::Gemma:
    c["architectures"] = "[\"GemmaForCausalLM\"]";
    c["head_dim"] = jsonInt(effectiveHeadDim(spec));
    // transformers 4.38-4.47 read hidden_activation (hidden_act ignored),
    // later ones hidden_act: both say the same.
    c["hidden_activation"] = jsonString("gelu_pytorch_tanh");
    c["attention_bias"] = "false";
    c["bos_token_id"] = id(2);
    c["eos_token_id"] = id(1);
    c["pad_token_id"] = id(0);
    break;
  case Family::Phi3:
    c["architectures"] = "[\"Phi3ForCausalLM\"]";
    c["attention_bias"] = "false";
    c["embd_pdrop"] = "0.0";
    c["resid_pdrop"] = "0.0";
    if (spec.ropeScaling.type == RopeScaling::Type::LongRope) {
      c["original_max_position_embeddings"] =
          jsonInt(spec.ropeScaling.originalMaxPositions);
      c["rope_scaling"] = ropeScalingJson(spec);
    } else {
      c["original_max_position_embeddings"] = jsonInt(spec.maxPositions);
      c["rope_scaling"] = "null";
    }
    if (spec.rotaryFraction > 0)
      c["partial_rotary_factor"] = jsonDouble(spec.rotaryFraction);
    c["sliding_window"] = "null";
    c["eos_token_id"] = id(v - 1);
    c["pad_token_id"] = id(v - 1); // Phi3Config's default (32000) > vocab
    break;
  case Family::GPTNeoX:
    c["architectures"] = "[\"GPTNeoXForCausalLM\"]";
    c["attention_bias"] = "true";
    c["attention_dropout"] = "0.0";
    c["bos_token_id"] = id(0);
    c["classifier_dropout"] = "0.1";
    c["eos_token_id"] = id(0);
    c["hidden_act"] = jsonString(effectiveActivation(spec));
    c["hidden_dropout"] = "0.0";
    c["hidden_size"] = jsonInt(spec.hidden);
    c["intermediate_size"] = jsonInt(spec.ffn);
    c["layer_norm_eps"] = jsonDouble(spec.normEps);
    c["max_position_embeddings"] = jsonInt(spec.maxPositions);
    c["num_attention_heads"] = jsonInt(spec.heads);
    c["num_hidden_layers"] = jsonInt(spec.layers);
    c["rope_scaling"] = "null";
    c["rotary_emb_base"] = jsonIntegralOrDouble(spec.ropeTheta);
    c["rotary_pct"] = jsonDouble(
        spec.rotaryFraction > 0 ? spec.rotaryFraction : 0.25);
    c["use_parallel_residual"] = jsonBool(spec.parallelResidual);
    break;
  case Family::GPTJ:
    c["activation_function"] = jsonString(effectiveActivation(spec));
    c["architectures"] = "[\"GPTJForCausalLM\"]";
    c["attn_pdrop"] = "0.0";
    c["bos_token_id"] = id(v - 1);
    c["embd_pdrop"] = "0.0";
    c["eos_token_id"] = id(v - 1);
    c["layer_norm_epsilon"] = jsonDouble(spec.normEps);
    c["n_embd"] = jsonInt(spec.hidden);
    c["n_head"] = jsonInt(spec.heads);
    c["n_inner"] = spec.ffn > 0 ? jsonInt(spec.ffn) : "null";
    c["n_layer"] = jsonInt(spec.layers);
    c["n_positions"] = jsonInt(spec.maxPositions);
    c["resid_pdrop"] = "0.0";
    c["rotary_dim"] = jsonInt(effectiveRotaryDims(spec));
    break;
  case Family::OPT:
    c["_remove_final_layer_norm"] = "false";
    c["activation_dropout"] = "0.0";
    c["activation_function"] = jsonString(effectiveActivation(spec));
    c["architectures"] = "[\"OPTForCausalLM\"]";
    c["attention_dropout"] = "0.0";
    c["bos_token_id"] = id(2);
    c["do_layer_norm_before"] = jsonBool(spec.layerNormBefore);
    c["dropout"] = "0.1";
    c["enable_bias"] = "true";
    c["eos_token_id"] = id(2);
    c["ffn_dim"] = jsonInt(spec.ffn);
    c["hidden_size"] = jsonInt(spec.hidden);
    c["init_std"] = "0.02";
    c.erase("initializer_range");
    c["layer_norm_elementwise_affine"] = "true";
    c["layerdrop"] = "0.0";
    c["max_position_embeddings"] = jsonInt(spec.maxPositions);
    c["num_attention_heads"] = jsonInt(spec.heads);
    c["num_hidden_layers"] = jsonInt(spec.layers);
    c["pad_token_id"] = id(1);
    c["word_embed_proj_dim"] = jsonInt(spec.hidden);
    break;
  case Family::Bloom:
    c["apply_residual_connection_post_layernorm"] = "false";
    c["architectures"] = "[\"BloomForCausalLM\"]";
    c["attention_dropout"] = "0.0";
    c["bos_token_id"] = id(1);
    c["eos_token_id"] = id(2);
    c["hidden_dropout"] = "0.0";
    c["hidden_size"] = jsonInt(spec.hidden);
    c["layer_norm_epsilon"] = jsonDouble(spec.normEps);
    c["n_head"] = jsonInt(spec.heads);
    c["n_layer"] = jsonInt(spec.layers);
    c["pad_token_id"] = id(3);
    c["pretraining_tp"] = "1";
    c["slow_but_exact"] = "false";
    break;
  case Family::XGLM:
    c["activation_dropout"] = "0.0";
    c["activation_function"] = jsonString(effectiveActivation(spec));
    c["architectures"] = "[\"XGLMForCausalLM\"]";
    c["attention_dropout"] = "0.1";
    c["attention_heads"] = jsonInt(spec.heads);
    c["bos_token_id"] = id(0);
    c["d_model"] = jsonInt(spec.hidden);
    c["decoder_start_token_id"] = id(2);
    c["dropout"] = "0.1";
    c["eos_token_id"] = id(2);
    c["ffn_dim"] = jsonInt(spec.ffn);
    c["init_std"] = "0.02";
    c.erase("initializer_range");
    c["layerdrop"] = "0.0";
    c["max_position_embeddings"] = jsonInt(spec.maxPositions);
    c["num_layers"] = jsonInt(spec.layers);
    c["pad_token_id"] = id(1);
    c["scale_embedding"] = jsonBool(spec.scaleEmbedding);
    break;
  default:
    break;
  }
  JsonObjectWriter w;
  for (const auto &[key, value] : c)
    w.add(key, value);
  return w.finish();
}

} // namespace

std::string configJson(const ModelSpec &spec) {
  JsonObjectWriter w;
  const char *torchDtype = spec.dtype == DType::F32   ? "\"float32\""
                           : spec.dtype == DType::F16 ? "\"float16\""
                                                      : "\"bfloat16\"";
  if (spec.family != Family::GPT2 && spec.family != Family::Llama)
    return familyConfigJson(spec, torchDtype);
  if (spec.family == Family::GPT2) {
    w.add("activation_function", jsonString(effectiveActivation(spec)));
    w.add("architectures", "[\"GPT2LMHeadModel\"]");
    w.add("attn_pdrop", "0.1");
    w.add("bos_token_id", jsonInt(spec.vocab - 1));
    w.add("embd_pdrop", "0.1");
    w.add("eos_token_id", jsonInt(spec.vocab - 1));
    w.add("initializer_range", "0.02");
    w.add("layer_norm_epsilon", jsonDouble(spec.normEps));
    w.add("model_type", "\"gpt2\"");
    w.add("n_ctx", jsonInt(spec.maxPositions));
    w.add("n_embd", jsonInt(spec.hidden));
    w.add("n_head", jsonInt(spec.heads));
    w.add("n_inner", spec.ffn > 0 ? jsonInt(spec.ffn) : "null");
    w.add("n_layer", jsonInt(spec.layers));
    w.add("n_positions", jsonInt(spec.maxPositions));
    w.add("reorder_and_upcast_attn", "false");
    w.add("resid_pdrop", "0.1");
    w.add("scale_attn_by_inverse_layer_idx", "false");
    w.add("scale_attn_weights", "true");
    w.add("summary_activation", "null");
    w.add("summary_first_dropout", "0.1");
    w.add("summary_proj_to_labels", "true");
    w.add("summary_type", "\"cls_index\"");
    w.add("summary_use_proj", "true");
    w.add("torch_dtype", torchDtype);
    w.add("transformers_version", "\"4.44.0\"");
    w.add("use_cache", "true");
    w.add("vocab_size", jsonInt(spec.vocab));
  } else {
    w.add("architectures", "[\"LlamaForCausalLM\"]");
    w.add("attention_bias", "false");
    w.add("attention_dropout", "0.0");
    w.add("bos_token_id", jsonInt(std::min<int64_t>(1, spec.vocab - 1)));
    w.add("eos_token_id", jsonInt(std::min<int64_t>(2, spec.vocab - 1)));
    if (spec.headDim > 0)
      w.add("head_dim", jsonInt(spec.headDim));
    w.add("hidden_act", "\"silu\"");
    w.add("hidden_size", jsonInt(spec.hidden));
    w.add("initializer_range", "0.02");
    w.add("intermediate_size", jsonInt(spec.ffn));
    w.add("max_position_embeddings", jsonInt(spec.maxPositions));
    w.add("mlp_bias", "false");
    w.add("model_type", "\"llama\"");
    w.add("num_attention_heads", jsonInt(spec.heads));
    w.add("num_hidden_layers", jsonInt(spec.layers));
    w.add("num_key_value_heads", jsonInt(effectiveKvHeads(spec)));
    w.add("pretraining_tp", "1");
    w.add("rms_norm_eps", jsonDouble(spec.normEps));
    w.add("rope_scaling", ropeScalingJson(spec));
    w.add("rope_theta", jsonDouble(spec.ropeTheta));
    w.add("tie_word_embeddings", spec.tieEmbeddings ? "true" : "false");
    w.add("torch_dtype", torchDtype);
    w.add("transformers_version", "\"4.44.0\"");
    w.add("use_cache", "true");
    w.add("vocab_size", jsonInt(spec.vocab));
  }
  return w.finish();
}


//===----------------------------------------------------------------------===//
// model.safetensors
//===----------------------------------------------------------------------===//

namespace {

/// Writes `tensors` (in this order, back to back) as one safetensors file at
/// `finalPath`, through a temporary file renamed into place.
bool writeSafetensors(const ModelSpec &spec,
                      const std::vector<TensorDesc> &tensors,
                      const std::string &finalPath, std::string &error) {
  // The header: tensors back to back in plan order.
  size_t elemSize = dtypeSize(spec.dtype);
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (const TensorDesc &t : tensors) {
    uint64_t bytes = static_cast<uint64_t>(numElements(t)) * elemSize;
    header += "," + jsonString(t.name) + ":{\"dtype\":\"" +
              dtypeName(spec.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // Pad with spaces so that the data starts 8-byte aligned.
  while ((8 + header.size()) % 8 != 0)
    header += ' ';

  // Write next to the destination and rename, so that a failed or
  // interrupted run never leaves a truncated file under the final name.
  std::string tmpPath = finalPath + ".tmp";
  FilePtr f(std::fopen(tmpPath.c_str(), "wb"));
  if (!f) {
    error = "cannot create '" + tmpPath + "': " + errnoText();
    return false;
  }
  auto fail = [&](const std::string &what) {
    error = "cannot write '" + tmpPath + "': " + what;
    f.reset();
    std::remove(tmpPath.c_str());
    return false;
  };

  unsigned char prefix[8];
  uint64_t headerSize = header.size();
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<unsigned char>(headerSize >> (8 * i));
  if (std::fwrite(prefix, 1, 8, f.get()) != 8 ||
      std::fwrite(header.data(), 1, header.size(), f.get()) != header.size())
    return fail(errnoText());

  // 1M elements per block: large writes, bounded memory.
  const size_t kBlock = size_t(1) << 20;
  std::vector<float> values(kBlock);
  std::vector<unsigned char> bytes(kBlock * 4);
  // A tensor's values from its stream (or its parts', one after another).
  auto write = [&](const TensorDesc &t) -> bool {
    TensorFiller filler(spec, t);
    size_t remaining = static_cast<size_t>(numElements(t));
    while (remaining > 0) {
      size_t n = std::min(remaining, kBlock);
      filler.fill(values.data(), n);
      for (size_t i = 0; i < n; ++i) {
        switch (spec.dtype) {
        case DType::F32:
          storeLE32(&bytes[4 * i], floatBits(values[i]));
          break;
        case DType::F16:
          storeLE16(&bytes[2 * i], floatToHalf(values[i]));
          break;
        case DType::BF16:
          storeLE16(&bytes[2 * i], floatToBFloat16(values[i]));
          break;
        }
      }
      size_t byteCount = n * elemSize;
      if (std::fwrite(bytes.data(), 1, byteCount, f.get()) != byteCount)
        return false;
      remaining -= n;
    }
    return true;
  };
  for (const TensorDesc &t : tensors) {
    bool written = t.parts.empty() ? write(t) : true;
    for (const TensorDesc &part : t.parts)
      written = written && write(part);
    if (!written)
      return fail(errnoText());
  }
  if (std::fclose(f.release()) != 0)
    return fail(errnoText());
  std::error_code ec;
  std::filesystem::rename(tmpPath, finalPath, ec);
  if (ec) {
    std::remove(tmpPath.c_str());
    error = "cannot rename '" + tmpPath + "' to '" + finalPath +
            "': " + ec.message();
    return false;
  }
  return true;
}

/// Removes `path` if it exists (the other weights form of an earlier run,
/// which a loader would otherwise pick up instead).
bool removeStale(const std::string &path, std::string &error) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) {
    error = "cannot remove '" + path + "': " + ec.message();
    return false;
  }
  return true;
}

} // namespace

bool writeTensorFile(const ModelSpec &spec,
                     const std::vector<TensorDesc> &tensors,
                     const std::string &path, std::string &error) {
  return writeSafetensors(spec, tensors, path, error);
}

std::string shardFileName(int64_t shard, int64_t shards) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05lld-of-%05lld.safetensors",
                static_cast<long long>(shard), static_cast<long long>(shards));
  return name;
}

bool writeModel(const ModelSpec &spec, const std::string &dir,
                std::string &error) {
  std::vector<TensorDesc> tensors;
  if (!planTensors(spec, tensors, error))
    return false;
  if (spec.shards < 0 || spec.shards > static_cast<int64_t>(tensors.size())) {
    error = "cannot write " + std::to_string(spec.shards) +
            " shards: the model has " + std::to_string(tensors.size()) +
            " tensors";
    return false;
  }

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot create directory '" + dir + "': " + ec.message();
    return false;
  }
  std::filesystem::path root(dir);
  if (!writeTextFile((root / "config.json").string(), configJson(spec), error))
    return false;
  std::string single = (root / "model.safetensors").string();
  std::string index = (root / "model.safetensors.index.json").string();
  if (spec.shards == 0)
    return writeSafetensors(spec, tensors, single, error) &&
           removeStale(index, error);

  // Shard k holds tensors [k T / N, (k + 1) T / N) of the plan, in order,
  // as Hugging Face names them; the index maps every tensor to its shard.
  int64_t count = static_cast<int64_t>(tensors.size());
  uint64_t totalSize = 0;
  std::string weightMap;
  for (int64_t k = 0; k < spec.shards; ++k) {
    std::string name = shardFileName(k + 1, spec.shards);
    std::vector<TensorDesc> part(tensors.begin() + k * count / spec.shards,
                                 tensors.begin() +
                                     (k + 1) * count / spec.shards);
    for (const TensorDesc &t : part) {
      weightMap += std::string(weightMap.empty() ? "" : ",\n") + "    " +
                   jsonString(t.name) + ": " + jsonString(name);
      totalSize += static_cast<uint64_t>(numElements(t)) * dtypeSize(spec.dtype);
    }
    if (!writeSafetensors(spec, part, (root / name).string(), error))
      return false;
  }
  std::string indexJson = "{\n  \"metadata\": {\n    \"total_size\": " +
                          std::to_string(totalSize) +
                          "\n  },\n  \"weight_map\": {\n" + weightMap +
                          "\n  }\n}\n";
  return writeTextFile(index, indexJson, error) && removeStale(single, error);
}

} // namespace modelgen
} // namespace attn
