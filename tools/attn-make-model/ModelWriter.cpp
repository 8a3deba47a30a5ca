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
#include <limits>
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
      : tensor(tensor),
        stream(tensorStreamSeed(spec.seed, tensor.canonicalName)) {
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
    case TensorInit::Normal:
      return static_cast<float>(tensor.mean + tensor.stddev * stream.next());
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

  const TensorDesc &tensor;
  NormalStream stream;
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
// Specs and presets
//===----------------------------------------------------------------------===//

int64_t effectiveKvHeads(const ModelSpec &spec) {
  return spec.kvHeads > 0 ? spec.kvHeads : spec.heads;
}

int64_t effectiveFfn(const ModelSpec &spec) {
  if (spec.ffn > 0)
    return spec.ffn;
  return spec.family == Family::GPT2 ? 4 * spec.hidden : 0;
}

int64_t effectiveHeadDim(const ModelSpec &spec) {
  if (spec.headDim > 0)
    return spec.headDim;
  return spec.heads > 0 ? spec.hidden / spec.heads : 0;
}

std::string effectiveActivation(const ModelSpec &spec) {
  if (!spec.activation.empty())
    return spec.activation;
  return spec.family == Family::GPT2 ? "gelu_new" : "silu";
}

std::vector<std::string> presetNames() {
  return {"tiny-gpt2", "tiny-llama", "tiny-llama-tied", "gpt2-small",
          "llama-15m", "llama-110m"};
}

/// Token embeddings of tied presets. With a tied output projection and
/// unit-variance embeddings the input token's own logit (|e_t|^2 ~ hidden)
/// dominates every row, so argmaxes ignore what the layers compute; at 0.25
/// a mask or layout bug flips most argmaxes (ModelReference.BugsAreVisible).
constexpr double kTiedEmbeddingStd = 0.25;

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
  } else {
    return false;
  }
  spec = s;
  return true;
}

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

  int64_t kvHeads = effectiveKvHeads(spec);
  if (spec.family == Family::GPT2) {
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
  } else {
    if (spec.headDim == 0 && spec.hidden % spec.heads != 0)
      return "heads (" + std::to_string(spec.heads) +
             ") must divide the hidden size (" + std::to_string(spec.hidden) +
             ") unless head dim is given";
    if (spec.heads % kvHeads != 0)
      return "kv heads (" + std::to_string(kvHeads) + ") must divide heads (" +
             std::to_string(spec.heads) + ")";
    if (effectiveHeadDim(spec) % 2 != 0)
      return "head dim (" + std::to_string(effectiveHeadDim(spec)) +
             ") must be even for rotary embeddings";
    if (spec.ffn < 1)
      return "llama needs an ffn (intermediate_size) >= 1";
    if (!(spec.ropeTheta > 0) || !std::isfinite(spec.ropeTheta))
      return "rope theta must be positive and finite, got " +
             jsonDouble(spec.ropeTheta);
    if (!spec.prefix.empty())
      return "a tensor name prefix applies only to gpt2 models";
    if (effectiveActivation(spec) != "silu")
      return "llama models use hidden_act silu, got '" + spec.activation + "'";
  }
  return "";
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

