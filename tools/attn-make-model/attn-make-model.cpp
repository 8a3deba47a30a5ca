//===- attn-make-model.cpp - Write a random HF-style test model -----------===//
//
// attn-make-model --preset NAME --out DIR [overrides...]
//
// A thin command line over ModelWriter: a preset, then every flag applied on
// top of it regardless of order. Errors are one line
// "attn-make-model: error: ..." and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "ModelWriter.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace attn::modelgen;

namespace {

const char *kUsage =
    "usage: attn-make-model --preset NAME --out DIR [options]\n"
    "\n"
    "Writes DIR/config.json and DIR/model.safetensors (or shards) with\n"
    "deterministic random weights in the layout of a Hugging Face checkpoint.\n"
    "\n"
    "presets: tiny-gpt2, tiny-llama, tiny-llama-tied, gpt2-small, llama-110m\n"
    "\n"
    "dimensions (override the preset):\n"
    "  --layers N  --hidden D  --heads H  --kv-heads G  --ffn F  --vocab V\n"
    "  --max-positions P  --head-dim HD (llama)  --rope-theta T (llama)\n"
    "  --norm-eps E  --activation NAME (gpt2: gelu_new, gelu_pytorch_tanh, "
    "gelu)\n"
    "  --embedding-std S   token embedding std (default 1; 0.25 lets tied\n"
    "                      models' argmaxes depend on the layers)\n"
    "  --tie-embeddings / --no-tie-embeddings (llama)\n"
    "file variants:\n"
    "  --prefix P          prepend P to every name (gpt2, e.g. transformer.)\n"
    "  --extra-buffers     add the non-weight buffers real checkpoints carry\n"
    "  --extra-tensor NAME add an unknown tensor (repeatable)\n"
    "  --omit-tensor NAME  leave a tensor out (repeatable)\n"
    "  --poison NAME:I:V   set element I (flat) of a tensor to V: nan, inf,\n"
    "                      -inf or a number (repeatable)\n"
    "  --dtype F32|F16|BF16  --seed S\n"
    "  --shards N          N shard files and model.safetensors.index.json\n"
    "                      (Hugging Face naming) instead of model.safetensors\n"
    "other: --list-presets, --quiet, --help\n";

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "attn-make-model: error: " << message << "\n";
  std::exit(1);
}

int64_t parseInt(const std::string &flag, const std::string &text) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    fail(flag + " expects an integer, got '" + text + "'");
  if (v < 1)
    fail(flag + " must be at least 1, got " + text);
  return v;
}

uint64_t parseSeed(const std::string &text) {
  errno = 0;
  char *end = nullptr;
  if (text.empty() || text[0] == '-')
    fail("--seed expects a non-negative integer, got '" + text + "'");
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (*end != '\0' || errno == ERANGE)
    fail("--seed expects a non-negative integer, got '" + text + "'");
  return v;
}

double parsePositiveDouble(const std::string &flag, const std::string &text) {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(v > 0) || v > 1e300)
    fail(flag + " expects a positive number, got '" + text + "'");
  return v;
}

/// "NAME:INDEX:VALUE", VALUE one of nan, inf, -inf or a number.
ModelSpec::Poison parsePoison(const std::string &text) {
  size_t second = text.rfind(':');
  size_t first = second == std::string::npos || second == 0
                     ? std::string::npos
                     : text.rfind(':', second - 1);
  if (first == std::string::npos || first == 0)
    fail("--poison expects NAME:INDEX:VALUE, got '" + text + "'");
  ModelSpec::Poison poison;
  poison.tensor = text.substr(0, first);
  std::string index = text.substr(first + 1, second - first - 1);
  std::string value = text.substr(second + 1);
  errno = 0;
  char *end = nullptr;
  long long i = std::strtoll(index.c_str(), &end, 10);
  if (index.empty() || *end != '\0' || errno == ERANGE || i < 0)
    fail("--poison: the index must be a non-negative integer, got '" + index +
         "'");
  poison.index = i;
  if (value == "nan") {
    poison.value = std::numeric_limits<float>::quiet_NaN();
  } else if (value == "inf") {
    poison.value = std::numeric_limits<float>::infinity();
  } else if (value == "-inf") {
    poison.value = -std::numeric_limits<float>::infinity();
  } else {
    errno = 0;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || errno == ERANGE)
      fail("--poison: the value must be nan, inf, -inf or a number, got '" +
           value + "'");
    poison.value = static_cast<float>(v);
  }
  return poison;
}

} // namespace

