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
