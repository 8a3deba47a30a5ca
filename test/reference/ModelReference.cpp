//===- ModelReference.cpp - Naive whole-model reference -------------------===//
//
// See ModelReference.h. The JSON reader here is deliberately minimal (it
// reads what config.json and safetensors headers contain, strictly) and
// private to this file.
//
//===----------------------------------------------------------------------===//

#include "ModelReference.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>

namespace attn {
namespace ref {

namespace {

//===----------------------------------------------------------------------===//
// A minimal JSON reader
//===----------------------------------------------------------------------===//

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0.0;
  std::string text;
  std::vector<JsonValue> items;
  /// Object members in file order.
  std::vector<std::pair<std::string, JsonValue>> members;

  const JsonValue *get(const std::string &key) const {
    for (const auto &member : members)
      if (member.first == key)
        return &member.second;
    return nullptr;
  }
};

class JsonParser {
public:
  explicit JsonParser(const std::string &text) : text(text) {}

  /// Parses the whole text as one value; on failure sets `error` to a
  /// message with the byte offset.
  bool parse(JsonValue &value, std::string &error) {
    skipSpace();
    if (!parseValue(value, 0)) {
      error = message + " at byte " + std::to_string(pos);
      return false;
    }
    skipSpace();
    if (pos != text.size()) {
      error = "trailing characters at byte " + std::to_string(pos);
      return false;
    }
    return true;
  }

private:
  bool fail(const std::string &what) {
    message = what;
    return false;
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool parseValue(JsonValue &value, int depth) {
    if (depth > 64)
      return fail("nesting too deep");
    if (pos >= text.size())
      return fail("unexpected end of text");
    char ch = text[pos];
    if (ch == '{')
      return parseObject(value, depth);
    if (ch == '[')
      return parseArray(value, depth);
    if (ch == '"') {
      value.kind = JsonValue::Kind::String;
      return parseString(value.text);
    }
    if (literal("null")) {
      value.kind = JsonValue::Kind::Null;
      return true;
    }
    if (literal("true") || literal("false")) {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = ch == 't';
      return true;
    }
    // Python's json writes these for non-finite floats.
    if (literal("NaN")) {
      value.kind = JsonValue::Kind::Number;
      value.number = std::nan("");
      return true;
    }
    if (literal("Infinity") || literal("-Infinity")) {
      value.kind = JsonValue::Kind::Number;
      value.number = ch == '-' ? -HUGE_VAL : HUGE_VAL;
      return true;
    }
    return parseNumber(value);
  }

  bool parseNumber(JsonValue &value) {
    size_t start = pos;
    auto digits = [&]() {
      size_t from = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos > from;
    };
    if (pos < text.size() && text[pos] == '-')
      ++pos;
    if (!digits())
      return fail("expected a value");
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("expected digits after '.'");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("expected an exponent");
    }
    value.kind = JsonValue::Kind::Number;
    value.number =
        std::strtod(text.substr(start, pos - start).c_str(), nullptr);
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parseHex4(uint32_t &cp) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      cp <<= 4;
      if (c >= '0' && c <= '9')
        cp |= c - '0';
      else if (c >= 'a' && c <= 'f')
        cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        cp |= c - 'A' + 10;
      else
        return fail("bad \\u escape");
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // the opening quote
    out.clear();
    while (true) {
      if (pos >= text.size())
        return fail("unterminated string");
      char ch = text[pos++];
      if (ch == '"')
        return true;
      if (static_cast<unsigned char>(ch) < 0x20)
        return fail("control character in string");
      if (ch != '\\') {
        out += ch;
        continue;
      }
      if (pos >= text.size())
        return fail("unterminated string");
      char esc = text[pos++];
      switch (esc) {
      case '"':
      case '\\':
      case '/':
        out += esc;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00 && text.compare(pos, 2, "\\u") == 0) {
          pos += 2;
          uint32_t low;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low >= 0xE000)
            return fail("bad surrogate pair");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail("bad escape in string");
      }
    }
  }