int main(int argc, char **argv) {
  std::optional<std::string> preset, out, activation, prefix;
  std::optional<int64_t> layers, hidden, heads, kvHeads, ffn, vocab,
      maxPositions, headDim;
  std::optional<double> ropeTheta, normEps, embeddingStd;
  std::optional<bool> tie;
  std::optional<DType> dtype;
  std::optional<uint64_t> seed;
  std::optional<int64_t> shards;
  bool extraBuffers = false, quiet = false;
  std::vector<std::string> extraTensors, omitTensors;
  std::vector<ModelSpec::Poison> poison;

  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool hasInlineValue = false;
    if (flag.rfind("--", 0) == 0) {
      if (size_t eq = flag.find('='); eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
        hasInlineValue = true;
      }
    } else {
      fail("unexpected argument '" + flag + "' (flags start with --)");
    }
    auto takeValue = [&]() -> std::string {
      if (hasInlineValue)
        return value;
      if (i + 1 >= args.size())
        fail(flag + " expects a value");
      return args[++i];
    };
    auto noValue = [&]() {
      if (hasInlineValue)
        fail(flag + " takes no value");
    };

    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (flag == "--list-presets") {
      noValue();
      for (const std::string &name : presetNames())
        std::cout << name << "\n";
      return 0;
    } else if (flag == "--preset") {
      preset = takeValue();
    } else if (flag == "--out") {
      out = takeValue();
      if (out->empty())
        fail("--out expects a directory");
    } else if (flag == "--layers") {
      layers = parseInt(flag, takeValue());
    } else if (flag == "--hidden") {
      hidden = parseInt(flag, takeValue());
    } else if (flag == "--heads") {
      heads = parseInt(flag, takeValue());
    } else if (flag == "--kv-heads") {
      kvHeads = parseInt(flag, takeValue());
    } else if (flag == "--ffn") {
      ffn = parseInt(flag, takeValue());
    } else if (flag == "--vocab") {
      vocab = parseInt(flag, takeValue());
    } else if (flag == "--max-positions") {
      maxPositions = parseInt(flag, takeValue());
    } else if (flag == "--head-dim") {
      headDim = parseInt(flag, takeValue());
    } else if (flag == "--rope-theta") {
      ropeTheta = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--norm-eps") {
      normEps = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--embedding-std") {
      embeddingStd = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--activation") {
      activation = takeValue();
    } else if (flag == "--tie-embeddings") {
      noValue();
      tie = true;
    } else if (flag == "--no-tie-embeddings") {
      noValue();
      tie = false;
    } else if (flag == "--prefix") {
      prefix = takeValue();
    } else if (flag == "--extra-buffers") {
      noValue();
      extraBuffers = true;
    } else if (flag == "--extra-tensor") {
      extraTensors.push_back(takeValue());
    } else if (flag == "--omit-tensor") {
      omitTensors.push_back(takeValue());
    } else if (flag == "--poison") {
      poison.push_back(parsePoison(takeValue()));
    } else if (flag == "--dtype") {
      std::string text = takeValue();
      DType parsed;
      if (!parseDType(text, parsed))
        fail("--dtype expects F32, F16 or BF16, got '" + text + "'");
      dtype = parsed;
    } else if (flag == "--seed") {
      seed = parseSeed(takeValue());
    } else if (flag == "--shards") {
      shards = parseInt(flag, takeValue());
    } else if (flag == "--quiet") {
      noValue();
      quiet = true;
    } else {
      fail("unknown flag '" + flag + "' (see --help)");
    }
  }

  std::string presetList;
  for (const std::string &name : presetNames())
    presetList += (presetList.empty() ? "" : ", ") + name;
  if (!preset)
    fail("--preset is required (one of: " + presetList + ")");
  if (!out)
    fail("--out DIR is required");

  ModelSpec spec;
  if (!presetSpec(*preset, spec))
    fail("unknown preset '" + *preset + "' (one of: " + presetList + ")");
  bool llama = spec.family == Family::Llama;
  // Flags that have no meaning for the family are errors, not silently
  // ignored: a test that asked for them would otherwise test nothing.
  if (!llama && ropeTheta)
    fail("--rope-theta applies only to llama models");
  if (!llama && headDim)
    fail("--head-dim applies only to llama models");
  if (!llama && tie && !*tie)
    fail("--no-tie-embeddings: gpt2 always ties its embeddings");
  if (llama && activation && *activation != "silu")
    fail("--activation: llama models use silu");
  if (llama && prefix && !prefix->empty())
    fail("--prefix applies only to gpt2 models");

  if (layers)
    spec.layers = *layers;
  if (hidden)
    spec.hidden = *hidden;
  if (heads)
    spec.heads = *heads;
  if (kvHeads)
    spec.kvHeads = *kvHeads;
  if (ffn)
    spec.ffn = *ffn;
  if (vocab)
    spec.vocab = *vocab;
  if (maxPositions)
    spec.maxPositions = *maxPositions;
  if (headDim)
    spec.headDim = *headDim;
  if (ropeTheta)
    spec.ropeTheta = *ropeTheta;
  if (normEps)
    spec.normEps = *normEps;
  if (embeddingStd)
    spec.embeddingStd = *embeddingStd;
  if (activation)
    spec.activation = *activation;
  if (tie && llama)
    spec.tieEmbeddings = *tie;
  if (prefix)
    spec.prefix = *prefix;
  if (dtype)
    spec.dtype = *dtype;
  if (seed)
    spec.seed = *seed;
  if (shards)
    spec.shards = *shards;
  spec.extraBuffers = extraBuffers;
  spec.extraTensors = extraTensors;
  spec.omitTensors = omitTensors;
  spec.poison = poison;

  std::vector<TensorDesc> tensors;
  std::string error;
  if (!planTensors(spec, tensors, error))
    fail(error);
  if (!writeModel(spec, *out, error))
    fail(error);

  if (!quiet) {
    int64_t elements = 0;
    for (const TensorDesc &t : tensors)
      elements += numElements(t);
    std::cout << "wrote " << *out << ": " << *preset << ", "
              << (llama ? "llama" : "gpt2") << ", " << spec.layers
              << " layers, hidden " << spec.hidden << ", " << tensors.size()
              << " tensors, " << elements << " elements, "
              << dtypeName(spec.dtype) << ", seed " << spec.seed;
    if (spec.shards > 0)
      std::cout << ", " << spec.shards << " shards";
    std::cout << "\n";
  }
  return 0;
}
