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
#include <stdexcept>

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

/// Reads typed config fields and remembers the first error. A child reader
/// (for rope_scaling) names its keys "parent.key" and reports to its parent.
class ConfigReader {
public:
  explicit ConfigReader(const JsonValue &root, std::string prefix = "",
                        std::string *sink = nullptr)
      : root(root), prefix(std::move(prefix)), sink(sink) {}

  /// The key is in the file, with any value (null included).
  bool present(const std::string &key) const { return root.get(key); }

  /// The key is in the file with a non-null value.
  bool has(const std::string &key) const {
    const JsonValue *v = root.get(key);
    return v && v->kind != JsonValue::Kind::Null;
  }

  const JsonValue *value(const std::string &key) const { return root.get(key); }

  /// A reader of the object `v` (this file's `key`) that names its keys
  /// "key.inner" and reports to this reader's error.
  ConfigReader child(const JsonValue &v, const std::string &key) {
    return ConfigReader(v, name(key) + ".", sink ? sink : &error);
  }

  std::string name(const std::string &key) const { return prefix + key; }

  /// An integer in [minValue, kMaxDim]; `fallback` < 0 means required.
  /// Absent and null both take the fallback.
  int64_t integer(const std::string &key, int64_t fallback = -1,
                  int64_t minValue = 1) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null) {
      if (fallback < 0)
        setError("missing key \"" + name(key) + "\"");
      return fallback;
    }
    if (v->kind != JsonValue::Kind::Number ||
        v->number != std::floor(v->number) || v->number < minValue ||
        v->number > kMaxDim) {
      setError("\"" + name(key) + "\" must be an integer in [" +
               std::to_string(minValue) + ", " + std::to_string(kMaxDim) + "]");
      return fallback < 0 ? std::max<int64_t>(minValue, 1) : fallback;
    }
    return static_cast<int64_t>(v->number);
  }

  double number(const std::string &key, double fallback) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return fallback;
    if (v->kind != JsonValue::Kind::Number || !std::isfinite(v->number)) {
      setError("\"" + name(key) + "\" must be a finite number");
      return fallback;
    }
    return v->number;
  }

  /// A required finite number.
  double requiredNumber(const std::string &key) {
    if (!has(key)) {
      setError("missing key \"" + name(key) + "\"");
      return 1.0;
    }
    return number(key, 1.0);
  }

  bool boolean(const std::string &key, bool fallback) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return fallback;
    if (v->kind != JsonValue::Kind::Bool) {
      setError("\"" + name(key) + "\" must be true or false");
      return fallback;
    }
    return v->boolean;
  }

  std::string string(const std::string &key, const std::string &fallback) {
    const JsonValue *v = root.get(key);
    if (!v || v->kind == JsonValue::Kind::Null)
      return fallback;
    if (v->kind != JsonValue::Kind::String) {
      setError("\"" + name(key) + "\" must be a string");
      return fallback;
    }
    return v->text;
  }

  /// A required integer that HF reads under two names (attribute_map):
  /// either may be given; both must then agree.
  int64_t aliased(const std::string &key, const std::string &alias) {
    if (has(key) && has(alias)) {
      int64_t a = integer(key), b = integer(alias);
      if (a != b)
        setError("\"" + name(key) + "\" (" + std::to_string(a) + ") and \"" +
                 name(alias) + "\" (" + std::to_string(b) + ") disagree");
      return a;
    }
    return has(alias) ? integer(alias) : integer(key);
  }

  void setError(const std::string &message) {
    std::string &target = sink ? *sink : error;
    if (target.empty())
      target = message;
  }

  bool failed() const { return !(sink ? *sink : error).empty(); }

  std::string error;

private:
  const JsonValue &root;
  std::string prefix;
  std::string *sink;
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

/// The prefix of HF's base model (base_model_prefix + "."): stored names
/// may omit it, as in files saved from the bare model. GPT-2's canonical
/// names are bare instead (see classify).
std::string basePrefix(const ModelConfig &c) {
  if (c.multimodal)
    return "model.language_model.";
  switch (c.architecture) {
  case Architecture::GPT2:
    return "";
  case Architecture::GPTNeoX:
    return "gpt_neox.";
  case Architecture::GPTJ:
  case Architecture::Bloom:
    return "transformer.";
  default:
    return "model.";
  }
}

/// The canonical name of the output projection.
std::string headName(const ModelConfig &c) {
  return c.architecture == Architecture::GPTNeoX ? "embed_out.weight"
                                                 : "lm_head.weight";
}

/// The tensors of layer `layer`'s sparse MoE block, canonical names: the
/// router and each expert's gate, up and down projections (qwen3_moe and
/// qwen2_moe mlp.gate and mlp.experts.E.{gate,up,down}_proj; mixtral
/// block_sparse_moe.gate and block_sparse_moe.experts.E.{w1,w3,w2}), and
/// qwen2_moe's shared expert: the module prefix of its gate_proj, up_proj
/// and down_proj (mlp.shared_expert.) and its gate's weight
/// (mlp.shared_expert_gate.weight); empty without one.
struct MoeNames {
  std::string router;
  std::vector<std::string> gate, up, down;
  std::string shared, sharedGate;
};

/// gpt_oss's stacked expert tensors of layer `layer`, canonical names.
struct StackedExpertNames {
  std::string router, routerBias, gateUp, gateUpBias, down, downBias;
};

StackedExpertNames stackedExpertNames(int64_t layer) {
  const std::string m = "model.layers." + std::to_string(layer) + ".mlp.";
  return {m + "router.weight",          m + "router.bias",
          m + "experts.gate_up_proj",   m + "experts.gate_up_proj_bias",
          m + "experts.down_proj",      m + "experts.down_proj_bias"};
}

bool isMoeLayer(const ModelConfig &c, int64_t layer) {
  return layer < static_cast<int64_t>(c.moeLayers.size()) &&
         c.moeLayers[layer];
}

MoeNames moeNames(const ModelConfig &c, int64_t layer) {
  const bool mixtral = c.architecture == Architecture::Mixtral;
  const std::string block = basePrefix(c) + "layers." + std::to_string(layer) +
                            (mixtral ? ".block_sparse_moe." : ".mlp.");
  MoeNames names;
  names.router = block + "gate.weight";
  for (int64_t e = 0; e < c.experts; ++e) {
    const std::string expert = block + "experts." + std::to_string(e) + ".";
    names.gate.push_back(expert + (mixtral ? "w1" : "gate_proj") + ".weight");
    names.up.push_back(expert + (mixtral ? "w3" : "up_proj") + ".weight");
    names.down.push_back(expert + (mixtral ? "w2" : "down_proj") + ".weight");
  }
  if (c.sharedExpertFfn > 0) {
    names.shared = block + "shared_expert.";
    names.sharedGate = block + "shared_expert_gate.weight";
  }
  return names;
}

/// Whether the family's experts may be stored as transformers 5 stacks them
/// (MixtralExperts, Qwen2MoeExperts, Qwen3MoeExperts).
bool readsStackedExperts(const ModelConfig &c) {
  return c.architecture == Architecture::Qwen3Moe ||
         c.architecture == Architecture::Qwen2Moe ||
         c.architecture == Architecture::Mixtral;
}

/// transformers 5's names of the sparse layers' weights (its conversion
/// mapping, read backwards): mlp.experts.gate_up_proj [experts, 2 ffn,
/// hidden], whose slab e is expert e's gate rows then its up rows
/// (torch.cat([w1 | gate_proj, w3 | up_proj], dim=1)), and
/// mlp.experts.down_proj [experts, hidden, ffn]; mixtral's router renamed
/// from block_sparse_moe.gate to mlp.gate.
std::map<std::string, WeightAlias> weightAliases(const ModelConfig &c) {
  std::map<std::string, WeightAlias> out;
  if (!readsStackedExperts(c))
    return out;
  for (int64_t i = 0; i < c.layers; ++i) {
    if (!isMoeLayer(c, i))
      continue;
    const MoeNames names = moeNames(c, i);
    const std::string m = basePrefix(c) + "layers." + std::to_string(i) + ".mlp.";
    WeightAlias gateUp, down;
    gateUp.stacked = down.stacked = true;
    gateUp.shape = {c.experts, 2 * c.expertFfn, c.hidden};
    down.shape = {c.experts, c.hidden, c.expertFfn};
    for (int64_t e = 0; e < c.experts; ++e) {
      gateUp.weights.push_back(names.gate[e]);
      gateUp.weights.push_back(names.up[e]);
      down.weights.push_back(names.down[e]);
    }
    out[m + "experts.gate_up_proj"] = std::move(gateUp);
    out[m + "experts.down_proj"] = std::move(down);
    if (c.architecture == Architecture::Mixtral)
      out[m + "gate.weight"] = {{names.router}, {c.experts, c.hidden}, false};
  }
  return out;
}

/// The non-weight buffers real checkpoints carry, canonical names.
std::set<std::string> bufferNames(const ModelConfig &c) {
  std::set<std::string> out;
  if (c.tieEmbeddings)
    out.insert(headName(c)); // a tied head saved as a copy
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string l = std::to_string(i);
    switch (c.architecture) {
    case Architecture::GPT2:
      out.insert("h." + l + ".attn.bias");
      out.insert("h." + l + ".attn.masked_bias");
      break;
    case Architecture::GPTJ:
      out.insert("transformer.h." + l + ".attn.bias");
      out.insert("transformer.h." + l + ".attn.masked_bias");
      break;
    case Architecture::GPTNeoX:
      out.insert("gpt_neox.layers." + l + ".attention.bias");
      out.insert("gpt_neox.layers." + l + ".attention.masked_bias");
      out.insert("gpt_neox.layers." + l + ".attention.rotary_emb.inv_freq");
      break;
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
    case Architecture::SmolLM3:
    case Architecture::Gemma:
    case Architecture::Gemma2:
    case Architecture::Gemma3:
    case Architecture::Phi3:
    case Architecture::Qwen3Moe:
    case Architecture::Qwen2Moe:
    case Architecture::Mixtral:
    case Architecture::GptOss:
      out.insert(basePrefix(c) + "layers." + l +
                 ".self_attn.rotary_emb.inv_freq");
      break;
    default:
      break;
    }
  }
  if (c.architecture == Architecture::GPTNeoX)
    out.insert("gpt_neox.rotary_emb.inv_freq");
  if (c.rotaryDim > 0 && c.architecture != Architecture::GPTJ &&
      c.architecture != Architecture::GPTNeoX)
    out.insert(basePrefix(c) + "rotary_emb.inv_freq");
  if (c.architecture == Architecture::XGLM) {
    out.insert("model.embed_positions.weights");
    out.insert("model.embed_positions._float_tensor");
  }
  return out;
}

enum class NameKind { Weight, Buffer, Unknown };

