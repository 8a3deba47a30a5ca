//===- GptOss.cpp - model_type "gpt_oss" ----------------------------------===//
//
// gpt-oss (modeling_gpt_oss.py, GptOssConfig): LLaMA's layout with
// - biases on q, k, v and o (attention_bias, true), a learned sink logit per
//   query head in every softmax (self_attn.sinks);
// - a sliding window (sliding_window, 128) on the layers layer_types calls
//   "sliding_attention", by default the even ones (0, 2, ...);
// - YaRN RoPE by default (factor 32 over 4096 positions, beta 32 / 1, not
//   truncated), rope_theta 150000;
// - a mixture of experts in every layer: the router (mlp.router, with a
//   bias) takes the top num_experts_per_tok of num_local_experts logits
//   and a softmax over those; the experts are stacked tensors,
//   mlp.experts.gate_up_proj [experts, hidden, 2 ffn] with gate and up in
//   alternate columns and down_proj [experts, ffn, hidden] (x @ W), each
//   with a bias, and the clamped SwiGLU (swiglu_alpha 1.702, swiglu_limit
//   7).
// The published checkpoints hold the experts MXFP4-packed (*_blocks,
// *_scales); those are rejected, naming quantization_config: the bf16
// checkpoints (dequantized) load.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readGptOss(ConfigReader &reader) {
  if (const llvm::json::Object *quantization = reader.objectAt("quantization_config")) {
    ConfigReader q = reader.nested(*quantization, "quantization_config");
    std::string method = q.string("quant_method", "");
    q.fail("key '" + q.name("quant_method") + "' is " + ConfigReader::quote(method) +
           ": the experts are stored " +
           (method == "mxfp4" ? "MXFP4-packed (mlp.experts.*_blocks, *_scales)"
                              : "quantized") +
           ", which is not supported; use a bf16 checkpoint (transformers "
           "dequantizes with Mxfp4Config(dequantize=True))");
  }
  LlamaStyleDefaults defaults{"gpt_oss"};
  defaults.kvHeads = 8;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.headDim = 64;
  defaults.maxPositions = 131072;
  defaults.epsilon = 1e-5;
  defaults.theta = 150000.0;
  // Absent: GptOssConfig's default yarn; an explicit null is no scaling
  // (transformers 4.55's keyword default replaced by None), as the reference
  // reads it.
  bool hasRope = reader.entries().get("rope_scaling") ||
                 reader.entries().get("rope_parameters");
  ModelConfig config = readLlamaStyle(reader, defaults);
  if (!hasRope) {
    // GptOssConfig's default rope_parameters.
    RopeScaling &scaling = config.positions.scaling;
    scaling.kind = RopeScalingKind::Yarn;
    scaling.factor = 32.0;
    scaling.betaFast = 32.0;
    scaling.betaSlow = 1.0;
    scaling.truncate = false;
    scaling.originalMaxPositions = 4096;
  }
  bool bias = reader.boolean("attention_bias", true);
  config.attention.qkvBias = bias;
  config.attention.outputBias = bias;
  config.attention.sinks = true;

  // Layer i slides unless (i + 1) is even.
  readLayerTypeWindows(
      reader, config, [](int64_t layer) { return (layer + 1) % 2 != 0; }, 128);

  // num_experts is GptOssConfig's attribute_map alias.
  const char *expertsKey = !reader.has("num_local_experts") && reader.has("num_experts")
                               ? "num_experts"
                               : "num_local_experts";
  readMixtureOfExperts(reader, config, expertsKey, "intermediate_size",
                       /*defaultExperts=*/128, /*defaultTopK=*/4,
                       /*defaultFfn=*/2880);
  MoeSpec &moe = config.moe;
  moe.scoring = MoeScoring::TopKSoftmax;
  moe.routerBias = true;
  moe.expertBias = true;
  moe.activation = MoeActivation::ClampedSwiglu;
  moe.alpha = reader.positiveNumber("swiglu_alpha", 1.702);
  moe.limit = reader.positiveNumber("swiglu_limit", 7.0);
  moe.stacked = true;

  WeightNames &n = config.names;
  n.sinks = "self_attn.sinks";
  n.router = "mlp.router.";
  n.expert = "mlp.experts.";
  n.expertGateUp = "gate_up_proj";
  n.expertDown = "down_proj";
  return config;
}
