//===- attn-make-model.cpp - Write a random HF-style test model -----------===//
//
// attn-make-model --preset NAME --out DIR [overrides...]
//
// A thin command line over ModelWriter: a preset, then every flag applied on
// top of it regardless of order. Errors are one line
// "attn-make-model: error: ..." and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "DescriptionWeights.h"
#include "GgufModelWriter.h"
#include "ModelWriter.h"

#include <algorithm>

#include "attn/Support/Version.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace attn::modelgen;

namespace {

const char *kUsage =
    "usage: attn-make-model --preset NAME --out DIR [options]\n"
    "       attn-make-model --description FILE --out DIR [--sharp] [--dtype D]\n"
    "                       [--seed S]\n"
    "       attn-make-model --from DIR --gguf FILE [--gguf-type T]\n"
    "                       [--gguf-tokenizer DIR]\n"
    "\n"
    "Writes DIR/config.json and DIR/model.safetensors (or shards) with\n"
    "deterministic random weights in the layout of a Hugging Face checkpoint,\n"
    "or, with --description, a copy of a model description\n"
    "(docs/model-description.md) and random weights named as it says.\n"
    "With --from, converts the Hugging Face folder DIR to a GGUF file (its\n"
    "own tokenizer too, when DIR has one) instead.\n"
    "\n"
    "presets (--list-presets): tiny-gpt2, tiny-llama, tiny-llama-tied,\n"
    "  gpt2-small, llama-15m, llama-110m, tiny-mistral, tiny-mistral-mqa,\n"
    "  tiny-qwen2, tiny-qwen2-swa, tiny-qwen3, tiny-qwen3-swa,\n"
    "  tiny-qwen3-bias, qwen3-0.6b, tiny-qwen3-moe, tiny-qwen3-moe-sparse,\n"
    "  tiny-qwen2-moe, qwen3-30b-a3b, tiny-mixtral, tiny-gpt-oss, tiny-smollm3, tiny-smollm3-list,\n"
    "  tiny-gemma, tiny-gemma-mqa, tiny-gemma2,\n"
    "  tiny-gemma3, tiny-gemma3-mm, gemma3-1b, tiny-phi3,\n"
    "  tiny-phi3-partial, tiny-phi3-longrope, phi4-mini, tiny-gpt_neox,\n"
    "  tiny-gpt_neox-sequential, tiny-gptj,\n"
    "  tiny-opt, tiny-opt-postln, tiny-bloom, tiny-xglm\n"
    "\n"
    "dimensions (override the preset; an option the family has no setting\n"
    "for is an error):\n"
    "  --layers N  --hidden D  --heads H  --kv-heads G  --ffn F  --vocab V\n"
    "  --max-positions P  --head-dim HD  --rope-theta T  --norm-eps E\n"
    "  --activation NAME   gpt2, gpt_neox, gptj, opt, xglm: gelu, gelu_new,\n"
    "                      gelu_pytorch_tanh (gpt2 also), relu (not gpt2)\n"
    "  --embedding-std S   token embedding std (default 1; 0.25 lets tied\n"
    "                      models' argmaxes depend on the layers)\n"
    "  --tie-embeddings / --no-tie-embeddings (alias --tie / --no-tie)\n"
    "family settings:\n"
    "  --rope-scaling S    llama, mistral, qwen2, qwen3, smollm3, gemma,\n"
    "                      gemma2, gemma3_text (its global layers): linear:F,\n"
    "                      dynamic:F, yarn:F[:ORIGINAL_MAX][,beta_fast=X]\n"
    "                      [,beta_slow=X][,attention_factor=X],\n"
    "                      llama3:F:LOW:HIGH:ORIGINAL_MAX; phi3:\n"
    "                      longrope:ORIGINAL_MAX[,short=A/B/..,long=A/B/..]\n"
    "  --sliding-window N  mistral, qwen2, qwen3, smollm3 (qwen, smollm3:\n"
    "                      use_sliding_window true; smollm3 slides its NoPE\n"
    "                      layers), gemma2, gemma3_text; 0 = none\n"
    "  --max-window-layers N  qwen2, qwen3: layers >= N use the window\n"
    "                      (default 0)\n"
    "  --layer-types T,... qwen3, smollm3, gemma2, gemma3_text:\n"
    "                      full_attention or sliding_attention per layer (as\n"
    "                      layer_types; decides the window)\n"
    "  --attention-bias / --no-attention-bias  qwen3, smollm3, gemma2,\n"
    "                      gemma3_text (q/k/v/o biases)\n"
    "  --no-rope-layers B,... smollm3: no_rope_layers, one 1 (RoPE) or 0\n"
    "                      (NoPE) per layer\n"
    "  --no-rope-layer-interval N  smollm3: layer i is NoPE when (i + 1) % N\n"
    "                      == 0 (without the key: 4)\n"
    "  --query-pre-attn-scalar X  gemma2, gemma3_text (scores * X^-0.5)\n"
    "  --attn-softcap X / --final-softcap X  gemma2, gemma3_text; null = off\n"
    "  --sliding-window-pattern N  gemma3_text: every Nth layer is global\n"
    "  --rope-local-theta T  gemma3_text: rope_local_base_freq\n"
    "  --multimodal / --no-multimodal  gemma3_text: write a gemma3\n"
    "                      checkpoint (text_config, language_model.* names,\n"
    "                      two dummy vision tensors)\n"
    "  --partial-rotary-factor F  phi3    --rotary-pct F  gpt_neox\n"
    "  --rotary-dim N      gptj\n"
    "  --parallel-residual / --no-parallel-residual  gpt_neox\n"
    "  --layer-norm-before / --no-layer-norm-before  opt (do_layer_norm_before)\n"
    "  --scale-embedding / --no-scale-embedding  xglm\n"
    "weights:\n"
    "  --sharp             peaked attention (q/k std 2/sqrt(fan_in)) and\n"
    "                      biases N(0, 0.5), so that layout bugs flip argmaxes\n"
    "  --dtype F32|F16|BF16  --seed S\n"
    "file variants:\n"
    "  --prefix P          prepend P to every name (gpt2, e.g. transformer.)\n"
    "  --extra-buffers     add the non-weight buffers real checkpoints carry\n"
    "                      (gpt2, llama)\n"
    "  --stacked-experts   qwen3_moe, qwen2_moe, mixtral: the experts as\n"
    "                      transformers 5 saves them (mlp.experts.gate_up_proj,\n"
    "                      down_proj; mixtral's router as mlp.gate)\n"
    "  --extra-tensor NAME add an unknown tensor (repeatable)\n"
    "  --omit-tensor NAME  leave a tensor out (repeatable)\n"
    "  --poison NAME:I:V   set element I (flat) of a tensor to V: nan, inf,\n"
    "                      -inf or a number (repeatable)\n"
    "  --shards N          N shard files and model.safetensors.index.json\n"
    "                      (Hugging Face naming) instead of model.safetensors\n"
    "  --gguf FILE         also write the model as llama.cpp's converter and\n"
    "                      llama-quantize would (llama, mistral, mixtral, qwen2,\n"
    "                      qwen3, qwen3_moe, gpt2, gemma, gemma2, gemma3_text,\n"
    "                      phi3)\n"
    "  --gguf-type T       its matrices: f32, f16 (default), bf16, q8_0, q4_0,\n"
    "                      q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m\n"
    "  --gguf-tokenizer DIR  put DIR's tokenizer.json in it (byte-level BPE, or\n"
    "                      SentencePiece BPE as LLaMA-2's and Mistral's)\n"
    "other: --list-presets, --quiet, --help\n";

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "attn-make-model: error: " << message << "\n";
  std::exit(1);
}