/// What a stored tensor is to the model, and its canonical name.
NameKind classify(const ModelConfig &config,
                  const std::set<std::string> &weightNames,
                  const std::set<std::string> &buffers,
                  const std::string &stored, std::string &canonical) {
  canonical = stored;
  if (config.multimodal) {
    // Gemma3ForConditionalGeneration's _checkpoint_conversion_mapping: the
    // files' language_model.model.* and language_model.lm_head are
    // model.language_model.* and lm_head since transformers 4.52. The
    // image part (vision_tower, multi_modal_projector, under model. in the
    // new layout) is not run (the config's note says so).
    auto startsWith = [&](const char *p) { return stored.rfind(p, 0) == 0; };
    if (startsWith("language_model.model."))
      canonical = "model.language_model." +
                  stored.substr(std::strlen("language_model.model."));
    else if (stored == "language_model.lm_head.weight")
      canonical = "lm_head.weight";
    for (const char *p : {"vision_tower.", "multi_modal_projector.",
                          "model.vision_tower.", "model.multi_modal_projector."})
      if (startsWith(p))
        return NameKind::Buffer;
  }
  if (config.architecture == Architecture::GPT2) {
    if (stored.rfind(kGpt2Prefix, 0) == 0)
      canonical = stored.substr(std::strlen(kGpt2Prefix));
  } else {
    std::string prefix = basePrefix(config);
    if (!weightNames.count(stored) && !buffers.count(stored) &&
        stored.rfind(prefix, 0) != 0 &&
        (weightNames.count(prefix + stored) || buffers.count(prefix + stored)))
      canonical = prefix + stored;
  }
  if (weightNames.count(canonical))
    return NameKind::Weight;
  if (buffers.count(canonical))
    return NameKind::Buffer;
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

const char *modelTypeName(Architecture architecture) {
  switch (architecture) {
  case Architecture::GPT2:
    return "gpt2";
  case Architecture::Llama:
    return "llama";
  case Architecture::Mistral:
    return "mistral";
  case Architecture::Qwen2:
    return "qwen2";
  case Architecture::Qwen3:
    return "qwen3";
  case Architecture::SmolLM3:
    return "smollm3";
  case Architecture::Gemma:
    return "gemma";
  case Architecture::Gemma2:
    return "gemma2";
  case Architecture::Gemma3:
    return "gemma3_text";
  case Architecture::Phi3:
    return "phi3";
  case Architecture::GPTNeoX:
    return "gpt_neox";
  case Architecture::GPTJ:
    return "gptj";
  case Architecture::OPT:
    return "opt";
  case Architecture::Bloom:
    return "bloom";
  case Architecture::XGLM:
    return "xglm";
  case Architecture::Qwen3Moe:
    return "qwen3_moe";
  case Architecture::Qwen2Moe:
    return "qwen2_moe";
  case Architecture::Mixtral:
    return "mixtral";
  case Architecture::GptOss:
    return "gpt_oss";
  }
  return "?";
}

namespace {

std::string numberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

/// ACT2FN names the MLP of every family but GPT-2 may use.
void readActivation(ConfigReader &r, const std::string &key,
                    const std::string &fallback, ModelConfig &c) {
  std::string act = r.string(key, fallback);
  if (act == "silu" || act == "swish")
    c.activation = Activation::Silu;
  else if (act == "gelu")
    c.activation = Activation::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh" ||
           act == "gelu_fast")
    c.activation = Activation::GeluTanh;
  else if (act == "relu")
    c.activation = Activation::Relu;
  else
    r.setError("unsupported " + key + " \"" + act +
               "\" (supported: silu, gelu, gelu_new, gelu_pytorch_tanh, "
               "gelu_fast, relu)");
}

/// The mixture-of-experts keys each MoE family reads.
std::set<std::string> moeKeysOf(Architecture a) {
  if (a == Architecture::Qwen3Moe)
    return {"num_experts", "num_experts_per_tok", "moe_intermediate_size"};
  if (a == Architecture::Qwen2Moe)
    return {"num_experts", "num_experts_per_tok", "moe_intermediate_size",
            "shared_expert_intermediate_size"};
  if (a == Architecture::Mixtral ||
      a == Architecture::GptOss) // num_experts: the attribute_map alias
    return {"num_local_experts", "num_experts", "num_experts_per_tok"};
  return {};
}

/// Mixture-of-experts and multimodal configs: errors naming the key, even
/// where HF would silently ignore it for the model_type. The MoE families
/// (`moeFamily`) take their own keys, and the others' are errors too.
void rejectUnsupportedKeys(ConfigReader &r, const ModelConfig *moeFamily =
                                                nullptr) {
  const std::set<std::string> own =
      moeFamily ? moeKeysOf(moeFamily->architecture) : std::set<std::string>();
  const char *moe[] = {"num_local_experts", "num_experts",
                       "num_experts_per_tok", "n_routed_experts",
                       "moe_intermediate_size"};
  for (const char *key : moe) {
    const JsonValue *v = r.value(key);
    if (own.count(key) || !v || v->kind == JsonValue::Kind::Null ||
        (v->kind == JsonValue::Kind::Number && v->number == 0))
      continue;
    if (moeFamily) {
      std::string keys;
      for (const std::string &k : own)
        keys += (keys.empty() ? "" : ", ") + k;
      r.setError("\"" + r.name(key) + "\" is not a key of " +
                 modelTypeName(moeFamily->architecture) +
                 "'s mixture of experts (it reads " + keys + ")");
    } else {
      r.setError("\"" + r.name(key) +
                 "\": mixture-of-experts configs are not supported (only "
                 "model_type qwen3_moe, qwen2_moe, mixtral and gpt_oss)");
    }
  }
  const char *multimodal[] = {"vision_config", "text_config", "audio_config",
                              "vision_tower"};
  for (const char *key : multimodal)
    if (r.has(key))
      r.setError("\"" + r.name(key) +
                 "\": vision and multimodal configs are not supported");
}

/// The original_max_position_embeddings of yarn and llama3: the
/// rope_scaling key, defaulting to max_position_embeddings (HF v5
/// standardize_rope_params). A top-level key of that name takes priority
/// in v5 (an attribute set before standardization) but not in v4: both
/// given and different is an error.
int64_t originalMaxPositions(ConfigReader &r, ConfigReader &rope,
                             ModelConfig &c) {
  const std::string key = "original_max_position_embeddings";
  bool inDict = rope.has(key), topLevel = r.has(key);
  if (inDict && topLevel) {
    int64_t a = rope.integer(key), b = r.integer(key);
    if (a != b)
      r.setError("\"" + rope.name(key) + "\" (" + std::to_string(a) +
                 ") and the top-level \"" + key + "\" (" + std::to_string(b) +
                 ") disagree");
    return a;
  }
  if (inDict)
    return rope.integer(key);
  if (topLevel) {
    c.notes.push_back("config.json: the top-level " + key +
                      " is used for rope scaling (transformers >= 5); "
                      "transformers 4 reads it from rope_scaling only");
    return r.integer(key);
  }
  return c.maxPositions;
}

/// A RoPE key that may sit in the rope dict (transformers 5, `inner`) or
/// at the top level (4, `outer`; empty = none): the same value either way,
/// or an error.
double ropeKey(ConfigReader &r, ConfigReader &rope, const std::string &inner,
               const std::string &outer, double fallback) {
  bool a = rope.has(inner), b = !outer.empty() && r.has(outer);
  double value = a   ? rope.number(inner, fallback)
                 : b ? r.number(outer, fallback)
                     : fallback;
  if (a && b && rope.number(inner, fallback) != r.number(outer, fallback))
    r.setError("\"" + rope.name(inner) + "\" and \"" + r.name(outer) +
               "\" disagree");
  return value;
}

/// longrope's `key` (short_factor or long_factor): a list of rotaryDim / 2
/// positive numbers (Phi3Config and _validate_longrope_rope_parameters check
/// the type and the length; a factor <= 0 would make the frequency
/// infinite or negative).
std::vector<double> longRopeFactors(ConfigReader &rope, const ModelConfig &c,
                                    const std::string &key) {
  const JsonValue *v = rope.value(key);
  const int64_t expected = c.rotaryDim / 2;
  if (!v || v->kind == JsonValue::Kind::Null) {
    rope.setError("missing key \"" + rope.name(key) + "\" (longrope needs " +
                  std::to_string(expected) + " numbers)");
    return {};
  }
  if (v->kind != JsonValue::Kind::Array) {
    rope.setError("\"" + rope.name(key) + "\" must be a list of numbers");
    return {};
  }
  std::vector<double> out;
  for (size_t i = 0; i < v->items.size(); ++i) {
    const JsonValue &item = v->items[i];
    if (item.kind != JsonValue::Kind::Number || !std::isfinite(item.number)) {
      rope.setError("\"" + rope.name(key) + "\" must be a list of numbers " +
                    "(item " + std::to_string(i) + " is not)");
      return {};
    }
    if (!(item.number > 0)) {
      rope.setError("\"" + rope.name(key) + "\" item " + std::to_string(i) +
                    " (" + numberText(item.number) + ") must be positive");
      return {};
    }
    out.push_back(item.number);
  }
  if (static_cast<int64_t>(out.size()) != expected)
    rope.setError("\"" + rope.name(key) + "\" has " +
                  std::to_string(out.size()) + " numbers; longrope needs " +
                  std::to_string(expected) + " (the rotary dims " +
                  std::to_string(c.rotaryDim) + " / 2)");
  return out;
}

/// The rope dict `rope`'s type (rope_type, or the legacy "type"; default
/// when absent) and its parameters, into `sc`; types other than default are
/// read only when `allowScaling`. `phi3`: Phi3Config's rules instead (v5
/// convert_rope_params_to_dict and validate_rope): default or longrope
/// only, "su" and "yarn" renamed to longrope, and
/// original_max_position_embeddings from the top level (default 4096).
void readRopeScaling(ConfigReader &r, ConfigReader &rope, ModelConfig &c,
                     RopeScaling &sc, bool allowScaling, bool phi3 = false) {
  std::string type = rope.string("rope_type", rope.string("type", "default"));
  sc = RopeScaling();
  sc.maxPositions = c.maxPositions;
  if (type == "default")
    return;
  const std::string typeKey =
      rope.has("rope_type") ? rope.name("rope_type") : rope.name("type");
  if (phi3) {
    if (type == "su" || type == "yarn") {
      c.notes.push_back("config.json: \"" + typeKey + "\" \"" + type +
                        "\" is read as longrope, as Phi3Config renames it");
      type = "longrope";
    } else if (type != "longrope") {
      r.setError("\"" + typeKey + "\" \"" + type +
                 "\" is not supported for phi3 (Phi3Config allows default "
                 "and longrope; su and yarn mean longrope)");
      return;
    }
  }
  if (!allowScaling && !phi3) {
    r.setError("\"" + typeKey + "\" \"" + type + "\" is not supported for " +
               modelTypeName(c.architecture) +
               " (rope scaling: llama, mistral, qwen2, qwen3, gemma, gemma2, "
               "gemma3_text; phi3: longrope)");
    return;
  }
  if (type == "linear" || type == "dynamic") {
    sc.type = type == "linear" ? RopeScaling::Type::Linear
                               : RopeScaling::Type::Dynamic;
    sc.factor = rope.requiredNumber("factor");
  } else if (type == "yarn") {
    sc.type = RopeScaling::Type::Yarn;
    sc.originalMaxPositions = originalMaxPositions(r, rope, c);
    if (!rope.present("factor"))
      rope.setError("missing key \"" + rope.name("factor") + "\"");
    // factor: null -> max_position_embeddings / original (v5).
    sc.factor = rope.has("factor")
                    ? rope.number("factor", 1.0)
                    : static_cast<double>(c.maxPositions) /
                          static_cast<double>(sc.originalMaxPositions);
    if (rope.has("attention_factor"))
      sc.attentionFactor = rope.number("attention_factor", 1.0);
    // `rope_parameters.get("beta_fast") or 32`: absent, null and 0 alike.
    sc.betaFast = rope.number("beta_fast", 0.0);
    sc.betaSlow = rope.number("beta_slow", 0.0);
    if (sc.betaFast == 0)
      sc.betaFast = 32.0;
    if (sc.betaSlow == 0)
      sc.betaSlow = 1.0;
    sc.mscale = rope.number("mscale", 0.0);
    sc.mscaleAllDim = rope.number("mscale_all_dim", 0.0);
    sc.truncate = rope.boolean("truncate", true);
    if (rope.has("original_max_position_embeddings") && rope.has("factor")) {
      double implicit = static_cast<double>(c.maxPositions) /
                        static_cast<double>(sc.originalMaxPositions);
      if (implicit != sc.factor)
        c.notes.push_back(
            "config.json: yarn factor " + numberText(sc.factor) +
            " differs from max_position_embeddings / "
            "original_max_position_embeddings = " +
            numberText(implicit) +
            "; the reference follows transformers >= 5 (the explicit "
            "factor); transformers 4 releases since DeepSeek-V3's yarn "
            "changes replaced the factor by the ratio");
    }
  } else if (type == "llama3") {
    sc.type = RopeScaling::Type::Llama3;
    sc.factor = rope.requiredNumber("factor");
    sc.lowFreqFactor = rope.requiredNumber("low_freq_factor");
    sc.highFreqFactor = rope.requiredNumber("high_freq_factor");
    sc.originalMaxPositions = originalMaxPositions(r, rope, c);
    if (!r.failed() && sc.lowFreqFactor == sc.highFreqFactor)
      r.setError("\"" + rope.name("high_freq_factor") +
                 "\" must differ from low_freq_factor");
  } else if (type == "longrope" && phi3) {
    // ROPE_INIT_FUNCTIONS has longrope for every family; the reference
    // reads it for phi3 only (Phi-3.5, Phi-4-mini), the models that use it.
    sc.type = RopeScaling::Type::LongRope;
    if (phi3) {
      // Phi3Config has original_max_position_embeddings (default 4096) and
      // standardize_rope_params gives it priority over the dict's (v5); v4
      // rejects any rope_scaling key but type, short_factor, long_factor.
      const std::string key = "original_max_position_embeddings";
      sc.originalMaxPositions = r.integer(key, 4096);
      if (rope.has(key) && !r.failed() &&
          rope.integer(key) != sc.originalMaxPositions)
        r.setError("\"" + rope.name(key) + "\" (" +
                   std::to_string(rope.integer(key)) +
                   ") differs from phi3's top-level \"" + key + "\" (" +
                   std::to_string(sc.originalMaxPositions) +
                   (r.has(key) ? "" : ", Phi3Config's default") +
                   "), which transformers 5 uses instead");
    } else {
      sc.originalMaxPositions = originalMaxPositions(r, rope, c);
    }
    sc.shortFactor = longRopeFactors(rope, c, "short_factor");
    sc.longFactor = longRopeFactors(rope, c, "long_factor");
    // factor: given, else max_position_embeddings / original (v5); only the
    // default attention factor reads it.
    const double ratio = static_cast<double>(c.maxPositions) /
                         static_cast<double>(sc.originalMaxPositions);
    sc.factor = rope.has("factor") ? rope.number("factor", 1.0) : ratio;
    if (rope.has("attention_factor")) {
      sc.attentionFactor = rope.number("attention_factor", 1.0);
      if (!r.failed() && !(sc.attentionFactor > 0))
        r.setError("\"" + rope.name("attention_factor") +
                   "\" must be positive");
    } else if (rope.has("factor") && sc.factor != ratio) {
      c.notes.push_back(
          "config.json: longrope factor " + numberText(sc.factor) +
          " differs from max_position_embeddings / "
          "original_max_position_embeddings = " +
          numberText(ratio) +
          "; the reference follows transformers >= 5 (the explicit factor "
          "sets the attention factor); transformers 4 used the ratio "
          "whenever original_max_position_embeddings was set");
    }
    if (phi3 && (rope.present("factor") || rope.present("attention_factor")))
      c.notes.push_back("config.json: transformers 4's Phi3Config rejects "
                        "rope_scaling keys other than type, short_factor "
                        "and long_factor; the reference follows "
                        "transformers 5");
  } else {
    r.setError("\"" + typeKey + "\" \"" + type +
               "\" is not supported (supported: default, linear, dynamic, "
               "yarn, llama3; longrope for phi3)");
    return;
  }
  if (!r.failed() && !(sc.factor > 0))
    r.setError("\"" + rope.name("factor") + "\" must be positive");
}

const JsonValue &emptyObject() {
  static const JsonValue kEmpty = [] {
    JsonValue v;
    v.kind = JsonValue::Kind::Object;
    return v;
  }();
  return kEmpty;
}

/// The rope dict of the file: rope_scaling (transformers 4) or
/// rope_parameters (5), never both; an empty object when neither. Sets
/// `key` to the one found.
const JsonValue &ropeDict(ConfigReader &r, std::string &key) {
  key.clear();
  if (r.has("rope_scaling") && r.has("rope_parameters"))
    r.setError("both \"" + r.name("rope_scaling") + "\" and \"" +
               r.name("rope_parameters") + "\" are given");
  else if (r.has("rope_scaling"))
    key = "rope_scaling";
  else if (r.has("rope_parameters"))
    key = "rope_parameters";
  if (key.empty())
    return emptyObject();
  if (r.value(key)->kind != JsonValue::Kind::Object) {
    r.setError("\"" + r.name(key) + "\" must be an object");
    return emptyObject();
  }
  return *r.value(key);
}

/// The RoPE keys of the rotary families: the base (rope_theta, or
/// `thetaKey`), the rotating fraction of each head (`partialKey`, default
/// `partialDefault`), and rope_scaling (or the rope_parameters dict that
/// transformers 5 writes), whose types are read only when `allowScaling`.
void readRope(ConfigReader &r, ModelConfig &c, const std::string &thetaKey,
              const std::string &partialKey, double partialDefault,
              bool allowScaling, double thetaDefault = 10000.0,
              bool phi3 = false) {
  std::string dictKey;
  const JsonValue &dict = ropeDict(r, dictKey);
  ConfigReader rope = r.child(dict, dictKey);
  c.ropeTheta = ropeKey(r, rope, "rope_theta", thetaKey, thetaDefault);
  double partial =
      ropeKey(r, rope, "partial_rotary_factor", partialKey, partialDefault);
  if (r.failed())
    return;
  if (!(c.ropeTheta > 0)) {
    r.setError("\"" +
               (thetaKey.empty() ? std::string("rope_theta") : thetaKey) +
               "\" must be positive");
    return;
  }
  if (!(partial > 0 && partial <= 1)) {
    r.setError("\"" +
               (partialKey.empty() ? std::string("partial_rotary_factor")
                                   : partialKey) +
               "\" must be in (0, 1]");
    return;
  }
  // Python int(head_dim * factor).
  c.rotaryDim = static_cast<int64_t>(static_cast<double>(c.headDim) * partial);
  if (c.rotaryDim == c.headDim && c.headDim % 2 != 0) {
    r.setError("head_dim (" + std::to_string(c.headDim) +
               ") must be even for rotary embeddings");
    return;
  }
  if (c.rotaryDim < 2 || c.rotaryDim % 2 != 0) {
    r.setError("the rotary dimensions (head_dim " + std::to_string(c.headDim) +
               " x " + numberText(partial) + " = " +
               std::to_string(c.rotaryDim) + ") must be even and at least 2");
    return;
  }
  readRopeScaling(r, rope, c, c.ropeScaling, allowScaling, phi3);
}

void requireDivides(ConfigReader &r, int64_t heads, int64_t hidden,
                    const std::string &headsKey, const std::string &hiddenKey) {
  if (!r.failed() && hidden % heads != 0)
    r.setError(headsKey + " (" + std::to_string(heads) + ") does not divide " +
               hiddenKey + " (" + std::to_string(hidden) + ")");
}

void parseGpt2(ConfigReader &r, ModelConfig &c) {
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
  // gelu_fast's 0.7978845608 is sqrt(2/pi) to 3e-11: the tanh form.
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
    c.gelu = GeluApproximation::Tanh;
  else if (act == "gelu")
    c.gelu = GeluApproximation::Erf;
  else
    r.setError("unsupported activation_function \"" + act + "\"");
  c.activation = c.gelu == GeluApproximation::Erf ? Activation::GeluErf
                                                  : Activation::GeluTanh;
  if (!r.boolean("scale_attn_weights", true))
    r.setError("scale_attn_weights: false is not supported");
  if (r.boolean("scale_attn_by_inverse_layer_idx", false))
    r.setError("scale_attn_by_inverse_layer_idx: true is not supported");
  requireDivides(r, c.heads, c.hidden, "n_head", "n_embd");
  c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
  c.attentionBias = c.mlpBias = true;
}

/// layer_types (transformers >= 4.53): one "full_attention" or
/// "sliding_attention" per layer, into c.slidingLayers. False when absent
/// or null.
bool readLayerTypes(ConfigReader &r, ModelConfig &c) {
  if (!r.has("layer_types"))
    return false;
  const JsonValue *types = r.value("layer_types");
  if (types->kind != JsonValue::Kind::Array ||
      static_cast<int64_t>(types->items.size()) != c.layers) {
    r.setError("\"" + r.name("layer_types") +
               "\" must be an array of num_hidden_layers strings");
    return true;
  }
  for (int64_t i = 0; i < c.layers; ++i) {
    const JsonValue &t = types->items[i];
    bool sliding =
        t.kind == JsonValue::Kind::String && t.text == "sliding_attention";
    bool full = t.kind == JsonValue::Kind::String && t.text == "full_attention";
    if (!sliding && !full)
      r.setError("\"" + r.name("layer_types") + "\"[" + std::to_string(i) +
                 "] must be \"full_attention\" or \"sliding_attention\"");
    c.slidingLayers[i] = sliding;
  }
  return true;
}

bool anySliding(const ModelConfig &c) {
  return std::find(c.slidingLayers.begin(), c.slidingLayers.end(), true) !=
         c.slidingLayers.end();
}

/// smollm3's no_rope_layers (one 0 or 1 per layer, at least
/// num_hidden_layers of them; 1 = RoPE), or when absent or null
/// no_rope_layer_interval's (default 4) every interval-th layer NoPE:
/// int((i + 1) % interval != 0), as SmolLM3Config.__post_init__.
void readNoRopeLayers(ConfigReader &r, ModelConfig &c) {
  c.ropeLayers.assign(c.layers > 0 ? c.layers : 0, true);
  if (r.has("no_rope_layers")) {
    const JsonValue *list = r.value("no_rope_layers");
    if (list->kind != JsonValue::Kind::Array ||
        static_cast<int64_t>(list->items.size()) < c.layers) {
      r.setError("\"" + r.name("no_rope_layers") +
                 "\" must be an array of at least num_hidden_layers (" +
                 std::to_string(c.layers) + ") 0s and 1s");
      return;
    }
    for (int64_t i = 0; i < c.layers; ++i) {
      const JsonValue &e = list->items[i];
      if (e.kind != JsonValue::Kind::Number ||
          (e.number != 0 && e.number != 1)) {
        r.setError("\"" + r.name("no_rope_layers") + "\"[" + std::to_string(i) +
                   "] must be 0 or 1");
        return;
      }
      c.ropeLayers[i] = e.number == 1;
    }
    return;
  }
  int64_t interval = r.integer("no_rope_layer_interval", 4);
  for (int64_t i = 0; i < c.layers && interval > 0; ++i)
    c.ropeLayers[i] = (i + 1) % interval != 0;
}

/// qwen3_moe's, qwen2_moe's and mixtral's experts (Qwen3MoeConfig,
/// MixtralConfig of transformers 4.57, Qwen2MoeConfig of 5; mixtral's
/// num_experts is v5's attribute_map alias of num_local_experts): their
/// count, top k and width, the renormalization, qwen2_moe's shared expert,
/// and which layers are sparse.
void readExperts(ConfigReader &r, ModelConfig &c) {
  if (c.architecture == Architecture::GptOss) {
    // GptOssConfig: num_local_experts 128 (num_experts its alias), top 4
    // (experts_per_token is the original release's key, unread), every
    // layer sparse, experts of intermediate_size.
    c.moeLayers.assign(c.layers > 0 ? c.layers : 0, true);
    const char *expertsKey = !r.has("num_local_experts") && r.has("num_experts")
                                 ? "num_experts"
                                 : "num_local_experts";
    c.experts = r.integer(expertsKey, 128);
    c.expertsPerToken = r.integer("num_experts_per_tok", 4);
    if (!r.failed() && c.expertsPerToken > c.experts)
      r.setError("\"" + r.name("num_experts_per_tok") + "\" (" +
                 std::to_string(c.expertsPerToken) + ") exceeds \"" +
                 r.name(expertsKey) + "\" (" + std::to_string(c.experts) +
                 "): each token's top k must be among the experts");
    c.expertFfn = c.ffn;
    c.swigluAlpha = r.number("swiglu_alpha", 1.702);
    c.swigluLimit = r.number("swiglu_limit", 7.0);
    return;
  }
  const bool mixtral = c.architecture == Architecture::Mixtral;
  const bool qwen2 = c.architecture == Architecture::Qwen2Moe;
  c.moeLayers.assign(c.layers > 0 ? c.layers : 0, false);
  std::string expertsKey = "num_experts";
  if (mixtral) {
    expertsKey = !r.has("num_local_experts") && r.has("num_experts")
                     ? "num_experts"
                     : "num_local_experts";
    c.experts = r.aliased("num_local_experts", "num_experts");
  } else {
    // Qwen3MoeDecoderLayer, Qwen2MoeDecoderLayer: num_experts 0 makes every
    // layer dense.
    c.experts = r.integer("num_experts", -1, 0);
  }
  const bool sparse = c.experts > 0;
  // Required where some layer routes: dimension keys, as the others.
  c.expertsPerToken = sparse ? r.integer("num_experts_per_tok")
                             : r.integer("num_experts_per_tok", qwen2 ? 4 : 8);
  if (!r.failed() && sparse && c.expertsPerToken > c.experts)
    r.setError("\"" + r.name("num_experts_per_tok") + "\" (" +
               std::to_string(c.expertsPerToken) + ") exceeds \"" +
               r.name(expertsKey) + "\" (" + std::to_string(c.experts) +
               "): each token's top k must be among the experts");
  if (mixtral) {
    c.expertFfn = c.ffn; // MixtralBlockSparseTop2MLP: intermediate_size
    c.normalizeTopK = true;
    if (r.has("norm_topk_prob") && !r.boolean("norm_topk_prob", true))
      c.notes.push_back("config.json: " + r.name("norm_topk_prob") +
                        " is ignored: MixtralSparseMoeBlock always divides "
                        "the top-k probabilities by their sum");
    if (r.has("mlp_only_layers") || r.has("decoder_sparse_step"))
      c.notes.push_back("config.json: mixtral ignores mlp_only_layers and "
                        "decoder_sparse_step: every layer is sparse");
    if (r.number("router_jitter_noise", 0.0) != 0)
      c.notes.push_back("config.json: " + r.name("router_jitter_noise") +
                        " is not applied: HF adds it in training only");
    for (size_t i = 0; i < c.moeLayers.size(); ++i)
      c.moeLayers[i] = true;
    return;
  }
  c.expertFfn = sparse ? r.integer("moe_intermediate_size")
                       : r.integer("moe_intermediate_size", qwen2 ? 1408 : 768);
  if (qwen2) {
    // Qwen2MoeSparseMoeBlock: a shared expert beside the routed ones (no
    // layer has one when num_experts is 0).
    const int64_t shared =
        sparse ? r.integer("shared_expert_intermediate_size")
               : r.integer("shared_expert_intermediate_size", 5632);
    c.sharedExpertFfn = sparse ? shared : 0;
  }
  c.normalizeTopK = r.boolean("norm_topk_prob", false);
  // decoder_sparse_step 0 divides by zero in HF.
  const int64_t step = r.integer("decoder_sparse_step", 1);
  std::set<int64_t> mlpOnly;
  const JsonValue *list = r.value("mlp_only_layers");
  if (list && list->kind != JsonValue::Kind::Null) {
    if (list->kind != JsonValue::Kind::Array) {
      r.setError("\"" + r.name("mlp_only_layers") +
                 "\" must be an array of layer indices");
      return;
    }
    for (size_t i = 0; i < list->items.size(); ++i) {
      const JsonValue &item = list->items[i];
      if (item.kind != JsonValue::Kind::Number ||
          item.number != std::floor(item.number) ||
          std::fabs(item.number) > static_cast<double>(kMaxDim)) {
        r.setError("\"" + r.name("mlp_only_layers") + "\"[" +
                   std::to_string(i) + "] must be an integer");
        return;
      }
      const int64_t layer = static_cast<int64_t>(item.number);
      if (layer < 0 || layer >= c.layers)
        c.notes.push_back("config.json: " + r.name("mlp_only_layers") +
                          " entry " + std::to_string(layer) +
                          " is no layer (num_hidden_layers " +
                          std::to_string(c.layers) + "); HF ignores it");
      mlpOnly.insert(layer);
    }
  }
  if (!qwen2 && r.has("shared_expert_intermediate_size"))
    c.notes.push_back("config.json: " +
                      r.name("shared_expert_intermediate_size") +
                      " is ignored: qwen3_moe has no shared expert "
                      "(qwen2_moe's key)");
  if (r.failed())
    return;
  for (int64_t i = 0; i < c.layers; ++i)
    c.moeLayers[i] = !mlpOnly.count(i) && sparse && (i + 1) % step == 0;
}

/// llama, mistral, qwen2, qwen3, smollm3, gemma, and the mixture-of-experts
/// qwen3_moe, qwen2_moe, mixtral and gpt_oss: the LlamaDecoderLayer shape.
void parseLlamaFamily(ConfigReader &r, ModelConfig &c) {
  const Architecture a = c.architecture;
  const bool qwen = a == Architecture::Qwen2 || a == Architecture::Qwen3;
  const bool moe = a == Architecture::Qwen3Moe || a == Architecture::Qwen2Moe ||
                   a == Architecture::Mixtral || a == Architecture::GptOss;
  const bool gptOss = a == Architecture::GptOss;
  if (gptOss && r.value("quantization_config") &&
      r.value("quantization_config")->kind != JsonValue::Kind::Null)
    r.setError("\"quantization_config\": quantized (MXFP4) gpt_oss experts "
               "are not supported; use a bf16 checkpoint");
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.vocab = r.integer("vocab_size");
  c.ffn = r.integer("intermediate_size");
  // num_key_value_heads: LlamaConfig None -> heads; MistralConfig default 8
  // and None -> heads; Qwen2Config and Qwen3Config default 32 and None ->
  // heads; SmolLM3Config default 4 and None -> heads; GemmaConfig default
  // 16 (None is not handled).
  const std::string kv = "num_key_value_heads";
  // Qwen3MoeConfig default 4 (None is not handled); MixtralConfig default
  // 8 and None -> heads; Qwen2MoeConfig default 16 and None -> heads
  // (transformers 4; 5's Qwen2MoeConfig no longer maps None).
  switch (a) {
  case Architecture::Mistral:
  case Architecture::Mixtral:
  case Architecture::GptOss: // GptOssConfig: 8, None -> heads
    c.kvHeads = r.present(kv) ? r.integer(kv, c.heads) : 8;
    break;
  case Architecture::Qwen3Moe:
    if (r.present(kv) && !r.has(kv))
      r.setError("\"num_key_value_heads\" must not be null for qwen3_moe");
    c.kvHeads = r.integer(kv, 4);
    break;
  case Architecture::Qwen2:
  case Architecture::Qwen3:
    c.kvHeads = r.present(kv) ? r.integer(kv, c.heads) : 32;
    break;
  case Architecture::Qwen2Moe:
    c.kvHeads = r.present(kv) ? r.integer(kv, c.heads) : 16;
    break;
  case Architecture::SmolLM3:
    c.kvHeads = r.present(kv) ? r.integer(kv, c.heads) : 4;
    break;
  case Architecture::Gemma:
    if (r.present(kv) && !r.has(kv))
      r.setError("\"num_key_value_heads\" must not be null for gemma");
    c.kvHeads = r.integer(kv, 16);
    break;
  default:
    c.kvHeads = r.integer(kv, c.heads);
  }
  c.maxPositions = r.integer(
      "max_position_embeddings",
      a == Architecture::Mistral || a == Architecture::Mixtral ? 4096 * 32
      : gptOss ? 131072
      : qwen || a == Architecture::SmolLM3 || a == Architecture::Qwen3Moe ||
              a == Architecture::Qwen2Moe
          ? 32768
      : a == Architecture::Gemma ? 8192
                                 : 2048);
  // MixtralConfig: 1e-5.
  c.normEps = r.number("rms_norm_eps",
                       a == Architecture::Mixtral || gptOss ? 1e-5 : 1e-6);
  c.tieEmbeddings =
      r.boolean("tie_word_embeddings",
                a == Architecture::Gemma || a == Architecture::SmolLM3);
  // head_dim: GemmaConfig defaults it to 256 and Qwen3Config to 128 (not
  // hidden / heads; their attention reads config.head_dim, so null fails
  // there); the others to hidden_size / num_attention_heads (also for null).
  if (a == Architecture::Gemma || a == Architecture::Qwen3) {
    if (r.present("head_dim") && !r.has("head_dim"))
      r.setError(std::string("\"head_dim\" must not be null for ") +
                 modelTypeName(a));
    c.headDim = r.integer("head_dim", a == Architecture::Gemma ? 256 : 128);
  } else {
    // Qwen3MoeAttention and Qwen2MoeAttention (LlamaAttention):
    // getattr(config, "head_dim", hidden // heads), so null fails there
    // (their configs have no head_dim default, unlike Qwen3Config);
    // MixtralAttention: head_dim or hidden // heads.
    if ((a == Architecture::Qwen3Moe || a == Architecture::Qwen2Moe) &&
        r.present("head_dim") && !r.has("head_dim"))
      r.setError(std::string("\"head_dim\" must not be null for ") +
                 modelTypeName(a));
    // GptOssConfig: head_dim 64 when absent, hidden // heads when null.
    if (!r.failed() && !r.has("head_dim") && !(gptOss && !r.present("head_dim")))
      requireDivides(r, c.heads, c.hidden, "num_attention_heads",
                     "hidden_size");
    c.headDim = r.integer("head_dim", gptOss && !r.present("head_dim") ? 64
                                      : c.heads > 0 ? c.hidden / c.heads
                                                    : 1);
  }
  readActivation(r, "hidden_act",
                 a == Architecture::Gemma ? "gelu_pytorch_tanh" : "silu", c);
  if (moe && !r.failed() && c.activation != Activation::Silu)
    r.setError("\"" + r.name("hidden_act") + "\" must be silu for " +
               modelTypeName(a) +
               " (the experts are computed as silu(gate) * up)");
  if (a == Architecture::Gemma && r.has("hidden_activation") &&
      r.string("hidden_activation", "") != r.string("hidden_act", "")) {
    c.notes.push_back("config.json: gemma's hidden_activation \"" +
                      r.string("hidden_activation", "") +
                      "\" is ignored: transformers >= 4.48 uses hidden_act \"" +
                      r.string("hidden_act", "gelu_pytorch_tanh") +
                      "\" (earlier versions used hidden_activation)");
  }
  if (a == Architecture::SmolLM3) {
    c.attentionBias = r.boolean("attention_bias", false); // q/k/v and o
    if (r.boolean("mlp_bias", false))
      r.setError("mlp_bias: true is not supported");
    readNoRopeLayers(r, c);
  }
  if (a == Architecture::Llama) {
    if (r.boolean("attention_bias", false))
      r.setError("attention_bias: true is not supported");
    if (r.boolean("mlp_bias", false))
      r.setError("mlp_bias: true is not supported");
  }
  if (a == Architecture::Qwen2)
    c.attentionBias = true; // q/k/v always, o_proj never
  if (a == Architecture::Qwen2Moe) // Qwen2MoeAttention: q/k/v, o_proj never
    c.attentionBias = r.boolean("qkv_bias", true);
  if (gptOss)
    c.attentionBias = r.boolean("attention_bias", true); // q/k/v and o
  if (a == Architecture::Qwen3 || a == Architecture::Qwen3Moe) {
    c.attentionBias = r.boolean("attention_bias", false); // q/k/v and o
    c.qkNorm = true;
  }
  if (a == Architecture::Gemma) {
    c.normPlusOne = true;
    c.attentionBias = r.boolean("attention_bias", false);
    if (r.boolean("use_bidirectional_attention", false))
      r.setError("use_bidirectional_attention: true is not supported");
    // torch.tensor(hidden_size ** 0.5, dtype=float32).
    c.embeddingScale =
        static_cast<float>(std::sqrt(static_cast<double>(c.hidden)));
  }

  // Sliding windows.
  c.slidingLayers.assign(c.layers > 0 ? c.layers : 0, false);
  if (a == Architecture::Mistral || a == Architecture::Mixtral) {
    // MistralConfig default 4096, MixtralConfig None; null = none. Every
    // layer.
    c.slidingWindow = r.present("sliding_window")
                          ? r.integer("sliding_window", 0)
                          : (a == Architecture::Mistral ? 4096 : 0);
    if (c.slidingWindow > 0)
      c.slidingLayers.assign(c.layers, true);
  } else if (gptOss) {
    // GptOssConfig: sliding_window 128 (null: none) on the layer_types
    // layers, by default layer i when (i + 1) is odd.
    c.slidingWindow = r.present("sliding_window")
                          ? r.integer("sliding_window", 0)
                          : 128;
    if (!readLayerTypes(r, c))
      for (int64_t i = 0; i < c.layers; ++i)
        c.slidingLayers[i] = (i + 1) % 2 != 0;
    if (c.slidingWindow == 0)
      c.slidingLayers.assign(c.layers, false);
  } else if (a == Architecture::Qwen3Moe) {
    // Qwen3MoeConfig: sliding_window (default 4096; null = none) only with
    // use_sliding_window, and then on every layer: Qwen3MoeModel builds one
    // sliding mask for all (no max_window_layers, no layer_types).
    bool use = r.boolean("use_sliding_window", false);
    int64_t window = r.integer("sliding_window", 4096);
    c.slidingWindow =
        use && !(r.present("sliding_window") && !r.has("sliding_window"))
            ? window
            : 0;
    if (c.slidingWindow > 0)
      c.slidingLayers.assign(c.layers, true);
    if (c.slidingWindow > 0 && r.has("max_window_layers") &&
        r.integer("max_window_layers", 0, 0) > 0)
      c.notes.push_back("config.json: qwen3_moe ignores " +
                        r.name("max_window_layers") +
                        ": every layer slides when use_sliding_window "
                        "(qwen3 would keep the layers below it full)");
    if (r.has("layer_types"))
      c.notes.push_back("config.json: qwen3_moe ignores " +
                        r.name("layer_types") +
                        ": every layer slides when use_sliding_window, "
                        "none otherwise");
  } else if (qwen || a == Architecture::Qwen2Moe) {
    // Qwen2Config and Qwen3Config: sliding_window is None unless
    // use_sliding_window. Qwen2MoeConfig: 0 unless use_sliding_window; a
    // null one with it fails HF's forward (Qwen2MoeModel builds the sliding
    // mask whatever the layers).
    const bool qwen2Moe = a == Architecture::Qwen2Moe;
    bool use = r.boolean("use_sliding_window", false);
    const bool nullWindow =
        r.present("sliding_window") && !r.has("sliding_window");
    if (qwen2Moe && use && nullWindow)
      r.setError("\"sliding_window\" must not be null with "
                 "use_sliding_window for qwen2_moe (Qwen2MoeModel's sliding "
                 "mask reads it)");
    int64_t window = r.integer("sliding_window", 4096);
    c.slidingWindow = use && nullWindow ? 0 : (use ? window : 0);
    int64_t maxWindowLayers = r.integer("max_window_layers", 28, 0);
    if (readLayerTypes(r, c)) {
      if (anySliding(c) && c.slidingWindow == 0)
        r.setError("\"layer_types\" has sliding_attention layers but "
                   "use_sliding_window is false or sliding_window null");
    } else if (c.slidingWindow > 0) {
      // layer_types' default: "sliding_attention" for layer i >=
      // max_window_layers (qwen2, qwen3); for qwen2_moe when
      // bool((i + 1) % 2) and i < max_window_layers.
      for (int64_t i = 0; i < c.layers; ++i)
        c.slidingLayers[i] = qwen2Moe
                                 ? (i + 1) % 2 != 0 && i < maxWindowLayers
                                 : i >= maxWindowLayers;
    }
  } else if (a == Architecture::SmolLM3) {
    // SmolLM3Config: sliding_window (default None) applies only with
    // use_sliding_window, and layer_types' default slides the NoPE layers.
    bool use = r.boolean("use_sliding_window", false);
    int64_t window = r.integer("sliding_window", 0);
    c.slidingWindow = use ? window : 0;
    if (readLayerTypes(r, c)) {
      if (anySliding(c) && c.slidingWindow == 0)
        r.setError("\"layer_types\" has sliding_attention layers but "
                   "use_sliding_window is false or sliding_window null");
    } else if (c.slidingWindow > 0 && !r.failed()) {
      for (int64_t i = 0; i < c.layers; ++i)
        c.slidingLayers[i] = !c.ropeLayers[i];
    }
  }

  // SmolLM3Config.default_theta: 2e6; MixtralConfig rope_theta 1e6.
  readRope(r, c, "rope_theta", "partial_rotary_factor", 1.0,
           /*allowScaling=*/true,
           a == Architecture::SmolLM3   ? 2000000.0
           : a == Architecture::Mixtral ? 1000000.0
           : gptOss                     ? 150000.0
                                        : 10000.0);
  if (gptOss && !r.present("rope_scaling") && !r.present("rope_parameters")) {
    // GptOssConfig's default rope_parameters.
    RopeScaling &s = c.ropeScaling;
    s.type = RopeScaling::Type::Yarn;
    s.factor = 32.0;
    s.betaFast = 32.0;
    s.betaSlow = 1.0;
    s.truncate = false;
    s.originalMaxPositions = 4096;
    s.maxPositions = c.maxPositions;
  }
  if (!r.failed() && c.rotaryDim != c.headDim)
    r.setError(std::string("partial_rotary_factor < 1 is not supported for ") +
               modelTypeName(a) +
               " (its apply_rotary_pos_emb rotates the whole head)");
  if (moe && !r.failed())
    readExperts(r, c);
}

/// Gemma 3's two RoPE tables: global layers rope_theta (default 1e6) with
/// rope_scaling, sliding layers rope_local_base_freq (1e4), unscaled; in
/// transformers 5 rope_parameters {"full_attention": {...},
/// "sliding_attention": {...}}, whose sliding table may also be scaled.
void readGemma3Rope(ConfigReader &r, ModelConfig &c) {
  const double partial = r.number("partial_rotary_factor", 1.0);
  if (partial != 1.0)
    r.setError("\"" + r.name("partial_rotary_factor") +
               "\" is not supported for gemma3_text (its "
               "apply_rotary_pos_emb rotates the whole head)");
  if (!r.failed() && c.headDim % 2 != 0)
    r.setError("head_dim (" + std::to_string(c.headDim) +
               ") must be even for rotary embeddings");
  c.rotaryDim = c.headDim;
  std::string dictKey;
  const JsonValue &dict = ropeDict(r, dictKey);
  const JsonValue *global = &dict, *local = &emptyObject();
  std::string globalKey = dictKey, localKey = "rope_local";
  if (dictKey == "rope_parameters") {
    for (const auto &member : dict.members)
      if (member.first != "full_attention" &&
          member.first != "sliding_attention")
        r.setError("\"" + r.name(dictKey) +
                   "\" must map full_attention and sliding_attention to "
                   "rope dicts for gemma3_text, got key \"" +
                   member.first + "\"");
    auto byType = [&](const char *type, const JsonValue *&out,
                      std::string &key) {
      key = dictKey + "." + type;
      const JsonValue *v = dict.get(type);
      out = &emptyObject();
      if (v && v->kind == JsonValue::Kind::Object)
        out = v;
      else if (v && v->kind != JsonValue::Kind::Null)
        r.setError("\"" + r.name(key) + "\" must be an object");
    };
    byType("full_attention", global, globalKey);
    byType("sliding_attention", local, localKey);
  }
  ConfigReader g = r.child(*global, globalKey), l = r.child(*local, localKey);
  c.ropeTheta = ropeKey(r, g, "rope_theta", "rope_theta", 1000000.0);
  c.localRopeTheta =
      ropeKey(r, l, "rope_theta", "rope_local_base_freq", 10000.0);
  if (!r.failed() && !(c.ropeTheta > 0))
    r.setError("\"" + r.name("rope_theta") + "\" must be positive");
  if (!r.failed() && !(c.localRopeTheta > 0))
    r.setError("\"" + r.name("rope_local_base_freq") + "\" must be positive");
  readRopeScaling(r, g, c, c.ropeScaling, /*allowScaling=*/true);
  readRopeScaling(r, l, c, c.localRopeScaling, /*allowScaling=*/true);
  c.localRope = true;
}

/// gemma2 and gemma3_text (also gemma3's text_config): Gemma's (1 + w)
/// RMSNorm, GeGLU and sqrt(hidden) embeddings, plus the four sandwich norms
/// per layer, query_pre_attn_scalar, the softcaps and windows on the
/// layers layer_types names; gemma3_text adds (1 + w) q/k norms and two RoPE
/// tables. Every dimension has a default in Gemma2Config and
/// Gemma3TextConfig, and gemma3 checkpoints' text_config leave out the keys
/// equal to them (google/gemma-3-4b-it has no vocab_size or head_dim).
void parseGemma2Family(ConfigReader &r, ModelConfig &c) {
  const bool g3 = c.architecture == Architecture::Gemma3;
  const std::string type = modelTypeName(c.architecture);
  // The attention reads head_dim, num_key_value_heads and
  // query_pre_attn_scalar as they are: null fails in HF.
  auto notNull = [&](const std::string &key) {
    if (r.present(key) && !r.has(key))
      r.setError("\"" + r.name(key) + "\" must not be null for " + type);
  };
  for (const char *key : {"num_key_value_heads", "head_dim",
                          "query_pre_attn_scalar"})
    notNull(key);
  c.vocab = r.integer("vocab_size", g3 ? 262208 : 256000);
  c.hidden = r.integer("hidden_size", 2304);
  c.ffn = r.integer("intermediate_size", 9216);
  c.layers = r.integer("num_hidden_layers", 26);
  c.heads = r.integer("num_attention_heads", 8);
  c.kvHeads = r.integer("num_key_value_heads", 4);
  c.headDim = r.integer("head_dim", 256);
  c.maxPositions = r.integer("max_position_embeddings", g3 ? 131072 : 8192);
  c.normEps = r.number("rms_norm_eps", 1e-6);
  c.tieEmbeddings = r.boolean("tie_word_embeddings", true);
  // Gemma2MLP: ACT2FN[config.hidden_activation]; hidden_act is not read.
  readActivation(r, "hidden_activation", "gelu_pytorch_tanh", c);
  if (r.has("hidden_act") &&
      r.string("hidden_act", "") !=
          r.string("hidden_activation", "gelu_pytorch_tanh"))
    c.notes.push_back("config.json: " + type + "'s " + r.name("hidden_act") +
                      " \"" + r.string("hidden_act", "") +
                      "\" is ignored: its MLP uses hidden_activation");
  c.attentionBias = r.boolean("attention_bias", false); // q, k, v and o
  if (r.boolean("use_bidirectional_attention", false))
    r.setError("\"" + r.name("use_bidirectional_attention") +
               "\": true is not supported");
  // Gemma2Model's normalizer = torch.tensor(hidden_size ** 0.5,
  // dtype=float32); Gemma3TextScaledWordEmbedding's embed_scale buffer is
  // the same float32 (cast to the weights' dtype, float32 here).
  c.embeddingScale =
      static_cast<float>(std::sqrt(static_cast<double>(c.hidden)));
  c.normPlusOne = c.sandwichNorms = true;
  c.qkNorm = g3;
  c.queryPreAttnScalar = r.number("query_pre_attn_scalar", 256.0);
  if (!r.failed() && !(c.queryPreAttnScalar > 0))
    r.setError("\"" + r.name("query_pre_attn_scalar") +
               "\" must be positive");
  // The softcaps: null is off; Gemma2Config defaults to 50 and 30,
  // Gemma3TextConfig to none.
  auto softcap = [&](const std::string &key, double fallback) {
    if (r.present(key) && !r.has(key))
      return 0.0;
    double v = r.number(key, fallback);
    if (r.has(key) && !(v > 0))
      r.setError("\"" + r.name(key) + "\" must be positive (or null)");
    return v;
  };
  c.attnSoftcap = softcap("attn_logit_softcapping", g3 ? 0.0 : 50.0);
  c.finalSoftcap = softcap("final_logit_softcapping", g3 ? 0.0 : 30.0);
  if (g3 && c.attnSoftcap > 0) {
    // Gemma3Attention keeps the value but passes no softcap to its
    // attention function, in every release so far.
    c.notes.push_back("config.json: " + r.name("attn_logit_softcapping") +
                      " is not applied: transformers' Gemma3Attention "
                      "passes no softcap to the attention");
    c.attnSoftcap = 0;
  }
  requireDivides(r, c.heads, c.hidden, "num_attention_heads", "hidden_size");

  // Windows: layer_types, else layer i slides when (i + 1) % pattern != 0:
  // pattern 2 (even layers) for gemma2, sliding_window_pattern (6: five
  // local, one global) for gemma3. Before transformers 4.53 the pattern
  // decided alone.
  c.slidingWindow =
      r.present("sliding_window") ? r.integer("sliding_window", 0) : 4096;
  int64_t pattern = g3 ? r.integer("sliding_window_pattern", 6) : 2;
  std::vector<bool> byPattern(c.layers > 0 ? c.layers : 0);
  for (size_t i = 0; i < byPattern.size(); ++i)
    byPattern[i] = (static_cast<int64_t>(i) + 1) % pattern != 0;
  c.slidingLayers.assign(byPattern.size(), false);
  if (!readLayerTypes(r, c))
    c.slidingLayers = byPattern;
  else if (c.slidingLayers != byPattern)
    c.notes.push_back(
        "config.json: " + r.name("layer_types") +
        " decides which layers slide (transformers >= 4.53); earlier "
        "versions slide layer i when (i + 1) % " + std::to_string(pattern) +
        " != 0" + (g3 ? " (sliding_window_pattern)" : "") +
        ", other layers than here");
  if (!r.failed() && anySliding(c) && c.slidingWindow == 0)
    r.setError("\"" + r.name("sliding_window") +
               "\" is null but some layers are sliding_attention");

  if (g3) {
    readGemma3Rope(r, c);
    return;
  }
  readRope(r, c, "rope_theta", "partial_rotary_factor", 1.0,
           /*allowScaling=*/true);
  if (!r.failed() && c.rotaryDim != c.headDim)
    r.setError("partial_rotary_factor < 1 is not supported for gemma2 (its "
               "apply_rotary_pos_emb rotates the whole head)");
}

/// gemma3 (Gemma3ForConditionalGeneration): the language model of
/// text_config (absent: Gemma3TextConfig's defaults, as HF); the vision
/// tower and its keys are not used.
void parseGemma3Multimodal(ConfigReader &r, ModelConfig &c) {
  c.multimodal = true;
  const JsonValue *text = r.value("text_config");
  if (text && text->kind != JsonValue::Kind::Null &&
      text->kind != JsonValue::Kind::Object) {
    r.setError("\"text_config\" must be an object");
    return;
  }
  ConfigReader t = r.child(
      text && text->kind == JsonValue::Kind::Object ? *text : emptyObject(),
      "text_config");
  std::string inner = t.string("model_type", "gemma3_text");
  if (inner != "gemma3_text")
    r.setError("\"text_config.model_type\" must be \"gemma3_text\", got \"" +
               inner + "\"");
  rejectUnsupportedKeys(t);
  if (r.has("audio_config"))
    r.setError("\"audio_config\": audio configs are not supported");
  parseGemma2Family(t, c);
  // The head is tied by text_config's tie_word_embeddings (get_text_config
  // in tie_weights); a top-level value that disagrees is ambiguous.
  if (r.has("tie_word_embeddings") &&
      r.boolean("tie_word_embeddings", true) != c.tieEmbeddings)
    r.setError("\"tie_word_embeddings\" and "
               "\"text_config.tie_word_embeddings\" disagree");
  c.notes.push_back("config.json: gemma3: the image part (vision_config, "
                    "vision_tower, multi_modal_projector) is not used; the "
                    "reference runs the language model on token ids");
  if (c.finalSoftcap > 0) {
    c.notes.push_back(
        "config.json: text_config.final_logit_softcapping is not applied: "
        "Gemma3ForConditionalGeneration (transformers >= 4.52) computes "
        "lm_head(hidden) without it; 4.50 and 4.51 applied it through "
        "Gemma3ForCausalLM");
    c.finalSoftcap = 0;
  }
}

void parsePhi3(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.vocab = r.integer("vocab_size");
  c.ffn = r.integer("intermediate_size");
  c.kvHeads = r.integer("num_key_value_heads", c.heads);
  c.maxPositions = r.integer("max_position_embeddings", 4096);
  c.normEps = r.number("rms_norm_eps", 1e-5);
  c.tieEmbeddings = r.boolean("tie_word_embeddings", false);
  if (!r.failed() && !r.has("head_dim"))
    requireDivides(r, c.heads, c.hidden, "num_attention_heads", "hidden_size");
  c.headDim = r.integer("head_dim", c.heads > 0 ? c.hidden / c.heads : 1);
  readActivation(r, "hidden_act", "silu", c);
  c.slidingWindow = r.integer("sliding_window", 0);
  c.slidingLayers.assign(c.layers > 0 ? c.layers : 0, c.slidingWindow > 0);
  // rope_scaling: Phi3Config allows only longrope (su and yarn become
  // longrope), with its own original_max_position_embeddings.
  readRope(r, c, "rope_theta", "partial_rotary_factor", 1.0,
           /*allowScaling=*/false, 10000.0, /*phi3=*/true);
}

void parseGptNeoX(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.kvHeads = c.heads;
  c.vocab = r.integer("vocab_size");
  c.ffn = r.integer("intermediate_size");
  c.maxPositions = r.integer("max_position_embeddings", 2048);
  c.normEps = r.number("layer_norm_eps", 1e-5);
  c.tieEmbeddings = r.boolean("tie_word_embeddings", false);
  c.parallelResidual = r.boolean("use_parallel_residual", true);
  c.attentionBias = r.boolean("attention_bias", true);
  c.mlpBias = true;
  readActivation(r, "hidden_act", "gelu", c);
  requireDivides(r, c.heads, c.hidden, "num_attention_heads", "hidden_size");
  c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
  // rotary_emb_base and rotary_pct (v5: rope_parameters.rope_theta and
  // partial_rotary_factor).
  readRope(r, c, "rotary_emb_base", "rotary_pct", 0.25,
           /*allowScaling=*/false);
}

void parseGptJ(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("n_embd");
  c.layers = r.integer("n_layer");
  c.heads = r.integer("n_head");
  c.kvHeads = c.heads;
  c.vocab = r.integer("vocab_size");
  c.maxPositions = r.integer("n_positions", 2048);
  c.ffn = r.integer("n_inner", 4 * c.hidden);
  c.normEps = r.number("layer_norm_epsilon", 1e-5);
  c.tieEmbeddings = r.boolean("tie_word_embeddings", false);
  c.mlpBias = true;
  readActivation(r, "activation_function", "gelu_new", c);
  requireDivides(r, c.heads, c.hidden, "n_head", "n_embd");
  c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
  // rotary_dim: null would rotate with a table of n_embd features, which
  // only fits one head; create_sinusoidal_positions uses base 10000.
  if (r.present("rotary_dim") && !r.has("rotary_dim"))
    r.setError("\"rotary_dim\": null is not supported");
  c.rotaryDim = r.integer("rotary_dim", 64);
  c.ropeTheta = 10000.0;
  c.ropePairing = RopePairing::Interleaved;
  if (!r.failed() && (c.rotaryDim % 2 != 0 || c.rotaryDim > c.headDim))
    r.setError("\"rotary_dim\" (" + std::to_string(c.rotaryDim) +
               ") must be even and at most the head size (" +
               std::to_string(c.headDim) + ")");
}

void parseOpt(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.kvHeads = c.heads;
  c.vocab = r.integer("vocab_size");
  c.ffn = r.integer("ffn_dim");
  c.maxPositions = r.integer("max_position_embeddings", 2048);
  c.normEps = 1e-5; // nn.LayerNorm's default: OPT has no epsilon key
  c.tieEmbeddings = r.boolean("tie_word_embeddings", true);
  c.layerNormBefore = r.boolean("do_layer_norm_before", true);
  c.finalLayerNorm =
      c.layerNormBefore && !r.boolean("_remove_final_layer_norm", false);
  c.attentionBias = c.mlpBias = r.boolean("enable_bias", true);
  readActivation(r, "activation_function", "relu", c);
  int64_t proj = r.integer("word_embed_proj_dim", c.hidden);
  if (!r.failed() && proj != c.hidden)
    r.setError("\"word_embed_proj_dim\" (" + std::to_string(proj) +
               ") != hidden_size (" + std::to_string(c.hidden) +
               "): project_in / project_out are not supported");
  if (!r.boolean("layer_norm_elementwise_affine", true))
    r.setError("\"layer_norm_elementwise_affine\": false is not supported");
  requireDivides(r, c.heads, c.hidden, "num_attention_heads", "hidden_size");
  c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
}

void parseBloom(ConfigReader &r, ModelConfig &c) {
  // n_embed (legacy) overrides hidden_size; attribute_map aliases
  // num_hidden_layers -> n_layer and num_attention_heads -> n_head.
  c.hidden = r.has("n_embed") ? r.integer("n_embed") : r.integer("hidden_size");
  c.layers = r.aliased("n_layer", "num_hidden_layers");
  c.heads = r.aliased("n_head", "num_attention_heads");
  c.kvHeads = c.heads;
  c.vocab = r.integer("vocab_size");
  c.ffn = 4 * c.hidden;
  c.maxPositions = kNoPositionLimit; // ALiBi: no position table
  c.normEps = r.number("layer_norm_epsilon", 1e-5);
  c.tieEmbeddings = r.boolean("tie_word_embeddings", true);
  c.residualFromNorm =
      r.boolean("apply_residual_connection_post_layernorm", false);
  c.attentionBias = c.mlpBias = true;
  // bloom_gelu_forward: tanh(0.79788456 x (1 + 0.044715 x^2)); the constant
  // is sqrt(2/pi) to 1e-9 relative, below float resolution.
  c.activation = Activation::GeluTanh;
  requireDivides(r, c.heads, c.hidden, "n_head", "hidden_size");
  c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
}

void parseXglm(ConfigReader &r, ModelConfig &c) {
  c.hidden = r.aliased("d_model", "hidden_size");
  c.layers = r.aliased("num_layers", "num_hidden_layers");
  c.heads = r.aliased("attention_heads", "num_attention_heads");
  c.kvHeads = c.heads;
  c.vocab = r.integer("vocab_size");
  c.ffn = r.integer("ffn_dim");
  c.maxPositions = r.integer("max_position_embeddings", 2048);
  c.normEps = 1e-5; // nn.LayerNorm's default
  c.tieEmbeddings = r.boolean("tie_word_embeddings", true);
  c.attentionBias = c.mlpBias = true;
  readActivation(r, "activation_function", "gelu", c);
  // XGLMScaledWordEmbedding multiplies by the Python float sqrt(d_model),
  // which torch applies as a float32 scalar.
  if (r.boolean("scale_embedding", true))
    c.embeddingScale =
        static_cast<float>(std::sqrt(static_cast<double>(c.hidden)));
  // The sinusoidal table zeroes row pad_token_id (default 1; positions
  // start at row 2).
  c.positionPaddingIndex =
      r.present("pad_token_id")
          ? (r.has("pad_token_id") ? r.integer("pad_token_id", -1, 0) : -1)
          : 1;
  if (r.boolean("add_cross_attention", false))
    r.setError("\"add_cross_attention\": true is not supported");
  if (!r.failed() && c.hidden < 4)
    r.setError("\"d_model\" must be at least 4 for the sinusoidal positions");
  requireDivides(r, c.heads, c.hidden, "attention_heads", "d_model");
  c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
}

} // namespace

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
  const std::pair<const char *, Architecture> kTypes[] = {
      {"gpt2", Architecture::GPT2},
      {"llama", Architecture::Llama},
      {"mistral", Architecture::Mistral},
      {"qwen2", Architecture::Qwen2},
      {"qwen3", Architecture::Qwen3},
      {"smollm3", Architecture::SmolLM3},
      {"gemma", Architecture::Gemma},
      {"gemma2", Architecture::Gemma2},
      {"gemma3_text", Architecture::Gemma3},
      {"gemma3", Architecture::Gemma3},
      {"phi3", Architecture::Phi3},
      {"gpt_neox", Architecture::GPTNeoX},
      {"gptj", Architecture::GPTJ},
      {"opt", Architecture::OPT},
      {"bloom", Architecture::Bloom},
      {"xglm", Architecture::XGLM},
      {"qwen3_moe", Architecture::Qwen3Moe},
      {"qwen2_moe", Architecture::Qwen2Moe},
      {"mixtral", Architecture::Mixtral},
      {"gpt_oss", Architecture::GptOss},
  };
  bool known = false;
  for (const auto &[name, arch] : kTypes)
    if (type == name) {
      c.architecture = arch;
      known = true;
    }
  if (type.empty()) {
    r.setError("missing key \"model_type\"");
  } else if (!known) {
    r.setError("unsupported model_type \"" + type +
               "\" (expected gpt2, llama, mistral, qwen2, qwen3, smollm3, "
               "gemma, gemma2, gemma3_text, gemma3, phi3, gpt_neox, gptj, opt, "
               "bloom, xglm, qwen3_moe, qwen2_moe, mixtral or gpt_oss)");
  } else if (type == "gemma3") {
    parseGemma3Multimodal(r, c);
  } else {
    const bool moe = c.architecture == Architecture::Qwen3Moe ||
                     c.architecture == Architecture::Qwen2Moe ||
                     c.architecture == Architecture::Mixtral ||
                     c.architecture == Architecture::GptOss;
    rejectUnsupportedKeys(r, moe ? &c : nullptr);
    switch (c.architecture) {
    case Architecture::GPT2:
      parseGpt2(r, c);
      break;
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
    case Architecture::SmolLM3:
    case Architecture::Gemma:
    case Architecture::Qwen3Moe:
    case Architecture::Qwen2Moe:
    case Architecture::Mixtral:
    case Architecture::GptOss:
      parseLlamaFamily(r, c);
      break;
    case Architecture::Gemma2:
    case Architecture::Gemma3:
      parseGemma2Family(r, c);
      break;
    case Architecture::Phi3:
      parsePhi3(r, c);
      break;
    case Architecture::GPTNeoX:
      parseGptNeoX(r, c);
      break;
    case Architecture::GPTJ:
      parseGptJ(r, c);
      break;
    case Architecture::OPT:
      parseOpt(r, c);
      break;
    case Architecture::Bloom:
      parseBloom(r, c);
      break;
    case Architecture::XGLM:
      parseXglm(r, c);
      break;
    }
  }
  if (r.error.empty() && c.heads % c.kvHeads != 0)
    r.setError("num_key_value_heads (" + std::to_string(c.kvHeads) +
               ") does not divide num_attention_heads (" +
               std::to_string(c.heads) + ")");
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
  const int64_t d = c.hidden, f = c.ffn, V = c.vocab;
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
  auto add = [&](const std::string &name, std::vector<int64_t> shape) {
    out.push_back({name, std::move(shape)});
  };
  // weight [out, in] and, when `bias`, bias [out].
  auto linear = [&](const std::string &name, int64_t outDim, int64_t inDim,
                    bool bias) {
    add(name + ".weight", {outDim, inDim});
    if (bias)
      add(name + ".bias", {outDim});
  };
  auto layerNorm = [&](const std::string &name) {
    add(name + ".weight", {d});
    add(name + ".bias", {d});
  };
  switch (c.architecture) {
  case Architecture::GPT2:
    add("wte.weight", {V, d});
    add("wpe.weight", {c.maxPositions, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string h = "h." + std::to_string(i) + ".";
      layerNorm(h + "ln_1");
      add(h + "attn.c_attn.weight", {d, 3 * d}); // Conv1D: [in, out]
      add(h + "attn.c_attn.bias", {3 * d});
      add(h + "attn.c_proj.weight", {d, d});
      add(h + "attn.c_proj.bias", {d});
      layerNorm(h + "ln_2");
      add(h + "mlp.c_fc.weight", {d, f});
      add(h + "mlp.c_fc.bias", {f});
      add(h + "mlp.c_proj.weight", {f, d});
      add(h + "mlp.c_proj.bias", {d});
    }
    layerNorm("ln_f");
    break;
  case Architecture::Llama:
  case Architecture::Mistral:
  case Architecture::Qwen2:
  case Architecture::Qwen3:
  case Architecture::SmolLM3:
  case Architecture::Gemma:
  case Architecture::Phi3:
  case Architecture::Qwen3Moe:
  case Architecture::Qwen2Moe:
  case Architecture::Mixtral:
  case Architecture::GptOss: {
    bool phi3 = c.architecture == Architecture::Phi3;
    bool gptOss = c.architecture == Architecture::GptOss;
    bool qkvBias = c.attentionBias;
    bool oBias = c.attentionBias && (c.architecture == Architecture::Gemma ||
                                     c.architecture == Architecture::Qwen3 ||
                                     c.architecture == Architecture::Qwen3Moe ||
                                     c.architecture == Architecture::SmolLM3 ||
                                     gptOss);
    add("model.embed_tokens.weight", {V, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      add(l + "input_layernorm.weight", {d});
      if (phi3) {
        linear(l + "self_attn.qkv_proj", q + 2 * kv, d, false);
      } else {
        linear(l + "self_attn.q_proj", q, d, qkvBias);
        if (c.qkNorm)
          add(l + "self_attn.q_norm.weight", {c.headDim});
        linear(l + "self_attn.k_proj", kv, d, qkvBias);
        if (c.qkNorm)
          add(l + "self_attn.k_norm.weight", {c.headDim});
        linear(l + "self_attn.v_proj", kv, d, qkvBias);
      }
      linear(l + "self_attn.o_proj", d, q, oBias);
      if (gptOss)
        add(l + "self_attn.sinks", {c.heads});
      add(l + "post_attention_layernorm.weight", {d});
      if (gptOss) {
        // GptOssMLP: the router, then the stacked experts (x @ W).
        const StackedExpertNames names = stackedExpertNames(i);
        add(names.router, {c.experts, d});
        add(names.routerBias, {c.experts});
        add(names.gateUp, {c.experts, d, 2 * c.expertFfn});
        add(names.gateUpBias, {c.experts, 2 * c.expertFfn});
        add(names.down, {c.experts, c.expertFfn, d});
        add(names.downBias, {c.experts, d});
        continue;
      }
      if (isMoeLayer(c, i)) {
        // The router, then each expert's gate, up and down (forward order);
        // qwen2_moe's shared expert (a Qwen2MoeMLP) and its gate
        // (nn.Linear(hidden, 1, bias=False)) after them.
        const MoeNames names = moeNames(c, i);
        add(names.router, {c.experts, d});
        for (int64_t e = 0; e < c.experts; ++e) {
          add(names.gate[e], {c.expertFfn, d});
          add(names.up[e], {c.expertFfn, d});
          add(names.down[e], {d, c.expertFfn});
        }
        if (c.sharedExpertFfn > 0) {
          linear(names.shared + "gate_proj", c.sharedExpertFfn, d, false);
          linear(names.shared + "up_proj", c.sharedExpertFfn, d, false);
          linear(names.shared + "down_proj", d, c.sharedExpertFfn, false);
          add(names.sharedGate, {1, d});
        }
        continue;
      }
      if (phi3) {
        linear(l + "mlp.gate_up_proj", 2 * f, d, false);
      } else {
        linear(l + "mlp.gate_proj", f, d, false);
        linear(l + "mlp.up_proj", f, d, false);
      }
      linear(l + "mlp.down_proj", d, f, false);
    }
    add("model.norm.weight", {d});
    break;
  }
  case Architecture::Gemma2:
  case Architecture::Gemma3: {
    const std::string m = basePrefix(c);
    add(m + "embed_tokens.weight", {V, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = m + "layers." + std::to_string(i) + ".";
      add(l + "input_layernorm.weight", {d});
      linear(l + "self_attn.q_proj", q, d, c.attentionBias);
      linear(l + "self_attn.k_proj", kv, d, c.attentionBias);
      linear(l + "self_attn.v_proj", kv, d, c.attentionBias);
      if (c.qkNorm) {
        add(l + "self_attn.q_norm.weight", {c.headDim});
        add(l + "self_attn.k_norm.weight", {c.headDim});
      }
      linear(l + "self_attn.o_proj", d, q, c.attentionBias);
      add(l + "post_attention_layernorm.weight", {d});
      add(l + "pre_feedforward_layernorm.weight", {d});
      linear(l + "mlp.gate_proj", f, d, false);
      linear(l + "mlp.up_proj", f, d, false);
      linear(l + "mlp.down_proj", d, f, false);
      add(l + "post_feedforward_layernorm.weight", {d});
    }
    add(m + "norm.weight", {d});
    break;
  }
  case Architecture::GPTNeoX:
    add("gpt_neox.embed_in.weight", {V, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "gpt_neox.layers." + std::to_string(i) + ".";
      layerNorm(l + "input_layernorm");
      linear(l + "attention.query_key_value", 3 * d, d, c.attentionBias);
      linear(l + "attention.dense", d, d, c.attentionBias);
      layerNorm(l + "post_attention_layernorm");
      linear(l + "mlp.dense_h_to_4h", f, d, true);
      linear(l + "mlp.dense_4h_to_h", d, f, true);
    }
    layerNorm("gpt_neox.final_layer_norm");
    break;
  case Architecture::GPTJ:
    add("transformer.wte.weight", {V, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "transformer.h." + std::to_string(i) + ".";
      layerNorm(l + "ln_1");
      linear(l + "attn.q_proj", d, d, false);
      linear(l + "attn.k_proj", d, d, false);
      linear(l + "attn.v_proj", d, d, false);
      linear(l + "attn.out_proj", d, d, false);
      linear(l + "mlp.fc_in", f, d, true);
      linear(l + "mlp.fc_out", d, f, true);
    }
    layerNorm("transformer.ln_f");
    break;
  case Architecture::OPT:
    add("model.decoder.embed_tokens.weight", {V, d});
    // OPTLearnedPositionalEmbedding: max_position_embeddings + offset 2.
    add("model.decoder.embed_positions.weight", {c.maxPositions + 2, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "model.decoder.layers." + std::to_string(i) + ".";
      layerNorm(l + "self_attn_layer_norm");
      linear(l + "self_attn.q_proj", d, d, c.attentionBias);
      linear(l + "self_attn.k_proj", d, d, c.attentionBias);
      linear(l + "self_attn.v_proj", d, d, c.attentionBias);
      linear(l + "self_attn.out_proj", d, d, c.attentionBias);
      layerNorm(l + "final_layer_norm");
      linear(l + "fc1", f, d, c.mlpBias);
      linear(l + "fc2", d, f, c.mlpBias);
    }
    if (c.finalLayerNorm)
      layerNorm("model.decoder.final_layer_norm");
    break;
  case Architecture::Bloom:
    add("transformer.word_embeddings.weight", {V, d});
    layerNorm("transformer.word_embeddings_layernorm");
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "transformer.h." + std::to_string(i) + ".";
      layerNorm(l + "input_layernorm");
      linear(l + "self_attention.query_key_value", 3 * d, d, true);
      linear(l + "self_attention.dense", d, d, true);
      layerNorm(l + "post_attention_layernorm");
      linear(l + "mlp.dense_h_to_4h", f, d, true);
      linear(l + "mlp.dense_4h_to_h", d, f, true);
    }
    layerNorm("transformer.ln_f");
    break;
  case Architecture::XGLM:
    add("model.embed_tokens.weight", {V, d});
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      layerNorm(l + "self_attn_layer_norm");
      linear(l + "self_attn.q_proj", d, d, true);
      linear(l + "self_attn.k_proj", d, d, true);
      linear(l + "self_attn.v_proj", d, d, true);
      linear(l + "self_attn.out_proj", d, d, true);
      layerNorm(l + "final_layer_norm");
      linear(l + "fc1", f, d, true);
      linear(l + "fc2", d, f, true);
    }
    layerNorm("model.layer_norm");
    break;
  }
  if (c.architecture != Architecture::GPT2) {
    if (!c.tieEmbeddings)
      add(headName(c), {V, d});
    if (c.architecture == Architecture::GPTJ)
      add("lm_head.bias", {V}); // nn.Linear(n_embd, vocab_size): a bias
  }
  return out;
}

namespace {

/// Shared by load and create: matches stored names to the expected weights
/// (or to their transformers 5 names: `aliases`) and checks shapes. `fetch`
/// supplies the data of a stored tensor.
template <typename Fetch>
bool collectWeights(
    const ModelConfig &config,
    const std::map<std::string, WeightAlias> &aliases,
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
  for (const auto &[name, alias] : aliases) {
    weightNames.insert(name);
    expectedShape[name] = alias.shape;
  }
  std::set<std::string> buffers = bufferNames(config);
  std::map<std::string, std::string> storedFor; // canonical -> stored
  for (const auto &[stored, dtype] : storedNameAndDtype) {
    std::string canonical;
    switch (classify(config, weightNames, buffers, stored, canonical)) {
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
    // Mixtral's router under its transformers 5 name is the router.
    auto alias = aliases.find(canonical);
    if (alias != aliases.end() && !alias->second.stacked)
      canonical = alias->second.weights.front();
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
  // A sparse layer's experts stacked as transformers 5 saves them: both
  // tensors, and none of the per-expert ones; their slabs are the
  // per-expert weights.
  std::set<std::string> fromStacked;
  const std::string gateUpSuffix = "experts.gate_up_proj";
  for (const auto &[gateUpName, gateUp] : aliases) {
    if (!gateUp.stacked || gateUpName.size() < gateUpSuffix.size() ||
        gateUpName.compare(gateUpName.size() - gateUpSuffix.size(),
                           gateUpSuffix.size(), gateUpSuffix) != 0)
      continue;
    const std::string downName =
        gateUpName.substr(0, gateUpName.size() - gateUpSuffix.size()) +
        "experts.down_proj";
    const WeightAlias &down = aliases.at(downName);
    const auto gateUpIt = storedFor.find(gateUpName);
    const auto downIt = storedFor.find(downName);
    if (gateUpIt == storedFor.end() && downIt == storedFor.end())
      continue; // per expert
    const std::string &stacked =
        (gateUpIt != storedFor.end() ? gateUpIt : downIt)->second;
    for (const WeightAlias *part : {&gateUp, &down})
      for (const std::string &piece : part->weights)
        if (storedFor.count(piece)) {
          error = where + ": tensors '" + storedFor.at(piece) + "' and '" +
                  stacked +
                  "' hold the same layer's experts, per expert and stacked "
                  "(transformers 5): a layer's experts are stored one way";
          return false;
        }
    if (gateUpIt == storedFor.end() || downIt == storedFor.end()) {
      const bool noGateUp = gateUpIt == storedFor.end();
      error = where + ": missing tensor '" +
              (noGateUp ? gateUpName : downName) + "' (shape " +
              shapeText((noGateUp ? gateUp : down).shape) +
              "), stacked with '" + stacked + "'";
      return false;
    }
    // gate_up_proj slab e: expert e's gate rows, then its up rows; the
    // per-expert weights in slab order.
    for (const auto &[part, storedName] :
         {std::make_pair(&gateUp, gateUpIt->second),
          std::make_pair(&down, downIt->second)}) {
      std::vector<float> data;
      if (!fetch(storedName, data, error))
        return false;
      const size_t piece = data.size() / part->weights.size();
      for (size_t k = 0; k < part->weights.size(); ++k) {
        weights[part->weights[k]].assign(data.begin() + k * piece,
                                         data.begin() + (k + 1) * piece);
        fromStacked.insert(part->weights[k]);
      }
    }
  }
  for (const auto &[name, shape] : expected) {
    if (fromStacked.count(name))
      continue;
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
  if (warnings)
    warnings->insert(warnings->end(), config.notes.begin(), config.notes.end());
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
  model->aliases = weightAliases(model->modelConfig);
  if (!collectWeights(model->modelConfig, model->aliases, names, shapes,
                      file->path(), fetch, model->weights, error, warnings))
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
  model->aliases = weightAliases(config);
  if (!collectWeights(config, model->aliases, names, shapes, "tensors", fetch,
                      model->weights, error, warnings))
    return nullptr;
  return model;
}

const std::vector<float> *
ModelReference::weight(const std::string &name) const {
  auto it = weights.find(name);
  return it == weights.end() ? nullptr : &it->second;
}

/// The bf16 nearest to a finite `value` (ties to even), as f32.
static float roundToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

bool ModelReference::roundWeightToBf16(const std::string &name) {
  if (auto alias = aliases.find(name); alias != aliases.end()) {
    for (const std::string &piece : alias->second.weights)
      roundWeightToBf16(piece);
    return true;
  }
  auto it = weights.find(name);
  if (it == weights.end())
    return false;
  for (float &value : it->second)
    value = roundToBf16(value);
  return true;
}

bool ModelReference::quantizeWeight(const std::string &name, int64_t in, bool outIn,
                                    QuantFormat format, int64_t experts) {
  if (auto alias = aliases.find(name); alias != aliases.end()) {
    if (!alias->second.stacked) // mixtral's router, renamed
      return quantizeWeight(alias->second.weights.front(), in, outIn, format,
                            experts);
    // transformers 5's stacked [experts, out, in] tensor, held as the
    // per-expert weights of its slabs: each block of `in` is one row's, so
    // slab e rounds as its pieces do (gate_up_proj: expert e's gate rows,
    // then its up rows).
    if (!outIn)
      return false;
    for (const std::string &piece : alias->second.weights)
      quantizeWeight(piece, in, outIn, format);
    return true;
  }
  auto it = weights.find(name);
  if (it == weights.end())
    return false;
  if (quantizedInputs.count(&it->second))
    return true;
  std::vector<float> &all = it->second;
  // [..., out, in]: each row rounds on its own, slab by slab or whole (a
  // per-expert weight the caller names with the layer's `experts` too);
  // [experts, in, out] (x @ W): slab by slab.
  const size_t slab =
      outIn ? all.size()
            : all.size() / static_cast<size_t>(std::max<int64_t>(experts, 1));
  for (size_t begin = 0; begin < all.size(); begin += slab) {
    std::vector<float> part(all.begin() + begin, all.begin() + begin + slab);
    roundThroughFormat(part, in, outIn, format);
    std::copy(part.begin(), part.end(), all.begin() + begin);
  }
  quantizedInputs.insert(&all);
  return true;
}

const std::vector<float> &ModelReference::w(const std::string &name) const {
  return weights.at(name); // Present: load/create checked every name.
}

bool ModelReference::forward(const std::vector<int64_t> &tokens,
                             std::vector<float> &logits,
                             std::string &error) const {
  KvCache cache;
  return step(tokens, cache, logits, error);
}

bool ModelReference::step(const std::vector<int64_t> &tokens, KvCache &cache,
                          std::vector<float> &logits, std::string &error,
                          Inspection *inspection) const {
  const ModelConfig &c = modelConfig;
  int64_t n = static_cast<int64_t>(tokens.size());
  // Only a fixed position table limits the length (GPT-2 wpe, OPT
  // embed_positions, GPT-J's sin/cos table of n_positions rows): HF fails
  // past it. RoPE computed per call and ALiBi run past
  // max_position_embeddings (as rope scaling means to), and XGLM grows its
  // sinusoidal table.
  int64_t limit = c.architecture == Architecture::GPT2 ||
                          c.architecture == Architecture::OPT ||
                          c.architecture == Architecture::GPTJ
                      ? c.maxPositions
                      : kNoPositionLimit;
  if (n < 1 || cache.length < 0 || cache.length + n > limit) {
    error = "the sequence has " + std::to_string(cache.length + n) +
            " tokens; the model takes 1 to " + std::to_string(limit);
    return false;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab) {
      error = "token " + std::to_string(tokens[i]) + " at position " +
              std::to_string(cache.length + i) +
              " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")";
      return false;
    }
  }
  if (cache.length == 0) {
    cache.keys.assign(c.layers, {});
    cache.values.assign(c.layers, {});
  } else if (static_cast<int64_t>(cache.keys.size()) != c.layers ||
             static_cast<int64_t>(cache.values.size()) != c.layers) {
    error = "the cache does not belong to this model";
    return false;
  }
  KvCache next = cache;
  if (inspection)
    *inspection = Inspection();
  if (!guarded([&]() { logits = run(tokens, next, inspection); }, error))
    return false;
  next.length = cache.length + n;
  cache = std::move(next);
  return true;
}

bool ModelReference::inspect(const std::vector<int64_t> &tokens,
                             Inspection &inspection, std::vector<float> &logits,
                             std::string &error) const {
  KvCache cache;
  return step(tokens, cache, logits, error, &inspection);
}

bool ModelReference::forwardCached(const std::vector<int64_t> &tokens,
                                   int64_t prefill, std::vector<float> &logits,
                                   std::string &error) const {
  int64_t n = static_cast<int64_t>(tokens.size());
  if (prefill < 1 || prefill > n) {
    error = "the prefill length " + std::to_string(prefill) +
            " must be in [1, " + std::to_string(n) + "]";
    return false;
  }
  KvCache cache;
  logits.clear();
  std::vector<float> rows;
  for (int64_t at = 0; at < n; at = cache.length) {
    int64_t count = at == 0 ? prefill : 1;
    std::vector<int64_t> chunk(tokens.begin() + at,
                               tokens.begin() + at + count);
    if (!step(chunk, cache, rows, error))
      return false;
    logits.insert(logits.end(), rows.begin(), rows.end());
  }
  return true;
}

namespace {

/// x * scale elementwise (a float32 scalar multiply: one rounding).
std::vector<float> scaled(const std::vector<float> &x, double scale) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = static_cast<float>(static_cast<double>(x[i]) * scale);
  return out;
}

/// The per-head fused layout of GPT-NeoX and BLOOM: row [n, heads * 3 * hd]
/// is, per head, [q_h, k_h, v_h] (qkv.view(..., heads, 3, hd)); part 0 = q,
/// 1 = k, 2 = v as [n, heads * hd].
std::vector<float> perHeadPart(const std::vector<float> &qkv, int64_t n,
                               int64_t heads, int64_t hd, int64_t part) {
  std::vector<float> out(n * heads * hd);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(qkv.begin() + r * heads * 3 * hd + (h * 3 + part) * hd, hd,
                  out.begin() + (r * heads + h) * hd);
  return out;
}

/// XGLMSinusoidalPositionalEmbedding.get_embedding, row `row`: with
/// half = d / 2 and c = ln(10000) / (half - 1), column i < half is
/// sin(row * exp(-i c)), column half + i the cos; an odd d gets a zero last
/// column; row padding (pad_token_id) is zero. In double, rounded once.
std::vector<float> xglmPositionRow(int64_t row, int64_t d, int64_t padding) {
  std::vector<float> out(d, 0.0f);
  if (row == padding)
    return out;
  int64_t half = d / 2;
  double c = std::log(10000.0) / static_cast<double>(half - 1);
  for (int64_t i = 0; i < half; ++i) {
    double angle = static_cast<double>(row) * std::exp(-c * i);
    out[i] = static_cast<float>(std::sin(angle));
    out[half + i] = static_cast<float>(std::cos(angle));
  }
  return out;
}

} // namespace

std::vector<float> xglmSinusoidalPositions(int64_t positions, int64_t dim,
                                           int64_t paddingIndex) {
  if (dim < 4)
    throw std::invalid_argument("xglmSinusoidalPositions: dim must be >= 4");
  std::vector<float> out;
  for (int64_t r = 0; r < positions; ++r) {
    std::vector<float> row = xglmPositionRow(r, dim, paddingIndex);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

std::vector<float> ModelReference::run(const std::vector<int64_t> &ids,
                                       KvCache &cache, Inspection *inspection) const {
  const ModelConfig &c = modelConfig;
  const Architecture arch = c.architecture;
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t start = cache.length;
  // Every projection below: ref::linear, on int8-quantized input rows when
  // its weight is stored quantized (quantizeWeight).
  auto linear = [&](const std::vector<float> &x, int64_t m, int64_t k,
                    const std::vector<float> &weight, int64_t out, WeightLayout layout,
                    const float *bias = nullptr) {
    if (!quantizedInputs.count(&weight))
      return ref::linear(x, m, k, weight, out, layout, bias);
    return ref::linear(quantizeActivationRows(x, m, k), m, k, weight, out, layout, bias);
  };
  const int64_t d = c.hidden, f = c.ffn, hd = c.headDim;
  const int64_t qWidth = c.heads * hd, kvWidth = c.kvHeads * hd;
  const double eps = asF32(c.normEps);
  const WeightLayout outIn = WeightLayout::OutIn;

  auto bias = [&](const std::string &name) -> const float * {
    return weight(name) ? weight(name)->data() : nullptr;
  };
  // nn.Linear `name` [out, in] on x [n, in], with its bias when stored.
  auto dense = [&](const std::vector<float> &x, int64_t in,
                   const std::string &name, int64_t out) {
    return linear(x, n, in, w(name + ".weight"), out, outIn,
                  bias(name + ".bias"));
  };
  auto layerNormOf = [&](const std::vector<float> &x, const std::string &name) {
    return layerNorm(x, n, d, w(name + ".weight"), w(name + ".bias"), eps);
  };
  // Rows of `width` features (a head's for the q/k norms).
  auto rmsNormRows = [&](const std::vector<float> &x, const std::string &name,
                         int64_t rows, int64_t width) {
    if (!c.normPlusOne)
      return rmsNorm(x, rows, width, w(name + ".weight"), eps);
    // GemmaRMSNorm: x * rsqrt(mean(x^2) + eps) * (1.0 + weight.float()),
    // with 1 + w rounded to float as torch holds it.
    std::vector<float> gamma(w(name + ".weight"));
    for (float &g : gamma)
      g = static_cast<float>(1.0 + static_cast<double>(g));
    return rmsNorm(x, rows, width, gamma, eps);
  };
  auto rmsNormOf = [&](const std::vector<float> &x, const std::string &name) {
    return rmsNormRows(x, name, n, d);
  };
  auto activate = [&](const std::vector<float> &x) {
    switch (c.activation) {
    case Activation::GeluErf:
      return gelu(x, GeluApproximation::Erf);
    case Activation::GeluTanh:
      return gelu(x, GeluApproximation::Tanh);
    case Activation::Relu:
      return relu(x);
    case Activation::Silu:
      return silu(x);
    }
    return x;
  };
  // act(gate) * up.
  auto gated = [&](const std::vector<float> &gate,
                   const std::vector<float> &up) {
    switch (c.activation) {
    case Activation::Silu:
      return swiglu(gate, up);
    case Activation::GeluErf:
      return geglu(gate, up, GeluApproximation::Erf);
    case Activation::GeluTanh:
      return geglu(gate, up, GeluApproximation::Tanh);
    case Activation::Relu: {
      std::vector<float> r = relu(gate), out(gate.size());
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<float>(static_cast<double>(r[i]) * up[i]);
      return out;
    }
    }
    return gate;
  };

  // RoPE of this call: rope_scaling other than the default keeps HF's
  // inverse frequencies (rounded to float, as HF holds inv_freq) and the
  // attention factor; "dynamic" uses the length of this call, the last
  // position + 1. Unscaled RoPE uses theta as an f32 attribute.
  // Gemma 3's sliding layers have a table of their own.
  struct RopeTable {
    double theta = 0;
    bool scaled = false;
    std::vector<double> invFreq;
    double attentionFactor = 1.0;
  };
  auto makeTable = [&](double theta, const RopeScaling &scaling) {
    RopeTable t;
    t.theta = theta;
    t.scaled = scaling.type != RopeScaling::Type::None;
    if (c.rotaryDim <= 0)
      return t;
    if (t.scaled) {
      t.invFreq = ropeScaledFrequencies(theta, c.rotaryDim, scaling, start + n,
                                        t.attentionFactor);
      for (double &v : t.invFreq)
        v = asF32(v);
      t.attentionFactor = asF32(t.attentionFactor);
    } else {
      t.invFreq = ropeFrequencies(asF32(theta), c.rotaryDim);
    }
    return t;
  };
  const RopeTable globalRope = makeTable(c.ropeTheta, c.ropeScaling);
  const RopeTable localRope =
      c.localRope ? makeTable(c.localRopeTheta, c.localRopeScaling) : globalRope;
  auto rotateWith = [&](const std::vector<float> &x, int64_t width,
                        const RopeTable &t) {
    if (!t.scaled && c.rotaryDim == hd)
      return rope(x, n, width, hd, asF32(t.theta), c.ropePairing, start);
    return ropeWithFrequencies(x, n, width, hd, t.invFreq, t.attentionFactor,
                               c.ropePairing, start);
  };
  auto rotate = [&](const std::vector<float> &x, int64_t width) {
    return rotateWith(x, width, globalRope);
  };

  std::vector<double> slopes;
  if (arch == Architecture::Bloom)
    slopes = alibiSlopes(c.heads);
  // Appends this call's keys and values to the cache and attends over all
  // of them; the queries sit at positions start .. start + n - 1.
  auto attend = [&](int64_t layer, const std::vector<float> &q,
                    const std::vector<float> &k, const std::vector<float> &v) {
    std::vector<float> &keys = cache.keys[layer], &values = cache.values[layer];
    size_t keysBefore = keys.size(), valuesBefore = values.size();
    keys.insert(keys.end(), k.begin(), k.end());
    values.insert(values.end(), v.begin(), v.end());
    auto round = [&](std::vector<float> &rows, size_t from) {
      for (size_t i = from; i < rows.size(); ++i)
        rows[i] = cacheFormat == CacheFormat::BF16 ? roundToBf16(rows[i])
                                                   : f16Value(f16Bits(rows[i]));
    };
    if (cacheFormat != CacheFormat::F32) {
      round(keys, keysBefore);
      round(values, valuesBefore);
    }
    AttentionParams p;
    p.heads = c.heads;
    p.kvHeads = c.kvHeads;
    p.headDim = hd;
    // Gemma 2 and 3: query_pre_attn_scalar ** -0.5.
    p.scale = c.queryPreAttnScalar > 0
                  ? asF32(std::pow(c.queryPreAttnScalar, -0.5))
                  : asF32(defaultScale(hd));
    p.softcap = asF32(c.attnSoftcap);
    p.causal = true;
    if (!c.slidingLayers.empty() && c.slidingLayers[layer])
      p.window = c.slidingWindow;
    if (!slopes.empty())
      p.alibiSlopes = slopes.data();
    if (arch == Architecture::GptOss) // GptOssAttention.sinks
      p.sinks = w("model.layers." + std::to_string(layer) + ".self_attn.sinks").data();
    if (!inspection)
      return attention(q, n, keys, values, start + n, p);
    std::vector<float> weights;
    std::vector<float> out = attention(q, n, keys, values, start + n, p, &weights);
    inspection->attention.insert(inspection->attention.end(), weights.begin(), weights.end());
    return out;
  };
  auto record = [&](const std::vector<float> &x) {
    if (inspection)
      inspection->residual.insert(inspection->residual.end(), x.begin(), x.end());
  };
  auto recordFinalNorm = [&](const std::vector<float> &x) {
    if (inspection)
      inspection->finalNorm = x;
  };
  // A layer's routing (null: a dense layer of a mixture of experts).
  auto recordRouting = [&](const MoeRouting *routing) {
    if (!inspection)
      return;
    const size_t rows = static_cast<size_t>(n * c.expertsPerToken);
    if (routing && (routing->experts.size() != rows || routing->weights.size() != rows))
      throw std::logic_error("recordRouting: the routing is not [n, top k]");
    std::vector<int32_t> &experts = inspection->experts;
    std::vector<float> &weights = inspection->expertWeights;
    if (routing) {
      experts.insert(experts.end(), routing->experts.begin(), routing->experts.end());
      weights.insert(weights.end(), routing->weights.begin(), routing->weights.end());
    } else {
      experts.insert(experts.end(), rows, -1);
      weights.insert(weights.end(), rows, 0.0f);
    }
  };

  std::vector<int64_t> positions(n);
  for (int64_t i = 0; i < n; ++i)
    positions[i] = start + i;

  std::vector<float> x;
  switch (arch) {
  case Architecture::GPT2: {
    x = residualAdd(embedding(w("wte.weight"), c.vocab, d, ids),
                    embedding(w("wpe.weight"), c.maxPositions, d, positions));
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = "h." + std::to_string(i) + ".";
      std::vector<float> h = layerNormOf(x, l + "ln_1");
      std::vector<float> qkv =
          linear(h, n, d, w(l + "attn.c_attn.weight"), 3 * d,
                 WeightLayout::InOut, w(l + "attn.c_attn.bias").data());
      std::vector<float> a =
          attend(i, columns(qkv, n, 3 * d, 0, d), columns(qkv, n, 3 * d, d, d),
                 columns(qkv, n, 3 * d, 2 * d, d));
      x = residualAdd(x, linear(a, n, d, w(l + "attn.c_proj.weight"), d,
                                WeightLayout::InOut,
                                w(l + "attn.c_proj.bias").data()));
      std::vector<float> h2 = layerNormOf(x, l + "ln_2");
      std::vector<float> up =
          gelu(linear(h2, n, d, w(l + "mlp.c_fc.weight"), f,
                      WeightLayout::InOut, w(l + "mlp.c_fc.bias").data()),
               c.gelu);
      x = residualAdd(x, linear(up, n, f, w(l + "mlp.c_proj.weight"), d,
                                WeightLayout::InOut,
                                w(l + "mlp.c_proj.bias").data()));
    }
    record(x); // the last layer's output
    x = layerNormOf(x, "ln_f");
    recordFinalNorm(x);
    return linear(x, n, d, w("wte.weight"), c.vocab, outIn);
  }

  case Architecture::Llama:
  case Architecture::Mistral:
  case Architecture::Qwen2:
  case Architecture::Qwen3:
  case Architecture::SmolLM3:
  case Architecture::Gemma:
  case Architecture::Phi3:
  case Architecture::Qwen3Moe:
  case Architecture::Qwen2Moe:
  case Architecture::Mixtral:
  case Architecture::GptOss: {
    const bool phi3 = arch == Architecture::Phi3;
    // GptOssMLP on the normed rows: router_logits = x W^T + b, the top k
    // logits and a softmax over them; each chosen expert's
    // gate_up = x @ gate_up_proj[e] + bias (gate the even columns, up the
    // odd ones), the clamped SwiGLU, @ down_proj[e] + bias, weighted.
    auto gptOssMoe = [&](const std::vector<float> &h, int64_t layer) {
      const StackedExpertNames names = stackedExpertNames(layer);
      const int64_t E = c.experts, F = c.expertFfn;
      const std::vector<float> &gateUp = w(names.gateUp), &gateUpBias = w(names.gateUpBias),
                               &downIn = w(names.down);
      // To moeExperts' [E, F, d] gate and up and [E, d, F] down.
      std::vector<float> gate(E * F * d), up(E * F * d), down(E * d * F), gateBias(E * F),
          upBias(E * F);
      for (int64_t e = 0; e < E; ++e) {
        for (int64_t k = 0; k < d; ++k)
          for (int64_t i = 0; i < F; ++i) {
            gate[(e * F + i) * d + k] = gateUp[(e * d + k) * 2 * F + 2 * i];
            up[(e * F + i) * d + k] = gateUp[(e * d + k) * 2 * F + 2 * i + 1];
            down[(e * d + k) * F + i] = downIn[(e * F + i) * d + k];
          }
        for (int64_t i = 0; i < F; ++i) {
          gateBias[e * F + i] = gateUpBias[e * 2 * F + 2 * i];
          upBias[e * F + i] = gateUpBias[e * 2 * F + 2 * i + 1];
        }
      }
      if (quantizedInputs.count(&w(names.router)))
        throw std::invalid_argument("'" + names.router +
                                    "': the router is never quantized");
      MoeRouting routing =
          moeRouter(h, n, d, w(names.router), E, w(names.routerBias).data(),
                    c.expertsPerToken, MoeScoring::TopKSoftmax, false);
      recordRouting(&routing);
      RowRounding quantize = [](const std::vector<float> &rows, int64_t count,
                                int64_t width) {
        return quantizeActivationRows(rows, count, width);
      };
      return moeExperts(h, n, d, routing, c.expertsPerToken, gate, up, down, E, F,
                        MoeActivation::ClampedSwiglu, asF32(c.swigluAlpha),
                        asF32(c.swigluLimit), {&gateBias, &upBias, &w(names.downBias)},
                        quantizedInputs.count(&gateUp) ? quantize : RowRounding(),
                        quantizedInputs.count(&downIn) ? quantize : RowRounding());
    };
    // Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock on the normed rows.
    auto sparseMoe = [&](const std::vector<float> &h, int64_t layer) {
      const MoeNames names = moeNames(c, layer);
      ExpertWeights experts;
      for (int64_t e = 0; e < c.experts; ++e) {
        experts.gate.push_back(&w(names.gate[e]));
        experts.up.push_back(&w(names.up[e]));
        experts.down.push_back(&w(names.down[e]));
      }
      // A quantized product reads int8-quantized rows (the packed
      // kernels): gate and up the token's, down the activations. (down
      // stays f32 when the expert's width is not whole blocks of 32.)
      const bool gateUp = quantizedInputs.count(&w(names.gate[0])) != 0;
      const bool down = quantizedInputs.count(&w(names.down[0])) != 0;
      auto expect = [&](const std::vector<std::string> &group, bool quantized) {
        for (const std::string &name : group)
          if ((quantizedInputs.count(&w(name)) != 0) != quantized)
            throw std::invalid_argument(
                "'" + name +
                "': a layer's experts are quantized alike (every gate and up, "
                "every down), and its router never");
      };
      expect({names.router}, false);
      expect(names.gate, gateUp);
      expect(names.up, gateUp);
      expect(names.down, down);
      RowRounding quantize = [](const std::vector<float> &rows, int64_t count,
                                int64_t width) {
        return quantizeActivationRows(rows, count, width);
      };
      MoeRouting routing;
      std::vector<float> y = sparseMoeBlock(h, n, d, w(names.router), experts, c.expertFfn,
                                            c.expertsPerToken, c.normalizeTopK, &routing,
                                            gateUp ? quantize : RowRounding(),
                                            down ? quantize : RowRounding());
      recordRouting(&routing);
      return y;
    };
    // A gated MLP (`m` gate_proj, up_proj, down_proj, no biases) of `width`
    // on h: down(act(gate h) * up h). The dense MLP (LlamaMLP, Qwen3MoeMLP,
    // Qwen2MoeMLP), and qwen2_moe's shared expert.
    auto gatedMlp = [&](const std::vector<float> &h, const std::string &m,
                        int64_t width) {
      return dense(gated(dense(h, d, m + "gate_proj", width),
                         dense(h, d, m + "up_proj", width)),
                   width, m + "down_proj", d);
    };
    // Qwen2MoeSparseMoeBlock: routed + sigmoid(h shared_expert_gate^T) *
    // shared_expert(h), added in one rounding as attn.moe_experts adds its
    // shared expert. The gate stays f32, as the router.
    auto withSharedExpert = [&](const std::vector<float> &routed,
                                const std::vector<float> &h, int64_t layer) {
      const MoeNames names = moeNames(c, layer);
      const std::vector<float> shared =
          gatedMlp(h, names.shared, c.sharedExpertFfn);
      const std::vector<float> &gate = w(names.sharedGate);
      if (quantizedInputs.count(&gate))
        throw std::invalid_argument(
            "'" + names.sharedGate +
            "': the shared expert's gate is never quantized (the compiler "
            "keeps it f32, as the router)");
      const std::vector<float> logits = ref::linear(h, n, d, gate, 1, outIn);
      std::vector<float> out(routed.size());
      for (int64_t t = 0; t < n; ++t) {
        const double sigmoid =
            1.0 / (1.0 + std::exp(-static_cast<double>(logits[t])));
        for (int64_t i = 0; i < d; ++i)
          out[t * d + i] = static_cast<float>(
              static_cast<double>(routed[t * d + i]) +
              sigmoid * static_cast<double>(shared[t * d + i]));
      }
      return out;
    };
    x = embedding(w("model.embed_tokens.weight"), c.vocab, d, ids);
    if (arch == Architecture::Gemma)
      x = scaled(x, c.embeddingScale); // hidden_states * normalizer
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = "model.layers." + std::to_string(i) + ".";
      std::vector<float> h = rmsNormOf(x, l + "input_layernorm");
      std::vector<float> q, k, v;
      if (phi3) {
        // qkv[..., :q], [q : q + kv], [q + kv :].
        std::vector<float> qkv =
            dense(h, d, l + "self_attn.qkv_proj", qWidth + 2 * kvWidth);
        int64_t width = qWidth + 2 * kvWidth;
        q = columns(qkv, n, width, 0, qWidth);
        k = columns(qkv, n, width, qWidth, kvWidth);
        v = columns(qkv, n, width, qWidth + kvWidth, kvWidth);
      } else {
        q = dense(h, d, l + "self_attn.q_proj", qWidth);
        k = dense(h, d, l + "self_attn.k_proj", kvWidth);
        v = dense(h, d, l + "self_attn.v_proj", kvWidth);
      }
      if (c.qkNorm) {
        // Qwen3: q_norm(q.view(..., -1, head_dim)) before RoPE: each head's
        // features are one RMSNorm row.
        q = rmsNorm(q, n * c.heads, hd, w(l + "self_attn.q_norm.weight"), eps);
        k = rmsNorm(k, n * c.kvHeads, hd, w(l + "self_attn.k_norm.weight"),
                    eps);
      }
      // SmolLM3Attention: `if self.use_rope:` (no_rope_layers[i]); the
      // NoPE layers cache and attend with unrotated q and k.
      if (c.ropeLayers.empty() || c.ropeLayers[i]) {
        q = rotate(q, qWidth);
        k = rotate(k, kvWidth);
      }
      std::vector<float> a = attend(i, q, k, v);
      x = residualAdd(x, dense(a, qWidth, l + "self_attn.o_proj", d));
      std::vector<float> h2 = rmsNormOf(x, l + "post_attention_layernorm");
      if (arch == Architecture::GptOss) {
        x = residualAdd(x, gptOssMoe(h2, i));
        continue;
      }
      if (isMoeLayer(c, i)) {
        std::vector<float> y = sparseMoe(h2, i);
        if (c.sharedExpertFfn > 0)
          y = withSharedExpert(y, h2, i);
        x = residualAdd(x, y);
        continue;
      }
      if (c.experts > 0)
        recordRouting(nullptr); // a dense layer (mlp_only_layers)
      if (phi3) {
        // gate, up_states = gate_up_proj(x).chunk(2): gate first.
        std::vector<float> gu = dense(h2, d, l + "mlp.gate_up_proj", 2 * f);
        x = residualAdd(x, dense(gated(columns(gu, n, 2 * f, 0, f),
                                       columns(gu, n, 2 * f, f, f)),
                                 f, l + "mlp.down_proj", d));
      } else {
        x = residualAdd(x, gatedMlp(h2, l + "mlp.", f));
      }
    }
    record(x); // the last layer's output
    x = rmsNormOf(x, "model.norm");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w("model.embed_tokens.weight") : w("lm_head.weight");
    return linear(x, n, d, head, c.vocab, outIn);
  }

  case Architecture::Gemma2:
  case Architecture::Gemma3: {
    const std::string m = basePrefix(c);
    x = scaled(embedding(w(m + "embed_tokens.weight"), c.vocab, d, ids),
               c.embeddingScale);
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = m + "layers." + std::to_string(i) + ".";
      std::vector<float> h = rmsNormOf(x, l + "input_layernorm");
      std::vector<float> q = dense(h, d, l + "self_attn.q_proj", qWidth);
      std::vector<float> k = dense(h, d, l + "self_attn.k_proj", kvWidth);
      std::vector<float> v = dense(h, d, l + "self_attn.v_proj", kvWidth);
      if (c.qkNorm) {
        // Gemma3Attention: q_norm / k_norm ((1 + w), per head) before RoPE.
        q = rmsNormRows(q, l + "self_attn.q_norm", n * c.heads, hd);
        k = rmsNormRows(k, l + "self_attn.k_norm", n * c.kvHeads, hd);
      }
      const bool sliding = !c.slidingLayers.empty() && c.slidingLayers[i];
      const RopeTable &table = sliding ? localRope : globalRope;
      q = rotateWith(q, qWidth, table);
      k = rotateWith(k, kvWidth, table);
      std::vector<float> a =
          dense(attend(i, q, k, v), qWidth, l + "self_attn.o_proj", d);
      // The sandwich: post_attention_layernorm on the attention output,
      // pre/post_feedforward_layernorm around the MLP.
      x = residualAdd(x, rmsNormOf(a, l + "post_attention_layernorm"));
      std::vector<float> h2 = rmsNormOf(x, l + "pre_feedforward_layernorm");
      std::vector<float> mlp =
          dense(gated(dense(h2, d, l + "mlp.gate_proj", f),
                      dense(h2, d, l + "mlp.up_proj", f)),
                f, l + "mlp.down_proj", d);
      x = residualAdd(x, rmsNormOf(mlp, l + "post_feedforward_layernorm"));
    }
    record(x); // the last layer's output
    x = rmsNormOf(x, m + "norm");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w(m + "embed_tokens.weight") : w("lm_head.weight");
    std::vector<float> logits = linear(x, n, d, head, c.vocab, outIn);
    if (c.finalSoftcap > 0) {
      // logits / cap, tanh, * cap.
      const double cap = asF32(c.finalSoftcap);
      for (float &value : logits)
        value = static_cast<float>(cap * std::tanh(value / cap));
    }
    return logits;
  }

  case Architecture::GPTNeoX: {
    x = embedding(w("gpt_neox.embed_in.weight"), c.vocab, d, ids);
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = "gpt_neox.layers." + std::to_string(i) + ".";
      std::vector<float> h = layerNormOf(x, l + "input_layernorm");
      std::vector<float> qkv =
          dense(h, d, l + "attention.query_key_value", 3 * d);
      std::vector<float> q = rotate(perHeadPart(qkv, n, c.heads, hd, 0), d);
      std::vector<float> k = rotate(perHeadPart(qkv, n, c.heads, hd, 1), d);
      std::vector<float> a =
          attend(i, q, k, perHeadPart(qkv, n, c.heads, hd, 2));
      std::vector<float> attnOut = dense(a, d, l + "attention.dense", d);
      auto mlp = [&](const std::vector<float> &in) {
        std::vector<float> u =
            activate(dense(layerNormOf(in, l + "post_attention_layernorm"), d,
                           l + "mlp.dense_h_to_4h", f));
        return dense(u, f, l + "mlp.dense_4h_to_h", d);
      };
      if (c.parallelResidual) {
        // mlp_output + attn_output + hidden_states
        x = residualAdd(residualAdd(mlp(x), attnOut), x);
      } else {
        std::vector<float> attnResidual = residualAdd(attnOut, x);
        x = residualAdd(mlp(attnResidual), attnResidual);
      }
    }
    record(x); // the last layer's output
    x = layerNormOf(x, "gpt_neox.final_layer_norm");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w("gpt_neox.embed_in.weight") : w("embed_out.weight");
    return linear(x, n, d, head, c.vocab, outIn);
  }

  case Architecture::GPTJ: {
    x = embedding(w("transformer.wte.weight"), c.vocab, d, ids);
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = "transformer.h." + std::to_string(i) + ".";
      // One ln_1 feeds attention and the MLP.
      std::vector<float> h = layerNormOf(x, l + "ln_1");
      std::vector<float> q = rotate(dense(h, d, l + "attn.q_proj", d), d);
      std::vector<float> k = rotate(dense(h, d, l + "attn.k_proj", d), d);
      std::vector<float> a = attend(i, q, k, dense(h, d, l + "attn.v_proj", d));
      std::vector<float> attnOut = dense(a, d, l + "attn.out_proj", d);
      std::vector<float> ff = dense(activate(dense(h, d, l + "mlp.fc_in", f)),
                                    f, l + "mlp.fc_out", d);
      // attn_output + feed_forward_hidden_states + residual
      x = residualAdd(residualAdd(attnOut, ff), x);
    }
    record(x); // the last layer's output
    x = layerNormOf(x, "transformer.ln_f");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w("transformer.wte.weight") : w("lm_head.weight");
    return linear(x, n, d, head, c.vocab, outIn, w("lm_head.bias").data());
  }

  case Architecture::OPT: {
    const std::string m = "model.decoder.";
    // OPTLearnedPositionalEmbedding: position p reads row p + 2.
    std::vector<int64_t> rows(n);
    for (int64_t i = 0; i < n; ++i)
      rows[i] = positions[i] + 2;
    x = residualAdd(embedding(w(m + "embed_tokens.weight"), c.vocab, d, ids),
                    embedding(w(m + "embed_positions.weight"),
                              c.maxPositions + 2, d, rows));
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = m + "layers." + std::to_string(i) + ".";
      std::vector<float> h =
          c.layerNormBefore ? layerNormOf(x, l + "self_attn_layer_norm") : x;
      std::vector<float> a = attend(i, dense(h, d, l + "self_attn.q_proj", d),
                                    dense(h, d, l + "self_attn.k_proj", d),
                                    dense(h, d, l + "self_attn.v_proj", d));
      x = residualAdd(x, dense(a, d, l + "self_attn.out_proj", d));
      if (!c.layerNormBefore)
        x = layerNormOf(x, l + "self_attn_layer_norm");
      h = c.layerNormBefore ? layerNormOf(x, l + "final_layer_norm") : x;
      std::vector<float> ff =
          dense(activate(dense(h, d, l + "fc1", f)), f, l + "fc2", d);
      x = residualAdd(x, ff);
      if (!c.layerNormBefore)
        x = layerNormOf(x, l + "final_layer_norm");
    }
    record(x); // the last layer's output
    if (c.finalLayerNorm)
      x = layerNormOf(x, m + "final_layer_norm");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w(m + "embed_tokens.weight") : w("lm_head.weight");
    return linear(x, n, d, head, c.vocab, outIn);
  }

  case Architecture::Bloom: {
    x = layerNormOf(
        embedding(w("transformer.word_embeddings.weight"), c.vocab, d, ids),
        "transformer.word_embeddings_layernorm");
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = "transformer.h." + std::to_string(i) + ".";
      std::vector<float> h = layerNormOf(x, l + "input_layernorm");
      const std::vector<float> &residual = c.residualFromNorm ? h : x;
      std::vector<float> qkv =
          dense(h, d, l + "self_attention.query_key_value", 3 * d);
      std::vector<float> a = attend(i, perHeadPart(qkv, n, c.heads, hd, 0),
                                    perHeadPart(qkv, n, c.heads, hd, 1),
                                    perHeadPart(qkv, n, c.heads, hd, 2));
      std::vector<float> attnOut =
          residualAdd(residual, dense(a, d, l + "self_attention.dense", d));
      std::vector<float> h2 =
          layerNormOf(attnOut, l + "post_attention_layernorm");
      const std::vector<float> &residual2 = c.residualFromNorm ? h2 : attnOut;
      std::vector<float> ff =
          dense(activate(dense(h2, d, l + "mlp.dense_h_to_4h", f)), f,
                l + "mlp.dense_4h_to_h", d);
      x = residualAdd(residual2, ff);
    }
    record(x); // the last layer's output
    x = layerNormOf(x, "transformer.ln_f");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w("transformer.word_embeddings.weight")
                        : w("lm_head.weight");
    return linear(x, n, d, head, c.vocab, outIn);
  }

  case Architecture::XGLM: {
    // embed_tokens(ids) * embed_scale + sinusoidal rows p + 2.
    x = embedding(w("model.embed_tokens.weight"), c.vocab, d, ids);
    if (c.embeddingScale != 1.0)
      x = scaled(x, c.embeddingScale);
    std::vector<float> pe;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<float> row =
          xglmPositionRow(positions[i] + 2, d, c.positionPaddingIndex);
      pe.insert(pe.end(), row.begin(), row.end());
    }
    x = residualAdd(x, pe);
    for (int64_t i = 0; i < c.layers; ++i) {
      record(x); // the input of layer i
      std::string l = "model.layers." + std::to_string(i) + ".";
      std::vector<float> h = layerNormOf(x, l + "self_attn_layer_norm");
      std::vector<float> a = attend(i, dense(h, d, l + "self_attn.q_proj", d),
                                    dense(h, d, l + "self_attn.k_proj", d),
                                    dense(h, d, l + "self_attn.v_proj", d));
      x = residualAdd(x, dense(a, d, l + "self_attn.out_proj", d));
      h = layerNormOf(x, l + "final_layer_norm");
      x = residualAdd(
          x, dense(activate(dense(h, d, l + "fc1", f)), f, l + "fc2", d));
    }
    record(x); // the last layer's output
    x = layerNormOf(x, "model.layer_norm");
    recordFinalNorm(x);
    const std::vector<float> &head =
        c.tieEmbeddings ? w("model.embed_tokens.weight") : w("lm_head.weight");
    return linear(x, n, d, head, c.vocab, outIn);
  }
  }
  throw std::invalid_argument("unknown architecture");
}