  bool parseArray(JsonValue &value, int depth) {
    value.kind = JsonValue::Kind::Array;
    ++pos;
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      JsonValue item;
      skipSpace();
      if (!parseValue(item, depth + 1))
        return false;
      value.items.push_back(std::move(item));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool parseObject(JsonValue &value, int depth) {
    value.kind = JsonValue::Kind::Object;
    ++pos;
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    std::set<std::string> seen;
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a key");
      std::string key;
      if (!parseString(key))
        return false;
      // Two values for one key would make "which one counts" ambiguous.
      if (!seen.insert(key).second)
        return fail("duplicate key \"" + key + "\"");
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':'");
      ++pos;
      skipSpace();
      JsonValue member;
      if (!parseValue(member, depth + 1))
        return false;
      value.members.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  const std::string &text;
  size_t pos = 0;
  std::string message;
};

//===----------------------------------------------------------------------===//
// config.json fields
//===----------------------------------------------------------------------===//

const int64_t kMaxDim = int64_t(1) << 24;

/// Reads typed config fields and remembers the first error.
class ConfigReader {
public:
  explicit ConfigReader(const JsonValue &root) : root(root) {}

  bool has(const std::string &key) const {
    const JsonValue *v = root.get(key);
    return v && v->kind != JsonValue::Kind::Null;
  }

  /// A positive integer; `fallback` < 0 means required.
  int64_t integer(const std::string &key, int64_t fallback = -1) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null) {
      if (fallback < 0)
        setError("missing key \"" + key + "\"");
      return fallback;
    }
    if (v->kind != JsonValue::Kind::Number ||
        v->number != std::floor(v->number) || v->number < 1 ||
        v->number > kMaxDim) {
      setError("\"" + key + "\" must be an integer in [1, " +
               std::to_string(kMaxDim) + "]");
      return fallback < 0 ? 1 : fallback;
    }
    return static_cast<int64_t>(v->number);
  }

  double number(const std::string &key, double fallback) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return fallback;
    if (v->kind != JsonValue::Kind::Number || !std::isfinite(v->number)) {
      setError("\"" + key + "\" must be a finite number");
      return fallback;
    }
    return v->number;
  }

  bool boolean(const std::string &key, bool fallback) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return fallback;
    if (v->kind != JsonValue::Kind::Bool) {
      setError("\"" + key + "\" must be true or false");
      return fallback;
    }
    return v->boolean;
  }

  std::string string(const std::string &key, const std::string &fallback) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return fallback;
    if (v->kind != JsonValue::Kind::String) {
      setError("\"" + key + "\" must be a string");
      return fallback;
    }
    return v->text;
  }

  void setError(const std::string &message) {
    if (error.empty())
      error = message;
  }

  std::string error;

private:
  const JsonValue &root;
};

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

std::FILE *asFile(void *f) { return static_cast<std::FILE *>(f); }

bool readWholeFile(const std::string &path, std::string &out,
                   std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  out.clear();
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.append(buf, n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) {
    error = path + ": read error";
    return false;
  }
  return true;
}

bool seekTo(std::FILE *f, uint64_t offset) {
#if defined(_WIN32)
  return _fseeki64(f, static_cast<long long>(offset), SEEK_SET) == 0;
#else
  return fseeko(f, static_cast<off_t>(offset), SEEK_SET) == 0;
#endif
}

bool hostIsLittleEndian() {
  uint32_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

size_t dtypeWidth(const std::string &dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" ||
      dtype == "F8_E5M2")
    return 1;
  return 0;
}