int64_t parseInt(const std::string &flag, const std::string &text,
                 int64_t min = 1) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    fail(flag + " expects an integer, got '" + text + "'");
  if (v < min)
    fail(flag + " must be at least " + std::to_string(min) + ", got " + text);
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

double parsePositiveDouble(const std::string &flag, const std::string &text,
                           const char *expected = "a positive number") {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(v > 0) || v > 1e300)
    fail(flag + " expects " + expected + ", got '" + text + "'");
  return v;
}

/// A positive number, or "null" (0: the key written as null).
double parseCap(const std::string &flag, const std::string &text) {
  return text == "null"
             ? 0.0
             : parsePositiveDouble(flag, text, "a positive number or null");
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

/// "llama, mistral and qwen2" for messages.
std::string familyList(const std::vector<Family> &families) {
  std::string out;
  for (size_t i = 0; i < families.size(); ++i) {
    if (i > 0)
      out += i + 1 == families.size() ? " and " : ", ";
    out += familyName(families[i]);
  }
  return out;
}

bool contains(const std::vector<Family> &families, Family f) {
  for (Family g : families)
    if (g == f)
      return true;
  return false;
}

} // namespace

int main(int argc, char **argv) {
  std::optional<std::string> preset, out, activation, prefix, description, gguf,
      from;
  std::string ggufType = "f16", ggufTokenizer;
  // Every flag given, for the ones --description cannot honour.
  std::vector<std::string> given;
  std::optional<int64_t> layers, hidden, heads, kvHeads, ffn, vocab,
      maxPositions, headDim, slidingWindow, maxWindowLayers, rotaryDim,
      slidingWindowPattern, noRopeLayerInterval;
  std::optional<double> ropeTheta, normEps, embeddingStd, partialRotary,
      rotaryPct, queryPreAttnScalar, attnSoftcap, finalSoftcap,
      ropeLocalTheta;
  std::optional<bool> tie, parallelResidual, layerNormBefore, scaleEmbedding,
      attentionBias, multimodal;
  std::optional<std::vector<std::string>> layerTypes;
  std::optional<std::vector<int>> noRopeLayers;
  std::string tieFlag;
  std::optional<RopeScaling> ropeScaling;
  std::optional<DType> dtype;
  std::optional<uint64_t> seed;
  std::optional<int64_t> shards;
  bool extraBuffers = false, quiet = false, sharp = false, stackedExperts = false;
  std::vector<std::string> extraTensors, omitTensors;
  std::vector<ModelSpec::Poison> poison;

  // Family settings given as --NAME (true) or --no-NAME (false).
  using F = Family;
  struct Switch {
    const char *name;
    std::optional<bool> *value;
    std::vector<Family> families;
  };
  const Switch switches[] = {
      {"attention-bias",
       &attentionBias,
       {F::Qwen3, F::SmolLM3, F::Gemma2, F::Gemma3}},
      {"multimodal", &multimodal, {F::Gemma3}},
      {"parallel-residual", &parallelResidual, {F::GPTNeoX}},
      {"layer-norm-before", &layerNormBefore, {F::OPT}},
      {"scale-embedding", &scaleEmbedding, {F::XGLM}},
  };
  auto switchFlag = [](const Switch &sw, bool on) {
    return std::string(on ? "--" : "--no-") + sw.name;
  };

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
    given.push_back(flag);
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
    bool isSwitch = false;
    for (const Switch &sw : switches)
      for (bool on : {true, false})
        if (flag == switchFlag(sw, on)) {
          noValue();
          *sw.value = on;
          isSwitch = true;
        }
    if (isSwitch)
      continue;

    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (flag == "--version") {
      noValue();
      std::cout << attnVersionText("attn-make-model");
      return 0;
    } else if (flag == "--list-presets") {
      noValue();
      for (const std::string &name : presetNames())
        std::cout << name << "\n";
      return 0;
    } else if (flag == "--preset") {
      preset = takeValue();
    } else if (flag == "--from") {
      from = takeValue();
    } else if (flag == "--description") {
      description = takeValue();
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
    } else if (flag == "--tie-embeddings" || flag == "--tie") {
      noValue();
      tie = true, tieFlag = flag;
    } else if (flag == "--no-tie-embeddings" || flag == "--no-tie") {
      noValue();
      tie = false, tieFlag = flag;
    } else if (flag == "--rope-scaling") {
      RopeScaling parsed;
      std::string error;
      if (!parseRopeScaling(takeValue(), parsed, error))
        fail("--rope-scaling: " + error);
      ropeScaling = parsed;
    } else if (flag == "--sliding-window") {
      slidingWindow = parseInt(flag, takeValue(), 0);
    } else if (flag == "--max-window-layers") {
      maxWindowLayers = parseInt(flag, takeValue(), 0);
    } else if (flag == "--layer-types") {
      // Comma-separated; the values are checked by validateSpec.
      std::string text = takeValue();
      layerTypes.emplace();
      for (size_t at = 0;;) {
        size_t comma = text.find(',', at);
        layerTypes->push_back(text.substr(at, comma - at));
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
    } else if (flag == "--no-rope-layers") {
      // Comma-separated 0s and 1s; the count is checked by validateSpec.
      std::string text = takeValue();
      noRopeLayers.emplace();
      for (size_t at = 0;;) {
        size_t comma = text.find(',', at);
        noRopeLayers->push_back(
            static_cast<int>(parseInt(flag, text.substr(at, comma - at), 0)));
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
    } else if (flag == "--no-rope-layer-interval") {
      noRopeLayerInterval = parseInt(flag, takeValue());
    } else if (flag == "--query-pre-attn-scalar") {
      queryPreAttnScalar = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--attn-softcap") {
      attnSoftcap = parseCap(flag, takeValue());
    } else if (flag == "--final-softcap") {
      finalSoftcap = parseCap(flag, takeValue());
    } else if (flag == "--sliding-window-pattern") {
      slidingWindowPattern = parseInt(flag, takeValue());
    } else if (flag == "--rope-local-theta") {
      ropeLocalTheta = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--partial-rotary-factor") {
      partialRotary = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--rotary-pct") {
      rotaryPct = parsePositiveDouble(flag, takeValue());
    } else if (flag == "--rotary-dim") {
      rotaryDim = parseInt(flag, takeValue());
    } else if (flag == "--sharp") {
      noValue();
      sharp = true;
    } else if (flag == "--prefix") {
      prefix = takeValue();
    } else if (flag == "--stacked-experts") {
      noValue();
      stackedExperts = true;
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
    } else if (flag == "--gguf") {
      gguf = takeValue();
      if (gguf->empty())
        fail("--gguf expects a file name");
    } else if (flag == "--gguf-tokenizer") {
      ggufTokenizer = takeValue();
    } else if (flag == "--gguf-type") {
      ggufType = takeValue();
      if (!isGgufWeightType(ggufType))
        fail("--gguf-type expects one of " + ggufWeightTypes() + ", got '" +
             ggufType + "'");
    } else if (flag == "--shards") {
      shards = parseInt(flag, takeValue());
    } else if (flag == "--quiet") {
      noValue();
      quiet = true;
    } else {
      fail("unknown flag '" + flag + "' (see --help)");
    }
  }

  if (from) {
    for (const std::string &flag : given)
      if (flag != "--from" && flag != "--gguf" && flag != "--gguf-type" &&
          flag != "--gguf-tokenizer" && flag != "--quiet")
        fail(flag + " does not apply to --from (the folder is the model; "
                    "only --gguf, --gguf-type and --gguf-tokenizer do)");
    if (!gguf)
      fail("--from DIR needs --gguf FILE");
    if (!std::count(given.begin(), given.end(), "--gguf-tokenizer") &&
        std::filesystem::exists(*from + "/tokenizer.json"))
      ggufTokenizer = *from;
    std::string error;
    if (!writeGgufFromFolder(*from, *gguf, ggufType, error, ggufTokenizer))
      fail("--gguf: " + error);
    if (!quiet)
      std::cout << "wrote " << *gguf << ": " << *from << " (GGUF, " << ggufType
                << (ggufTokenizer.empty() ? "" : ", with its tokenizer")
                << ")\n";
    return 0;
  }

  if (description) {
    if (preset)
      fail("--description and --preset are exclusive");
    if (!out)
      fail("--out DIR is required");
    for (const std::string &flag : given)
      if (flag != "--description" && flag != "--out" && flag != "--sharp" &&
          flag != "--dtype" && flag != "--seed" && flag != "--quiet")
        fail(flag + " does not apply to --description (the description "
                    "sets the model; only --sharp, --dtype and --seed do)");
    ModelSpec spec;
    spec.sharp = sharp;
    if (dtype)
      spec.dtype = *dtype;
    if (seed)
      spec.seed = *seed;
    std::string error;
    if (!writeDescriptionModel(*description, spec, *out, error))
      fail(error);
    if (!quiet)
      std::cout << "wrote " << *out << ": " << *description << ", "
                << dtypeName(spec.dtype) << ", seed " << spec.seed
                << (spec.sharp ? ", sharp" : "") << "\n";
    return 0;
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
  const Family family = spec.family;
  const std::string familyText = familyName(family);

  // Flags that have no meaning for the family are errors, not silently
  // ignored: a test that asked for them would otherwise test nothing.
  const std::vector<Family> gqa = {F::Llama,  F::Mistral, F::Qwen2,
                                   F::Qwen3,  F::SmolLM3, F::Gemma,
                                   F::Gemma2, F::Gemma3,  F::Phi3};
  const std::vector<Family> llamaLike = {F::Llama,  F::Mistral, F::Qwen2,
                                         F::Qwen3,  F::SmolLM3, F::Gemma,
                                         F::Gemma2, F::Gemma3};
  const std::vector<Family> gemmas = {F::Gemma2, F::Gemma3};
  auto only = [&](bool given, const std::string &flag,
                  const std::vector<Family> &families) {
    if (given && !contains(families, family))
      fail(flag + " applies only to " + familyList(families) + " models");
  };
  auto notFor = [&](bool given, const std::string &flag, Family f,
                    const std::string &why) {
    if (given && family == f)
      fail(flag + ": " + why);
  };
  only(prefix && !prefix->empty(), "--prefix", {F::GPT2});
  only(extraBuffers, "--extra-buffers", {F::GPT2, F::Llama});
  only(kvHeads.has_value(), "--kv-heads", gqa);
  only(headDim.has_value(), "--head-dim", llamaLike);
  only(ropeTheta.has_value(), "--rope-theta",
       {F::Llama, F::Mistral, F::Qwen2, F::Qwen3, F::SmolLM3, F::Gemma,
        F::Gemma2, F::Gemma3, F::Phi3, F::GPTNeoX});
  {
    std::vector<Family> scaled = llamaLike;
    scaled.push_back(F::Phi3); // longrope only (validateSpec)
    only(ropeScaling.has_value(), "--rope-scaling", scaled);
  }
  only(slidingWindow.has_value(), "--sliding-window",
       {F::Mistral, F::Mixtral, F::Qwen2, F::Qwen3, F::SmolLM3, F::Gemma2,
        F::Gemma3});
  only(maxWindowLayers.has_value(), "--max-window-layers",
       {F::Qwen2, F::Qwen3});
  only(layerTypes.has_value(), "--layer-types",
       {F::Qwen3, F::SmolLM3, F::Gemma2, F::Gemma3});
  only(noRopeLayers.has_value(), "--no-rope-layers", {F::SmolLM3});
  only(noRopeLayerInterval.has_value(), "--no-rope-layer-interval",
       {F::SmolLM3});
  only(queryPreAttnScalar.has_value(), "--query-pre-attn-scalar", gemmas);
  only(attnSoftcap.has_value(), "--attn-softcap", gemmas);
  only(finalSoftcap.has_value(), "--final-softcap", gemmas);
  only(slidingWindowPattern.has_value(), "--sliding-window-pattern",
       {F::Gemma3});
  only(ropeLocalTheta.has_value(), "--rope-local-theta", {F::Gemma3});
  only(partialRotary.has_value(), "--partial-rotary-factor", {F::Phi3});
  only(rotaryPct.has_value(), "--rotary-pct", {F::GPTNeoX});
  only(rotaryDim.has_value(), "--rotary-dim", {F::GPTJ});
  for (const Switch &sw : switches)
    only(sw.value->has_value(), switchFlag(sw, sw.value->value_or(true)),
         sw.families);
  only(normEps.has_value(), "--norm-eps",
       {F::GPT2, F::Llama, F::Mistral, F::Qwen2, F::Qwen3, F::SmolLM3, F::Gemma,
        F::Gemma2, F::Gemma3, F::Phi3, F::GPTNeoX, F::GPTJ, F::Bloom});
  only(maxPositions.has_value(), "--max-positions",
       {F::GPT2, F::Llama, F::Mistral, F::Qwen2, F::Qwen3, F::SmolLM3, F::Gemma,
        F::Gemma2, F::Gemma3, F::Phi3, F::GPTNeoX, F::GPTJ, F::OPT, F::XGLM});
  notFor(ffn.has_value(), "--ffn", F::Bloom,
         "bloom has no ffn setting (its MLP is 4 * hidden wide)");
  notFor(tie && !*tie, tieFlag, F::GPT2,
         "gpt2 always ties its embeddings");
  if (activation) {
    if (contains(gqa, family)) {
      std::string fixed = family == F::Gemma || family == F::Gemma2 ||
                                  family == F::Gemma3
                              ? "gelu_pytorch_tanh"
                              : "silu";
      if (*activation != fixed)
        fail("--activation: " + familyText + " models use " + fixed);
    }
    notFor(true, "--activation", F::Bloom,
           "bloom has no activation setting (its MLP uses the tanh GELU)");
  }

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
  if (tie && family != F::GPT2)
    spec.tieEmbeddings = *tie;
  if (ropeScaling)
    spec.ropeScaling = *ropeScaling;
  if (slidingWindow)
    spec.slidingWindow = *slidingWindow;
  if (maxWindowLayers)
    spec.maxWindowLayers = *maxWindowLayers;
  if (layerTypes)
    spec.layerTypes = *layerTypes;
  if (attentionBias)
    spec.attentionBias = *attentionBias;
  if (noRopeLayers) {
    // The list replaces the preset's interval, and the interval its list.
    spec.noRopeLayers = *noRopeLayers;
    spec.noRopeLayerInterval = 0;
  }
  if (noRopeLayerInterval) {
    spec.noRopeLayerInterval = *noRopeLayerInterval;
    if (!noRopeLayers)
      spec.noRopeLayers.clear();
  }
  if (queryPreAttnScalar)
    spec.queryPreAttnScalar = *queryPreAttnScalar;
  if (attnSoftcap)
    spec.attnSoftcap = *attnSoftcap;
  if (finalSoftcap)
    spec.finalSoftcap = *finalSoftcap;
  if (slidingWindowPattern)
    spec.slidingWindowPattern = *slidingWindowPattern;
  if (ropeLocalTheta)
    spec.ropeLocalTheta = *ropeLocalTheta;
  if (multimodal)
    spec.multimodal = *multimodal;
  if (partialRotary)
    spec.rotaryFraction = *partialRotary;
  if (rotaryPct)
    spec.rotaryFraction = *rotaryPct;
  if (rotaryDim)
    spec.rotaryDim = *rotaryDim;
  if (parallelResidual)
    spec.parallelResidual = *parallelResidual;
  if (layerNormBefore)
    spec.layerNormBefore = *layerNormBefore;
  if (scaleEmbedding)
    spec.scaleEmbedding = *scaleEmbedding;
  spec.sharp = sharp;
  spec.stackedExperts = stackedExperts;
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

  for (const char *needsGguf : {"--gguf-type", "--gguf-tokenizer"})
    if (!gguf && std::count(given.begin(), given.end(), needsGguf))
      fail(std::string(needsGguf) + " needs --gguf FILE");
  std::vector<TensorDesc> tensors;
  std::string error;
  if (!planTensors(spec, tensors, error))
    fail(error);
  // The GGUF first: a model it cannot hold leaves no folder behind either.
  if (gguf && !writeGgufModel(spec, *gguf, ggufType, error, ggufTokenizer))
    fail("--gguf: " + error);
  if (!writeModel(spec, *out, error))
    fail(error);

  if (!quiet) {
    int64_t elements = 0;
    for (const TensorDesc &t : tensors)
      elements += numElements(t);
    std::cout << "wrote " << *out << ": " << *preset << ", " << familyText
              << ", " << spec.layers << " layers, hidden " << spec.hidden
              << ", " << tensors.size() << " tensors, " << elements
              << " elements, " << dtypeName(spec.dtype) << ", seed "
              << spec.seed;
    if (spec.sharp)
      std::cout << ", sharp";
    if (spec.shards > 0)
      std::cout << ", " << spec.shards << " shards";
    if (gguf)
      std::cout << "; and " << *gguf << " (GGUF, " << ggufType << ")";
    std::cout << "\n";
  }
  return 0;
}