std::vector<float> sparseMoeBlock(const std::vector<float> &x, int64_t tokens,
                                  int64_t hidden,
                                  const std::vector<float> &router,
                                  const ExpertWeights &experts, int64_t ffn,
                                  int64_t topK, bool normalize,
                                  MoeRouting *routing,
                                  const RowRounding &roundInputs,
                                  const RowRounding &roundActivations) {
  const size_t count = experts.gate.size();
  const int64_t numExperts = static_cast<int64_t>(count);
  auto fail = [](const std::string &what) {
    throw std::invalid_argument("sparseMoeBlock: " + what);
  };
  if (count == 0 || experts.up.size() != count || experts.down.size() != count)
    fail("gate, up and down need one weight per expert");
  if (tokens < 1 || hidden < 1 || ffn < 1 ||
      x.size() != static_cast<size_t>(tokens * hidden))
    fail("x size != tokens * hidden");
  if (router.size() != static_cast<size_t>(numExperts * hidden))
    fail("router size != experts * hidden");
  if (topK < 1 || topK > numExperts)
    fail("top k " + std::to_string(topK) + " not in [1, " +
         std::to_string(numExperts) + "]");
  const size_t block = static_cast<size_t>(ffn * hidden);
  for (size_t e = 0; e < count; ++e)
    if (!experts.gate[e] || !experts.up[e] || !experts.down[e] ||
        experts.gate[e]->size() != block || experts.up[e]->size() != block ||
        experts.down[e]->size() != block)
      fail("expert " + std::to_string(e) +
           ": gate and up must be [ffn, hidden], down [hidden, ffn]");
  MoeRouting chosen =
      moeRouter(x, tokens, hidden, router, numExperts, /*bias=*/nullptr, topK,
                MoeScoring::SoftmaxTopK, normalize);
  // moeExperts reads stacked [experts, ...] weights: stack only the experts
  // some token chose (ascending), renumbered, rather than all of them.
  std::vector<int32_t> slot(count, -1);
  for (int32_t e : chosen.experts)
    slot[e] = 0;
  std::vector<float> gate, up, down;
  int32_t used = 0;
  for (size_t e = 0; e < count; ++e) {
    if (slot[e] < 0)
      continue;
    slot[e] = used++;
    gate.insert(gate.end(), experts.gate[e]->begin(), experts.gate[e]->end());
    up.insert(up.end(), experts.up[e]->begin(), experts.up[e]->end());
    down.insert(down.end(), experts.down[e]->begin(), experts.down[e]->end());
  }
  MoeRouting compact = chosen;
  for (int32_t &e : compact.experts)
    e = slot[e];
  std::vector<float> y =
      moeExperts(x, tokens, hidden, compact, topK, gate, up, down, used, ffn,
                 MoeActivation::Swiglu, /*alpha=*/0.0, /*limit=*/0.0,
                 /*biases=*/{}, roundInputs, roundActivations);
  if (routing)
    *routing = std::move(chosen);
  return y;
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