bool isFloatDtype(const std::string &dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Tensor names
//===----------------------------------------------------------------------===//

const char *kGpt2Prefix = "transformer.";

enum class NameKind { Weight, Buffer, Unknown };

/// What a stored tensor is to the model, and its canonical name.
NameKind classify(const ModelConfig &config,
                  const std::set<std::string> &weightNames,
                  const std::string &stored, std::string &canonical) {
  canonical = stored;
  bool gpt2 = config.architecture == Architecture::GPT2;
  if (gpt2 && stored.rfind(kGpt2Prefix, 0) == 0)
    canonical = stored.substr(std::strlen(kGpt2Prefix));
  if (weightNames.count(canonical))
    return NameKind::Weight;
  // Non-weight buffers of real checkpoints, per layer, and the tied head a
  // checkpoint may still carry as a copy of the embeddings.
  if (canonical == "lm_head.weight" && config.tieEmbeddings)
    return NameKind::Buffer;
  for (int64_t i = 0; i < config.layers; ++i) {
    std::string layer = std::to_string(i);
    if (gpt2 && (canonical == "h." + layer + ".attn.bias" ||
                 canonical == "h." + layer + ".attn.masked_bias"))
      return NameKind::Buffer;
    if (!gpt2 &&
        canonical == "model.layers." + layer + ".self_attn.rotary_emb.inv_freq")
      return NameKind::Buffer;
  }
  return NameKind::Unknown;
}

/// Turns any exception of the op references into an error string: they
/// throw std::invalid_argument on shape mismatches.
template <typename Fn> bool guarded(Fn fn, std::string &error) {
  try {
    fn();
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

/// Attributes of the compiled ops are f32: round like they do.
double asF32(double value) {
  return static_cast<double>(static_cast<float>(value));
}

/// Columns [col, col + width) of a [rows, stride] matrix.
std::vector<float> columns(const std::vector<float> &m, int64_t rows,
                           int64_t stride, int64_t col, int64_t width) {
  std::vector<float> out(rows * width);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(m.begin() + r * stride + col, width, out.begin() + r * width);
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

bool parseModelConfig(const std::string &jsonText, ModelConfig &config,
                      std::string &error) {
  JsonValue root;
  std::string parseError;
  if (!JsonParser(jsonText).parse(root, parseError)) {
    error = "invalid JSON: " + parseError;
    return false;
  }
  if (root.kind != JsonValue::Kind::Object) {
    error = "the top level is not an object";
    return false;
  }
  ConfigReader r(root);
  ModelConfig c;
  std::string type = r.string("model_type", "");
  if (type == "gpt2") {
    c.architecture = Architecture::GPT2;
    c.hidden = r.integer("n_embd");
    c.layers = r.integer("n_layer");
    c.heads = r.integer("n_head");
    c.kvHeads = c.heads;
    c.vocab = r.integer("vocab_size");
    c.maxPositions =
        r.has("n_positions") ? r.integer("n_positions") : r.integer("n_ctx");
    c.ffn = r.integer("n_inner", 4 * c.hidden);
    c.normEps = r.number("layer_norm_epsilon", 1e-5);
    c.tieEmbeddings = true;
    std::string act = r.string("activation_function", "gelu_new");
    if (act == "gelu_new" || act == "gelu_pytorch_tanh")
      c.gelu = GeluApproximation::Tanh;
    else if (act == "gelu")
      c.gelu = GeluApproximation::Erf;
    else
      r.setError("unsupported activation_function \"" + act + "\"");
    if (!r.boolean("scale_attn_weights", true))
      r.setError("scale_attn_weights: false is not supported");
    if (r.boolean("scale_attn_by_inverse_layer_idx", false))
      r.setError("scale_attn_by_inverse_layer_idx: true is not supported");
    if (r.error.empty() && c.hidden % c.heads != 0)
      r.setError("n_head (" + std::to_string(c.heads) +
                 ") does not divide n_embd (" + std::to_string(c.hidden) + ")");
    c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
  } else if (type == "llama") {
    c.architecture = Architecture::Llama;
    c.hidden = r.integer("hidden_size");
    c.layers = r.integer("num_hidden_layers");
    c.heads = r.integer("num_attention_heads");
    c.kvHeads = r.integer("num_key_value_heads", c.heads);
    c.vocab = r.integer("vocab_size");
    c.maxPositions = r.integer("max_position_embeddings");
    c.ffn = r.integer("intermediate_size");
    // HF LlamaConfig's defaults.
    c.normEps = r.number("rms_norm_eps", 1e-6);
    c.ropeTheta = r.number("rope_theta", 10000.0);
    c.tieEmbeddings = r.boolean("tie_word_embeddings", false);
    if (r.error.empty() && !r.has("head_dim") && c.hidden % c.heads != 0)
      r.setError("num_attention_heads (" + std::to_string(c.heads) +
                 ") does not divide hidden_size (" + std::to_string(c.hidden) +
                 ")");
    c.headDim = r.integer("head_dim", c.heads > 0 ? c.hidden / c.heads : 1);
    std::string act = r.string("hidden_act", "silu");
    if (act != "silu")
      r.setError("unsupported hidden_act \"" + act + "\"");
    if (r.has("rope_scaling"))
      r.setError("rope_scaling is not supported");
    if (r.boolean("attention_bias", false))
      r.setError("attention_bias: true is not supported");
    if (r.boolean("mlp_bias", false))
      r.setError("mlp_bias: true is not supported");
    if (r.error.empty() && c.heads % c.kvHeads != 0)
      r.setError("num_key_value_heads (" + std::to_string(c.kvHeads) +
                 ") does not divide num_attention_heads (" +
                 std::to_string(c.heads) + ")");
    if (r.error.empty() && c.headDim % 2 != 0)
      r.setError("head_dim (" + std::to_string(c.headDim) +
                 ") must be even for rotary embeddings");
    if (r.error.empty() && !(c.ropeTheta > 0))
      r.setError("rope_theta must be positive");
  } else if (type.empty()) {
    r.setError("missing key \"model_type\"");
  } else {
    r.setError("unsupported model_type \"" + type +
               "\" (expected gpt2 or llama)");
  }
  if (r.error.empty() && c.normEps < 0)
    r.setError("the norm epsilon must not be negative");
  if (!r.error.empty()) {
    error = r.error;
    return false;
  }
  config = c;
  return true;
}

bool loadModelConfig(const std::string &path, ModelConfig &config,
                     std::string &error) {
  std::string text;
  if (!readWholeFile(path, text, error))
    return false;
  std::string why;
  if (!parseModelConfig(text, config, why)) {
    error = path + ": " + why;
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24); // subnormal
  } else if (exponent == 31) {
    uint32_t out = sign | 0x7F800000 | (mantissa << 13);
    float f;
    std::memcpy(&f, &out, 4);
    return f;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400),
                           static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (file)
    std::fclose(asFile(file));
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path,
                                                       std::string &error) {
  std::unique_ptr<SafetensorsFile> st(new SafetensorsFile());
  st->filePath = path;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return nullptr;
  }
  st->file = f;
  if (!seekTo(f, 0) || std::fseek(f, 0, SEEK_END) != 0) {
    error = path + ": cannot seek";
    return nullptr;
  }
#if defined(_WIN32)
  long long fileSizeSigned = _ftelli64(f);
#else
  long long fileSizeSigned = ftello(f);
#endif
  if (fileSizeSigned < 0 || !seekTo(f, 0)) {
    error = path + ": cannot seek";
    return nullptr;
  }
  uint64_t fileSize = static_cast<uint64_t>(fileSizeSigned);
  unsigned char prefix[8];
  if (fileSize < 8 || std::fread(prefix, 1, 8, f) != 8) {
    error = path + ": too short for a safetensors file";
    return nullptr;
  }
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= static_cast<uint64_t>(prefix[i]) << (8 * i);
  // The format caps headers at 100 MB; anything larger is not safetensors.
  if (headerSize > fileSize - 8 || headerSize > (uint64_t(100) << 20)) {
    error = path + ": header size " + std::to_string(headerSize) +
            " does not fit the file (" + std::to_string(fileSize) +
            " bytes); not a safetensors file?";
    return nullptr;
  }
  std::string header(headerSize, '\0');
  if (std::fread(&header[0], 1, headerSize, f) != headerSize) {
    error = path + ": cannot read the header";
    return nullptr;
  }
  st->dataStart = 8 + headerSize;
  uint64_t dataSize = fileSize - st->dataStart;

  JsonValue root;
  std::string parseError;
  if (!JsonParser(header).parse(root, parseError)) {
    error = path + ": invalid header JSON: " + parseError;
    return nullptr;
  }
  if (root.kind != JsonValue::Kind::Object) {
    error = path + ": the header is not a JSON object";
    return nullptr;
  }
  auto isUInt = [](const JsonValue &v) {
    return v.kind == JsonValue::Kind::Number && v.number >= 0 &&
           v.number == std::floor(v.number) && v.number < 9.007199254740992e15;
  };
  for (const auto &member : root.members) {
    const std::string &name = member.first;
    const JsonValue &desc = member.second;
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &what) {
      error = path + ": tensor '" + name + "': " + what;
      return nullptr;
    };
    if (desc.kind != JsonValue::Kind::Object)
      return bad("entry is not an object");
    const JsonValue *dtype = desc.get("dtype");
    const JsonValue *shape = desc.get("shape");
    const JsonValue *offsets = desc.get("data_offsets");
    if (!dtype || dtype->kind != JsonValue::Kind::String)
      return bad("missing \"dtype\"");
    if (!shape || shape->kind != JsonValue::Kind::Array)
      return bad("missing \"shape\"");
    if (!offsets || offsets->kind != JsonValue::Kind::Array ||
        offsets->items.size() != 2 || !isUInt(offsets->items[0]) ||
        !isUInt(offsets->items[1]))
      return bad("\"data_offsets\" must be two non-negative integers");
    Entry e;
    e.name = name;
    e.dtype = dtype->text;
    uint64_t elements = 1;
    for (const JsonValue &d : shape->items) {
      if (!isUInt(d) || d.number > 1e12)
        return bad("bad dimension in \"shape\"");
      e.shape.push_back(static_cast<int64_t>(d.number));
      elements *= static_cast<uint64_t>(d.number);
      if (elements > (uint64_t(1) << 48))
        return bad("shape too large");
    }
    e.begin = static_cast<uint64_t>(offsets->items[0].number);
    e.end = static_cast<uint64_t>(offsets->items[1].number);
    if (e.begin > e.end || e.end > dataSize)
      return bad("data_offsets [" + std::to_string(e.begin) + ", " +
                 std::to_string(e.end) + "] outside the " +
                 std::to_string(dataSize) + "-byte data section");
    size_t width = dtypeWidth(e.dtype);
    if (width && e.end - e.begin != elements * width)
      return bad(std::to_string(e.end - e.begin) + " bytes for shape " +
                 shapeText(e.shape) + " of " + e.dtype + " (expected " +
                 std::to_string(elements * width) + ")");
    st->entryList.push_back(std::move(e));
  }
  return st;
}

bool SafetensorsFile::read(const Entry &entry, std::vector<float> &out,
                           std::string &error) const {
  if (!isFloatDtype(entry.dtype)) {
    error = filePath + ": tensor '" + entry.name + "' has dtype " +
            entry.dtype + "; only F32, F16 and BF16 are supported";
    return false;
  }
  std::FILE *f = asFile(file);
  uint64_t bytes = entry.end - entry.begin;
  if (!seekTo(f, dataStart + entry.begin)) {
    error = filePath + ": cannot seek to tensor '" + entry.name + "'";
    return false;
  }
  bool little = hostIsLittleEndian();
  if (entry.dtype == "F32") {
    out.resize(bytes / 4);
    if (std::fread(out.data(), 1, bytes, f) != bytes) {
      error = filePath + ": cannot read tensor '" + entry.name + "'";
      return false;
    }
    if (!little) {
      for (float &v : out) {
        unsigned char b[4];
        std::memcpy(b, &v, 4);
        std::swap(b[0], b[3]);
        std::swap(b[1], b[2]);
        std::memcpy(&v, b, 4);
      }
    }
    return true;
  }
  std::vector<unsigned char> raw(bytes);
  if (std::fread(raw.data(), 1, bytes, f) != bytes) {
    error = filePath + ": cannot read tensor '" + entry.name + "'";
    return false;
  }
  bool half = entry.dtype == "F16";
  out.resize(bytes / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t bits = static_cast<uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
    out[i] = half ? halfToFloat(bits) : bfloat16ToFloat(bits);
  }
  return true;
}

bool readSafetensors(const std::string &path,
                     std::map<std::string, StoredTensor> &tensors,
                     std::string &error) {
  std::unique_ptr<SafetensorsFile> file = SafetensorsFile::open(path, error);
  if (!file)
    return false;
  std::map<std::string, StoredTensor> result;
  for (const SafetensorsFile::Entry &e : file->entries()) {
    StoredTensor &t = result[e.name];
    t.dtype = e.dtype;
    t.shape = e.shape;
    if (isFloatDtype(e.dtype) && !file->read(e, t.data, error))
      return false;
  }
  tensors = std::move(result);
  return true;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

std::vector<std::pair<std::string, std::vector<int64_t>>>
ModelReference::expectedWeights(const ModelConfig &c) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  int64_t d = c.hidden, f = c.ffn;
  if (c.architecture == Architecture::GPT2) {
    out.push_back({"wte.weight", {c.vocab, d}});
    out.push_back({"wpe.weight", {c.maxPositions, d}});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string h = "h." + std::to_string(i) + ".";
      out.push_back({h + "ln_1.weight", {d}});
      out.push_back({h + "ln_1.bias", {d}});
      out.push_back({h + "attn.c_attn.weight", {d, 3 * d}});
      out.push_back({h + "attn.c_attn.bias", {3 * d}});
      out.push_back({h + "attn.c_proj.weight", {d, d}});
      out.push_back({h + "attn.c_proj.bias", {d}});
      out.push_back({h + "ln_2.weight", {d}});
      out.push_back({h + "ln_2.bias", {d}});
      out.push_back({h + "mlp.c_fc.weight", {d, f}});
      out.push_back({h + "mlp.c_fc.bias", {f}});
      out.push_back({h + "mlp.c_proj.weight", {f, d}});
      out.push_back({h + "mlp.c_proj.bias", {d}});
    }
    out.push_back({"ln_f.weight", {d}});
    out.push_back({"ln_f.bias", {d}});
  } else {
    int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
    out.push_back({"model.embed_tokens.weight", {c.vocab, d}});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      out.push_back({l + "input_layernorm.weight", {d}});
      out.push_back({l + "self_attn.q_proj.weight", {q, d}});
      out.push_back({l + "self_attn.k_proj.weight", {kv, d}});
      out.push_back({l + "self_attn.v_proj.weight", {kv, d}});
      out.push_back({l + "self_attn.o_proj.weight", {d, q}});
      out.push_back({l + "post_attention_layernorm.weight", {d}});
      out.push_back({l + "mlp.gate_proj.weight", {f, d}});
      out.push_back({l + "mlp.up_proj.weight", {f, d}});
      out.push_back({l + "mlp.down_proj.weight", {d, f}});
    }
    out.push_back({"model.norm.weight", {d}});
    if (!c.tieEmbeddings)
      out.push_back({"lm_head.weight", {c.vocab, d}});
  }
  return out;
}