bool planTensors(const ModelSpec &spec, std::vector<TensorDesc> &tensors,
                 std::string &error) {
  if (std::string e = validateSpec(spec); !e.empty()) {
    error = e;
    return false;
  }
  std::vector<TensorDesc> plan;
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 double mean, double stddev,
                 TensorInit init = TensorInit::Normal) {
    TensorDesc t;
    t.canonicalName = name;
    t.name = spec.prefix + name;
    t.shape = std::move(shape);
    t.init = init;
    t.mean = mean;
    t.stddev = stddev;
    plan.push_back(std::move(t));
  };
  auto projection = [&](const std::string &name, int64_t rows, int64_t cols,
                        int64_t fanIn) {
    add(name, {rows, cols}, 0.0, 1.0 / std::sqrt(static_cast<double>(fanIn)));
  };
  auto gain = [&](const std::string &name, int64_t d) {
    add(name, {d}, 1.0, 0.1);
  };
  auto bias = [&](const std::string &name, int64_t d) {
    add(name, {d}, 0.0, 0.1);
  };

  int64_t d = spec.hidden, v = spec.vocab, p = spec.maxPositions;
  int64_t f = effectiveFfn(spec);
  if (spec.family == Family::GPT2) {
    add("wte.weight", {v, d}, 0.0, spec.embeddingStd);
    add("wpe.weight", {p, d}, 0.0, 1.0);
    for (int64_t i = 0; i < spec.layers; ++i) {
      std::string h = "h." + std::to_string(i) + ".";
      gain(h + "ln_1.weight", d);
      bias(h + "ln_1.bias", d);
      if (spec.extraBuffers) {
        add(h + "attn.bias", {1, 1, p, p}, 0.0, 0.0, TensorInit::CausalMask);
        add(h + "attn.masked_bias", {}, -1e4, 0.0, TensorInit::Constant);
      }
      // Conv1D weights are [in, out]: fan-in is the first dimension.
      projection(h + "attn.c_attn.weight", d, 3 * d, d);
      bias(h + "attn.c_attn.bias", 3 * d);
      projection(h + "attn.c_proj.weight", d, d, d);
      bias(h + "attn.c_proj.bias", d);
      gain(h + "ln_2.weight", d);
      bias(h + "ln_2.bias", d);
      projection(h + "mlp.c_fc.weight", d, f, d);
      bias(h + "mlp.c_fc.bias", f);
      projection(h + "mlp.c_proj.weight", f, d, f);
      bias(h + "mlp.c_proj.bias", d);
    }
    gain("ln_f.weight", d);
    bias("ln_f.bias", d);
  } else {
    int64_t hd = effectiveHeadDim(spec);
    int64_t qWidth = spec.heads * hd, kvWidth = effectiveKvHeads(spec) * hd;
    add("model.embed_tokens.weight", {v, d}, 0.0, spec.embeddingStd);
    for (int64_t i = 0; i < spec.layers; ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      gain(l + "input_layernorm.weight", d);
      // nn.Linear weights are [out, in]: fan-in is the second dimension.
      projection(l + "self_attn.q_proj.weight", qWidth, d, d);
      projection(l + "self_attn.k_proj.weight", kvWidth, d, d);
      projection(l + "self_attn.v_proj.weight", kvWidth, d, d);
      projection(l + "self_attn.o_proj.weight", d, qWidth, qWidth);
      if (spec.extraBuffers)
        add(l + "self_attn.rotary_emb.inv_freq", {hd / 2}, 0.0, 0.0,
            TensorInit::InvFreq);
      gain(l + "post_attention_layernorm.weight", d);
      projection(l + "mlp.gate_proj.weight", f, d, d);
      projection(l + "mlp.up_proj.weight", f, d, d);
      projection(l + "mlp.down_proj.weight", d, f, f);
    }
    gain("model.norm.weight", d);
    if (!spec.tieEmbeddings)
      projection("lm_head.weight", v, d, d);
  }

  std::set<std::string> names;
  for (const TensorDesc &t : plan)
    names.insert(t.name);
  for (const std::string &extra : spec.extraTensors) {
    if (extra.empty()) {
      error = "an extra tensor needs a non-empty name";
      return false;
    }
    if (!names.insert(extra).second) {
      error = "extra tensor '" + extra + "' is already in the model";
      return false;
    }
    TensorDesc t;
    t.name = t.canonicalName = extra;
    t.shape = {8};
    plan.push_back(std::move(t));
  }
  for (const std::string &omit : spec.omitTensors) {
    auto it = std::find_if(plan.begin(), plan.end(), [&](const TensorDesc &t) {
      return t.name == omit || t.canonicalName == omit;
    });
    if (it == plan.end()) {
      error = "cannot omit '" + omit + "': the model has no such tensor";
      return false;
    }
    plan.erase(it);
  }
  for (const ModelSpec::Poison &poison : spec.poison) {
    auto it = std::find_if(plan.begin(), plan.end(), [&](const TensorDesc &t) {
      return t.name == poison.tensor || t.canonicalName == poison.tensor;
    });
    if (it == plan.end()) {
      error = "cannot poison '" + poison.tensor +
              "': the model has no such tensor";
      return false;
    }
    if (poison.index < 0 || poison.index >= numElements(*it)) {
      error = "cannot poison element " + std::to_string(poison.index) +
              " of '" + poison.tensor + "': it has " +
              std::to_string(numElements(*it)) + " elements";
      return false;
    }
    it->overrides.push_back({poison.index, poison.value});
  }
  tensors = std::move(plan);
  return true;
}

std::vector<float> tensorValues(const ModelSpec &spec,
                                const TensorDesc &tensor) {
  std::vector<float> out(static_cast<size_t>(numElements(tensor)));
  TensorFiller filler(spec, tensor);
  filler.fill(out.data(), out.size());
  return out;
}

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

std::string configJson(const ModelSpec &spec) {
  JsonObjectWriter w;
  const char *torchDtype = spec.dtype == DType::F32   ? "\"float32\""
                           : spec.dtype == DType::F16 ? "\"float16\""
                                                      : "\"bfloat16\"";
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
    w.add("rope_scaling", "null");
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
  for (const TensorDesc &t : tensors) {
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
        return fail(errnoText());
      remaining -= n;
    }
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
