//===- Gemma3.cpp - model_type "gemma3_text" ------------------------------===//
//
// Gemma 3's language model (modeling_gemma3.py, Gemma3TextModel): Gemma 2's
// block (sandwich norms, query_pre_attn_scalar; the final softcap off by
// default, the attention's never applied) with the qk-norm (q_norm, k_norm: per-head RMSNorms scaling by
// 1 + w, before RoPE), five local layers to one global one (layer_types, or
// every sliding_window_pattern-th layer global, 6 by default), and two RoPE
// tables: global layers rope_theta (1e6) with rope_scaling (linear 8 in the
// 4B-27B configs), local layers rope_local_base_freq (1e4), unscaled.
// transformers v5 writes both under rope_parameters, per layer type.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

#include <cstring>

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readGemma3Text(ConfigReader &reader) {
  LlamaStyleDefaults defaults = gemma2StyleDefaults("gemma3_text");
  defaults.maxPositions = 131072;
  defaults.theta = 1000000.0;
  defaults.perLayerTypeRope = true;
  ModelConfig config = readLlamaStyle(reader, defaults);
  applyGemmaConventions(reader, config);
  int64_t pattern = reader.positive("sliding_window_pattern", 6, kMaxLayers);
  // Gemma3Attention keeps attn_logit_softcapping but never applies it (in
  // every transformers version): the key is read and ignored, as there.
  readGemmaAttention(reader, config, pattern, /*softcap=*/std::nullopt);
  config.logitSoftcap = readSoftcap(reader, "final_logit_softcapping", 0.0);
  config.attention.qkNorm = true;
  config.names.queryNorm = "self_attn.q_norm.";
  config.names.keyNorm = "self_attn.k_norm.";
  // The legacy key, unless rope_parameters gave the sliding layers' base.
  if (config.positions.localTheta == 0)
    config.positions.localTheta =
        reader.positiveNumber("rope_local_base_freq", 10000.0);
  return config;
}

/// Gemma3ForConditionalGeneration (model_type "gemma3": Gemma 3 4B-27B): the
/// language model of text_config (absent or null: Gemma3TextConfig's
/// defaults, as transformers), run on token ids. Its checkpoints store the
/// text model under language_model.model. with the head at
/// language_model.lm_head (transformers < 4.52), or under
/// model.language_model. with lm_head at the top (>= 4.52); the image part
/// (vision_tower, multi_modal_projector) is not run. As
/// Gemma3ForConditionalGeneration since 4.52, the logits are
/// lm_head(hidden): no final softcap.
ModelConfig mlir::attn::readGemma3(ConfigReader &reader) {
  static const llvm::json::Object defaults;
  const JsonValue *text = reader.entries().get("text_config");
  const llvm::json::Object *object =
      text && !text->getAsNull() ? reader.objectAt("text_config") : &defaults;
  ConfigReader textReader =
      reader.nested(object ? *object : defaults, "text_config");
  std::string inner = textReader.string("model_type", "gemma3_text");
  if (inner != "gemma3_text")
    textReader.fail("key '" + textReader.name("model_type") +
                    "' must be 'gemma3_text', got " + ConfigReader::quote(inner));
  reader.unsupportedUnless(
      "audio_config", [](const JsonValue &) { return false; },
      "audio towers");
  rejectMixtureOfExperts(textReader);
  ModelConfig config = readGemma3Text(textReader);
  config.architecture = "gemma3";
  // The head follows text_config's tie_word_embeddings (get_text_config in
  // tie_weights); a top-level value that disagrees is ambiguous.
  if (reader.has("tie_word_embeddings") &&
      reader.boolean("tie_word_embeddings", true) != config.tieEmbeddings)
    reader.fail("keys 'tie_word_embeddings' and '" +
                textReader.name("tie_word_embeddings") + "' disagree");
  if (config.logitSoftcap != 0) {
    config.notes.push_back(
        "text_config.final_logit_softcapping is not applied: "
        "Gemma3ForConditionalGeneration (transformers >= 4.52) computes "
        "lm_head(hidden) without it");
    config.logitSoftcap = 0;
  }

  // The text model's names without their "model." (both layouts add one),
  // each layout's prefix, and the image part left unread.
  WeightNames &n = config.names;
  for (std::string *name : {&n.tokenEmbedding, &n.layer, &n.finalNorm})
    if (llvm::StringRef(*name).starts_with("model."))
      *name = name->substr(std::strlen("model."));
  n.prefixes = {"model.language_model.", "language_model.model.",
                "language_model."};
  n.ignoredPrefixes = {"vision_tower.", "multi_modal_projector.",
                       "model.vision_tower.", "model.multi_modal_projector."};
  config.notes.push_back("gemma3: the image part (vision_tower, "
                         "multi_modal_projector) is not used: the language "
                         "model runs on token ids");
  return config;
}