namespace {

/// Shared by load and create: matches stored names to the expected weights
/// and checks shapes. `fetch` supplies the data of a stored tensor.
template <typename Fetch>
bool collectWeights(
    const ModelConfig &config,
    const std::vector<std::pair<std::string, std::string>> &storedNameAndDtype,
    const std::map<std::string, std::vector<int64_t>> &shapes,
    const std::string &where, Fetch fetch,
    std::map<std::string, std::vector<float>> &weights, std::string &error,
    std::vector<std::string> *warnings) {
  auto expected = ModelReference::expectedWeights(config);
  std::set<std::string> weightNames;
  std::map<std::string, std::vector<int64_t>> expectedShape;
  for (const auto &[name, shape] : expected) {
    weightNames.insert(name);
    expectedShape[name] = shape;
  }
  std::map<std::string, std::string> storedFor; // canonical -> stored
  for (const auto &[stored, dtype] : storedNameAndDtype) {
    std::string canonical;
    switch (classify(config, weightNames, stored, canonical)) {
    case NameKind::Buffer:
      continue;
    case NameKind::Unknown:
      if (warnings)
        warnings->push_back(where + ": ignoring unknown tensor '" + stored +
                            "'");
      continue;
    case NameKind::Weight:
      break;
    }
    auto [it, inserted] = storedFor.emplace(canonical, stored);
    if (!inserted) {
      error = where + ": tensor '" + canonical + "' is stored twice, as '" +
              it->second + "' and '" + stored + "'";
      return false;
    }
    if (!isFloatDtype(dtype)) {
      error = where + ": tensor '" + stored + "' has dtype " + dtype +
              "; only F32, F16 and BF16 are supported";
      return false;
    }
    const std::vector<int64_t> &shape = shapes.at(stored);
    if (shape != expectedShape[canonical]) {
      error = where + ": tensor '" + stored + "' has shape " +
              shapeText(shape) + ", expected " +
              shapeText(expectedShape[canonical]);
      return false;
    }
  }
  for (const auto &[name, shape] : expected) {
    auto it = storedFor.find(name);
    if (it == storedFor.end()) {
      error = where + ": missing tensor '" + name + "' (shape " +
              shapeText(shape) + ")";
      return false;
    }
    std::vector<float> data;
    if (!fetch(it->second, data, error))
      return false;
    weights[name] = std::move(data);
  }
  return true;
}

} // namespace

std::unique_ptr<ModelReference>
ModelReference::load(const std::string &dir, std::string &error,
                     std::vector<std::string> *warnings) {
  std::unique_ptr<ModelReference> model(new ModelReference());
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  if (!loadModelConfig(base + "config.json", model->modelConfig, error))
    return nullptr;
  std::unique_ptr<SafetensorsFile> file =
      SafetensorsFile::open(base + "model.safetensors", error);
  if (!file)
    return nullptr;
  std::vector<std::pair<std::string, std::string>> names;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, const SafetensorsFile::Entry *> entries;
  for (const SafetensorsFile::Entry &e : file->entries()) {
    names.push_back({e.name, e.dtype});
    shapes[e.name] = e.shape;
    entries[e.name] = &e;
  }
  auto fetch = [&](const std::string &stored, std::vector<float> &data,
                   std::string &err) {
    return file->read(*entries.at(stored), data, err);
  };
  if (!collectWeights(model->modelConfig, names, shapes, file->path(), fetch,
                      model->weights, error, warnings))
    return nullptr;
  return model;
}

std::unique_ptr<ModelReference>
ModelReference::create(const ModelConfig &config,
                       const std::map<std::string, StoredTensor> &tensors,
                       std::string &error, std::vector<std::string> *warnings) {
  std::unique_ptr<ModelReference> model(new ModelReference());
  model->modelConfig = config;
  std::vector<std::pair<std::string, std::string>> names;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto &[name, t] : tensors) {
    names.push_back({name, t.dtype.empty() ? "F32" : t.dtype});
    shapes[name] = t.shape;
  }
  auto fetch = [&](const std::string &stored, std::vector<float> &data,
                   std::string &err) {
    const StoredTensor &t = tensors.at(stored);
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    if (t.data.size() != static_cast<size_t>(n)) {
      err = "tensor '" + stored + "' holds " + std::to_string(t.data.size()) +
            " values for shape " + shapeText(t.shape);
      return false;
    }
    data = t.data;
    return true;
  };
  if (!collectWeights(config, names, shapes, "tensors", fetch, model->weights,
                      error, warnings))
    return nullptr;
  return model;
}

const std::vector<float> *
ModelReference::weight(const std::string &name) const {
  auto it = weights.find(name);
  return it == weights.end() ? nullptr : &it->second;
}

const std::vector<float> &ModelReference::w(const std::string &name) const {
  return weights.at(name); // Present: load/create checked every name.
}

bool ModelReference::forward(const std::vector<int64_t> &tokens,
                             std::vector<float> &logits,
                             std::string &error) const {
  const ModelConfig &c = modelConfig;
  int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 1 || n > c.maxPositions) {
    error = "the sequence has " + std::to_string(n) +
            " tokens; the model takes 1 to " + std::to_string(c.maxPositions);
    return false;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab) {
      error = "token " + std::to_string(tokens[i]) + " at position " +
              std::to_string(i) + " is outside the vocabulary [0, " +
              std::to_string(c.vocab) + ")";
      return false;
    }
  }
  return guarded(
      [&]() {
        logits = c.architecture == Architecture::GPT2 ? forwardGpt2(tokens)
                                                      : forwardLlama(tokens);
      },
      error);
}

std::vector<float>
ModelReference::forwardGpt2(const std::vector<int64_t> &ids) const {
  const ModelConfig &c = modelConfig;
  int64_t n = static_cast<int64_t>(ids.size());
  int64_t d = c.hidden, f = c.ffn;
  double eps = asF32(c.normEps);
  AttentionParams attn;
  attn.heads = attn.kvHeads = c.heads;
  attn.headDim = c.headDim;
  attn.scale = asF32(defaultScale(c.headDim));
  attn.causal = true;

  std::vector<int64_t> positions(n);
  for (int64_t p = 0; p < n; ++p)
    positions[p] = p;
  std::vector<float> x =
      residualAdd(embedding(w("wte.weight"), c.vocab, d, ids),
                  embedding(w("wpe.weight"), c.maxPositions, d, positions));
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string l = "h." + std::to_string(i) + ".";
    std::vector<float> h =
        layerNorm(x, n, d, w(l + "ln_1.weight"), w(l + "ln_1.bias"), eps);
    std::vector<float> qkv =
        linear(h, n, d, w(l + "attn.c_attn.weight"), 3 * d, WeightLayout::InOut,
               w(l + "attn.c_attn.bias").data());
    std::vector<float> a =
        attention(columns(qkv, n, 3 * d, 0, d), n, columns(qkv, n, 3 * d, d, d),
                  columns(qkv, n, 3 * d, 2 * d, d), n, attn);
    x = residualAdd(x, linear(a, n, d, w(l + "attn.c_proj.weight"), d,
                              WeightLayout::InOut,
                              w(l + "attn.c_proj.bias").data()));
    std::vector<float> h2 =
        layerNorm(x, n, d, w(l + "ln_2.weight"), w(l + "ln_2.bias"), eps);
    std::vector<float> up =
        gelu(linear(h2, n, d, w(l + "mlp.c_fc.weight"), f, WeightLayout::InOut,
                    w(l + "mlp.c_fc.bias").data()),
             c.gelu);
    x = residualAdd(x, linear(up, n, f, w(l + "mlp.c_proj.weight"), d,
                              WeightLayout::InOut,
                              w(l + "mlp.c_proj.bias").data()));
  }
  x = layerNorm(x, n, d, w("ln_f.weight"), w("ln_f.bias"), eps);
  return linear(x, n, d, w("wte.weight"), c.vocab, WeightLayout::OutIn);
}

std::vector<float>
ModelReference::forwardLlama(const std::vector<int64_t> &ids) const {
  const ModelConfig &c = modelConfig;
  int64_t n = static_cast<int64_t>(ids.size());
  int64_t d = c.hidden, f = c.ffn, hd = c.headDim;
  int64_t qWidth = c.heads * hd, kvWidth = c.kvHeads * hd;
  double eps = asF32(c.normEps), theta = asF32(c.ropeTheta);
  AttentionParams attn;
  attn.heads = c.heads;
  attn.kvHeads = c.kvHeads;
  attn.headDim = hd;
  attn.scale = asF32(defaultScale(hd));
  attn.causal = true;
  const WeightLayout linearLayout = WeightLayout::OutIn;

  std::vector<float> x =
      embedding(w("model.embed_tokens.weight"), c.vocab, d, ids);
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string l = "model.layers." + std::to_string(i) + ".";
    std::vector<float> h =
        rmsNorm(x, n, d, w(l + "input_layernorm.weight"), eps);
    std::vector<float> q =
        linear(h, n, d, w(l + "self_attn.q_proj.weight"), qWidth, linearLayout);
    std::vector<float> k = linear(h, n, d, w(l + "self_attn.k_proj.weight"),
                                  kvWidth, linearLayout);
    std::vector<float> v = linear(h, n, d, w(l + "self_attn.v_proj.weight"),
                                  kvWidth, linearLayout);
    // HF LlamaAttention's rotate_half pairs x[i] with x[i + hd/2].
    q = rope(q, n, qWidth, hd, theta, RopePairing::RotateHalf, 0);
    k = rope(k, n, kvWidth, hd, theta, RopePairing::RotateHalf, 0);
    std::vector<float> a = attention(q, n, k, v, n, attn);
    x = residualAdd(x, linear(a, n, qWidth, w(l + "self_attn.o_proj.weight"), d,
                              linearLayout));
    std::vector<float> h2 =
        rmsNorm(x, n, d, w(l + "post_attention_layernorm.weight"), eps);
    std::vector<float> gate =
        linear(h2, n, d, w(l + "mlp.gate_proj.weight"), f, linearLayout);
    std::vector<float> up =
        linear(h2, n, d, w(l + "mlp.up_proj.weight"), f, linearLayout);
    x = residualAdd(x, linear(swiglu(gate, up), n, f,
                              w(l + "mlp.down_proj.weight"), d, linearLayout));
  }
  x = rmsNorm(x, n, d, w("model.norm.weight"), eps);
  const std::vector<float> &head =
      c.tieEmbeddings ? w("model.embed_tokens.weight") : w("lm_head.weight");
  return linear(x, n, d, head, c.vocab, linearLayout);
}

int64_t argmax(const float *values, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(values[i]))
      return i; // NaN is the maximum, as torch.argmax: never hide one.
    if (values[i] > values[best])
      best = i;
  }
  return best;
}

} // namespace ref
} // namespace attn
