//===- FamiliesReferenceTest.cpp - The oracle's model families ------------===//
//
// Checks the whole-model reference on every family beyond GPT-2 and LLaMA
// (mistral, qwen2, qwen3, smollm3, gemma, gemma2, gemma3_text and gemma3's
// text model,
// phi3, gpt_neox, gptj, opt, bloom, xglm, and the mixture-of-experts
// qwen3_moe, qwen2_moe and mixtral, their experts per expert or stacked as
// transformers 5 saves them) and on
// rope_scaling, without the model writer: configs are written here as JSON
// text and parsed by the reader, weights are built in memory.
//  - the reader: defaults of absent keys, errors naming the key, and the
//    tensor names of each HF modeling file (written out here by hand);
//  - the forward pass against a second composition written here in plain
//    double arithmetic the way each modeling_<family>.py reads (views,
//    chunk, rotate_half / rotate_every_two, build_alibi_tensor's slope * j,
//    get_embedding's table, Conv1D-free nn.Linear), fed the same weights;
//  - cached decode against the full forward (bit for bit), and rope
//    scaling "dynamic" against HF's per-call semantics;
//  - that each family's distinctive feature matters: a planted change
//    (no ALiBi, window off by one, position offset 0, rotary on all dims,
//    sequential residual, no +1 in Gemma's norm, the wrong qkv split, Qwen3's
//    qk-norm skipped, after RoPE or swapped, Gemma 2's softcaps off or a
//    sandwich norm dropped, Gemma 3's local layers on the global RoPE,
//    SmolLM3's NoPE layers rotated or a RoPE layer not, ...)
//    moves the logits far more than the compiled-model tolerance (1e-5);
//  - hand-computed small cases (OPT's offset, XGLM's table, Gemma's
//    normalizer, the MoE routing with a tie, norm_topk_prob on and off,
//    dense layers by mlp_only_layers and decoder_sparse_step) and the
//    --cached command line.
//
//===----------------------------------------------------------------------===//

#include "ModelReference.h"
#include "ModelWriter.h"
#include "Npy.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#ifndef ATTN_TOOLS_DIR
#error "ATTN_TOOLS_DIR must name the directory of attn-ref-model"
#endif

using namespace attn;
namespace fs = std::filesystem;
using ref::Architecture;
using ref::ModelConfig;
using ref::ModelReference;
using ref::StoredTensor;

namespace {

using attn::testing::CommandResult;
using attn::testing::run;
/// A fresh folder per test, removed afterwards.
struct TempDir : attn::testing::TempDir {
  TempDir() : attn::testing::TempDir("attn-families") {}
};

//===----------------------------------------------------------------------===//
// Tiny models: a spec, its config.json, its weights
//===----------------------------------------------------------------------===//

/// What the test writes into config.json; the independent forward reads
/// the same values from here, never from the reader's ModelConfig.
struct Spec {
  std::string type;
  int64_t vocab = 61, hidden = 32, layers = 2, heads = 4, kvHeads = 4;
  int64_t headDim = 8, ffn = 48, maxPos = 64;
  double eps = 1e-5, theta = 10000.0;
  /// Rotating features per head (the independent forward's view of the
  /// partial factor written as `partial`).
  int64_t rotaryDim = 8;
  double partial = 1.0;
  int64_t window = 0;                  ///< sliding_window (0: null / off)
  int64_t maxWindowLayers = 0;         ///< qwen2, qwen3, qwen2_moe
  /// qwen2, qwen3, gemma2, gemma3_text layer_types if given
  std::vector<std::string> layerTypes;
  /// gemma2, gemma3_text: query_pre_attn_scalar, the softcaps (0: null),
  /// sliding_window_pattern (0: not written), rope_local_base_freq, and
  /// gemma3's multimodal form (model_type gemma3, the keys in text_config).
  double queryPreAttnScalar = 0;
  double attnSoftcap = 0, finalSoftcap = 0;
  int64_t slidingPattern = 0;
  double localTheta = 10000.0;
  bool multimodal = false;
  bool tie = false;
  bool parallelResidual = true;  ///< gpt_neox
  bool normBefore = true;        ///< opt
  bool residualFromNorm = false; ///< bloom
  /// gemma, qwen3, smollm3 attention_bias, opt enable_bias, qwen2_moe
  /// qkv_bias
  bool bias = true;
  /// smollm3: no_rope_layers (empty: not written) and
  /// no_rope_layer_interval (0: not written, SmolLM3Config's 4).
  std::vector<int> noRopeLayers;
  int64_t noRopeInterval = 0;
  std::string act;  ///< ACT2FN name
  std::string rope = "default"; ///< rope_scaling type
  double factor = 1.0, lowFreq = 1.0, highFreq = 4.0;
  int64_t originalMax = 0;
  /// longrope (phi3): short_factor and long_factor, rotaryDim / 2 each, as
  /// Phi-3.5 / Phi-4-mini write them ({"long_factor", "short_factor",
  /// "type": "longrope"} and a top-level original_max_position_embeddings
  /// = originalMax); its optional "factor" and "attention_factor" when > 0.
  std::vector<double> shortFactor, longFactor;
  double longropeFactor = 0, longropeAttention = 0;
  /// The rope dict as transformers 5 writes it: rope_parameters with
  /// rope_theta inside, no top-level rope_theta.
  bool ropeParameters = false;
  std::string extraJson; ///< more keys, e.g. "\"layer_types\": [...]"
  /// qwen3_moe, qwen2_moe and mixtral: num_experts (mixtral
  /// num_local_experts), num_experts_per_tok, moe_intermediate_size
  /// (qwen3_moe, qwen2_moe; mixtral's experts are `ffn` wide, the qwens'
  /// dense layers), norm_topk_prob, decoder_sparse_step (0: not written)
  /// and mlp_only_layers (empty: not written): the qwens only;
  /// shared_expert_intermediate_size: qwen2_moe only.
  int64_t experts = 0, topK = 0, moeFfn = 0, sharedFfn = 0;
  bool normTopK = false;
  int64_t sparseStep = 0;
  std::vector<int64_t> mlpOnly;
};

std::string jsonBool(bool b) { return b ? "true" : "false"; }

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string numList(const std::vector<double> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + num(v[i]);
  return out + "]";
}

std::string ropeScalingJson(const Spec &s) {
  if (s.rope == "default" && !s.ropeParameters)
    return "";
  if (s.rope == "longrope") {
    // As Phi-3.5-mini / Phi-4-mini's config.json (transformers 4), or the
    // rope_parameters transformers 5 writes (original inside as well).
    std::string j = s.ropeParameters
                        ? "\"rope_parameters\": {\"rope_theta\": " +
                              num(s.theta) +
                              ", \"rope_type\": \"longrope\", "
                              "\"original_max_position_embeddings\": " +
                              std::to_string(s.originalMax) + ", "
                        : "\"rope_scaling\": {\"type\": \"longrope\", ";
    j += "\"long_factor\": " + numList(s.longFactor) +
         ", \"short_factor\": " + numList(s.shortFactor);
    if (s.longropeFactor > 0)
      j += ", \"factor\": " + num(s.longropeFactor);
    if (s.longropeAttention > 0)
      j += ", \"attention_factor\": " + num(s.longropeAttention);
    return j + "},\n\"original_max_position_embeddings\": " +
           std::to_string(s.originalMax) + ",\n";
  }
  std::string j =
      s.ropeParameters
          ? "\"rope_parameters\": {\"rope_theta\": " + num(s.theta) + ", "
          : "\"rope_scaling\": {";
  j += "\"rope_type\": \"" + s.rope + "\"";
  if (s.rope != "default")
    j += ", \"factor\": " + num(s.factor);
  if (s.rope == "yarn" || s.rope == "llama3")
    j += ", \"original_max_position_embeddings\": " +
         std::to_string(s.originalMax);
  if (s.rope == "llama3")
    j += ", \"low_freq_factor\": " + num(s.lowFreq) +
         ", \"high_freq_factor\": " + num(s.highFreq);
  return j + "},\n";
}

/// The keys of gemma2 and gemma3_text (one JSON object's members); in the
/// multimodal form, those of its text_config.
std::string gemmaKeys(const Spec &s) {
  std::ostringstream j;
  auto orNull = [](double v) { return v > 0 ? num(v) : std::string("null"); };
  const bool g3 = s.type == "gemma3_text";
  j << "\"model_type\": \"" << s.type << "\", \"vocab_size\": " << s.vocab
    << ", \"hidden_size\": " << s.hidden
    << ", \"num_hidden_layers\": " << s.layers
    << ", \"num_attention_heads\": " << s.heads
    << ", \"num_key_value_heads\": " << s.kvHeads
    << ", \"head_dim\": " << s.headDim
    << ", \"intermediate_size\": " << s.ffn
    << ", \"max_position_embeddings\": " << s.maxPos
    << ", \"rms_norm_eps\": " << num(s.eps)
    << ", \"query_pre_attn_scalar\": " << num(s.queryPreAttnScalar)
    << ", \"attn_logit_softcapping\": " << orNull(s.attnSoftcap)
    << ", \"final_logit_softcapping\": " << orNull(s.finalSoftcap)
    << ", \"sliding_window\": "
    << (s.window ? std::to_string(s.window) : "null")
    << ", \"hidden_activation\": \"" << s.act << "\""
    << ", \"attention_bias\": " << jsonBool(s.bias)
    << ", \"tie_word_embeddings\": " << jsonBool(s.tie) << ",\n";
  if (!s.layerTypes.empty()) {
    j << "\"layer_types\": [";
    for (size_t i = 0; i < s.layerTypes.size(); ++i)
      j << (i ? ", " : "") << "\"" << s.layerTypes[i] << "\"";
    j << "],\n";
  }
  if (g3 && s.slidingPattern > 0)
    j << "\"sliding_window_pattern\": " << s.slidingPattern << ",\n";
  if (!s.ropeParameters) {
    j << "\"rope_theta\": " << num(s.theta) << ",\n";
    if (g3)
      j << "\"rope_local_base_freq\": " << num(s.localTheta) << ",\n";
    j << ropeScalingJson(s);
  } else if (!g3) {
    j << ropeScalingJson(s);
  } else {
    // transformers 5: a rope dict per layer type, rope_theta inside.
    Spec global = s;
    global.ropeParameters = false;
    std::string scaling = ropeScalingJson(global); // "rope_scaling": {...},
    std::string fields =
        s.rope == "default"
            ? "\"rope_type\": \"default\""
            : scaling.substr(scaling.find('{') + 1,
                             scaling.rfind('}') - scaling.find('{') - 1);
    j << "\"rope_parameters\": {\"full_attention\": {\"rope_theta\": "
      << num(s.theta) << ", " << fields
      << "}, \"sliding_attention\": {\"rope_type\": \"default\", "
         "\"rope_theta\": "
      << num(s.localTheta) << "}},\n";
  }
  if (!s.extraJson.empty())
    j << s.extraJson << ",\n";
  return j.str();
}

/// config.json for `s`, with each family's own key names.
std::string configJson(const Spec &s) {
  if (s.type == "gemma2" || s.type == "gemma3_text") {
    std::string keys = gemmaKeys(s);
    if (!s.multimodal)
      return "{\n" + keys + "\"torch_dtype\": \"float32\"\n}\n";
    // Gemma3ForConditionalGeneration's config, as google/gemma-3-4b-it's.
    keys.erase(keys.find_last_of(','));
    return "{\n\"model_type\": \"gemma3\", \"architectures\": "
           "[\"Gemma3ForConditionalGeneration\"],\n\"text_config\": {" +
           keys +
           "},\n\"vision_config\": {\"model_type\": "
           "\"siglip_vision_model\", \"hidden_size\": 16, "
           "\"num_hidden_layers\": 1},\n\"mm_tokens_per_image\": 256, "
           "\"boi_token_index\": 3, \"eoi_token_index\": 4, "
           "\"image_token_index\": 5, \"torch_dtype\": \"float32\"\n}\n";
  }
  std::ostringstream j;
  j << "{\n\"model_type\": \"" << s.type << "\",\n";
  j << "\"vocab_size\": " << s.vocab << ",\n";
  const std::string &t = s.type;
  if (t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3" ||
      t == "smollm3" || t == "gemma" || t == "phi3" || t == "qwen3_moe" ||
      t == "qwen2_moe" || t == "mixtral") {
    const bool qwen = t == "qwen2" || t == "qwen3" || t == "qwen2_moe";
    j << "\"hidden_size\": " << s.hidden
      << ", \"num_hidden_layers\": " << s.layers
      << ", \"num_attention_heads\": " << s.heads
      << ", \"num_key_value_heads\": " << s.kvHeads
      << ", \"intermediate_size\": " << s.ffn
      << ", \"max_position_embeddings\": " << s.maxPos
      << ", \"rms_norm_eps\": " << num(s.eps)
      << ", \"tie_word_embeddings\": " << jsonBool(s.tie)
      << ", \"hidden_act\": \"" << s.act << "\",\n";
    if (!s.ropeParameters)
      j << "\"rope_theta\": " << num(s.theta) << ",\n";
    if (t != "phi3" && t != "qwen2" && t != "qwen2_moe")
      j << "\"head_dim\": " << s.headDim << ",\n";
    if (t == "mistral" || t == "mixtral")
      j << "\"sliding_window\": "
        << (s.window ? std::to_string(s.window) : "null") << ",\n";
    if (t == "qwen3_moe" || t == "qwen2_moe") {
      // Qwen3MoeConfig: the window on every layer when use_sliding_window
      // (Qwen2MoeConfig: on the layers below, as qwen2's keys).
      if (t == "qwen3_moe")
        j << "\"use_sliding_window\": " << jsonBool(s.window > 0)
          << ", \"sliding_window\": " << (s.window ? s.window : 4096)
          << ",\n";
      else
        j << "\"shared_expert_intermediate_size\": " << s.sharedFfn
          << ", \"qkv_bias\": " << jsonBool(s.bias) << ",\n";
      j << "\"num_experts\": " << s.experts
        << ", \"num_experts_per_tok\": " << s.topK
        << ", \"moe_intermediate_size\": " << s.moeFfn
        << ", \"norm_topk_prob\": " << jsonBool(s.normTopK)
        << ", \"router_aux_loss_coef\": 0.001"
        << ", \"output_router_logits\": false,\n";
      if (s.sparseStep)
        j << "\"decoder_sparse_step\": " << s.sparseStep << ",\n";
      if (!s.mlpOnly.empty()) {
        j << "\"mlp_only_layers\": [";
        for (size_t i = 0; i < s.mlpOnly.size(); ++i)
          j << (i ? ", " : "") << s.mlpOnly[i];
        j << "],\n";
      }
    }
    if (t == "mixtral")
      j << "\"num_local_experts\": " << s.experts
        << ", \"num_experts_per_tok\": " << s.topK
        << ", \"router_aux_loss_coef\": 0.02"
        << ", \"router_jitter_noise\": 0.0,\n";
    if (qwen)
      j << "\"use_sliding_window\": " << jsonBool(s.window > 0)
        << ", \"sliding_window\": " << (s.window ? s.window : 4096)
        << ", \"max_window_layers\": " << s.maxWindowLayers << ",\n";
    if (t == "smollm3") {
      // SmolLM3Config: sliding_window None unless given; no_rope_layers
      // wins over no_rope_layer_interval.
      j << "\"use_sliding_window\": " << jsonBool(s.window > 0)
        << ", \"sliding_window\": "
        << (s.window ? std::to_string(s.window) : "null") << ",\n";
      if (s.noRopeInterval)
        j << "\"no_rope_layer_interval\": " << s.noRopeInterval << ",\n";
      if (!s.noRopeLayers.empty()) {
        j << "\"no_rope_layers\": [";
        for (size_t i = 0; i < s.noRopeLayers.size(); ++i)
          j << (i ? ", " : "") << s.noRopeLayers[i];
        j << "],\n";
      }
    }
    if ((qwen || t == "smollm3") && !s.layerTypes.empty()) {
      j << "\"layer_types\": [";
      for (size_t i = 0; i < s.layerTypes.size(); ++i)
        j << (i ? ", " : "") << "\"" << s.layerTypes[i] << "\"";
      j << "],\n";
    }
    if (t == "gemma" || t == "qwen3" || t == "smollm3" || t == "qwen3_moe")
      j << "\"attention_bias\": " << jsonBool(s.bias) << ",\n";
    if (t == "phi3")
      j << "\"partial_rotary_factor\": " << num(s.partial)
        << ", \"sliding_window\": "
        << (s.window ? std::to_string(s.window) : "null") << ",\n";
    j << ropeScalingJson(s);
  } else if (t == "gpt2") {
    j << "\"n_embd\": " << s.hidden << ", \"n_layer\": " << s.layers
      << ", \"n_head\": " << s.heads << ", \"n_inner\": " << s.ffn
      << ", \"n_positions\": " << s.maxPos
      << ", \"layer_norm_epsilon\": " << num(s.eps)
      << ", \"activation_function\": \"" << s.act << "\",\n";
  } else if (t == "gpt_neox") {
    j << "\"hidden_size\": " << s.hidden
      << ", \"num_hidden_layers\": " << s.layers
      << ", \"num_attention_heads\": " << s.heads
      << ", \"intermediate_size\": " << s.ffn
      << ", \"max_position_embeddings\": " << s.maxPos
      << ", \"layer_norm_eps\": " << num(s.eps)
      << ", \"rotary_pct\": " << num(s.partial)
      << ", \"rotary_emb_base\": " << num(s.theta)
      << ", \"use_parallel_residual\": " << jsonBool(s.parallelResidual)
      << ", \"tie_word_embeddings\": " << jsonBool(s.tie)
      << ", \"hidden_act\": \"" << s.act << "\",\n";
  } else if (t == "gptj") {
    j << "\"n_embd\": " << s.hidden << ", \"n_layer\": " << s.layers
      << ", \"n_head\": " << s.heads << ", \"n_inner\": " << s.ffn
      << ", \"n_positions\": " << s.maxPos
      << ", \"layer_norm_epsilon\": " << num(s.eps)
      << ", \"rotary_dim\": " << s.rotaryDim
      << ", \"tie_word_embeddings\": " << jsonBool(s.tie)
      << ", \"activation_function\": \"" << s.act << "\",\n";
  } else if (t == "opt") {
    j << "\"hidden_size\": " << s.hidden
      << ", \"num_hidden_layers\": " << s.layers
      << ", \"num_attention_heads\": " << s.heads << ", \"ffn_dim\": " << s.ffn
      << ", \"max_position_embeddings\": " << s.maxPos
      << ", \"do_layer_norm_before\": " << jsonBool(s.normBefore)
      << ", \"enable_bias\": " << jsonBool(s.bias)
      << ", \"word_embed_proj_dim\": " << s.hidden
      << ", \"tie_word_embeddings\": " << jsonBool(s.tie)
      << ", \"activation_function\": \"" << s.act << "\",\n";
  } else if (t == "bloom") {
    j << "\"hidden_size\": " << s.hidden << ", \"n_layer\": " << s.layers
      << ", \"n_head\": " << s.heads
      << ", \"layer_norm_epsilon\": " << num(s.eps)
      << ", \"apply_residual_connection_post_layernorm\": "
      << jsonBool(s.residualFromNorm)
      << ", \"tie_word_embeddings\": " << jsonBool(s.tie) << ",\n";
  } else if (t == "xglm") {
    j << "\"d_model\": " << s.hidden << ", \"num_layers\": " << s.layers
      << ", \"attention_heads\": " << s.heads << ", \"ffn_dim\": " << s.ffn
      << ", \"max_position_embeddings\": " << s.maxPos
      << ", \"scale_embedding\": true, \"pad_token_id\": 1"
      << ", \"tie_word_embeddings\": " << jsonBool(s.tie)
      << ", \"activation_function\": \"" << s.act << "\",\n";
  }
  if (!s.extraJson.empty())
    j << s.extraJson << ",\n";
  j << "\"torch_dtype\": \"float32\"\n}\n";
  return j.str();
}

/// The tiny models of the tests, one or more per family.
Spec baseSpec(const std::string &type) {
  Spec s;
  s.type = type;
  if (type == "llama") {
    s.kvHeads = 2;
    s.act = "silu";
  } else if (type == "mistral") {
    s.kvHeads = 2;
    s.headDim = 12; // decoupled: 4 x 12 != 32
    s.rotaryDim = 12;
    s.act = "silu";
    s.window = 5;
    s.eps = 1e-6;
  } else if (type == "qwen2") {
    s.kvHeads = 2;
    s.act = "silu";
    s.window = 5;
    s.maxWindowLayers = 1; // layer 0 full, layer 1 windowed
    s.theta = 1000000.0;
  } else if (type == "qwen3") {
    // Three layers, the first full and the others windowed; head_dim 12
    // with 4 heads of a 32 wide model; no biases (Qwen3Config's default).
    s.layers = 3;
    s.kvHeads = 2;
    s.headDim = 12;
    s.rotaryDim = 12;
    s.act = "silu";
    s.window = 5;
    s.maxWindowLayers = 1;
    s.theta = 1000000.0;
    s.eps = 1e-6;
    s.bias = false;
  } else if (type == "qwen3_moe") {
    // Qwen3's attention (head_dim 12 with 4 heads of a 32 wide model, GQA
    // 4/2, no biases), three layers: 0 and 2 sparse, 1 dense by
    // mlp_only_layers; 6 experts of 16, top 2, norm_topk_prob false
    // (Qwen3MoeConfig's default), dense layers 48 wide. No window.
    s.layers = 3;
    s.kvHeads = 2;
    s.headDim = 12;
    s.rotaryDim = 12;
    s.act = "silu";
    s.theta = 1000000.0;
    s.eps = 1e-6;
    s.bias = false;
    s.experts = 6;
    s.topK = 2;
    s.moeFfn = 16;
    s.mlpOnly = {1};
  } else if (type == "qwen2_moe") {
    // Qwen2's attention (GQA 4/2, head_dim 8, q/k/v biases), four layers:
    // 0, 2 and 3 sparse, 1 dense (mlp_only_layers, 48 wide); 6 experts of
    // 16, top 2, norm_topk_prob false, a shared expert 20 wide. A window of
    // 5 by Qwen2MoeConfig's default layer_types: the even layers below
    // max_window_layers 2, i.e. layer 0 only (qwen2's rule would slide 2
    // and 3, no max_window_layers 0 and 2).
    s.layers = 4;
    s.kvHeads = 2;
    s.act = "silu";
    s.theta = 1000000.0;
    s.eps = 1e-6;
    s.window = 5;
    s.maxWindowLayers = 2;
    s.experts = 6;
    s.topK = 2;
    s.moeFfn = 16;
    s.sharedFfn = 20;
    s.mlpOnly = {1};
  } else if (type == "mixtral") {
    // Mistral's attention (GQA 4/2, head_dim 8, no window: MixtralConfig's
    // null), MixtralConfig's theta 1e6 and eps 1e-5; two layers, each of 4
    // experts 24 wide, top 2.
    s.kvHeads = 2;
    s.act = "silu";
    s.theta = 1000000.0;
    s.eps = 1e-5;
    s.ffn = 24;
    s.experts = 4;
    s.topK = 2;
  } else if (type == "smollm3") {
    // Four layers, no no_rope_layer_interval key: its default 4 makes layer
    // 3 NoPE; GQA 4/2, head_dim 8, SmolLM3Config's theta 2e6; no window,
    // no biases, untied.
    s.layers = 4;
    s.kvHeads = 2;
    s.act = "silu";
    s.theta = 2000000.0;
    s.eps = 1e-6;
    s.bias = false;
  } else if (type == "gemma") {
    s.kvHeads = 1;
    s.headDim = 12;
    s.rotaryDim = 12;
    s.act = "gelu_pytorch_tanh";
    s.tie = true;
    s.bias = false;
    s.eps = 1e-6;
  } else if (type == "gemma2" || type == "gemma3_text") {
    // head_dim 12 with 4 heads of a 32 wide model and query_pre_attn_scalar
    // 20 (neither 12 nor hidden / heads). gemma2: three layers (0 and 2
    // sliding), softcaps small enough to bite with these sharp weights.
    // gemma3_text: six layers, sliding_window_pattern 3 (0, 1, 3, 4 local,
    // 2 and 5 global), global RoPE 1e6 with linear 8, local 1e4, tied.
    const bool g2 = type == "gemma2";
    s.layers = g2 ? 3 : 6;
    s.kvHeads = 2;
    s.headDim = 12;
    s.rotaryDim = 12;
    s.act = "gelu_pytorch_tanh";
    s.eps = 1e-6;
    s.bias = false;
    s.window = 5;
    s.queryPreAttnScalar = 20;
    if (g2) {
      s.attnSoftcap = 5.0;
      s.finalSoftcap = 3.0;
    } else {
      s.tie = true;
      s.slidingPattern = 3;
      s.theta = 1000000.0;
      s.localTheta = 10000.0;
      s.rope = "linear";
      s.factor = 8;
    }
  } else if (type == "phi3") {
    s.hidden = 64;
    s.kvHeads = 2;
    s.headDim = 16;
    s.partial = 0.5;
    s.rotaryDim = 8;
    s.act = "silu";
  } else if (type == "gpt_neox") {
    s.hidden = 64;
    s.headDim = 16;
    s.partial = 0.25; // rotary_pct
    s.rotaryDim = 4;
    s.act = "gelu";
  } else if (type == "gptj") {
    s.hidden = 64;
    s.headDim = 16;
    s.rotaryDim = 4;
    s.act = "gelu_new";
  } else if (type == "gpt2") {
    s.act = "gelu_new";
    s.tie = true;
    s.rotaryDim = 0;
  } else if (type == "opt") {
    s.act = "relu";
    s.tie = true;
    s.rotaryDim = 0;
  } else if (type == "bloom") {
    s.heads = 4;
    s.tie = true;
    s.ffn = 4 * s.hidden;
    s.rotaryDim = 0;
    s.maxPos = 1 << 24;
  } else if (type == "xglm") {
    s.act = "gelu";
    s.tie = true;
    s.rotaryDim = 0;
  }
  return s;
}

/// Phi-4-mini's longrope on the tiny phi3: partial_rotary_factor 0.75 (12
/// of 16 dims, 6 pairs), short factors in [1, 1.5] and long ones from 1 to
/// 20 (Phi-3.5-mini's short run 1-1.3, its long ones 1-60; Phi-4-mini's
/// short are all 1, long 1-47.8), original 16 of 64: factor 4, attention
/// factor sqrt(1 + ln 4 / ln 16) = sqrt(1.5).
Spec longropeSpec(int64_t originalMax = 16) {
  Spec s = baseSpec("phi3");
  s.partial = 0.75;
  s.rotaryDim = 12;
  s.rope = "longrope";
  s.maxPos = 64;
  s.originalMax = originalMax;
  s.shortFactor = {1.0, 1.1, 1.2, 1.3, 1.4, 1.5};
  s.longFactor = {1.0, 1.8, 3.3, 6.0, 11.0, 20.0};
  return s;
}

ModelConfig parseOrDie(const std::string &json) {
  ModelConfig c;
  std::string error;
  EXPECT_TRUE(ref::parseModelConfig(json, c, error)) << error << "\n" << json;
  return c;
}

std::string parseError(const std::string &json) {
  ModelConfig c;
  std::string error;
  EXPECT_FALSE(ref::parseModelConfig(json, c, error)) << json;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

uint64_t fnv(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s)
    h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

using Weights = std::map<std::string, std::vector<float>>;

/// Sharp random weights for every tensor the config needs: q/k/v (and the
/// fused qkv) std 2 / sqrt(fan_in) so that attention is peaked, other
/// linears 1 / sqrt(fan_in), biases N(0, 0.5), norm weights 1 + N(0, 0.1)
/// (the Gemmas' N(0, 0.1): they add the 1; Gemma 3's q/k norms N(0, 0.3)),
/// embeddings and position tables N(0, 1).
Weights makeWeights(const ModelConfig &config, uint64_t seed) {
  Weights w;
  bool gemma = config.normPlusOne; // gemma, gemma2, gemma3_text
  for (const auto &[name, shape] : ModelReference::expectedWeights(config)) {
    size_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<size_t>(d);
    bool isBias =
        name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    bool isNorm = contains(name, "norm") || contains(name, "ln_") ||
                  contains(name, "layernorm");
    bool isEmbedding =
        contains(name, "embed_tokens") || contains(name, "wte") ||
        contains(name, "wpe") || contains(name, "word_embeddings.") ||
        contains(name, "embed_in") || contains(name, "embed_positions");
    bool isQkv = contains(name, "q_proj") || contains(name, "k_proj") ||
                 contains(name, "v_proj") || contains(name, "qkv") ||
                 contains(name, "query_key_value") || contains(name, "c_attn");
    float stddev;
    float mean = 0.0f;
    if (isNorm && !isBias) {
      // Gemma 3's q_norm / k_norm gains spread wider: RoPE keeps each
      // head's RMS, so only their spread across a head tells a norm after
      // RoPE from one before.
      bool headNorm = contains(name, "q_norm") || contains(name, "k_norm");
      stddev = gemma && headNorm ? 0.3f : 0.1f;
      mean = gemma ? 0.0f : 1.0f;
    } else if (isBias) {
      stddev = 0.5f;
    } else if (isEmbedding) {
      stddev = 1.0f;
    } else {
      // nn.Linear is [out, in]; GPT-2's Conv1D is [in, out].
      bool conv1d = config.architecture == Architecture::GPT2;
      double fanIn = static_cast<double>(conv1d ? shape.front() : shape.back());
      stddev = static_cast<float>((isQkv ? 2.0 : 1.0) / std::sqrt(fanIn));
    }
    std::vector<float> v = ref::randomTensor(n, stddev, seed ^ fnv(name));
    for (float &x : v)
      x += mean;
    w[name] = std::move(v);
  }
  return w;
}

std::map<std::string, StoredTensor> toStored(const ModelConfig &config,
                                             const Weights &w) {
  std::map<std::string, StoredTensor> out;
  for (const auto &[name, shape] : ModelReference::expectedWeights(config)) {
    StoredTensor t;
    t.dtype = "F32";
    t.shape = shape;
    t.data = w.at(name);
    out[name] = std::move(t);
  }
  return out;
}

struct Built {
  ModelConfig config;
  Weights weights;
  std::unique_ptr<ModelReference> model;
};

Built build(const Spec &spec, uint64_t seed = 1) {
  Built b;
  b.config = parseOrDie(configJson(spec));
  b.weights = makeWeights(b.config, seed);
  std::string error;
  b.model =
      ModelReference::create(b.config, toStored(b.config, b.weights), error);
  EXPECT_TRUE(b.model) << error;
  return b;
}

std::vector<int64_t> someTokens(int64_t n, int64_t vocab, int64_t salt = 0) {
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < n; ++i)
    tokens.push_back((i * 37 + 11 + salt * 13) % vocab);
  return tokens;
}

std::vector<float> forwardOrDie(const ModelReference &model,
                                const std::vector<int64_t> &tokens) {
  std::vector<float> logits;
  std::string error;
  EXPECT_TRUE(model.forward(tokens, logits, error)) << error;
  return logits;
}

std::vector<float> cachedOrDie(const ModelReference &model,
                               const std::vector<int64_t> &tokens,
                               int64_t prefill) {
  std::vector<float> logits;
  std::string error;
  EXPECT_TRUE(model.forwardCached(tokens, prefill, logits, error)) << error;
  return logits;
}

//===----------------------------------------------------------------------===//
// The independent forward pass
//===----------------------------------------------------------------------===//
//
// Everything in double, no rounding between ops, written from each HF
// modeling file. Positions are 0 .. n-1; `prefill` >= 1 splits the sequence
// into HF forward calls (prefill, then one token each) for rope scaling
// "dynamic", whose base depends on the call; every other family is
// indifferent to the split.

struct Bugs {
  bool noAlibi = false;             ///< bloom without build_alibi_tensor
  bool windowOffByOne = false;      ///< kv >= q - window instead of >
  bool windowAllLayers = false;     ///< qwen2: ignore max_window_layers
  bool positionOffsetZero = false;  ///< opt/xglm: row p, not p + 2
  bool rotaryAllDims = false;       ///< partial rotary on the whole head
  bool sequentialResidual = false;  ///< neox/gptj: attention then MLP
  bool noGemmaPlusOne = false;      ///< GemmaRMSNorm * w instead of (1 + w)
  bool wrongQkvSplit = false;       ///< neox/bloom: [q | k | v] not per head
  bool rotateHalfForGptj = false;   ///< gptj with rotate_half pairing
  bool noEmbeddingScale = false;    ///< gemma/xglm without the multiplier
  bool interleavedSinusoid = false; ///< xglm table as sin, cos, sin, ...
  bool preNormForOpt350m = false;   ///< an opt post-norm model read as pre-norm
  bool qkvBiasOff = false;          ///< qwen2 without its q/k/v biases
  bool qkNormSkipped = false;       ///< qwen3 without q_norm / k_norm
  bool qkNormAfterRope = false;     ///< qwen3 norming the rotated q and k
  bool qkNormSwapped = false;       ///< qwen3 q read with k_norm and back
  bool windowBelowMaxLayers = false; ///< qwen: i < max_window_layers slides
  bool noAttnSoftcap = false;        ///< gemma2/3: scores not softcapped
  bool noFinalSoftcap = false;       ///< gemma2/3: logits not softcapped
  bool noPostAttentionNorm = false;  ///< gemma2/3: attention output as is
  bool noPreFeedforwardNorm = false; ///< gemma2/3: the MLP reads x
  bool noPostFeedforwardNorm = false; ///< gemma2/3: MLP output as is
  bool scaleByHeadDim = false;       ///< gemma2/3: head_dim^-0.5, not qpas's
  bool slidingShifted = false;       ///< gemma2/3: layer i slides if i % p
  bool localGetsGlobalRope = false;  ///< gemma3: local layers 1e6 and linear
  bool globalUnscaled = false;       ///< gemma3: global RoPE without scaling
  bool nopeRotated = false;          ///< smollm3: NoPE layers rotate too
  bool firstRopeLayerUnrotated = false; ///< smollm3: its first RoPE layer not
  bool nopeIntervalShifted = false; ///< smollm3: NoPE when i % interval == 0
  bool longAtOriginal = false;    ///< longrope: long when L >= original, not >
  bool longShortSwapped = false;  ///< longrope: short and long exchanged
  bool noLongropeScale = false;   ///< longrope: attention factor left out
  bool moeTieHigherFirst = false; ///< MoE: equal probabilities, higher expert
  bool moeNormFlipped = false;    ///< qwen3_moe: norm_topk_prob read inverted
  bool moeNoRenorm = false;       ///< mixtral: top-k weights not renormalized
  bool moeSoftmaxOverTopK = false; ///< MoE: top-k logits, then their softmax
  bool moeGateUpSwapped = false;  ///< MoE: silu(up) * gate (w3 for w1)
  bool moeStepShifted = false;    ///< qwen3_moe: sparse when i % step == 0
  bool moeMlpOnlyIgnored = false; ///< qwen3_moe: mlp_only_layers not read
  bool sharedExpertDropped = false;  ///< qwen2_moe: the routed sum alone
  bool sharedGateIgnored = false;    ///< qwen2_moe: the shared expert whole
  bool sharedGateNoSigmoid = false;  ///< qwen2_moe: logit * shared
  bool windowAsQwen2 = false;        ///< qwen2_moe: i >= max_window_layers
  bool windowIgnoresMaxLayers = false; ///< qwen2_moe: every even layer
};

/// SmolLM3Config.no_rope_layers: the list, else int((i + 1) % interval !=
/// 0); true = the layer rotates.
std::vector<bool> smolRopeLayers(const Spec &s, const Bugs &bugs) {
  std::vector<bool> out(s.layers);
  const int64_t interval = s.noRopeInterval ? s.noRopeInterval : 4;
  for (int64_t l = 0; l < s.layers; ++l)
    out[l] = !s.noRopeLayers.empty()    ? s.noRopeLayers[l] == 1
             : bugs.nopeIntervalShifted ? l % interval != 0
                                        : (l + 1) % interval != 0;
  return out;
}

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

/// nn.Linear: y = x W^T + b, W stored [out, in].
Mat linearHF(const Mat &x, const Weights &w, const std::string &name,
             bool withBias = true) {
  const std::vector<float> &W = w.at(name + ".weight");
  const std::vector<float> *b =
      withBias && w.count(name + ".bias") ? &w.at(name + ".bias") : nullptr;
  size_t in = x[0].size(), out = W.size() / in;
  Mat y(x.size(), Vec(out));
  for (size_t r = 0; r < x.size(); ++r)
    for (size_t o = 0; o < out; ++o) {
      double acc = b ? (*b)[o] : 0.0;
      for (size_t i = 0; i < in; ++i)
        acc += x[r][i] * W[o * in + i];
      y[r][o] = acc;
    }
  return y;
}

Mat layerNormHF(const Mat &x, const Weights &w, const std::string &name,
                double eps) {
  const std::vector<float> &g = w.at(name + ".weight"),
                           &b = w.at(name + ".bias");
  Mat y = x;
  for (Vec &row : y) {
    double mean = 0, var = 0;
    for (double v : row)
      mean += v;
    mean /= row.size();
    for (double v : row)
      var += (v - mean) * (v - mean);
    var /= row.size();
    for (size_t i = 0; i < row.size(); ++i)
      row[i] = (row[i] - mean) / std::sqrt(var + eps) * g[i] + b[i];
  }
  return y;
}

Mat rmsNormHF(const Mat &x, const Weights &w, const std::string &name,
              double eps, bool plusOne = false) {
  const std::vector<float> &g = w.at(name + ".weight");
  Mat y = x;
  for (Vec &row : y) {
    double ms = 0;
    for (double v : row)
      ms += v * v;
    ms /= row.size();
    for (size_t i = 0; i < row.size(); ++i)
      row[i] = row[i] / std::sqrt(ms + eps) * (plusOne ? 1.0 + g[i] : g[i]);
  }
  return y;
}

/// Qwen3's and Gemma 3's q_norm / k_norm: an RMSNorm of each head's hd
/// features of m [n, heads * hd] (the norm of proj(x).view(..., -1,
/// head_dim)); Gemma's multiplies by 1 + w.
Mat headNormHF(const Mat &m, const Weights &w, const std::string &name,
               int64_t heads, int64_t hd, double eps, bool plusOne = false) {
  Mat y = m;
  for (Vec &row : y)
    for (int64_t h = 0; h < heads; ++h) {
      Mat head = {Vec(row.begin() + h * hd, row.begin() + (h + 1) * hd)};
      head = rmsNormHF(head, w, name, eps, plusOne);
      std::copy(head[0].begin(), head[0].end(), row.begin() + h * hd);
    }
  return y;
}

double actHF(double v, const std::string &act) {
  if (act == "gelu")
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    return 0.5 * v *
           (1 + std::tanh(std::sqrt(2 / std::acos(-1.0)) *
                          (v + 0.044715 * v * v * v)));
  if (act == "relu")
    return v > 0 ? v : 0;
  if (act == "silu")
    return v / (1 + std::exp(-v));
  ADD_FAILURE() << "no activation " << act;
  return v;
}

Mat activated(const Mat &x, const std::string &act) {
  Mat y = x;
  for (Vec &row : y)
    for (double &v : row)
      v = actHF(v, act);
  return y;
}

Mat add(const Mat &a, const Mat &b) {
  Mat y = a;
  for (size_t r = 0; r < y.size(); ++r)
    for (size_t i = 0; i < y[r].size(); ++i)
      y[r][i] += b[r][i];
  return y;
}

Mat mul(const Mat &a, const Mat &b) {
  Mat y = a;
  for (size_t r = 0; r < y.size(); ++r)
    for (size_t i = 0; i < y[r].size(); ++i)
      y[r][i] *= b[r][i];
  return y;
}

Mat cols(const Mat &x, size_t from, size_t width) {
  Mat y(x.size());
  for (size_t r = 0; r < x.size(); ++r)
    y[r] = Vec(x[r].begin() + from, x[r].begin() + from + width);
  return y;
}

Mat embed(const std::vector<float> &table, int64_t dim,
          const std::vector<int64_t> &rows) {
  Mat x;
  for (int64_t r : rows)
    x.push_back(Vec(table.begin() + r * dim, table.begin() + (r + 1) * dim));
  return x;
}

/// HF rotary frequencies for a call whose positions end at seqLen, and the
/// attention factor: the modeling_rope_utils formulas, written again.
Vec invFreqHF(const Spec &s, int64_t rot, int64_t seqLen, double &af,
              const Bugs &bugs = {}) {
  const double kPi = std::acos(-1.0);
  af = 1.0;
  auto plain = [&](double base) {
    Vec f;
    for (int64_t i = 0; i < rot; i += 2)
      f.push_back(1.0 / std::pow(base, static_cast<double>(i) / rot));
    return f;
  };
  if (s.rope == "default")
    return plain(s.theta);
  if (s.rope == "linear") {
    Vec f = plain(s.theta);
    for (double &v : f)
      v /= s.factor;
    return f;
  }
  if (s.rope == "dynamic") {
    double base = s.theta;
    if (seqLen > s.maxPos)
      base *= std::pow(s.factor * seqLen / s.maxPos - (s.factor - 1),
                       static_cast<double>(rot) / (rot - 2));
    return plain(base);
  }
  if (s.rope == "yarn") {
    af = 0.1 * std::log(s.factor) + 1.0;
    auto corr = [&](double r) {
      return rot * std::log(s.originalMax / (r * 2 * kPi)) /
             (2 * std::log(s.theta));
    };
    double low = std::max(std::floor(corr(32)), 0.0);
    double high = std::min(std::ceil(corr(1)), rot - 1.0);
    Vec f = plain(s.theta);
    for (size_t i = 0; i < f.size(); ++i) {
      double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      f[i] = f[i] / s.factor * ramp + f[i] * (1 - ramp);
    }
    return f;
  }
  if (s.rope == "llama3") {
    Vec f = plain(s.theta);
    double lowWave = s.originalMax / s.lowFreq,
           highWave = s.originalMax / s.highFreq;
    for (double &v : f) {
      double wave = 2 * kPi / v;
      if (wave > lowWave) {
        v /= s.factor;
      } else if (wave >= highWave) {
        double smooth =
            (s.originalMax / wave - s.lowFreq) / (s.highFreq - s.lowFreq);
        v = (1 - smooth) * v / s.factor + smooth * v;
      }
    }
    return f;
  }
  if (s.rope == "longrope") {
    // _compute_longrope_parameters, and longrope_frequency_update's choice
    // of table by the call's max(position_ids) + 1.
    double factor = s.longropeFactor > 0
                        ? s.longropeFactor
                        : static_cast<double>(s.maxPos) / s.originalMax;
    af = s.longropeAttention > 0 ? s.longropeAttention
         : factor <= 1
             ? 1.0
             : std::sqrt(1 + std::log(factor) / std::log(s.originalMax));
    if (bugs.noLongropeScale)
      af = 1.0;
    bool useLong = bugs.longAtOriginal ? seqLen >= s.originalMax
                                       : seqLen > s.originalMax;
    if (bugs.longShortSwapped)
      useLong = !useLong;
    const Vec &ext = useLong ? s.longFactor : s.shortFactor;
    Vec f = plain(s.theta);
    for (size_t i = 0; i < f.size(); ++i)
      f[i] /= ext.at(i);
    return f;
  }
  ADD_FAILURE() << "no rope type " << s.rope;
  return plain(s.theta);
}

/// Rotates m [n, heads * hd] in place: the first `rot` features of each
/// head, rotate_half style (cat(freqs, freqs), cat(-x2, x1)) or GPT-J's
/// rotate_every_two (repeat_interleave, stack(-x[1::2], x[::2])); row p
/// uses the frequencies of the call it belongs to.
void ropeHF(Mat &m, const Spec &s, int64_t heads, int64_t hd, int64_t rot,
            bool everyTwo, const std::vector<int64_t> &callEnd,
            const Bugs &bugs = {}) {
  for (size_t p = 0; p < m.size(); ++p) {
    double af;
    Vec inv = invFreqHF(s, rot, callEnd[p], af, bugs);
    for (int64_t h = 0; h < heads; ++h) {
      Vec x(m[p].begin() + h * hd, m[p].begin() + h * hd + rot);
      for (int64_t c = 0; c < rot; ++c) {
        double freq, rotated;
        if (everyTwo) {
          freq = inv[c / 2];
          rotated = c % 2 == 0 ? -x[c + 1] : x[c - 1];
        } else {
          freq = inv[c % (rot / 2)];
          rotated = c < rot / 2 ? -x[c + rot / 2] : x[c - rot / 2];
        }
        double angle = static_cast<double>(p) * freq;
        m[p][h * hd + c] =
            x[c] * std::cos(angle) * af + rotated * std::sin(angle) * af;
      }
    }
  }
}

/// HF build_alibi_tensor's slopes, in double.
Vec alibiSlopesHF(int64_t heads) {
  int64_t closest = int64_t(1)
                    << static_cast<int>(std::floor(std::log2(heads)));
  double base = std::pow(2.0, -std::pow(2.0, -(std::log2(closest) - 3)));
  Vec slopes;
  for (int64_t p = 1; p <= closest; ++p)
    slopes.push_back(std::pow(base, p));
  if (closest != heads) {
    double extra = std::pow(2.0, -std::pow(2.0, -(std::log2(2 * closest) - 3)));
    int64_t remaining = std::min(closest, heads - closest);
    for (int64_t p = 1; p < 1 + 2 * remaining; p += 2)
      slopes.push_back(std::pow(extra, p));
  }
  return slopes;
}

/// eager attention: repeat_kv, q k^T * scaling (head_dim^-0.5 unless
/// given), Gemma 2's softcap (/ cap, tanh, * cap) when given, + alibi
/// slope * j, the causal (and sliding window) mask, softmax, @ v.
Mat attentionHF(const Mat &q, const Mat &k, const Mat &v, int64_t heads,
                int64_t kvHeads, int64_t hd, int64_t window, const Bugs &bugs,
                const Vec *slopes, double scaling = 0, double softcap = 0) {
  if (scaling == 0)
    scaling = 1 / std::sqrt(static_cast<double>(hd));
  int64_t n = q.size();
  Mat out(n, Vec(heads * hd, 0.0));
  for (int64_t h = 0; h < heads; ++h) {
    int64_t g = h / (heads / kvHeads);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> keys;
      for (int64_t j = 0; j <= i; ++j) {
        bool inWindow = window <= 0 || (bugs.windowOffByOne ? j >= i - window
                                                            : j > i - window);
        if (inWindow)
          keys.push_back(j);
      }
      Vec s;
      double mx = -1e300;
      for (int64_t j : keys) {
        double dot = 0;
        for (int64_t c = 0; c < hd; ++c)
          dot += q[i][h * hd + c] * k[j][g * hd + c];
        double score = dot * scaling;
        if (softcap > 0)
          score = std::tanh(score / softcap) * softcap;
        if (slopes)
          score += (*slopes)[h] * j; // BLOOM: slope * key position
        s.push_back(score);
        mx = std::max(mx, score);
      }
      double sum = 0;
      for (double &e : s)
        sum += (e = std::exp(e - mx));
      for (int64_t c = 0; c < hd; ++c) {
        double acc = 0;
        for (size_t t = 0; t < keys.size(); ++t)
          acc += s[t] / sum * v[keys[t]][g * hd + c];
        out[i][h * hd + c] = acc;
      }
    }
  }
  return out;
}

/// GPT-NeoX / BLOOM: qkv.view(..., heads, 3 * hd) -> q, k, v per head.
void splitPerHead(const Mat &qkv, int64_t heads, int64_t hd, bool wrong, Mat &q,
                  Mat &k, Mat &v) {
  int64_t n = qkv.size(), d = heads * hd;
  q = k = v = Mat(n, Vec(d));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < hd; ++c) {
        if (wrong) { // [q | k | v], the GPT-2 / Phi-3 layout
          q[p][h * hd + c] = qkv[p][h * hd + c];
          k[p][h * hd + c] = qkv[p][d + h * hd + c];
          v[p][h * hd + c] = qkv[p][2 * d + h * hd + c];
        } else {
          q[p][h * hd + c] = qkv[p][h * 3 * hd + c];
          k[p][h * hd + c] = qkv[p][h * 3 * hd + hd + c];
          v[p][h * hd + c] = qkv[p][h * 3 * hd + 2 * hd + c];
        }
      }
}

/// Qwen3MoeDecoderLayer and Qwen2MoeDecoderLayer: the sparse block iff
/// layer_idx not in mlp_only_layers and num_experts > 0 and (layer_idx + 1)
/// % decoder_sparse_step == 0; Mixtral: every layer.
bool moeLayerHF(const Spec &s, int64_t l, const Bugs &bugs) {
  if (s.type == "mixtral")
    return true;
  const int64_t step = s.sparseStep ? s.sparseStep : 1;
  bool listed = std::find(s.mlpOnly.begin(), s.mlpOnly.end(), l) !=
                s.mlpOnly.end();
  if (bugs.moeMlpOnlyIgnored)
    listed = false;
  return !listed && s.experts > 0 &&
         (bugs.moeStepShifted ? l : l + 1) % step == 0;
}

/// Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock (transformers 4.57),
/// Qwen2MoeSparseMoeBlock (5) on h [n, hidden] of layer prefix `p`:
/// router_logits = gate(h); softmax over every expert; topk (largest first;
/// equal values: the lower expert, this project's rule); / sum when
/// norm_topk_prob (mixtral: always); then sum_j w_j down_e(silu(gate_e h) *
/// up_e h), expert by expert and token by token, in double; qwen2_moe adds
/// F.sigmoid(shared_expert_gate(h)) * shared_expert(h).
Mat moeHF(const Mat &h, const Weights &w, const std::string &p, const Spec &s,
          const Bugs &bugs) {
  const bool mixtral = s.type == "mixtral";
  const std::string block = p + (mixtral ? "block_sparse_moe." : "mlp.");
  const int64_t E = s.experts, k = s.topK;
  const Mat logits = linearHF(h, w, block + "gate", false);
  auto softmaxInPlace = [](Vec &v) {
    double mx = *std::max_element(v.begin(), v.end()), sum = 0;
    for (double &e : v)
      sum += (e = std::exp(e - mx));
    for (double &e : v)
      e /= sum;
  };
  Mat out(h.size(), Vec(h[0].size(), 0.0));
  for (size_t r = 0; r < h.size(); ++r) {
    Vec prob = logits[r];
    if (!bugs.moeSoftmaxOverTopK)
      softmaxInPlace(prob);
    std::vector<int64_t> order(E);
    for (int64_t e = 0; e < E; ++e)
      order[e] = e;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (prob[a] != prob[b])
        return prob[a] > prob[b];
      return bugs.moeTieHigherFirst ? a > b : a < b;
    });
    Vec weight(k);
    for (int64_t j = 0; j < k; ++j)
      weight[j] = prob[order[j]];
    if (bugs.moeSoftmaxOverTopK)
      softmaxInPlace(weight);
    bool renorm = mixtral ? !bugs.moeNoRenorm : s.normTopK != bugs.moeNormFlipped;
    if (renorm) {
      double sum = 0;
      for (double v : weight)
        sum += v;
      for (double &v : weight)
        v /= sum;
    }
    for (int64_t j = 0; j < k; ++j) {
      const std::string e = block + "experts." + std::to_string(order[j]) + ".";
      const Mat one = {h[r]};
      Mat gate = linearHF(one, w, e + (mixtral ? "w1" : "gate_proj"), false);
      Mat up = linearHF(one, w, e + (mixtral ? "w3" : "up_proj"), false);
      if (bugs.moeGateUpSwapped)
        std::swap(gate, up);
      Mat y = linearHF(mul(activated(gate, "silu"), up), w,
                       e + (mixtral ? "w2" : "down_proj"), false);
      for (size_t i = 0; i < out[r].size(); ++i)
        out[r][i] += weight[j] * y[0][i];
    }
  }
  if (s.type == "qwen2_moe" && !bugs.sharedExpertDropped) {
    // shared_expert: a Qwen2MoeMLP; shared_expert_gate: nn.Linear(hidden, 1).
    const std::string shared = block + "shared_expert.";
    const Mat y = linearHF(
        mul(activated(linearHF(h, w, shared + "gate_proj", false), "silu"),
            linearHF(h, w, shared + "up_proj", false)),
        w, shared + "down_proj", false);
    const Mat logit = linearHF(h, w, block + "shared_expert_gate", false);
    for (size_t r = 0; r < h.size(); ++r) {
      double scale = 1 / (1 + std::exp(-logit[r][0]));
      if (bugs.sharedGateIgnored)
        scale = 1;
      if (bugs.sharedGateNoSigmoid)
        scale = logit[r][0];
      for (size_t i = 0; i < out[r].size(); ++i)
        out[r][i] += scale * y[r][i];
    }
  }
  return out;
}

std::vector<float> flatten(const Mat &m) {
  std::vector<float> out;
  for (const Vec &row : m)
    for (double v : row)
      out.push_back(static_cast<float>(v));
  return out;
}

std::vector<float> independent(const Spec &s, const Weights &w,
                               const std::vector<int64_t> &tokens,
                               const Bugs &bugs = {}, int64_t prefill = -1) {
  const std::string &t = s.type;
  const int64_t n = tokens.size(), d = s.hidden, hd = s.headDim;
  std::vector<int64_t> positions(n), callEnd(n);
  for (int64_t p = 0; p < n; ++p) {
    positions[p] = p;
    callEnd[p] = prefill < 1 ? n : (p < prefill ? prefill : p + 1);
  }
  const int64_t rot = bugs.rotaryAllDims ? hd : s.rotaryDim;
  Mat x;
  auto headOut = [&](const Mat &h, const std::string &headName,
                     const std::string &tiedName) {
    Weights view;
    view["head.weight"] = w.at(s.tie ? tiedName : headName);
    if (w.count("lm_head.bias"))
      view["head.bias"] = w.at("lm_head.bias");
    return flatten(linearHF(h, view, "head"));
  };

  if (t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3" ||
      t == "smollm3" || t == "gemma" || t == "phi3" || t == "qwen3_moe" ||
      t == "qwen2_moe" || t == "mixtral") {
    const bool gemma = t == "gemma", phi3 = t == "phi3";
    // Qwen3MoeAttention is Qwen3Attention (q_norm / k_norm before RoPE).
    const bool qwen3 = t == "qwen3" || t == "qwen3_moe";
    const bool moe = t == "qwen3_moe" || t == "qwen2_moe" || t == "mixtral";
    const bool smol = t == "smollm3";
    const std::vector<bool> ropeLayers = smolRopeLayers(s, bugs);
    int64_t firstRope = -1;
    for (int64_t l = 0; l < s.layers && firstRope < 0; ++l)
      if (ropeLayers[l])
        firstRope = l;
    x = embed(w.at("model.embed_tokens.weight"), d, tokens);
    if (gemma && !bugs.noEmbeddingScale) {
      // normalizer = torch.tensor(hidden_size ** 0.5, dtype=float32)
      double normalizer = static_cast<float>(std::sqrt(static_cast<double>(d)));
      for (Vec &row : x)
        for (double &v : row)
          v *= normalizer;
    }
    const int64_t qw = s.heads * hd, kvw = s.kvHeads * hd;
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = "model.layers." + std::to_string(l) + ".";
      Mat h = rmsNormHF(x, w, p + "input_layernorm", s.eps,
                        gemma && !bugs.noGemmaPlusOne);
      Mat q, k, v;
      if (phi3) {
        Mat qkv = linearHF(h, w, p + "self_attn.qkv_proj");
        q = cols(qkv, 0, qw);
        k = cols(qkv, qw, kvw);
        v = cols(qkv, qw + kvw, kvw);
      } else {
        bool b = !bugs.qkvBiasOff;
        q = linearHF(h, w, p + "self_attn.q_proj", b);
        k = linearHF(h, w, p + "self_attn.k_proj", b);
        v = linearHF(h, w, p + "self_attn.v_proj", b);
      }
      // Qwen3Attention: q_norm(q_proj(x).view(hidden_shape)), then RoPE.
      auto qkNorm = [&]() {
        std::string qn = p + "self_attn.q_norm", kn = p + "self_attn.k_norm";
        if (bugs.qkNormSwapped)
          std::swap(qn, kn);
        q = headNormHF(q, w, qn, s.heads, hd, s.eps);
        k = headNormHF(k, w, kn, s.kvHeads, hd, s.eps);
      };
      if (qwen3 && !bugs.qkNormSkipped && !bugs.qkNormAfterRope)
        qkNorm();
      // SmolLM3Attention: `if self.use_rope:` apply_rotary_pos_emb.
      bool rotates = !smol || ropeLayers[l] || bugs.nopeRotated;
      if (smol && bugs.firstRopeLayerUnrotated && l == firstRope)
        rotates = false;
      if (rotates) {
        ropeHF(q, s, s.heads, hd, rot, false, callEnd, bugs);
        ropeHF(k, s, s.kvHeads, hd, rot, false, callEnd, bugs);
      }
      if (qwen3 && bugs.qkNormAfterRope)
        qkNorm();
      int64_t window = 0;
      // Mistral, Mixtral, Phi3, and Qwen3-MoE (use_sliding_window): one
      // sliding mask for every layer.
      if (t == "mistral" || t == "phi3" || t == "mixtral" || t == "qwen3_moe")
        window = s.window;
      if (t == "qwen2" || t == "qwen3") {
        // Qwen2Config / Qwen3Config layer_types, or sliding for
        // i >= max_window_layers.
        bool below = l < s.maxWindowLayers;
        bool sliding = s.layerTypes.empty()
                           ? (bugs.windowBelowMaxLayers ? below : !below)
                           : s.layerTypes[l] == "sliding_attention";
        if (sliding || bugs.windowAllLayers)
          window = s.window;
      }
      if (t == "qwen2_moe") {
        // Qwen2MoeConfig layer_types, by default sliding_attention when
        // bool((i + 1) % 2) and i < max_window_layers and use_sliding_window.
        bool sliding =
            s.layerTypes.empty()
                ? s.window > 0 &&
                      (bugs.windowAsQwen2
                           ? l >= s.maxWindowLayers
                           : (l + 1) % 2 != 0 &&
                                 (bugs.windowIgnoresMaxLayers ||
                                  l < s.maxWindowLayers))
                : s.layerTypes[l] == "sliding_attention";
        if (sliding || bugs.windowAllLayers)
          window = s.window;
      }
      if (smol) {
        // SmolLM3Config layer_types, or sliding for the NoPE layers.
        bool sliding = s.layerTypes.empty()
                           ? !ropeLayers[l]
                           : s.layerTypes[l] == "sliding_attention";
        if (sliding)
          window = s.window;
      }
      Mat a =
          attentionHF(q, k, v, s.heads, s.kvHeads, hd, window, bugs, nullptr);
      x = add(x, linearHF(a, w, p + "self_attn.o_proj"));
      Mat h2 = rmsNormHF(x, w, p + "post_attention_layernorm", s.eps,
                         gemma && !bugs.noGemmaPlusOne);
      if (moe && moeLayerHF(s, l, bugs)) {
        x = add(x, moeHF(h2, w, p, s, bugs));
        continue;
      }
      Mat gate, up;
      if (phi3) {
        Mat gu = linearHF(h2, w, p + "mlp.gate_up_proj");
        gate = cols(gu, 0, s.ffn);
        up = cols(gu, s.ffn, s.ffn);
      } else {
        gate = linearHF(h2, w, p + "mlp.gate_proj");
        up = linearHF(h2, w, p + "mlp.up_proj");
      }
      x = add(
          x, linearHF(mul(activated(gate, s.act), up), w, p + "mlp.down_proj"));
    }
    x = rmsNormHF(x, w, "model.norm", s.eps, gemma && !bugs.noGemmaPlusOne);
    return headOut(x, "lm_head.weight", "model.embed_tokens.weight");
  }

  if (t == "gemma2" || t == "gemma3_text") {
    // Gemma2Model / Gemma3TextModel and their DecoderLayer's sandwich.
    const bool g3 = t == "gemma3_text";
    const std::string m = s.multimodal ? "model.language_model." : "model.";
    x = embed(w.at(m + "embed_tokens.weight"), d, tokens);
    // normalizer / embed_scale: float32(hidden_size ** 0.5).
    const double normalizer =
        static_cast<float>(std::sqrt(static_cast<double>(d)));
    for (Vec &row : x)
      for (double &v : row)
        v *= normalizer;
    auto norm = [&](const Mat &in, const std::string &name) {
      return rmsNormHF(in, w, name, s.eps, !bugs.noGemmaPlusOne);
    };
    // Local layers: rope_local_base_freq, unscaled.
    Spec local = s;
    local.theta = s.localTheta;
    local.rope = "default";
    Spec global = s;
    if (bugs.globalUnscaled)
      global.rope = "default";
    if (bugs.localGetsGlobalRope)
      local = global;
    const int64_t pattern = g3 ? (s.slidingPattern ? s.slidingPattern : 6) : 2;
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = m + "layers." + std::to_string(l) + ".";
      Mat h = norm(x, p + "input_layernorm");
      Mat q = linearHF(h, w, p + "self_attn.q_proj");
      Mat k = linearHF(h, w, p + "self_attn.k_proj");
      Mat v = linearHF(h, w, p + "self_attn.v_proj");
      // config.layer_types, by default sliding_attention when
      // bool((i + 1) % pattern).
      bool sliding =
          !s.layerTypes.empty()
              ? s.layerTypes[l] == "sliding_attention"
              : ((bugs.slidingShifted ? l : l + 1) % pattern) != 0;
      const Spec &ropeSpec = g3 && sliding ? local : global;
      auto qkNorm = [&]() {
        q = headNormHF(q, w, p + "self_attn.q_norm", s.heads, hd, s.eps, true);
        k = headNormHF(k, w, p + "self_attn.k_norm", s.kvHeads, hd, s.eps,
                       true);
      };
      if (g3 && !bugs.qkNormSkipped && !bugs.qkNormAfterRope)
        qkNorm();
      ropeHF(q, ropeSpec, s.heads, hd, rot, false, callEnd);
      ropeHF(k, ropeSpec, s.kvHeads, hd, rot, false, callEnd);
      if (g3 && bugs.qkNormAfterRope)
        qkNorm();
      // scaling = query_pre_attn_scalar ** -0.5.
      double scaling = bugs.scaleByHeadDim
                           ? 0.0
                           : std::pow(s.queryPreAttnScalar, -0.5);
      // Gemma3Attention passes no softcap to its attention function.
      double softcap = g3 || bugs.noAttnSoftcap ? 0 : s.attnSoftcap;
      Mat a = linearHF(attentionHF(q, k, v, s.heads, s.kvHeads, hd,
                                   sliding ? s.window : 0, bugs, nullptr,
                                   scaling, softcap),
                       w, p + "self_attn.o_proj");
      if (!bugs.noPostAttentionNorm)
        a = norm(a, p + "post_attention_layernorm");
      x = add(x, a);
      Mat h2 = bugs.noPreFeedforwardNorm
                   ? x
                   : norm(x, p + "pre_feedforward_layernorm");
      Mat mlp = linearHF(mul(activated(linearHF(h2, w, p + "mlp.gate_proj"),
                                       s.act),
                             linearHF(h2, w, p + "mlp.up_proj")),
                         w, p + "mlp.down_proj");
      if (!bugs.noPostFeedforwardNorm)
        mlp = norm(mlp, p + "post_feedforward_layernorm");
      x = add(x, mlp);
    }
    x = norm(x, m + "norm");
    Weights view;
    view["head.weight"] =
        w.at(s.tie ? m + "embed_tokens.weight" : "lm_head.weight");
    Mat logits = linearHF(x, view, "head");
    // Gemma2ForCausalLM / Gemma3ForCausalLM: logits / cap, tanh, * cap
    // (Gemma3ForConditionalGeneration has none).
    if (s.finalSoftcap > 0 && !s.multimodal && !bugs.noFinalSoftcap)
      for (Vec &row : logits)
        for (double &v : row)
          v = std::tanh(v / s.finalSoftcap) * s.finalSoftcap;
    return flatten(logits);
  }

  if (t == "gpt2") {
    // Conv1D: y = x W + b with W stored [in, out]; c_attn is [q | k | v].
    auto conv1d = [&](const Mat &in, const std::string &name) {
      const std::vector<float> &W = w.at(name + ".weight"),
                               &b = w.at(name + ".bias");
      size_t inDim = in[0].size(), out = b.size();
      Mat y(in.size(), Vec(out));
      for (size_t r = 0; r < in.size(); ++r)
        for (size_t o = 0; o < out; ++o) {
          double acc = b[o];
          for (size_t i = 0; i < inDim; ++i)
            acc += in[r][i] * W[i * out + o];
          y[r][o] = acc;
        }
      return y;
    };
    x = add(embed(w.at("wte.weight"), d, tokens),
            embed(w.at("wpe.weight"), d, positions));
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = "h." + std::to_string(l) + ".";
      Mat qkv = conv1d(layerNormHF(x, w, p + "ln_1", s.eps), p + "attn.c_attn");
      Mat a = attentionHF(cols(qkv, 0, d), cols(qkv, d, d), cols(qkv, 2 * d, d),
                          s.heads, s.heads, hd, 0, bugs, nullptr);
      x = add(x, conv1d(a, p + "attn.c_proj"));
      Mat u = conv1d(layerNormHF(x, w, p + "ln_2", s.eps), p + "mlp.c_fc");
      x = add(x, conv1d(activated(u, s.act), p + "mlp.c_proj"));
    }
    x = layerNormHF(x, w, "ln_f", s.eps);
    return headOut(x, "wte.weight", "wte.weight");
  }

  if (t == "gpt_neox") {
    x = embed(w.at("gpt_neox.embed_in.weight"), d, tokens);
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
      Mat q, k, v;
      splitPerHead(linearHF(layerNormHF(x, w, p + "input_layernorm", s.eps), w,
                            p + "attention.query_key_value"),
                   s.heads, hd, bugs.wrongQkvSplit, q, k, v);
      ropeHF(q, s, s.heads, hd, rot, false, callEnd);
      ropeHF(k, s, s.heads, hd, rot, false, callEnd);
      Mat attn =
          linearHF(attentionHF(q, k, v, s.heads, s.heads, hd, 0, bugs, nullptr),
                   w, p + "attention.dense");
      auto mlp = [&](const Mat &in) {
        return linearHF(
            activated(
                linearHF(
                    layerNormHF(in, w, p + "post_attention_layernorm", s.eps),
                    w, p + "mlp.dense_h_to_4h"),
                s.act),
            w, p + "mlp.dense_4h_to_h");
      };
      if (s.parallelResidual && !bugs.sequentialResidual) {
        x = add(add(mlp(x), attn), x);
      } else {
        Mat attnResidual = add(attn, x);
        x = add(mlp(attnResidual), attnResidual);
      }
    }
    x = layerNormHF(x, w, "gpt_neox.final_layer_norm", s.eps);
    return headOut(x, "embed_out.weight", "gpt_neox.embed_in.weight");
  }

  if (t == "gptj") {
    x = embed(w.at("transformer.wte.weight"), d, tokens);
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = "transformer.h." + std::to_string(l) + ".";
      auto attention = [&](const Mat &h) {
        Mat q = linearHF(h, w, p + "attn.q_proj");
        Mat k = linearHF(h, w, p + "attn.k_proj");
        Mat v = linearHF(h, w, p + "attn.v_proj");
        ropeHF(q, s, s.heads, hd, rot, !bugs.rotateHalfForGptj, callEnd);
        ropeHF(k, s, s.heads, hd, rot, !bugs.rotateHalfForGptj, callEnd);
        return linearHF(
            attentionHF(q, k, v, s.heads, s.heads, hd, 0, bugs, nullptr), w,
            p + "attn.out_proj");
      };
      auto mlp = [&](const Mat &h) {
        return linearHF(activated(linearHF(h, w, p + "mlp.fc_in"), s.act), w,
                        p + "mlp.fc_out");
      };
      Mat h = layerNormHF(x, w, p + "ln_1", s.eps);
      if (bugs.sequentialResidual) {
        Mat x1 = add(attention(h), x);
        x = add(mlp(layerNormHF(x1, w, p + "ln_1", s.eps)), x1);
      } else {
        x = add(add(attention(h), mlp(h)), x);
      }
    }
    x = layerNormHF(x, w, "transformer.ln_f", s.eps);
    return headOut(x, "lm_head.weight", "transformer.wte.weight");
  }

  if (t == "opt") {
    const std::string m = "model.decoder.";
    std::vector<int64_t> rows;
    for (int64_t pos : positions)
      rows.push_back(pos + (bugs.positionOffsetZero ? 0 : 2));
    x = add(embed(w.at(m + "embed_tokens.weight"), d, tokens),
            embed(w.at(m + "embed_positions.weight"), d, rows));
    bool before = s.normBefore || bugs.preNormForOpt350m;
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = m + "layers." + std::to_string(l) + ".";
      Mat h = before ? layerNormHF(x, w, p + "self_attn_layer_norm", 1e-5) : x;
      Mat a = attentionHF(linearHF(h, w, p + "self_attn.q_proj"),
                          linearHF(h, w, p + "self_attn.k_proj"),
                          linearHF(h, w, p + "self_attn.v_proj"), s.heads,
                          s.heads, hd, 0, bugs, nullptr);
      x = add(x, linearHF(a, w, p + "self_attn.out_proj"));
      if (!before)
        x = layerNormHF(x, w, p + "self_attn_layer_norm", 1e-5);
      h = before ? layerNormHF(x, w, p + "final_layer_norm", 1e-5) : x;
      x = add(x, linearHF(activated(linearHF(h, w, p + "fc1"), s.act), w,
                          p + "fc2"));
      if (!before)
        x = layerNormHF(x, w, p + "final_layer_norm", 1e-5);
    }
    if (s.normBefore && w.count(m + "final_layer_norm.weight"))
      x = layerNormHF(x, w, m + "final_layer_norm", 1e-5);
    return headOut(x, "lm_head.weight", m + "embed_tokens.weight");
  }

  if (t == "bloom") {
    x = layerNormHF(
        embed(w.at("transformer.word_embeddings.weight"), d, tokens), w,
        "transformer.word_embeddings_layernorm", s.eps);
    Vec slopes = alibiSlopesHF(s.heads);
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = "transformer.h." + std::to_string(l) + ".";
      Mat ln1 = layerNormHF(x, w, p + "input_layernorm", s.eps);
      Mat residual = s.residualFromNorm ? ln1 : x;
      Mat q, k, v;
      splitPerHead(linearHF(ln1, w, p + "self_attention.query_key_value"),
                   s.heads, hd, bugs.wrongQkvSplit, q, k, v);
      Mat attn =
          add(linearHF(attentionHF(q, k, v, s.heads, s.heads, hd, 0, bugs,
                                   bugs.noAlibi ? nullptr : &slopes),
                       w, p + "self_attention.dense"),
              residual);
      Mat ln2 = layerNormHF(attn, w, p + "post_attention_layernorm", s.eps);
      residual = s.residualFromNorm ? ln2 : attn;
      // bloom_gelu_forward: x * 0.5 * (1 + tanh(0.79788456 x (1 + 0.044715
      // x^2)))
      Mat u = linearHF(ln2, w, p + "mlp.dense_h_to_4h");
      for (Vec &row : u)
        for (double &e : row)
          e = e * 0.5 *
              (1.0 + std::tanh(0.79788456 * e * (1 + 0.044715 * e * e)));
      x = add(linearHF(u, w, p + "mlp.dense_4h_to_h"), residual);
    }
    x = layerNormHF(x, w, "transformer.ln_f", s.eps);
    return headOut(x, "lm_head.weight", "transformer.word_embeddings.weight");
  }

  if (t == "xglm") {
    x = embed(w.at("model.embed_tokens.weight"), d, tokens);
    if (!bugs.noEmbeddingScale)
      for (Vec &row : x)
        for (double &v : row)
          v *= static_cast<float>(std::sqrt(static_cast<double>(d)));
    // XGLMSinusoidalPositionalEmbedding.get_embedding, padding_idx 1,
    // offset 2.
    int64_t half = d / 2;
    double e = std::log(10000.0) / (half - 1);
    for (int64_t p = 0; p < n; ++p) {
      int64_t row = p + (bugs.positionOffsetZero ? 0 : 2);
      for (int64_t i = 0; i < half; ++i) {
        double arg = row * std::exp(i * -e);
        double sn = row == 1 ? 0 : std::sin(arg),
               cs = row == 1 ? 0 : std::cos(arg);
        if (bugs.interleavedSinusoid) {
          x[p][2 * i] += sn;
          x[p][2 * i + 1] += cs;
        } else {
          x[p][i] += sn;
          x[p][half + i] += cs;
        }
      }
    }
    for (int64_t l = 0; l < s.layers; ++l) {
      std::string p = "model.layers." + std::to_string(l) + ".";
      Mat h = layerNormHF(x, w, p + "self_attn_layer_norm", 1e-5);
      Mat a = attentionHF(linearHF(h, w, p + "self_attn.q_proj"),
                          linearHF(h, w, p + "self_attn.k_proj"),
                          linearHF(h, w, p + "self_attn.v_proj"), s.heads,
                          s.heads, hd, 0, bugs, nullptr);
      x = add(x, linearHF(a, w, p + "self_attn.out_proj"));
      h = layerNormHF(x, w, p + "final_layer_norm", 1e-5);
      x = add(x, linearHF(activated(linearHF(h, w, p + "fc1"), s.act), w,
                          p + "fc2"));
    }
    x = layerNormHF(x, w, "model.layer_norm", 1e-5);
    return headOut(x, "lm_head.weight", "model.embed_tokens.weight");
  }
  ADD_FAILURE() << "no independent forward for " << t;
  return {};
}

} // namespace

namespace {

//===----------------------------------------------------------------------===//
// The reader
//===----------------------------------------------------------------------===//

/// HF's *ForCausalLM state_dict names of a one-layer model, written out
/// from each modeling file (module names in registration order are not
/// needed: the reference's order is forward order, compared as sets).
std::set<std::string> hfNames(const std::string &type, bool tie, bool bias) {
  std::set<std::string> n;
  auto linear = [&](const std::string &name, bool withBias) {
    n.insert(name + ".weight");
    if (withBias)
      n.insert(name + ".bias");
  };
  auto ln = [&](const std::string &name) { linear(name, true); };
  if (type == "mistral" || type == "qwen2" || type == "qwen3" ||
      type == "smollm3" || type == "gemma" || type == "qwen3_moe" ||
      type == "qwen2_moe" || type == "mixtral") {
    // Qwen3, Qwen3-MoE, SmolLM3 and Gemma: attention_bias on q, k, v and o;
    // Qwen2: q, k, v; Qwen2-MoE: qkv_bias on q, k, v.
    bool oBias = (type == "qwen3" || type == "smollm3" || type == "gemma" ||
                  type == "qwen3_moe") &&
                 bias;
    bool qkvBias = type == "qwen2" || oBias || (type == "qwen2_moe" && bias);
    n.insert("model.embed_tokens.weight");
    n.insert("model.layers.0.input_layernorm.weight");
    linear("model.layers.0.self_attn.q_proj", qkvBias);
    linear("model.layers.0.self_attn.k_proj", qkvBias);
    linear("model.layers.0.self_attn.v_proj", qkvBias);
    linear("model.layers.0.self_attn.o_proj", oBias);
    if (type == "qwen3" || type == "qwen3_moe") {
      n.insert("model.layers.0.self_attn.q_norm.weight");
      n.insert("model.layers.0.self_attn.k_norm.weight");
    }
    n.insert("model.layers.0.post_attention_layernorm.weight");
    if (type == "qwen3_moe" || type == "qwen2_moe") {
      // Qwen3MoeSparseMoeBlock: gate (no bias), experts.E a Qwen3MoeMLP;
      // Qwen2MoeSparseMoeBlock (transformers 4) also shared_expert, a
      // Qwen2MoeMLP, and shared_expert_gate, nn.Linear(hidden, 1, bias=False).
      n.insert("model.layers.0.mlp.gate.weight");
      for (int e = 0; e < 6; ++e)
        for (const char *proj : {"gate_proj", "up_proj", "down_proj"})
          n.insert("model.layers.0.mlp.experts." + std::to_string(e) + "." +
                   proj + ".weight");
      if (type == "qwen2_moe") {
        for (const char *proj : {"gate_proj", "up_proj", "down_proj"})
          n.insert("model.layers.0.mlp.shared_expert." + std::string(proj) +
                   ".weight");
        n.insert("model.layers.0.mlp.shared_expert_gate.weight");
      }
    } else if (type == "mixtral") {
      // MixtralSparseMoeBlock: gate, experts.E a MixtralBlockSparseTop2MLP.
      n.insert("model.layers.0.block_sparse_moe.gate.weight");
      for (int e = 0; e < 4; ++e)
        for (const char *proj : {"w1", "w2", "w3"})
          n.insert("model.layers.0.block_sparse_moe.experts." +
                   std::to_string(e) + "." + proj + ".weight");
    } else {
      linear("model.layers.0.mlp.gate_proj", false);
      linear("model.layers.0.mlp.up_proj", false);
      linear("model.layers.0.mlp.down_proj", false);
    }
    n.insert("model.norm.weight");
    if (!tie)
      n.insert("lm_head.weight");
  } else if (type == "gemma2" || type == "gemma3_text") {
    // Gemma2DecoderLayer / Gemma3DecoderLayer: four norms; attention_bias
    // on q, k, v and o; Gemma3Attention's q_norm and k_norm.
    const std::string l = "model.layers.0.";
    n.insert("model.embed_tokens.weight");
    for (const char *norm :
         {"input_layernorm", "post_attention_layernorm",
          "pre_feedforward_layernorm", "post_feedforward_layernorm"})
      n.insert(l + norm + ".weight");
    for (const char *proj : {"q_proj", "k_proj", "v_proj", "o_proj"})
      linear(l + "self_attn." + proj, bias);
    if (type == "gemma3_text") {
      n.insert(l + "self_attn.q_norm.weight");
      n.insert(l + "self_attn.k_norm.weight");
    }
    for (const char *proj : {"gate_proj", "up_proj", "down_proj"})
      linear(l + "mlp." + proj, false);
    n.insert("model.norm.weight");
    if (!tie)
      n.insert("lm_head.weight");
  } else if (type == "phi3") {
    n.insert("model.embed_tokens.weight");
    n.insert("model.layers.0.input_layernorm.weight");
    linear("model.layers.0.self_attn.qkv_proj", false);
    linear("model.layers.0.self_attn.o_proj", false);
    n.insert("model.layers.0.post_attention_layernorm.weight");
    linear("model.layers.0.mlp.gate_up_proj", false);
    linear("model.layers.0.mlp.down_proj", false);
    n.insert("model.norm.weight");
    if (!tie)
      n.insert("lm_head.weight");
  } else if (type == "gpt_neox") {
    n.insert("gpt_neox.embed_in.weight");
    ln("gpt_neox.layers.0.input_layernorm");
    ln("gpt_neox.layers.0.post_attention_layernorm");
    linear("gpt_neox.layers.0.attention.query_key_value", true);
    linear("gpt_neox.layers.0.attention.dense", true);
    linear("gpt_neox.layers.0.mlp.dense_h_to_4h", true);
    linear("gpt_neox.layers.0.mlp.dense_4h_to_h", true);
    ln("gpt_neox.final_layer_norm");
    if (!tie)
      n.insert("embed_out.weight");
  } else if (type == "gptj") {
    n.insert("transformer.wte.weight");
    ln("transformer.h.0.ln_1");
    linear("transformer.h.0.attn.k_proj", false);
    linear("transformer.h.0.attn.v_proj", false);
    linear("transformer.h.0.attn.q_proj", false);
    linear("transformer.h.0.attn.out_proj", false);
    linear("transformer.h.0.mlp.fc_in", true);
    linear("transformer.h.0.mlp.fc_out", true);
    ln("transformer.ln_f");
    if (!tie)
      n.insert("lm_head.weight");
    n.insert("lm_head.bias");
  } else if (type == "opt") {
    n.insert("model.decoder.embed_tokens.weight");
    n.insert("model.decoder.embed_positions.weight");
    linear("model.decoder.layers.0.self_attn.k_proj", bias);
    linear("model.decoder.layers.0.self_attn.v_proj", bias);
    linear("model.decoder.layers.0.self_attn.q_proj", bias);
    linear("model.decoder.layers.0.self_attn.out_proj", bias);
    ln("model.decoder.layers.0.self_attn_layer_norm");
    linear("model.decoder.layers.0.fc1", bias);
    linear("model.decoder.layers.0.fc2", bias);
    ln("model.decoder.layers.0.final_layer_norm");
    ln("model.decoder.final_layer_norm");
    if (!tie)
      n.insert("lm_head.weight");
  } else if (type == "bloom") {
    n.insert("transformer.word_embeddings.weight");
    ln("transformer.word_embeddings_layernorm");
    ln("transformer.h.0.input_layernorm");
    linear("transformer.h.0.self_attention.query_key_value", true);
    linear("transformer.h.0.self_attention.dense", true);
    ln("transformer.h.0.post_attention_layernorm");
    linear("transformer.h.0.mlp.dense_h_to_4h", true);
    linear("transformer.h.0.mlp.dense_4h_to_h", true);
    ln("transformer.ln_f");
    if (!tie)
      n.insert("lm_head.weight");
  } else if (type == "xglm") {
    n.insert("model.embed_tokens.weight");
    linear("model.layers.0.self_attn.k_proj", true);
    linear("model.layers.0.self_attn.v_proj", true);
    linear("model.layers.0.self_attn.q_proj", true);
    linear("model.layers.0.self_attn.out_proj", true);
    ln("model.layers.0.self_attn_layer_norm");
    linear("model.layers.0.fc1", true);
    linear("model.layers.0.fc2", true);
    ln("model.layers.0.final_layer_norm");
    ln("model.layer_norm");
    if (!tie)
      n.insert("lm_head.weight");
  }
  return n;
}

const char *kFamilies[] = {
    "mistral", "qwen2",    "qwen3", "smollm3", "gemma",     "gemma2",
    "gemma3_text", "phi3", "gpt_neox", "gptj", "opt", "bloom", "xglm",
    "qwen3_moe", "qwen2_moe", "mixtral"};

TEST(FamilyConfig, TensorNamesAreHFs) {
  for (const char *type : kFamilies)
    for (bool tie : {false, true})
      for (bool bias : {false, true}) {
        Spec s = baseSpec(type);
        s.layers = 1;
        s.tie = tie;
        s.bias = bias;
        ModelConfig c = parseOrDie(configJson(s));
        std::set<std::string> names;
        for (const auto &entry : ModelReference::expectedWeights(c))
          EXPECT_TRUE(names.insert(entry.first).second) << entry.first;
        EXPECT_EQ(names, hfNames(type, tie, bias)) << type << " tie " << tie;
      }
  // Fused shapes: phi3 qkv_proj [q + 2 kv, d] and gate_up_proj [2f, d];
  // neox and bloom query_key_value [3d, d]; OPT positions [max + 2, d].
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const char *type : {"phi3", "gpt_neox", "bloom", "opt", "mistral"}) {
    Spec s = baseSpec(type);
    for (const auto &[name, shape] :
         ModelReference::expectedWeights(parseOrDie(configJson(s))))
      shapes[name] = shape;
  }
  EXPECT_EQ(shapes["model.layers.0.self_attn.qkv_proj.weight"],
            (std::vector<int64_t>{4 * 16 + 2 * 2 * 16, 64}));
  EXPECT_EQ(shapes["model.layers.0.mlp.gate_up_proj.weight"],
            (std::vector<int64_t>{2 * 48, 64}));
  EXPECT_EQ(shapes["gpt_neox.layers.0.attention.query_key_value.weight"],
            (std::vector<int64_t>{3 * 64, 64}));
  EXPECT_EQ(shapes["transformer.h.1.self_attention.query_key_value.bias"],
            (std::vector<int64_t>{3 * 32}));
  EXPECT_EQ(shapes["model.decoder.embed_positions.weight"],
            (std::vector<int64_t>{64 + 2, 32}));
  // Mistral's decoupled head_dim: q_proj [heads * head_dim, hidden].
  EXPECT_EQ(shapes["model.layers.0.self_attn.q_proj.weight"],
            (std::vector<int64_t>{4 * 12, 32}));
  EXPECT_EQ(shapes["model.layers.0.self_attn.o_proj.weight"],
            (std::vector<int64_t>{32, 4 * 12}));
  // Qwen3: q_norm / k_norm over head_dim; q_proj [heads * head_dim, hidden]
  // and o_proj its transpose, biases on all four with attention_bias.
  Spec q3 = baseSpec("qwen3");
  q3.hidden = 40; // 4 heads of 12 != 40
  q3.bias = true;
  shapes.clear();
  for (const auto &[name, shape] :
       ModelReference::expectedWeights(parseOrDie(configJson(q3))))
    shapes[name] = shape;
  using Shape = std::vector<int64_t>;
  EXPECT_EQ(shapes["model.layers.2.self_attn.q_norm.weight"], Shape{12});
  EXPECT_EQ(shapes["model.layers.2.self_attn.k_norm.weight"], Shape{12});
  EXPECT_EQ(shapes["model.layers.0.self_attn.q_proj.weight"], (Shape{48, 40}));
  EXPECT_EQ(shapes["model.layers.0.self_attn.k_proj.bias"], Shape{2 * 12});
  EXPECT_EQ(shapes["model.layers.0.self_attn.o_proj.weight"], (Shape{40, 48}));
  EXPECT_EQ(shapes["model.layers.0.self_attn.o_proj.bias"], Shape{40});

  // gemma3: Gemma3ForConditionalGeneration's state_dict (transformers >=
  // 4.52): the text model under model.language_model., the head lm_head.
  for (bool tie : {false, true}) {
    Spec mm = baseSpec("gemma3_text");
    mm.multimodal = true;
    mm.layers = 1;
    mm.tie = tie;
    std::set<std::string> expected;
    for (const std::string &name : hfNames("gemma3_text", tie, false))
      expected.insert(name.rfind("model.", 0) == 0
                          ? "model.language_model." + name.substr(6)
                          : name);
    std::set<std::string> names;
    for (const auto &entry :
         ModelReference::expectedWeights(parseOrDie(configJson(mm))))
      names.insert(entry.first);
    EXPECT_EQ(names, expected) << "tie " << tie;
  }
  // Gemma 3: q_norm / k_norm [head_dim]; the four norms [hidden].
  shapes.clear();
  for (const auto &[name, shape] : ModelReference::expectedWeights(
           parseOrDie(configJson(baseSpec("gemma3_text")))))
    shapes[name] = shape;
  EXPECT_EQ(shapes["model.layers.5.self_attn.k_norm.weight"], Shape{12});
  EXPECT_EQ(shapes["model.layers.5.pre_feedforward_layernorm.weight"],
            Shape{32});
  EXPECT_EQ(shapes["model.layers.0.self_attn.q_proj.weight"], (Shape{48, 32}));

  // qwen3_moe: router [experts, hidden], experts' gate / up
  // [moe_intermediate_size, hidden] and down its transpose; layer 1
  // (mlp_only_layers) dense of intermediate_size, with no router.
  shapes.clear();
  for (const auto &[name, shape] : ModelReference::expectedWeights(
           parseOrDie(configJson(baseSpec("qwen3_moe")))))
    shapes[name] = shape;
  EXPECT_EQ(shapes["model.layers.0.mlp.gate.weight"], (Shape{6, 32}));
  EXPECT_EQ(shapes["model.layers.2.mlp.experts.5.gate_proj.weight"],
            (Shape{16, 32}));
  EXPECT_EQ(shapes["model.layers.2.mlp.experts.5.up_proj.weight"],
            (Shape{16, 32}));
  EXPECT_EQ(shapes["model.layers.2.mlp.experts.5.down_proj.weight"],
            (Shape{32, 16}));
  EXPECT_EQ(shapes["model.layers.1.mlp.gate_proj.weight"], (Shape{48, 32}));
  EXPECT_EQ(shapes["model.layers.1.mlp.down_proj.weight"], (Shape{32, 48}));
  EXPECT_EQ(shapes.count("model.layers.1.mlp.gate.weight"), 0u);
  EXPECT_EQ(shapes.count("model.layers.0.mlp.gate_proj.weight"), 0u);
  EXPECT_EQ(shapes.count("model.layers.0.mlp.experts.6.up_proj.weight"), 0u);
  // qwen2_moe: qwen3_moe's, and the shared expert's gate / up
  // [shared_expert_intermediate_size, hidden], down its transpose, its gate
  // [1, hidden]; no o_proj bias; the dense layer 1 has neither.
  shapes.clear();
  for (const auto &[name, shape] : ModelReference::expectedWeights(
           parseOrDie(configJson(baseSpec("qwen2_moe")))))
    shapes[name] = shape;
  EXPECT_EQ(shapes["model.layers.3.mlp.gate.weight"], (Shape{6, 32}));
  EXPECT_EQ(shapes["model.layers.3.mlp.experts.5.down_proj.weight"],
            (Shape{32, 16}));
  EXPECT_EQ(shapes["model.layers.3.mlp.shared_expert.gate_proj.weight"],
            (Shape{20, 32}));
  EXPECT_EQ(shapes["model.layers.3.mlp.shared_expert.up_proj.weight"],
            (Shape{20, 32}));
  EXPECT_EQ(shapes["model.layers.3.mlp.shared_expert.down_proj.weight"],
            (Shape{32, 20}));
  EXPECT_EQ(shapes["model.layers.3.mlp.shared_expert_gate.weight"],
            (Shape{1, 32}));
  EXPECT_EQ(shapes["model.layers.0.self_attn.k_proj.bias"], Shape{16});
  EXPECT_EQ(shapes.count("model.layers.0.self_attn.o_proj.bias"), 0u);
  EXPECT_EQ(shapes["model.layers.1.mlp.up_proj.weight"], (Shape{48, 32}));
  EXPECT_EQ(shapes.count("model.layers.1.mlp.shared_expert_gate.weight"), 0u);
  EXPECT_EQ(shapes.count("model.layers.1.mlp.gate.weight"), 0u);
  // mixtral: w1 / w3 [intermediate_size, hidden], w2 [hidden,
  // intermediate_size] on every layer.
  shapes.clear();
  for (const auto &[name, shape] : ModelReference::expectedWeights(
           parseOrDie(configJson(baseSpec("mixtral")))))
    shapes[name] = shape;
  EXPECT_EQ(shapes["model.layers.1.block_sparse_moe.gate.weight"],
            (Shape{4, 32}));
  EXPECT_EQ(shapes["model.layers.1.block_sparse_moe.experts.3.w1.weight"],
            (Shape{24, 32}));
  EXPECT_EQ(shapes["model.layers.1.block_sparse_moe.experts.3.w3.weight"],
            (Shape{24, 32}));
  EXPECT_EQ(shapes["model.layers.1.block_sparse_moe.experts.3.w2.weight"],
            (Shape{32, 24}));
}

/// The dimensions a config class gives a model without those keys.
void expectDims(const ModelConfig &c, int64_t vocab, int64_t hidden,
                int64_t ffn, int64_t layers, int64_t heads, int64_t kvHeads,
                int64_t headDim, int64_t maxPositions) {
  EXPECT_EQ(c.vocab, vocab);
  EXPECT_EQ(c.hidden, hidden);
  EXPECT_EQ(c.ffn, ffn);
  EXPECT_EQ(c.layers, layers);
  EXPECT_EQ(c.heads, heads);
  EXPECT_EQ(c.kvHeads, kvHeads);
  EXPECT_EQ(c.headDim, headDim);
  EXPECT_EQ(c.rotaryDim, headDim);
  EXPECT_EQ(c.maxPositions, maxPositions);
  EXPECT_EQ(c.normEps, 1e-6);
  EXPECT_TRUE(c.tieEmbeddings);
  EXPECT_EQ(c.activation, ref::Activation::GeluTanh);
  EXPECT_FALSE(c.attentionBias);
  EXPECT_EQ(c.queryPreAttnScalar, 256.0);
  EXPECT_TRUE(c.normPlusOne && c.sandwichNorms);
}

TEST(FamilyConfig, DefaultsOfAbsentKeys) {
  auto parse = [](const std::string &body) {
    return parseOrDie("{" + body + "}");
  };
  const std::string llamaDims =
      "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": "
      "32, \"vocab_size\": 100, \"intermediate_size\": 96";

  ModelConfig m = parse("\"model_type\": \"mistral\", " + llamaDims);
  EXPECT_EQ(m.kvHeads, 8); // MistralConfig num_key_value_heads=8
  EXPECT_EQ(m.headDim, 2); // hidden / heads
  EXPECT_EQ(m.slidingWindow, 4096);
  EXPECT_EQ(m.slidingLayers, std::vector<bool>(2, true));
  EXPECT_EQ(m.maxPositions, 4096 * 32);
  EXPECT_EQ(m.normEps, 1e-6);
  EXPECT_EQ(m.ropeTheta, 10000.0);
  EXPECT_FALSE(m.tieEmbeddings);
  EXPECT_EQ(m.activation, ref::Activation::Silu);
  // null differs from absent: null kv heads -> heads, null window -> none.
  m = parse("\"model_type\": \"mistral\", \"num_key_value_heads\": null, "
            "\"sliding_window\": null, \"head_dim\": null, " +
            llamaDims);
  EXPECT_EQ(m.kvHeads, 32);
  EXPECT_EQ(m.slidingWindow, 0);
  EXPECT_EQ(m.headDim, 2);

  ModelConfig q = parse("\"model_type\": \"qwen2\", " + llamaDims);
  EXPECT_EQ(q.kvHeads, 32);      // Qwen2Config num_key_value_heads=32
  EXPECT_EQ(q.slidingWindow, 0); // use_sliding_window false
  EXPECT_EQ(q.maxPositions, 32768);
  EXPECT_TRUE(q.attentionBias);
  q = parse("\"model_type\": \"qwen2\", \"use_sliding_window\": true, "
            "\"num_hidden_layers\": 30, " +
            llamaDims.substr(llamaDims.find("\"num_attention_heads\"")) +
            ", \"hidden_size\": 64");
  EXPECT_EQ(q.slidingWindow, 4096);
  for (int64_t i = 0; i < 30; ++i) // max_window_layers 28: layers >= 28
    EXPECT_EQ(q.slidingLayers[i], i >= 28) << i;

  // Qwen3Config: head_dim 128 whatever hidden / heads, no biases unless
  // attention_bias, the qk-norm always.
  ModelConfig q3 = parse("\"model_type\": \"qwen3\", " + llamaDims);
  EXPECT_EQ(q3.architecture, Architecture::Qwen3);
  EXPECT_EQ(q3.kvHeads, 32); // num_key_value_heads=32; null -> heads
  EXPECT_EQ(q3.headDim, 128);
  EXPECT_EQ(q3.rotaryDim, 128);
  EXPECT_TRUE(q3.qkNorm);
  EXPECT_FALSE(q3.attentionBias);
  EXPECT_FALSE(q3.tieEmbeddings);
  EXPECT_EQ(q3.maxPositions, 32768);
  EXPECT_EQ(q3.normEps, 1e-6);
  EXPECT_EQ(q3.ropeTheta, 10000.0);
  EXPECT_EQ(q3.activation, ref::Activation::Silu);
  EXPECT_EQ(q3.slidingWindow, 0);
  EXPECT_EQ(q3.slidingLayers, std::vector<bool>(2, false));
  EXPECT_FALSE(parse("\"model_type\": \"qwen2\", " + llamaDims).qkNorm);
  q3 = parse("\"model_type\": \"qwen3\", \"num_key_value_heads\": null, "
             "\"attention_bias\": true, \"use_sliding_window\": true, "
             "\"sliding_window\": 16, \"max_window_layers\": 1, " +
             llamaDims);
  EXPECT_EQ(q3.kvHeads, 32);
  EXPECT_TRUE(q3.attentionBias);
  EXPECT_EQ(q3.slidingWindow, 16);
  EXPECT_EQ(q3.slidingLayers, (std::vector<bool>{false, true}));
  // Qwen3-0.6B's own keys: the window is off (null, use_sliding_window
  // false), max_window_layers notwithstanding.
  q3 = parse("\"model_type\": \"qwen3\", \"use_sliding_window\": false, "
             "\"sliding_window\": null, \"max_window_layers\": 0, " +
             llamaDims);
  EXPECT_EQ(q3.slidingWindow, 0);
  EXPECT_EQ(q3.slidingLayers, std::vector<bool>(2, false));
  // An explicit layer_types wins over max_window_layers.
  q3 = parse("\"model_type\": \"qwen3\", \"use_sliding_window\": true, "
             "\"sliding_window\": 8, \"max_window_layers\": 0, "
             "\"layer_types\": [\"sliding_attention\", \"full_attention\"], " +
             llamaDims);
  EXPECT_EQ(q3.slidingLayers, (std::vector<bool>{true, false}));
  // transformers 5's rope_parameters, legacy rope_theta / rope_scaling.
  q3 = parse("\"model_type\": \"qwen3\", \"rope_parameters\": "
             "{\"rope_type\": \"yarn\", \"factor\": 4.0, \"rope_theta\": "
             "1000000.0, \"original_max_position_embeddings\": 32768}, " +
             llamaDims);
  EXPECT_EQ(q3.ropeTheta, 1e6);
  EXPECT_EQ(q3.ropeScaling.type, ref::RopeScaling::Type::Yarn);
  EXPECT_EQ(q3.ropeScaling.originalMaxPositions, 32768);
  q3 = parse("\"model_type\": \"qwen3\", \"rope_theta\": 1000000.0, "
             "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}, " +
             llamaDims);
  EXPECT_EQ(q3.ropeTheta, 1e6);
  EXPECT_EQ(q3.ropeScaling.type, ref::RopeScaling::Type::Linear);

  // SmolLM3Config: kv heads 4, theta 2e6, tied, eps 1e-6, 32768
  // positions, no biases, no window; no_rope_layer_interval 4 makes every
  // fourth layer (i + 1 divisible by 4) NoPE.
  const std::string smolDims =
      "\"model_type\": \"smollm3\", \"hidden_size\": 64, "
      "\"num_attention_heads\": 8, \"vocab_size\": 100, "
      "\"intermediate_size\": 96, ";
  ModelConfig sm = parse(smolDims + "\"num_hidden_layers\": 8");
  EXPECT_EQ(sm.architecture, Architecture::SmolLM3);
  EXPECT_EQ(sm.kvHeads, 4);
  EXPECT_EQ(sm.headDim, 8); // hidden / heads
  EXPECT_EQ(sm.rotaryDim, 8);
  EXPECT_EQ(sm.ropeTheta, 2000000.0);
  EXPECT_TRUE(sm.tieEmbeddings);
  EXPECT_EQ(sm.normEps, 1e-6);
  EXPECT_EQ(sm.maxPositions, 32768);
  EXPECT_FALSE(sm.attentionBias);
  EXPECT_FALSE(sm.qkNorm);
  EXPECT_EQ(sm.activation, ref::Activation::Silu);
  EXPECT_EQ(sm.slidingWindow, 0);
  EXPECT_EQ(sm.slidingLayers, std::vector<bool>(8, false));
  EXPECT_EQ(sm.ropeLayers, (std::vector<bool>{true, true, true, false, true,
                                              true, true, false}));
  sm = parse(smolDims + "\"num_hidden_layers\": 4, \"num_key_value_heads\": "
                        "null, \"no_rope_layer_interval\": 2, "
                        "\"attention_bias\": true, \"use_sliding_window\": "
                        "true, \"sliding_window\": 16");
  EXPECT_EQ(sm.kvHeads, 8);
  EXPECT_TRUE(sm.attentionBias);
  EXPECT_EQ(sm.ropeLayers, (std::vector<bool>{true, false, true, false}));
  // layer_types' default slides the NoPE layers only.
  EXPECT_EQ(sm.slidingWindow, 16);
  EXPECT_EQ(sm.slidingLayers, (std::vector<bool>{false, true, false, true}));
  // An explicit list wins over the interval (longer lists are fine);
  // sliding_window without use_sliding_window is off; rope_parameters.
  sm = parse(smolDims + "\"num_hidden_layers\": 3, \"no_rope_layers\": "
                        "[0, 1, 1, 0], \"no_rope_layer_interval\": 1, "
                        "\"sliding_window\": 8, \"rope_parameters\": "
                        "{\"rope_type\": \"default\", \"rope_theta\": "
                        "5000000.0}");
  EXPECT_EQ(sm.ropeLayers, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(sm.slidingWindow, 0);
  EXPECT_EQ(sm.slidingLayers, std::vector<bool>(3, false));
  EXPECT_EQ(sm.ropeTheta, 5e6);
  // A given layer_types decides the windows.
  sm = parse(smolDims + "\"num_hidden_layers\": 2, \"use_sliding_window\": "
                        "true, \"sliding_window\": 8, \"layer_types\": "
                        "[\"sliding_attention\", \"full_attention\"]");
  EXPECT_EQ(sm.ropeLayers, (std::vector<bool>{true, true}));
  EXPECT_EQ(sm.slidingLayers, (std::vector<bool>{true, false}));
  // Other families rotate every layer.
  EXPECT_TRUE(
      parse("\"model_type\": \"llama\", " + llamaDims).ropeLayers.empty());

  ModelConfig g = parse("\"model_type\": \"gemma\", " + llamaDims);
  EXPECT_EQ(g.kvHeads, 16);
  EXPECT_EQ(g.headDim, 256); // GemmaConfig head_dim=256, not hidden / heads
  EXPECT_TRUE(g.tieEmbeddings);
  EXPECT_EQ(g.activation, ref::Activation::GeluTanh); // gelu_pytorch_tanh
  EXPECT_EQ(g.maxPositions, 8192);
  EXPECT_FALSE(g.attentionBias);
  // torch.tensor(64 ** 0.5, dtype=float32): 8 exactly here; 3072 -> 55.42562.
  EXPECT_EQ(g.embeddingScale, 8.0);
  g = parse("\"model_type\": \"gemma\", \"hidden_size\": 3072, "
            "\"num_hidden_layers\": 1, \"num_attention_heads\": 16, "
            "\"vocab_size\": 10, \"intermediate_size\": 8");
  EXPECT_EQ(g.embeddingScale,
            static_cast<double>(static_cast<float>(std::sqrt(3072.0))));
  EXPECT_NE(g.embeddingScale, std::sqrt(3072.0));
  // hidden_activation is ignored (transformers >= 4.48), with a note.
  g = parse("\"model_type\": \"gemma\", \"hidden_act\": \"gelu\", "
            "\"hidden_activation\": \"gelu_pytorch_tanh\", " +
            llamaDims);
  EXPECT_EQ(g.activation, ref::Activation::GeluErf);
  ASSERT_EQ(g.notes.size(), 1u);
  EXPECT_TRUE(contains(g.notes[0], "hidden_activation")) << g.notes[0];

  // Gemma2Config gives every dimension a default (gemma-2-2b's shape).
  ModelConfig g2 = parse("\"model_type\": \"gemma2\"");
  EXPECT_EQ(g2.architecture, Architecture::Gemma2);
  expectDims(g2, 256000, 2304, 9216, 26, 8, 4, 256, 8192);
  EXPECT_EQ(g2.attnSoftcap, 50.0);
  EXPECT_EQ(g2.finalSoftcap, 30.0);
  EXPECT_EQ(g2.slidingWindow, 4096);
  for (int64_t i = 0; i < 26; ++i) // bool((i + 1) % 2): the even layers
    EXPECT_EQ(g2.slidingLayers[i], i % 2 == 0) << i;
  EXPECT_EQ(g2.ropeTheta, 10000.0);
  EXPECT_EQ(g2.ropeScaling.type, ref::RopeScaling::Type::None);
  EXPECT_FALSE(g2.qkNorm || g2.localRope || g2.multimodal);
  EXPECT_EQ(g2.embeddingScale, 48.0); // float32(2304 ** 0.5)
  EXPECT_TRUE(g2.notes.empty());
  // null softcaps are off; a null window is fine without sliding layers;
  // hidden_act is not what Gemma2MLP reads (a note).
  g2 = parse("\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, "
             "\"attn_logit_softcapping\": null, \"final_logit_softcapping\": "
             "null, \"sliding_window\": null, \"layer_types\": "
             "[\"full_attention\", \"full_attention\"], \"hidden_act\": "
             "\"gelu\", \"query_pre_attn_scalar\": 144");
  EXPECT_EQ(g2.attnSoftcap, 0.0);
  EXPECT_EQ(g2.finalSoftcap, 0.0);
  EXPECT_EQ(g2.slidingWindow, 0);
  EXPECT_EQ(g2.slidingLayers, std::vector<bool>(2, false));
  EXPECT_EQ(g2.activation, ref::Activation::GeluTanh);
  EXPECT_EQ(g2.queryPreAttnScalar, 144.0);
  ASSERT_EQ(g2.notes.size(), 2u);
  EXPECT_TRUE(contains(g2.notes[0], "hidden_act")) << g2.notes[0];
  EXPECT_TRUE(contains(g2.notes[1], "transformers >= 4.53")) << g2.notes[1];

  // Gemma3TextConfig: no softcaps, five local layers to one global,
  // global RoPE 1e6 and local 1e4, (1 + w) q/k norms.
  ModelConfig g3 = parse("\"model_type\": \"gemma3_text\"");
  EXPECT_EQ(g3.architecture, Architecture::Gemma3);
  expectDims(g3, 262208, 2304, 9216, 26, 8, 4, 256, 131072);
  EXPECT_EQ(g3.attnSoftcap, 0.0);
  EXPECT_EQ(g3.finalSoftcap, 0.0);
  EXPECT_EQ(g3.slidingWindow, 4096);
  for (int64_t i = 0; i < 26; ++i) // layers 5, 11, 17, 23 global
    EXPECT_EQ(g3.slidingLayers[i], (i + 1) % 6 != 0) << i;
  EXPECT_TRUE(g3.qkNorm && g3.localRope);
  EXPECT_EQ(g3.ropeTheta, 1e6);
  EXPECT_EQ(g3.localRopeTheta, 1e4);
  EXPECT_EQ(g3.ropeScaling.type, ref::RopeScaling::Type::None);
  EXPECT_EQ(g3.localRopeScaling.type, ref::RopeScaling::Type::None);
  EXPECT_FALSE(g3.multimodal);
  // google/gemma-3-1b-it's config.json.
  g3 = parseOrDie(R"({"architectures": ["Gemma3ForCausalLM"],
    "attention_bias": false, "attention_dropout": 0.0,
    "attn_logit_softcapping": null, "bos_token_id": 2,
    "cache_implementation": "hybrid", "eos_token_id": [1, 106],
    "final_logit_softcapping": null, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
    "initializer_range": 0.02, "intermediate_size": 6912,
    "max_position_embeddings": 32768, "model_type": "gemma3_text",
    "num_attention_heads": 4, "num_hidden_layers": 26,
    "num_key_value_heads": 1, "pad_token_id": 0,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000, "rope_scaling": null,
    "rope_theta": 1000000, "sliding_window": 512,
    "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
    "transformers_version": "4.50.0.dev0", "use_cache": true,
    "vocab_size": 262144})");
  EXPECT_EQ(g3.hidden, 1152);
  EXPECT_EQ(g3.kvHeads, 1);
  EXPECT_EQ(g3.slidingWindow, 512);
  EXPECT_EQ(g3.slidingLayers[5], false);
  EXPECT_EQ(g3.slidingLayers[6], true);
  EXPECT_EQ(g3.embeddingScale,
            static_cast<double>(static_cast<float>(std::sqrt(1152.0))));
  EXPECT_TRUE(g3.notes.empty());
  // Legacy rope_scaling scales the global layers only; transformers 5's
  // rope_parameters per layer type say the same.
  for (const char *rope :
       {"\"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}",
        "\"rope_parameters\": {\"full_attention\": {\"rope_type\": "
        "\"linear\", \"factor\": 8.0, \"rope_theta\": 1000000.0}, "
        "\"sliding_attention\": {\"rope_type\": \"default\", "
        "\"rope_theta\": 10000.0}}"}) {
    g3 = parse("\"model_type\": \"gemma3_text\", " + std::string(rope));
    EXPECT_EQ(g3.ropeScaling.type, ref::RopeScaling::Type::Linear) << rope;
    EXPECT_EQ(g3.ropeScaling.factor, 8.0);
    EXPECT_EQ(g3.localRopeScaling.type, ref::RopeScaling::Type::None);
    EXPECT_EQ(g3.ropeTheta, 1e6);
    EXPECT_EQ(g3.localRopeTheta, 1e4);
  }
  // sliding_window_pattern, and layer_types over it (with a note: before
  // transformers 4.53 the pattern decided).
  g3 = parse("\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 4, "
             "\"sliding_window_pattern\": 2");
  EXPECT_EQ(g3.slidingLayers, (std::vector<bool>{true, false, true, false}));
  EXPECT_TRUE(g3.notes.empty());
  g3 = parse("\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 2, "
             "\"layer_types\": [\"full_attention\", \"sliding_attention\"]");
  EXPECT_EQ(g3.slidingLayers, (std::vector<bool>{false, true}));
  ASSERT_EQ(g3.notes.size(), 1u);
  EXPECT_TRUE(contains(g3.notes[0], "sliding_window_pattern")) << g3.notes[0];
  // Gemma3Attention ignores attn_logit_softcapping; Gemma3ForCausalLM
  // applies final_logit_softcapping.
  g3 = parse("\"model_type\": \"gemma3_text\", \"attn_logit_softcapping\": "
             "50.0, \"final_logit_softcapping\": 30.0");
  EXPECT_EQ(g3.attnSoftcap, 0.0);
  EXPECT_EQ(g3.finalSoftcap, 30.0);
  ASSERT_EQ(g3.notes.size(), 1u);
  EXPECT_TRUE(contains(g3.notes[0], "attn_logit_softcapping is not applied"))
      << g3.notes[0];

  // gemma3: google/gemma-3-4b-it's config.json, whose text_config leaves
  // out the keys equal to Gemma3TextConfig's defaults.
  ModelConfig mm = parseOrDie(R"({"architectures":
    ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
    "eoi_token_index": 256000, "eos_token_id": [1, 106],
    "image_token_index": 262144, "initializer_range": 0.02,
    "mm_tokens_per_image": 256, "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
      "model_type": "gemma3_text", "num_attention_heads": 8,
      "num_hidden_layers": 34, "num_key_value_heads": 4,
      "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
      "sliding_window": 1024},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 896,
      "intermediate_size": 4304, "model_type": "siglip_vision_model",
      "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14,
      "vision_use_head": false}})");
  EXPECT_EQ(mm.architecture, Architecture::Gemma3);
  EXPECT_TRUE(mm.multimodal);
  EXPECT_EQ(mm.hidden, 2560);
  EXPECT_EQ(mm.layers, 34);
  EXPECT_EQ(mm.vocab, 262208);
  EXPECT_EQ(mm.headDim, 256);
  EXPECT_EQ(mm.slidingWindow, 1024);
  EXPECT_EQ(mm.ropeScaling.type, ref::RopeScaling::Type::Linear);
  EXPECT_TRUE(mm.tieEmbeddings);
  ASSERT_EQ(mm.notes.size(), 1u);
  EXPECT_TRUE(contains(mm.notes[0], "image part")) << mm.notes[0];
  // No text_config: Gemma3TextConfig's defaults, as HF. A final softcap in
  // text_config is not applied by Gemma3ForConditionalGeneration.
  mm = parse("\"model_type\": \"gemma3\", \"text_config\": "
             "{\"final_logit_softcapping\": 30.0}");
  EXPECT_EQ(mm.layers, 26);
  EXPECT_EQ(mm.finalSoftcap, 0.0);
  ASSERT_EQ(mm.notes.size(), 2u);
  EXPECT_TRUE(contains(mm.notes[1], "final_logit_softcapping")) << mm.notes[1];
  EXPECT_EQ(parse("\"model_type\": \"gemma3\"").hidden, 2304);

  ModelConfig p = parse("\"model_type\": \"phi3\", " + llamaDims);
  EXPECT_EQ(p.kvHeads, 32);
  EXPECT_EQ(p.normEps, 1e-5);
  EXPECT_EQ(p.maxPositions, 4096);
  EXPECT_EQ(p.rotaryDim, p.headDim);
  EXPECT_EQ(p.slidingWindow, 0);

  ModelConfig x = parse("\"model_type\": \"gpt_neox\", \"hidden_size\": 64, "
                        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                        "\"vocab_size\": 100, \"intermediate_size\": 96");
  EXPECT_EQ(x.rotaryDim, 4); // int(16 * 0.25)
  EXPECT_TRUE(x.parallelResidual);
  EXPECT_TRUE(x.attentionBias);
  EXPECT_FALSE(x.tieEmbeddings);
  EXPECT_EQ(x.activation, ref::Activation::GeluErf);
  EXPECT_EQ(x.maxPositions, 2048);
  EXPECT_EQ(x.normEps, 1e-5);
  // rotary_pct 0.3 of 10: Python int(10 * 0.3) = int(3.0000000000000004) = 3
  // is odd: an error; 0.4 of 20 -> 8.
  x = parse(
      "\"model_type\": \"gpt_neox\", \"hidden_size\": 80, "
      "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
      "\"vocab_size\": 10, \"intermediate_size\": 8, \"rotary_pct\": 0.4");
  EXPECT_EQ(x.rotaryDim, 8);

  ModelConfig j = parse("\"model_type\": \"gptj\", \"n_embd\": 256, "
                        "\"n_layer\": 1, \"n_head\": 2, \"vocab_size\": 10");
  EXPECT_EQ(j.rotaryDim, 64);
  EXPECT_EQ(j.ffn, 4 * 256);
  EXPECT_EQ(j.maxPositions, 2048);
  EXPECT_EQ(j.ropePairing, ref::RopePairing::Interleaved);
  EXPECT_EQ(j.activation, ref::Activation::GeluTanh);
  EXPECT_FALSE(j.tieEmbeddings);
  j = parse("\"model_type\": \"gptj\", \"n_embd\": 256, \"n_layer\": 1, "
            "\"n_head\": 2, \"vocab_size\": 10, \"activation_function\": "
            "\"gelu_fast\"");
  EXPECT_EQ(j.activation, ref::Activation::GeluTanh); // 0.7978845608

  ModelConfig o = parse("\"model_type\": \"opt\", \"hidden_size\": 32, "
                        "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
                        "\"vocab_size\": 10, \"ffn_dim\": 8");
  EXPECT_TRUE(o.layerNormBefore);
  EXPECT_TRUE(o.finalLayerNorm);
  EXPECT_TRUE(o.tieEmbeddings);
  EXPECT_TRUE(o.attentionBias && o.mlpBias);
  EXPECT_EQ(o.activation, ref::Activation::Relu);
  EXPECT_EQ(o.maxPositions, 2048);
  o = parse("\"model_type\": \"opt\", \"hidden_size\": 32, "
            "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
            "\"vocab_size\": 10, \"ffn_dim\": 8, \"do_layer_norm_before\": "
            "false, \"_remove_final_layer_norm\": false");
  EXPECT_FALSE(o.layerNormBefore);
  EXPECT_FALSE(o.finalLayerNorm); // only created for pre-norm models

  ModelConfig b = parse("\"model_type\": \"bloom\", \"n_embed\": 32, "
                        "\"num_hidden_layers\": 2, \"n_head\": 4, "
                        "\"vocab_size\": 10");
  EXPECT_EQ(b.hidden, 32);
  EXPECT_EQ(b.layers, 2);
  EXPECT_EQ(b.ffn, 128);
  EXPECT_TRUE(b.tieEmbeddings);
  EXPECT_FALSE(b.residualFromNorm);
  EXPECT_EQ(b.maxPositions, ref::kNoPositionLimit);

  ModelConfig xg = parse("\"model_type\": \"xglm\", \"d_model\": 32, "
                         "\"num_layers\": 1, \"attention_heads\": 4, "
                         "\"vocab_size\": 10, \"ffn_dim\": 8");
  EXPECT_EQ(xg.activation, ref::Activation::GeluErf);
  EXPECT_EQ(xg.embeddingScale,
            static_cast<double>(static_cast<float>(std::sqrt(32.0))));
  EXPECT_EQ(xg.positionPaddingIndex, 1);
  EXPECT_TRUE(xg.tieEmbeddings);
  EXPECT_EQ(xg.maxPositions, 2048);
}

/// Qwen3MoeConfig and MixtralConfig (transformers 4.57): their defaults,
/// which layers are sparse, and the keys either ignores.
TEST(FamilyConfig, MoeKeysAndDefaults) {
  auto parse = [](const std::string &body) {
    return parseOrDie("{" + body + "}");
  };
  const std::string dims =
      "\"hidden_size\": 64, \"num_hidden_layers\": 4, \"num_attention_heads\": "
      "8, \"vocab_size\": 100, \"intermediate_size\": 96";
  const std::string qwenMoe = "\"model_type\": \"qwen3_moe\", " + dims +
                              ", \"num_experts\": 8, "
                              "\"num_experts_per_tok\": 2, "
                              "\"moe_intermediate_size\": 24";
  // Qwen3MoeConfig: kv heads 4, head_dim hidden / heads (getattr's default;
  // not qwen3's 128), theta 1e4, eps 1e-6, 32768 positions, untied, no
  // biases, qk-norm, no window, norm_topk_prob false, decoder_sparse_step
  // 1 and no mlp_only_layers: every layer sparse.
  ModelConfig q = parse(qwenMoe);
  EXPECT_EQ(q.architecture, Architecture::Qwen3Moe);
  EXPECT_EQ(q.kvHeads, 4);
  EXPECT_EQ(q.headDim, 8);
  EXPECT_EQ(q.rotaryDim, 8);
  EXPECT_EQ(q.ropeTheta, 10000.0);
  EXPECT_EQ(q.normEps, 1e-6);
  EXPECT_EQ(q.maxPositions, 32768);
  EXPECT_FALSE(q.tieEmbeddings);
  EXPECT_FALSE(q.attentionBias);
  EXPECT_TRUE(q.qkNorm);
  EXPECT_EQ(q.slidingWindow, 0);
  EXPECT_EQ(q.slidingLayers, std::vector<bool>(4, false));
  EXPECT_EQ(q.ffn, 96);
  EXPECT_EQ(q.experts, 8);
  EXPECT_EQ(q.expertsPerToken, 2);
  EXPECT_EQ(q.expertFfn, 24);
  EXPECT_FALSE(q.normalizeTopK);
  EXPECT_EQ(q.moeLayers, std::vector<bool>(4, true));
  EXPECT_TRUE(q.notes.empty());
  // decoder_sparse_step 2: layers 1 and 3; mlp_only_layers takes 3 out;
  // an index past the layers is ignored, with a note.
  q = parse(qwenMoe + ", \"decoder_sparse_step\": 2, \"norm_topk_prob\": true, "
                      "\"mlp_only_layers\": [3, 9]");
  EXPECT_TRUE(q.normalizeTopK);
  EXPECT_EQ(q.moeLayers, (std::vector<bool>{false, true, false, false}));
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_TRUE(contains(q.notes[0], "mlp_only_layers entry 9")) << q.notes[0];
  q = parse(qwenMoe + ", \"mlp_only_layers\": null, \"decoder_sparse_step\": 3");
  EXPECT_EQ(q.moeLayers, (std::vector<bool>{false, false, true, false}));
  // num_experts 0: every layer dense; the expert keys are not needed.
  q = parse("\"model_type\": \"qwen3_moe\", " + dims + ", \"num_experts\": 0");
  EXPECT_EQ(q.moeLayers, std::vector<bool>(4, false));
  // use_sliding_window: the window on every layer (one sliding mask in
  // Qwen3MoeModel); max_window_layers and layer_types are not read.
  q = parse(qwenMoe + ", \"use_sliding_window\": true, \"sliding_window\": 16, "
                      "\"max_window_layers\": 2, \"head_dim\": 16, "
                      "\"num_key_value_heads\": 2, \"attention_bias\": true");
  EXPECT_EQ(q.slidingWindow, 16);
  EXPECT_EQ(q.slidingLayers, std::vector<bool>(4, true));
  EXPECT_EQ(q.headDim, 16);
  EXPECT_EQ(q.kvHeads, 2);
  EXPECT_TRUE(q.attentionBias);
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_TRUE(contains(q.notes[0], "ignores max_window_layers")) << q.notes[0];
  q = parse(qwenMoe + ", \"use_sliding_window\": true, \"sliding_window\": null");
  EXPECT_EQ(q.slidingWindow, 0);
  EXPECT_EQ(q.slidingLayers, std::vector<bool>(4, false));
  // Qwen3-30B-A3B's keys: window off.
  q = parse(qwenMoe + ", \"use_sliding_window\": false, \"sliding_window\": "
                      "null, \"max_window_layers\": 48");
  EXPECT_EQ(q.slidingWindow, 0);
  EXPECT_TRUE(q.notes.empty());

  // MixtralConfig: kv heads 8 (null -> heads), head_dim hidden / heads
  // (null too), theta 1e6, eps 1e-5, 131072 positions, no window (null),
  // the experts intermediate_size wide, always renormalized, every layer
  // sparse; num_experts is num_local_experts' alias (transformers 5).
  const std::string mixtral = "\"model_type\": \"mixtral\", " + dims +
                              ", \"num_local_experts\": 8, "
                              "\"num_experts_per_tok\": 2";
  ModelConfig m = parse(mixtral);
  EXPECT_EQ(m.architecture, Architecture::Mixtral);
  EXPECT_EQ(m.kvHeads, 8);
  EXPECT_EQ(m.headDim, 8);
  EXPECT_EQ(m.ropeTheta, 1000000.0);
  EXPECT_EQ(m.normEps, 1e-5);
  EXPECT_EQ(m.maxPositions, 4096 * 32);
  EXPECT_FALSE(m.tieEmbeddings);
  EXPECT_FALSE(m.attentionBias);
  EXPECT_FALSE(m.qkNorm);
  EXPECT_EQ(m.slidingWindow, 0);
  EXPECT_EQ(m.slidingLayers, std::vector<bool>(4, false));
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.expertsPerToken, 2);
  EXPECT_EQ(m.expertFfn, 96);
  EXPECT_TRUE(m.normalizeTopK);
  EXPECT_EQ(m.moeLayers, std::vector<bool>(4, true));
  EXPECT_TRUE(m.notes.empty());
  m = parse("\"model_type\": \"mixtral\", " + dims +
            ", \"num_experts\": 4, \"num_experts_per_tok\": 1, "
            "\"num_key_value_heads\": null, \"head_dim\": null, "
            "\"sliding_window\": 32, \"router_jitter_noise\": 0.1, "
            "\"norm_topk_prob\": false");
  EXPECT_EQ(m.experts, 4);
  EXPECT_EQ(m.expertsPerToken, 1);
  EXPECT_EQ(m.kvHeads, 8);
  EXPECT_EQ(m.headDim, 8);
  EXPECT_EQ(m.slidingWindow, 32);
  EXPECT_EQ(m.slidingLayers, std::vector<bool>(4, true));
  EXPECT_TRUE(m.normalizeTopK);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_TRUE(contains(m.notes[0], "norm_topk_prob is ignored")) << m.notes[0];
  EXPECT_TRUE(contains(m.notes[1], "router_jitter_noise")) << m.notes[1];
}

/// Qwen2MoeConfig (transformers 5's configuration_qwen2_moe.py): its
/// defaults, __post_init__'s layer_types (the even layers below
/// max_window_layers slide, with use_sliding_window) and mlp_only_layers,
/// decoder_sparse_step, qkv_bias, the shared expert, num_experts 0, and the
/// keys' errors.
TEST(FamilyConfig, Qwen2MoeKeysAndDefaults) {
  auto parse = [](const std::string &body) {
    return parseOrDie("{" + body + "}");
  };
  // 16 heads: Qwen2MoeConfig's 16 KV heads must divide them.
  const std::string dims =
      "\"model_type\": \"qwen2_moe\", \"hidden_size\": 64, "
      "\"num_hidden_layers\": 4, \"num_attention_heads\": 16, "
      "\"vocab_size\": 100, \"intermediate_size\": 96";
  const std::string moe = dims +
                          ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
                          "\"moe_intermediate_size\": 24, "
                          "\"shared_expert_intermediate_size\": 40";
  // Qwen2MoeConfig: kv heads 16, head_dim hidden / heads, theta 1e4, eps
  // 1e-6, 32768 positions, untied, q/k/v biases (qkv_bias), no qk-norm, no
  // window, norm_topk_prob false, every layer sparse with its shared expert.
  ModelConfig q = parse(moe);
  EXPECT_EQ(q.architecture, Architecture::Qwen2Moe);
  EXPECT_STREQ(ref::modelTypeName(q.architecture), "qwen2_moe");
  EXPECT_EQ(q.kvHeads, 16);
  EXPECT_EQ(q.headDim, 4);
  EXPECT_EQ(q.rotaryDim, 4);
  EXPECT_EQ(q.ropeTheta, 10000.0);
  EXPECT_EQ(q.ropeScaling.type, ref::RopeScaling::Type::None);
  EXPECT_EQ(q.normEps, 1e-6);
  EXPECT_EQ(q.maxPositions, 32768);
  EXPECT_FALSE(q.tieEmbeddings);
  EXPECT_TRUE(q.attentionBias);
  EXPECT_FALSE(q.qkNorm);
  EXPECT_EQ(q.activation, ref::Activation::Silu);
  EXPECT_EQ(q.slidingWindow, 0);
  EXPECT_EQ(q.slidingLayers, std::vector<bool>(4, false));
  EXPECT_EQ(q.ffn, 96);
  EXPECT_EQ(q.experts, 8);
  EXPECT_EQ(q.expertsPerToken, 2);
  EXPECT_EQ(q.expertFfn, 24);
  EXPECT_EQ(q.sharedExpertFfn, 40);
  EXPECT_FALSE(q.normalizeTopK);
  EXPECT_EQ(q.moeLayers, std::vector<bool>(4, true));
  EXPECT_TRUE(q.notes.empty()) << q.notes.front();
  auto names = [](const ModelConfig &c) {
    std::set<std::string> out;
    for (const auto &entry : ModelReference::expectedWeights(c))
      out.insert(entry.first);
    return out;
  };
  std::set<std::string> n = names(q);
  EXPECT_TRUE(n.count("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_FALSE(n.count("model.layers.0.self_attn.o_proj.bias"));
  EXPECT_TRUE(n.count("model.layers.3.mlp.shared_expert.down_proj.weight"));
  EXPECT_TRUE(n.count("model.layers.3.mlp.shared_expert_gate.weight"));

  // null KV heads: all heads (as transformers 4; 5 no longer maps None);
  // qkv_bias false: no biases; norm_topk_prob; rope_parameters.
  q = parse(moe + ", \"num_key_value_heads\": null, \"qkv_bias\": false, "
                  "\"norm_topk_prob\": true, \"rope_parameters\": "
                  "{\"rope_type\": \"default\", \"rope_theta\": 1e6}");
  EXPECT_EQ(q.kvHeads, 16);
  EXPECT_FALSE(q.attentionBias);
  EXPECT_TRUE(q.normalizeTopK);
  EXPECT_EQ(q.ropeTheta, 1e6);
  n = names(q);
  EXPECT_FALSE(n.count("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_FALSE(n.count("model.layers.0.self_attn.v_proj.bias"));

  // layer_types' default: sliding_attention iff (i + 1) % 2 != 0 and
  // i < max_window_layers (28) and use_sliding_window; sliding_window
  // 4096 unless given, and unused without use_sliding_window.
  q = parse(moe + ", \"use_sliding_window\": true");
  EXPECT_EQ(q.slidingWindow, 4096);
  EXPECT_EQ(q.slidingLayers, (std::vector<bool>{true, false, true, false}));
  q = parse(moe + ", \"use_sliding_window\": true, \"sliding_window\": 16, "
                  "\"max_window_layers\": 2");
  EXPECT_EQ(q.slidingWindow, 16);
  EXPECT_EQ(q.slidingLayers, (std::vector<bool>{true, false, false, false}));
  q = parse(moe + ", \"use_sliding_window\": true, \"sliding_window\": 16, "
                  "\"max_window_layers\": 0");
  EXPECT_EQ(q.slidingLayers, std::vector<bool>(4, false));
  q = parse(moe + ", \"use_sliding_window\": false, \"sliding_window\": 16, "
                  "\"max_window_layers\": 4");
  EXPECT_EQ(q.slidingWindow, 0);
  EXPECT_EQ(q.slidingLayers, std::vector<bool>(4, false));
  // Qwen1.5-MoE-A2.7B: window off, sliding_window null.
  q = parse(moe + ", \"use_sliding_window\": false, \"sliding_window\": "
                  "null, \"max_window_layers\": 21");
  EXPECT_EQ(q.slidingWindow, 0);
  // An explicit layer_types decides.
  q = parse(moe + ", \"use_sliding_window\": true, \"sliding_window\": 16, "
                  "\"max_window_layers\": 0, \"layer_types\": "
                  "[\"full_attention\", \"sliding_attention\", "
                  "\"full_attention\", \"sliding_attention\"]");
  EXPECT_EQ(q.slidingLayers, (std::vector<bool>{false, true, false, true}));

  // decoder_sparse_step 2: layers 1 and 3; mlp_only_layers takes 3 out (an
  // index past the layers: a note); null is [].
  q = parse(moe + ", \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3, 9]");
  EXPECT_EQ(q.moeLayers, (std::vector<bool>{false, true, false, false}));
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_TRUE(contains(q.notes[0], "mlp_only_layers entry 9")) << q.notes[0];
  q = parse(moe + ", \"mlp_only_layers\": [0, 2], \"decoder_sparse_step\": 1");
  EXPECT_EQ(q.moeLayers, (std::vector<bool>{false, true, false, true}));
  n = names(q);
  EXPECT_TRUE(n.count("model.layers.0.mlp.gate_proj.weight"));
  EXPECT_FALSE(n.count("model.layers.0.mlp.shared_expert_gate.weight"));
  EXPECT_TRUE(n.count("model.layers.1.mlp.shared_expert.up_proj.weight"));
  q = parse(moe + ", \"mlp_only_layers\": null, \"decoder_sparse_step\": 3");
  EXPECT_EQ(q.moeLayers, (std::vector<bool>{false, false, true, false}));

  // num_experts 0: every layer a dense MLP, no shared expert; the expert
  // keys are not needed.
  q = parse(dims + ", \"num_experts\": 0");
  EXPECT_EQ(q.moeLayers, std::vector<bool>(4, false));
  EXPECT_EQ(q.sharedExpertFfn, 0);
  n = names(q);
  EXPECT_TRUE(n.count("model.layers.2.mlp.down_proj.weight"));
  for (const std::string &name : n)
    EXPECT_FALSE(contains(name, "expert") || contains(name, "mlp.gate."))
        << name;

  const std::string k = dims + ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
                               "\"moe_intermediate_size\": 24";
  struct Case {
    std::string json, expected;
  };
  const Case errors[] = {
      {k, "missing key \"shared_expert_intermediate_size\""},
      {dims + ", \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 24, "
              "\"shared_expert_intermediate_size\": 40",
       "missing key \"num_experts\""},
      {k + ", \"shared_expert_intermediate_size\": 0",
       "\"shared_expert_intermediate_size\" must be an integer in [1,"},
      {dims + ", \"num_experts\": 8, \"num_experts_per_tok\": 9, "
              "\"moe_intermediate_size\": 24, "
              "\"shared_expert_intermediate_size\": 40",
       "\"num_experts_per_tok\" (9) exceeds \"num_experts\" (8)"},
      {moe + ", \"num_local_experts\": 8",
       "\"num_local_experts\" is not a key of qwen2_moe's mixture of experts "
       "(it reads moe_intermediate_size, num_experts, num_experts_per_tok, "
       "shared_expert_intermediate_size)"},
      {moe + ", \"hidden_act\": \"gelu\"",
       "\"hidden_act\" must be silu for qwen2_moe"},
      {moe + ", \"head_dim\": null", "\"head_dim\" must not be null for qwen2_moe"},
      {moe + ", \"qkv_bias\": 1", "\"qkv_bias\" must be true or false"},
      {moe + ", \"use_sliding_window\": true, \"sliding_window\": null",
       "\"sliding_window\" must not be null with use_sliding_window for "
       "qwen2_moe"},
      {moe + ", \"layer_types\": [\"sliding_attention\", \"full_attention\", "
             "\"full_attention\", \"full_attention\"]",
       "\"layer_types\" has sliding_attention layers but use_sliding_window "
       "is false"},
      {moe + ", \"partial_rotary_factor\": 0.5",
       "partial_rotary_factor < 1 is not supported for qwen2_moe"},
  };
  for (const Case &c : errors) {
    std::string error = parseError("{" + c.json + "}");
    EXPECT_TRUE(contains(error, c.expected))
        << "error:    " << error << "\nexpected: " << c.expected;
  }
}

/// The MoE keys' errors name them: a top k above the experts names both
/// keys, a missing or malformed key names itself.
// gpt_oss as openai/gpt-oss-20b's config.json has it (unquantized), and
// GptOssConfig's defaults: head_dim 64, eps 1e-5, q/k/v/o biases, a window of
// 128 on the even layers, theta 150000 with yarn (factor 32 over 4096, not
// truncated), 128 experts of intermediate_size, 4 per token, never
// renormalized, every layer sparse. MXFP4 checkpoints are refused.
TEST(FamilyConfig, GptOssKeysAndDefaults) {
  const std::string dims =
      "\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, \"num_hidden_layers\": 4, "
      "\"num_attention_heads\": 64, \"vocab_size\": 201088, \"intermediate_size\": 2880";
  ModelConfig c = parseOrDie("{" + dims + "}");
  EXPECT_EQ(c.architecture, Architecture::GptOss);
  EXPECT_EQ(c.kvHeads, 8);
  EXPECT_EQ(c.headDim, 64);
  EXPECT_EQ(c.normEps, 1e-5);
  EXPECT_EQ(c.maxPositions, 131072);
  EXPECT_FALSE(c.tieEmbeddings);
  EXPECT_TRUE(c.attentionBias);
  EXPECT_EQ(c.slidingWindow, 128);
  EXPECT_EQ(c.slidingLayers, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c.ropeTheta, 150000.0);
  EXPECT_EQ(c.ropeScaling.type, ref::RopeScaling::Type::Yarn);
  EXPECT_EQ(c.ropeScaling.factor, 32.0);
  EXPECT_EQ(c.ropeScaling.originalMaxPositions, 4096);
  EXPECT_FALSE(c.ropeScaling.truncate);
  EXPECT_EQ(c.experts, 128);
  EXPECT_EQ(c.expertsPerToken, 4);
  EXPECT_EQ(c.expertFfn, 2880);
  EXPECT_FALSE(c.normalizeTopK);
  EXPECT_EQ(c.moeLayers, std::vector<bool>(4, true));
  EXPECT_EQ(c.swigluLimit, 7.0);
  // The release's keys: experts_per_token (unread) beside num_experts_per_tok,
  // layer_types, a null window, swiglu_limit, an explicit rope_scaling.
  c = parseOrDie("{" + dims + ", \"num_local_experts\": 32, \"num_experts_per_tok\": 4, "
                 "\"experts_per_token\": 4, \"swiglu_limit\": 5.0, \"sliding_window\": null, "
                 "\"layer_types\": [\"full_attention\", \"sliding_attention\", "
                 "\"full_attention\", \"sliding_attention\"], \"rope_scaling\": {\"rope_type\": "
                 "\"yarn\", \"factor\": 8.0, \"original_max_position_embeddings\": 2048, "
                 "\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"truncate\": true}}");
  EXPECT_EQ(c.experts, 32);
  EXPECT_EQ(c.swigluLimit, 5.0);
  EXPECT_EQ(c.slidingLayers, std::vector<bool>(4, false));
  EXPECT_EQ(c.ropeScaling.factor, 8.0);
  EXPECT_TRUE(c.ropeScaling.truncate);
  c = parseOrDie("{" + dims + ", \"layer_types\": [\"full_attention\", \"sliding_attention\", "
                 "\"full_attention\", \"sliding_attention\"]}");
  EXPECT_EQ(c.slidingLayers, (std::vector<bool>{false, true, false, true}));

  EXPECT_TRUE(contains(parseError("{" + dims + ", \"quantization_config\": "
                                  "{\"quant_method\": \"mxfp4\"}}"),
                       "quantization_config"));
  std::string error = parseError("{" + dims + ", \"num_local_experts\": 4, "
                                 "\"num_experts_per_tok\": 5}");
  EXPECT_TRUE(contains(error, "\"num_experts_per_tok\" (5) exceeds \"num_local_experts\" (4)"))
      << error;
}

TEST(FamilyConfig, MoeErrorsNameTheKeys) {
  const std::string dims =
      "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": "
      "8, \"vocab_size\": 100, \"intermediate_size\": 96";
  const std::string q = "\"model_type\": \"qwen3_moe\", " + dims;
  const std::string qk = q + ", \"num_experts\": 4, \"moe_intermediate_size\": 8";
  const std::string m = "\"model_type\": \"mixtral\", " + dims;
  struct Case {
    std::string json, expected;
  };
  const Case cases[] = {
      {qk + ", \"num_experts_per_tok\": 5",
       "\"num_experts_per_tok\" (5) exceeds \"num_experts\" (4)"},
      {m + ", \"num_local_experts\": 8, \"num_experts_per_tok\": 9",
       "\"num_experts_per_tok\" (9) exceeds \"num_local_experts\" (8)"},
      {m + ", \"num_experts\": 2, \"num_experts_per_tok\": 3",
       "\"num_experts_per_tok\" (3) exceeds \"num_experts\" (2)"},
      {qk + ", \"num_experts_per_tok\": 0",
       "\"num_experts_per_tok\" must be an integer in [1,"},
      {q + ", \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 8",
       "missing key \"num_experts\""},
      {q + ", \"num_experts\": 4, \"moe_intermediate_size\": 8",
       "missing key \"num_experts_per_tok\""},
      {q + ", \"num_experts\": 4, \"num_experts_per_tok\": 2",
       "missing key \"moe_intermediate_size\""},
      {m + ", \"num_experts_per_tok\": 2", "missing key \"num_local_experts\""},
      {m + ", \"num_local_experts\": 8, \"num_experts\": 4, "
           "\"num_experts_per_tok\": 2",
       "\"num_local_experts\" (8) and \"num_experts\" (4) disagree"},
      {m + ", \"num_local_experts\": 0, \"num_experts_per_tok\": 2",
       "\"num_local_experts\" must be an integer in [1,"},
      {qk + ", \"num_experts_per_tok\": 2, \"decoder_sparse_step\": 0",
       "\"decoder_sparse_step\" must be an integer in [1,"},
      {qk + ", \"num_experts_per_tok\": 2, \"mlp_only_layers\": 1",
       "\"mlp_only_layers\" must be an array of layer indices"},
      {qk + ", \"num_experts_per_tok\": 2, \"mlp_only_layers\": [0, 1.5]",
       "\"mlp_only_layers\"[1] must be an integer"},
      {qk + ", \"num_experts_per_tok\": 2, \"norm_topk_prob\": 1",
       "\"norm_topk_prob\" must be true or false"},
      {qk + ", \"num_experts_per_tok\": 2, \"hidden_act\": \"gelu\"",
       "\"hidden_act\" must be silu for qwen3_moe"},
      {m + ", \"num_local_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"hidden_act\": \"relu\"",
       "\"hidden_act\" must be silu for mixtral"},
      {qk + ", \"num_experts_per_tok\": 2, \"num_key_value_heads\": null",
       "\"num_key_value_heads\" must not be null for qwen3_moe"},
      {qk + ", \"num_experts_per_tok\": 2, \"head_dim\": null",
       "\"head_dim\" must not be null for qwen3_moe"},
      {qk + ", \"num_experts_per_tok\": 2, \"num_local_experts\": 4",
       "\"num_local_experts\" is not a key of qwen3_moe's mixture of experts"},
      {m + ", \"num_local_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"moe_intermediate_size\": 8",
       "\"moe_intermediate_size\" is not a key of mixtral's mixture of "
       "experts"},
      {m + ", \"num_local_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"n_routed_experts\": 8",
       "\"n_routed_experts\" is not a key of mixtral's"},
      {qk + ", \"num_experts_per_tok\": 2, \"vision_config\": {}",
       "\"vision_config\": vision and multimodal configs are not supported"},
      {qk + ", \"num_experts_per_tok\": 2, \"partial_rotary_factor\": 0.5",
       "partial_rotary_factor < 1 is not supported for qwen3_moe"},
  };
  for (const Case &c : cases) {
    std::string error = parseError("{" + c.json + "}");
    EXPECT_TRUE(contains(error, c.expected))
        << "error:    " << error << "\nexpected: " << c.expected;
  }
}

TEST(FamilyConfig, RopeScalingKeys) {
  const std::string dims =
      "\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": "
      "1, \"num_attention_heads\": 4, \"vocab_size\": 10, "
      "\"intermediate_size\": 8, \"max_position_embeddings\": 4096, ";
  auto parse = [&](const std::string &rope) {
    return parseOrDie("{" + dims + rope + "}");
  };
  using T = ref::RopeScaling::Type;
  ModelConfig c =
      parse("\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}");
  EXPECT_EQ(c.ropeScaling.type, T::Linear); // legacy "type"
  EXPECT_EQ(c.ropeScaling.factor, 2.0);
  c = parse("\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 4.0}");
  EXPECT_EQ(c.ropeScaling.type, T::Dynamic);
  EXPECT_EQ(c.ropeScaling.maxPositions, 4096);
  c = parse("\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}");
  EXPECT_EQ(c.ropeScaling.type, T::Yarn);
  EXPECT_EQ(c.ropeScaling.originalMaxPositions, 4096); // v5 default
  EXPECT_EQ(c.ropeScaling.betaFast, 32.0);
  EXPECT_EQ(c.ropeScaling.betaSlow, 1.0);
  EXPECT_TRUE(c.ropeScaling.truncate);
  EXPECT_TRUE(std::isnan(c.ropeScaling.attentionFactor));
  c = parse("\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": null, "
            "\"original_max_position_embeddings\": 1024, \"beta_fast\": 0, "
            "\"mscale\": 0.707, \"mscale_all_dim\": 1.0, \"truncate\": false, "
            "\"attention_factor\": 0.9}");
  EXPECT_EQ(c.ropeScaling.factor, 4.0);    // null: max / original
  EXPECT_EQ(c.ropeScaling.betaFast, 32.0); // `or 32`
  EXPECT_EQ(c.ropeScaling.mscale, 0.707);
  EXPECT_FALSE(c.ropeScaling.truncate);
  EXPECT_EQ(c.ropeScaling.attentionFactor, 0.9);
  EXPECT_TRUE(c.notes.empty());
  // Qwen2.5's recipe (factor 4 with original == max): v5 keeps the factor,
  // later v4 releases replaced it by the ratio 1: a note says so.
  c = parse("\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
            "\"original_max_position_embeddings\": 4096}");
  EXPECT_EQ(c.ropeScaling.factor, 4.0);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_TRUE(contains(c.notes[0], "replaced the factor by the ratio"))
      << c.notes[0];
  c = parse("\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
            "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
            "\"original_max_position_embeddings\": 8192}, \"rope_theta\": "
            "500000.0");
  EXPECT_EQ(c.ropeScaling.type, T::Llama3);
  EXPECT_EQ(c.ropeScaling.originalMaxPositions, 8192);
  EXPECT_EQ(c.ropeTheta, 500000.0);
  // transformers 5 writes rope_parameters with rope_theta inside.
  c = parse("\"rope_parameters\": {\"rope_type\": \"default\", "
            "\"rope_theta\": 250000.0}");
  EXPECT_EQ(c.ropeScaling.type, T::None);
  EXPECT_EQ(c.ropeTheta, 250000.0);
  c = parse("\"rope_scaling\": {\"rope_type\": \"default\"}");
  EXPECT_EQ(c.ropeScaling.type, T::None);
  c = parse("\"rope_scaling\": null");
  EXPECT_EQ(c.ropeScaling.type, T::None);
}

/// microsoft/Phi-4-mini-instruct's long_factor, as attn-make-model's
/// phi4-mini preset holds it (from the model's config.json).
std::vector<double> phi4MiniLongFactor() {
  attn::modelgen::ModelSpec spec;
  EXPECT_TRUE(attn::modelgen::presetSpec("phi4-mini", spec));
  EXPECT_EQ(spec.ropeScaling.longFactor.size(), 48u);
  return spec.ropeScaling.longFactor;
}

/// microsoft/Phi-4-mini-instruct's config.json (its rope keys verbatim):
/// 3072 wide, 24 heads of 128, partial_rotary_factor 0.75 (96 dims, 48
/// pairs), original 4096 of 131072, short factors all 1.
std::string phi4MiniJson(const std::string &rope,
                         const std::string &original =
                             "\"original_max_position_embeddings\": 4096, ") {
  return "{\"model_type\": \"phi3\", \"hidden_size\": 3072, "
         "\"num_hidden_layers\": 32, \"num_attention_heads\": 24, "
         "\"num_key_value_heads\": 8, \"intermediate_size\": 8192, "
         "\"vocab_size\": 200064, \"max_position_embeddings\": 131072, " +
         original +
         "\"partial_rotary_factor\": 0.75, \"rope_theta\": 10000.0, "
         "\"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": true, "
         "\"sliding_window\": 262144, " +
         rope + "}";
}

std::string phi4MiniRope(const std::string &extra = "",
                         const std::string &typeKey = "\"type\": "
                                                      "\"longrope\"") {
  std::vector<double> longF = phi4MiniLongFactor();
  return "\"rope_scaling\": {\"long_factor\": " + numList(longF) +
         ", \"short_factor\": " + numList(std::vector<double>(48, 1.0)) +
         ", " + typeKey + extra + "}";
}

/// Phi-4-mini's longrope as read, and HF's tables: 1 / (ext_i *
/// 10000^(2i / 96)) and sqrt(1 + ln(131072 / 4096) / ln 4096) =
/// sqrt(17 / 12), the expected values computed separately in Python
/// (modeling_rope_utils._compute_longrope_parameters, float64).
TEST(FamilyConfig, LongRopeOfPhi4Mini) {
  using T = ref::RopeScaling::Type;
  ModelConfig c = parseOrDie(phi4MiniJson(phi4MiniRope()));
  EXPECT_TRUE(c.notes.empty()) << c.notes.front();
  EXPECT_EQ(c.rotaryDim, 96);
  EXPECT_EQ(c.slidingWindow, 262144);
  const ref::RopeScaling &sc = c.ropeScaling;
  ASSERT_EQ(sc.type, T::LongRope);
  EXPECT_EQ(sc.originalMaxPositions, 4096);
  EXPECT_EQ(sc.factor, 32.0); // absent: 131072 / 4096
  EXPECT_TRUE(std::isnan(sc.attentionFactor));
  ASSERT_EQ(sc.longFactor.size(), 48u);
  EXPECT_EQ(sc.longFactor[47], 47.77);
  EXPECT_EQ(sc.shortFactor, std::vector<double>(48, 1.0));

  struct Row {
    int i;
    double shortF, longF;
  };
  // Python: 1.0 / (ext[i] * 10000.0 ** ((2 * i) / 96)).
  const Row rows[] = {
      {0, 1.0, 1.0},
      {1, 0.82540418526801851, 0.73807469175354601},
      {10, 0.14677992676220694, 0.047973691502794118},
      {24, 0.01, 0.00068297928447609698},
      {31, 0.0026101572156825357, 8.1491015163363589e-05},
      {46, 0.00014677992676220689, 3.3238208053035984e-06},
      {47, 0.00012115276586285887, 2.5361684291994738e-06},
  };
  const double kAttention = 1.1902380714238083; // sqrt(17 / 12)
  for (int64_t seqLen : {int64_t(1), int64_t(4096), int64_t(4097),
                         int64_t(131072)}) {
    double af = 0;
    std::vector<double> f =
        ref::ropeScaledFrequencies(10000.0, 96, sc, seqLen, af);
    ASSERT_EQ(f.size(), 48u);
    EXPECT_NEAR(af, kAttention, 1e-15) << seqLen;
    for (const Row &r : rows) {
      double want = seqLen > 4096 ? r.longF : r.shortF;
      EXPECT_NEAR(f[r.i], want, want * 1e-14) << seqLen << " pair " << r.i;
    }
  }

  // No top-level original_max_position_embeddings: Phi3Config's 4096.
  c = parseOrDie(phi4MiniJson(phi4MiniRope(), ""));
  EXPECT_EQ(c.ropeScaling.originalMaxPositions, 4096);
  // transformers 5's rope_parameters, the original inside too.
  c = parseOrDie(phi4MiniJson(
      phi4MiniRope(", \"original_max_position_embeddings\": 4096",
                   "\"rope_type\": \"longrope\"")));
  EXPECT_EQ(c.ropeScaling.type, T::LongRope);
  EXPECT_TRUE(c.notes.empty());
  // "su" and "yarn" are Phi3Config's old names of longrope.
  for (const char *old : {"su", "yarn"}) {
    c = parseOrDie(phi4MiniJson(
        phi4MiniRope("", "\"type\": \"" + std::string(old) + "\"")));
    EXPECT_EQ(c.ropeScaling.type, T::LongRope) << old;
    ASSERT_EQ(c.notes.size(), 1u) << old;
    EXPECT_TRUE(contains(c.notes[0], "read as longrope")) << c.notes[0];
  }
  // An explicit factor sets the attention factor (v5; v4 used the ratio).
  c = parseOrDie(phi4MiniJson(phi4MiniRope(", \"factor\": 8.0")));
  EXPECT_EQ(c.ropeScaling.factor, 8.0);
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_TRUE(contains(c.notes[0], "transformers 4 used the ratio"))
      << c.notes[0];
  EXPECT_TRUE(contains(c.notes[1], "Phi3Config rejects")) << c.notes[1];
  double af = 0;
  ref::ropeScaledFrequencies(10000.0, 96, c.ropeScaling, 1, af);
  EXPECT_NEAR(af, std::sqrt(1 + std::log(8.0) / std::log(4096.0)), 1e-15);
  // attention_factor wins; factor <= 1 means 1.
  c = parseOrDie(phi4MiniJson(phi4MiniRope(", \"attention_factor\": 1.5")));
  ref::ropeScaledFrequencies(10000.0, 96, c.ropeScaling, 1, af);
  EXPECT_EQ(af, 1.5);
  c = parseOrDie(phi4MiniJson(phi4MiniRope(", \"factor\": 1.0")));
  ref::ropeScaledFrequencies(10000.0, 96, c.ropeScaling, 5000, af);
  EXPECT_EQ(af, 1.0);
}

TEST(FamilyConfig, LongRopeErrorsNameTheKey) {
  auto rope = [](const std::string &shortList, const std::string &longList,
                 const std::string &extra = "") {
    return "\"rope_scaling\": {\"type\": \"longrope\"" +
           (shortList.empty() ? "" : ", \"short_factor\": " + shortList) +
           (longList.empty() ? "" : ", \"long_factor\": " + longList) +
           extra + "}";
  };
  std::vector<double> ok = phi4MiniLongFactor();
  const std::string good = numList(ok);
  const std::string shortList = numList(std::vector<double>(47, 1.0));
  std::vector<double> zero = ok;
  zero[5] = 0;
  struct Case {
    std::string json, expected;
  };
  const Case cases[] = {
      {phi4MiniJson(rope("", good)),
       "missing key \"rope_scaling.short_factor\" (longrope needs 48 "
       "numbers)"},
      {phi4MiniJson(rope(good, "")), "missing key \"rope_scaling.long_factor\""},
      {phi4MiniJson(rope(good, "null")),
       "missing key \"rope_scaling.long_factor\""},
      {phi4MiniJson(rope(shortList, good)),
       "\"rope_scaling.short_factor\" has 47 numbers; longrope needs 48 (the "
       "rotary dims 96 / 2)"},
      {phi4MiniJson(rope(good, numList(std::vector<double>(64, 1.0)))),
       "\"rope_scaling.long_factor\" has 64 numbers; longrope needs 48"},
      {phi4MiniJson(rope(good, "4.0")),
       "\"rope_scaling.long_factor\" must be a list of numbers"},
      {phi4MiniJson(rope("[1, \"1\"" + std::string(", 1.0") + "]", good)),
       "\"rope_scaling.short_factor\" must be a list of numbers (item 1 is "
       "not)"},
      {phi4MiniJson(rope(good, numList(zero))),
       "\"rope_scaling.long_factor\" item 5 (0) must be positive"},
      {phi4MiniJson(rope(good, good, ", \"factor\": -2")),
       "\"rope_scaling.factor\" must be positive"},
      {phi4MiniJson(rope(good, good, ", \"attention_factor\": 0")),
       "\"rope_scaling.attention_factor\" must be positive"},
      {phi4MiniJson(rope(good, good,
                         ", \"original_max_position_embeddings\": 8192")),
       "\"rope_scaling.original_max_position_embeddings\" (8192) differs "
       "from phi3's top-level \"original_max_position_embeddings\" (4096)"},
      {phi4MiniJson(rope(good, good,
                         ", \"original_max_position_embeddings\": 8192"),
                    ""),
       "(4096, Phi3Config's default)"},
      {phi4MiniJson(rope(good, good),
                    "\"original_max_position_embeddings\": 0, "),
       "\"original_max_position_embeddings\" must be an integer in [1"},
      {phi4MiniJson("\"rope_scaling\": {\"type\": \"dynamic\", "
                    "\"factor\": 2}"),
       "\"rope_scaling.type\" \"dynamic\" is not supported for phi3"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(c.json);
    EXPECT_TRUE(contains(error, c.expected))
        << "error:    " << error << "\nexpected: " << c.expected;
  }
}

TEST(FamilyConfig, UnsupportedSettingsNameTheKey) {
  auto dims = [](const std::string &type) {
    return "\"model_type\": \"" + type +
           "\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
           "\"num_attention_heads\": 4, \"vocab_size\": 10, "
           "\"intermediate_size\": 8";
  };
  struct Case {
    std::string json, expected;
  };
  const Case cases[] = {
      {dims("llama") + ", \"rope_scaling\": {\"rope_type\": \"longrope\", "
                       "\"short_factor\": [1], \"long_factor\": [1]}",
       "\"rope_scaling.rope_type\" \"longrope\" is not supported"},
      {dims("mistral") + ", \"rope_scaling\": {\"type\": \"su\"}",
       "\"rope_scaling.type\" \"su\" is not supported"},
      {dims("phi3") + ", \"rope_scaling\": {\"type\": \"linear\", "
                      "\"factor\": 2}",
       "\"rope_scaling.type\" \"linear\" is not supported for phi3 "
       "(Phi3Config allows default and longrope"},
      {dims("gpt_neox") + ", \"rope_scaling\": {\"type\": \"linear\", "
                          "\"factor\": 2}",
       "\"rope_scaling.type\" \"linear\" is not supported for gpt_neox"},
      {dims("llama") + ", \"rope_scaling\": {\"rope_type\": \"linear\"}",
       "missing key \"rope_scaling.factor\""},
      {dims("llama") + ", \"rope_scaling\": {\"rope_type\": \"llama3\", "
                       "\"factor\": 8, \"low_freq_factor\": 1}",
       "missing key \"rope_scaling.high_freq_factor\""},
      {dims("llama") + ", \"rope_scaling\": {\"rope_type\": \"yarn\"}",
       "missing key \"rope_scaling.factor\""},
      {dims("llama") + ", \"rope_theta\": 10000, \"rope_parameters\": "
                       "{\"rope_theta\": 500000}",
       "\"rope_parameters.rope_theta\" and \"rope_theta\" disagree"},
      {dims("qwen2") +
           ", \"num_key_value_heads\": 4, \"partial_rotary_factor\": "
           "0.5",
       "partial_rotary_factor < 1 is not supported for qwen2"},
      {dims("mistral") + ", \"num_local_experts\": 8",
       "\"num_local_experts\": mixture-of-experts configs are not supported"},
      {dims("qwen2") + ", \"num_experts\": 4",
       "\"num_experts\": mixture-of-experts"},
      {dims("llama") + ", \"vision_config\": {}",
       "\"vision_config\": vision and multimodal configs are not supported"},
      {dims("gemma") + ", \"head_dim\": null", "\"head_dim\" must not be null"},
      {dims("qwen3") + ", \"num_key_value_heads\": 4, \"head_dim\": null",
       "\"head_dim\" must not be null for qwen3"},
      {dims("qwen3") + ", \"num_key_value_heads\": 4, \"use_sliding_window\": "
                       "true, \"layer_types\": [\"chunked_attention\"]",
       "\"layer_types\"[0] must be \"full_attention\" or "
       "\"sliding_attention\""},
      {dims("qwen3") + ", \"num_key_value_heads\": 4, \"layer_types\": "
                       "[\"sliding_attention\"]",
       "\"layer_types\" has sliding_attention layers but use_sliding_window "
       "is false"},
      {dims("qwen3") + ", \"num_key_value_heads\": 4, "
                       "\"partial_rotary_factor\": 0.5",
       "partial_rotary_factor < 1 is not supported for qwen3"},
      {dims("qwen3") + ", \"num_key_value_heads\": 4, \"rope_scaling\": "
                       "{\"rope_type\": \"linear\", \"factor\": 2}, "
                       "\"rope_parameters\": {\"rope_theta\": 1e6}",
       "both \"rope_scaling\" and \"rope_parameters\" are given"},
      {dims("qwen3"), "num_key_value_heads (32) does not divide "
                      "num_attention_heads (4)"},
      {dims("smollm3") + ", \"no_rope_layers\": []",
       "\"no_rope_layers\" must be an array of at least num_hidden_layers (1) "
       "0s and 1s"},
      {dims("smollm3") + ", \"no_rope_layers\": 1",
       "\"no_rope_layers\" must be an array"},
      {dims("smollm3") + ", \"no_rope_layers\": \"1\"",
       "\"no_rope_layers\" must be an array of at least num_hidden_layers (1)"},
      {dims("smollm3") + ", \"no_rope_layers\": [2]",
       "\"no_rope_layers\"[0] must be 0 or 1"},
      {dims("smollm3") + ", \"no_rope_layers\": [true]",
       "\"no_rope_layers\"[0] must be 0 or 1"},
      {dims("smollm3") + ", \"no_rope_layer_interval\": 0",
       "\"no_rope_layer_interval\" must be an integer"},
      {dims("smollm3") + ", \"mlp_bias\": true",
       "mlp_bias: true is not supported"},
      {dims("smollm3") + ", \"layer_types\": [\"sliding_attention\"]",
       "\"layer_types\" has sliding_attention layers but"},
      {dims("smollm3") + ", \"partial_rotary_factor\": 0.5",
       "partial_rotary_factor < 1 is not supported for smollm3"},
      {dims("gemma") + ", \"use_bidirectional_attention\": true",
       "use_bidirectional_attention: true is not supported"},
      {"\"model_type\": \"opt\", \"hidden_size\": 64, \"num_hidden_layers\": "
       "1, "
       "\"num_attention_heads\": 4, \"vocab_size\": 10, \"ffn_dim\": 8, "
       "\"word_embed_proj_dim\": 32",
       "\"word_embed_proj_dim\" (32) != hidden_size (64): project_in / "
       "project_out are not supported"},
      {"\"model_type\": \"opt\", \"hidden_size\": 64, \"num_hidden_layers\": "
       "1, "
       "\"num_attention_heads\": 4, \"vocab_size\": 10, \"ffn_dim\": 8, "
       "\"layer_norm_elementwise_affine\": false",
       "\"layer_norm_elementwise_affine\": false is not supported"},
      {"\"model_type\": \"gptj\", \"n_embd\": 64, \"n_layer\": 1, \"n_head\": "
       "4, \"vocab_size\": 10, \"rotary_dim\": null",
       "\"rotary_dim\": null is not supported"},
      {"\"model_type\": \"gptj\", \"n_embd\": 64, \"n_layer\": 1, \"n_head\": "
       "4, \"vocab_size\": 10, \"rotary_dim\": 32",
       "\"rotary_dim\" (32) must be even and at most the head size (16)"},
      {"\"model_type\": \"xglm\", \"d_model\": 64, \"num_layers\": 1, "
       "\"attention_heads\": 4, \"vocab_size\": 10, \"ffn_dim\": 8, "
       "\"add_cross_attention\": true",
       "\"add_cross_attention\": true is not supported"},
      {"\"model_type\": \"bloom\", \"hidden_size\": 64, \"n_layer\": 1, "
       "\"num_hidden_layers\": 2, \"n_head\": 4, \"vocab_size\": 10",
       "\"n_layer\" (1) and \"num_hidden_layers\" (2) disagree"},
      {"\"model_type\": \"gpt_neox\", \"hidden_size\": 40, "
       "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"vocab_size\": "
       "10, \"intermediate_size\": 8, \"rotary_pct\": 0.3",
       "the rotary dimensions (head_dim 10 x 0.29999999999999999 = 3) must be "
       "even"},
      {dims("qwen2") + ", \"num_key_value_heads\": 4, \"use_sliding_window\": "
                       "true, \"layer_types\": [\"full_attention\", "
                       "\"full_attention\"]",
       "\"layer_types\" must be an array of num_hidden_layers strings"},
      {dims("qwen2") + ", \"num_key_value_heads\": 4, \"layer_types\": "
                       "[\"sliding_attention\"]",
       "\"layer_types\" has sliding_attention layers but use_sliding_window "
       "is false"},
      {dims("qwen2"), "num_key_value_heads (32) does not divide "
                      "num_attention_heads (4)"},
      {"\"model_type\": \"qwen3_next\"", "unsupported model_type \"qwen3_next\""},
      {dims("qwen3") + ", \"num_key_value_heads\": 4, \"num_experts\": 4",
       "\"num_experts\": mixture-of-experts configs are not supported (only "
       "model_type qwen3_moe, qwen2_moe, mixtral and gpt_oss)"},
      // gemma2, gemma3_text, gemma3.
      {"\"model_type\": \"gemma2\", \"attn_logit_softcapping\": 0",
       "\"attn_logit_softcapping\" must be positive (or null)"},
      {"\"model_type\": \"gemma3_text\", \"final_logit_softcapping\": -1",
       "\"final_logit_softcapping\" must be positive (or null)"},
      {"\"model_type\": \"gemma3\", \"text_config\": "
       "{\"attn_logit_softcapping\": 0.0}",
       "\"text_config.attn_logit_softcapping\" must be positive"},
      {"\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, "
       "\"layer_types\": [\"chunked_attention\", \"full_attention\"]",
       "\"layer_types\"[0] must be \"full_attention\" or "
       "\"sliding_attention\""},
      {"\"model_type\": \"gemma3\", \"text_config\": {\"layer_types\": "
       "[\"full_attention\"]}",
       "\"text_config.layer_types\" must be an array of num_hidden_layers"},
      {"\"model_type\": \"gemma2\", \"sliding_window\": null",
       "\"sliding_window\" is null but some layers are sliding_attention"},
      {"\"model_type\": \"gemma2\", \"head_dim\": null",
       "\"head_dim\" must not be null for gemma2"},
      {"\"model_type\": \"gemma3_text\", \"query_pre_attn_scalar\": null",
       "\"query_pre_attn_scalar\" must not be null for gemma3_text"},
      {"\"model_type\": \"gemma2\", \"query_pre_attn_scalar\": 0",
       "\"query_pre_attn_scalar\" must be positive"},
      {"\"model_type\": \"gemma2\", \"use_bidirectional_attention\": true",
       "\"use_bidirectional_attention\": true is not supported"},
      {"\"model_type\": \"gemma2\", \"num_attention_heads\": 5",
       "num_attention_heads (5) does not divide hidden_size (2304)"},
      {"\"model_type\": \"gemma3_text\", \"partial_rotary_factor\": 0.5",
       "\"partial_rotary_factor\" is not supported for gemma3_text"},
      {"\"model_type\": \"gemma3_text\", \"rope_parameters\": "
       "{\"rope_type\": \"linear\", \"factor\": 8.0}",
       "\"rope_parameters\" must map full_attention and sliding_attention"},
      {"\"model_type\": \"gemma3_text\", \"rope_scaling\": {\"rope_type\": "
       "\"linear\", \"factor\": 8.0}, \"rope_parameters\": "
       "{\"full_attention\": {}}",
       "both \"rope_scaling\" and \"rope_parameters\" are given"},
      {"\"model_type\": \"gemma3_text\", \"rope_theta\": 10000.0, "
       "\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1e6}}",
       "\"rope_parameters.full_attention.rope_theta\" and \"rope_theta\" "
       "disagree"},
      {"\"model_type\": \"gemma3\", \"text_config\": "
       "{\"rope_local_base_freq\": 500.0, \"rope_parameters\": "
       "{\"sliding_attention\": {\"rope_theta\": 10000.0}}}",
       "\"text_config.rope_parameters.sliding_attention.rope_theta\" and "
       "\"text_config.rope_local_base_freq\" disagree"},
      {"\"model_type\": \"gemma3_text\", \"rope_parameters\": "
       "{\"sliding_attention\": {\"rope_type\": \"yarn\"}}",
       "missing key \"rope_parameters.sliding_attention.factor\""},
      {"\"model_type\": \"gemma3_text\", \"rope_parameters\": "
       "{\"full_attention\": 8}",
       "\"rope_parameters.full_attention\" must be an object"},
      {"\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": "
       "\"gemma2\"}",
       "\"text_config.model_type\" must be \"gemma3_text\""},
      {"\"model_type\": \"gemma3\", \"tie_word_embeddings\": false",
       "\"tie_word_embeddings\" and \"text_config.tie_word_embeddings\" "
       "disagree"},
      {"\"model_type\": \"gemma3\", \"text_config\": {\"num_experts\": 4}",
       "\"text_config.num_experts\": mixture-of-experts"},
      {"\"model_type\": \"gemma3\", \"text_config\": 3",
       "\"text_config\" must be an object"},
      {"\"model_type\": \"gemma3_text\", \"vision_config\": {}",
       "\"vision_config\": vision and multimodal configs are not supported"},
  };
  for (const Case &c : cases) {
    std::string error = parseError("{" + c.json + "}");
    EXPECT_TRUE(contains(error, c.expected))
        << "error:    " << error << "\nexpected: " << c.expected;
  }
}

//===----------------------------------------------------------------------===//
// The forward pass against the independent composition
//===----------------------------------------------------------------------===//

/// The reference rounds every op result to float where the independent
/// pass keeps double, and rounds theta, epsilons, scales, inverse
/// frequencies and slopes to float. With the sharp weights here that
/// measured 3.9e-8 (xglm) to 5.1e-7 (phi3 with a window) of the largest
/// logit over 24 positions; 2e-6 leaves a 4x margin and is 5x below the
/// compiled models' 1e-5. Every planted bug below moves the logits by more
/// than 1e-2 (measured 4.2e-2, XGLM's offset, to 2.9, OPT-350m as pre-norm).
const double kTolerance = 2e-6;
const double kBugVisible = 1e-2;

struct Case {
  std::string name;
  Spec spec;
  int64_t tokens = 24;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](const std::string &name, Spec s, int64_t n = 24) {
    out.push_back({name, std::move(s), n});
  };
  for (const char *type : kFamilies)
    add(type, baseSpec(type));
  add("gpt2", baseSpec("gpt2"));

  Spec s = baseSpec("mistral");
  s.window = 0;
  add("mistral-no-window", s);
  s = baseSpec("qwen2");
  s.layerTypes = {"sliding_attention", "full_attention"};
  s.maxWindowLayers = 1; // ignored: layer_types wins
  add("qwen2-layer-types", s);
  s = baseSpec("qwen3");
  s.bias = true;
  s.tie = true;
  s.layerTypes = {"sliding_attention", "full_attention", "sliding_attention"};
  add("qwen3-bias-tied-layer-types", s);
  s = baseSpec("qwen3");
  s.kvHeads = 4;
  s.window = 0;
  s.ropeParameters = true; // rope_theta inside rope_parameters
  add("qwen3-mha-no-window-rope-parameters", s);
  s = baseSpec("smollm3");
  s.noRopeInterval = 2; // layers 1 and 3 NoPE, and windowed
  s.window = 5;
  s.bias = true;
  s.tie = true;
  add("smollm3-interval2-window-bias-tied", s);
  s = baseSpec("smollm3");
  s.noRopeLayers = {1, 0, 1, 1, 0}; // longer than the layers: fine
  s.ropeParameters = true;
  add("smollm3-list-rope-parameters", s);
  s = baseSpec("smollm3");
  s.window = 5;
  s.layerTypes = {"sliding_attention", "full_attention", "full_attention",
                  "sliding_attention"};
  add("smollm3-window-layer-types", s);
  s = baseSpec("gemma");
  s.bias = true;
  s.act = "gelu";
  s.tie = false;
  add("gemma-bias-erf-untied", s);
  // Gemma2Config's own softcaps (50, 30), an explicit layer_types, biases
  // and an untied head; transformers 5's flat rope_parameters.
  s = baseSpec("gemma2");
  s.attnSoftcap = 50;
  s.finalSoftcap = 30;
  s.layerTypes = {"full_attention", "sliding_attention", "sliding_attention"};
  s.bias = true;
  s.tie = false;
  add("gemma2-hf-softcaps-layer-types-bias-untied", s);
  s = baseSpec("gemma2");
  s.attnSoftcap = s.finalSoftcap = 0;
  s.kvHeads = 1;
  s.ropeParameters = true;
  s.rope = "linear";
  s.factor = 2;
  add("gemma2-no-softcaps-mqa-rope-parameters", s);
  // Gemma 3 with transformers 5's rope_parameters per layer type.
  s = baseSpec("gemma3_text");
  s.ropeParameters = true;
  add("gemma3-rope-parameters", s);
  // Gemma 3 applies the final softcap but not the attention one.
  s = baseSpec("gemma3_text");
  s.attnSoftcap = 5;
  s.finalSoftcap = 3;
  s.bias = true;
  s.tie = false;
  s.slidingPattern = 0; // 6: layers 0-4 local, 5 global
  s.rope = "default";
  add("gemma3-softcaps-bias-untied-pattern-6", s);
  s = baseSpec("gemma3_text");
  s.layerTypes = {"full_attention",    "sliding_attention", "full_attention",
                  "sliding_attention", "sliding_attention", "full_attention"};
  s.localTheta = 500.0;
  add("gemma3-layer-types-local-base-500", s);
  // gemma3: the text model of a multimodal checkpoint; its final softcap
  // is not applied (Gemma3ForConditionalGeneration has none).
  s = baseSpec("gemma3_text");
  s.multimodal = true;
  s.finalSoftcap = 3;
  add("gemma3-multimodal", s);
  s = baseSpec("phi3");
  s.partial = 1.0;
  s.rotaryDim = 16;
  s.window = 6;
  add("phi3-full-rotary-window", s);
  // qwen3_moe: norm_topk_prob (Qwen3-30B-A3B's true), decoder_sparse_step
  // 2 (layer 1 sparse, 0 and 2 dense), a window on every layer, biases and a
  // tied head; all experts dense (num_experts 0); top 1 of 8 with yarn.
  s = baseSpec("qwen3_moe");
  s.normTopK = true;
  s.sparseStep = 2;
  s.mlpOnly = {};
  s.window = 5;
  s.bias = true;
  s.tie = true;
  add("qwen3_moe-norm-step2-window-bias-tied", s);
  s = baseSpec("qwen3_moe");
  s.experts = 0;
  add("qwen3_moe-no-experts", s);
  s = baseSpec("qwen3_moe");
  s.experts = 8;
  s.topK = 1;
  s.kvHeads = 4;
  s.rope = "yarn";
  s.factor = 4;
  s.originalMax = 16;
  add("qwen3_moe-top1-of-8-mha-yarn", s);
  // qwen2_moe: norm_topk_prob, decoder_sparse_step 2 (layers 1 and 3
  // sparse), explicit layer_types, no q/k/v biases, tied; every layer
  // dense (num_experts 0: no shared expert either); no window, top 1 of 8
  // with yarn.
  s = baseSpec("qwen2_moe");
  s.normTopK = true;
  s.sparseStep = 2;
  s.mlpOnly = {};
  s.layerTypes = {"full_attention", "sliding_attention", "sliding_attention",
                  "full_attention"};
  s.bias = false;
  s.tie = true;
  add("qwen2_moe-norm-step2-layer-types-no-bias-tied", s);
  s = baseSpec("qwen2_moe");
  s.experts = 0;
  add("qwen2_moe-no-experts", s);
  s = baseSpec("qwen2_moe");
  s.window = 0;
  s.experts = 8;
  s.topK = 1;
  s.sharedFfn = 40;
  s.rope = "yarn";
  s.factor = 4;
  s.originalMax = 16;
  add("qwen2_moe-no-window-top1-of-8-yarn", s);
  // mixtral: a window on every layer, top 1 (weight 1 after the
  // renormalization), and top 4 of 4 (the whole softmax).
  s = baseSpec("mixtral");
  s.window = 5;
  s.topK = 1;
  s.kvHeads = 1;
  add("mixtral-window-top1-mqa", s);
  s = baseSpec("mixtral");
  s.topK = 4;
  s.headDim = 12;
  s.rotaryDim = 12;
  s.tie = true;
  add("mixtral-top4-of-4-head-dim-12-tied", s);
  s = baseSpec("gpt_neox");
  s.parallelResidual = false;
  s.tie = true;
  add("neox-sequential-tied", s);
  s = baseSpec("gptj");
  s.rotaryDim = 16;
  s.tie = true;
  add("gptj-full-rotary-tied", s);
  s = baseSpec("opt");
  s.normBefore = false;
  add("opt-post-norm", s);
  s = baseSpec("opt");
  s.bias = false;
  s.tie = false;
  add("opt-no-bias-untied", s);
  s = baseSpec("bloom");
  s.hidden = 48;
  s.heads = 6; // not a power of two: 4 slopes of 2^-2 then 2 of 2^-1
  s.headDim = 8;
  s.ffn = 4 * 48;
  add("bloom-6-heads", s);
  s = baseSpec("bloom");
  s.hidden = 96;
  s.heads = 12;
  s.headDim = 8;
  s.ffn = 4 * 96;
  s.residualFromNorm = true;
  add("bloom-12-heads-post-ln-residual", s);

  // rope_scaling on the four families that take it.
  s = baseSpec("llama");
  add("llama", s);
  s.rope = "linear";
  s.factor = 4;
  add("llama-linear", s);
  s.rope = "dynamic";
  s.factor = 2;
  add("llama-dynamic-within-max", s);
  s.rope = "yarn";
  s.factor = 4;
  s.originalMax = 16;
  add("llama-yarn", s);
  s.rope = "llama3";
  s.factor = 8;
  s.originalMax = 64;
  add("llama-llama3", s);
  s = baseSpec("mistral");
  s.rope = "yarn";
  s.factor = 2;
  s.originalMax = 32;
  add("mistral-yarn", s);
  s = baseSpec("qwen2");
  s.rope = "linear";
  s.factor = 2;
  add("qwen2-linear", s);
  s = baseSpec("gemma");
  s.rope = "llama3";
  s.factor = 4;
  s.originalMax = 64;
  add("gemma-llama3", s);
  s = baseSpec("qwen3");
  s.rope = "yarn";
  s.factor = 4;
  s.originalMax = 16;
  s.ropeParameters = true;
  add("qwen3-yarn-rope-parameters", s);
  // phi3 longrope within original_max_position_embeddings (24 of 32): the
  // short factors and the attention factor sqrt(1 + ln 2 / ln 32).
  s = longropeSpec(32);
  add("phi3-longrope-within-original", s);
  s.ropeParameters = true;
  s.longropeAttention = 1.3;
  add("phi3-longrope-rope-parameters-attention-factor", s);
  return out;
}

TEST(FamilyForward, MatchesIndependentComposition) {
  for (const Case &c : cases()) {
    Built b = build(c.spec);
    ASSERT_TRUE(b.model) << c.name;
    std::vector<int64_t> tokens = someTokens(c.tokens, c.spec.vocab);
    std::vector<float> logits = forwardOrDie(*b.model, tokens);
    std::vector<float> expected = independent(c.spec, b.weights, tokens);
    ASSERT_EQ(logits.size(), expected.size()) << c.name;
    double rel = ref::maxRelError(logits, expected);
    EXPECT_LE(rel, kTolerance) << c.name;
    RecordProperty(c.name, sci(rel));
  }
}

TEST(FamilyForward, CachedDecodeEqualsTheFullForward) {
  for (const Case &c : cases()) {
    Built b = build(c.spec);
    ASSERT_TRUE(b.model) << c.name;
    std::vector<int64_t> tokens = someTokens(c.tokens, c.spec.vocab, 3);
    std::vector<float> full = forwardOrDie(*b.model, tokens);
    for (int64_t prefill : {int64_t(1), int64_t(7), c.tokens}) {
      std::vector<float> cached = cachedOrDie(*b.model, tokens, prefill);
      ASSERT_EQ(cached.size(), full.size());
      // Bit for bit: every op works row by row, and each query row sees the
      // same rounded keys and values either way.
      EXPECT_EQ(std::memcmp(cached.data(), full.data(), full.size() * 4), 0)
          << c.name << " prefill " << prefill << ": max abs "
          << ref::maxAbsError(cached, full);
    }
  }
}

TEST(FamilyForward, StepByStepWithAnExplicitCache) {
  Built b = build(baseSpec("bloom"));
  ASSERT_TRUE(b.model);
  std::vector<int64_t> tokens = someTokens(10, 61);
  std::vector<float> full = forwardOrDie(*b.model, tokens);
  ref::KvCache cache;
  std::vector<float> rows, all;
  std::string error;
  ASSERT_TRUE(
      b.model->step({tokens.begin(), tokens.begin() + 4}, cache, rows, error))
      << error;
  EXPECT_EQ(cache.length, 4);
  all = rows;
  for (int64_t p = 4; p < 10; ++p) {
    ASSERT_TRUE(b.model->step({tokens[p]}, cache, rows, error)) << error;
    all.insert(all.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(cache.length, 10);
  EXPECT_EQ(cache.keys[1].size(), static_cast<size_t>(10 * 32));
  EXPECT_EQ(all, full);
  // A bad token leaves the cache as it was.
  EXPECT_FALSE(b.model->step({61}, cache, rows, error));
  EXPECT_TRUE(contains(error, "token 61 at position 10")) << error;
  EXPECT_EQ(cache.length, 10);
  EXPECT_FALSE(b.model->forwardCached(tokens, 0, rows, error));
  EXPECT_TRUE(contains(error, "prefill length 0")) << error;

  // Fixed position tables end the sequence (GPT-2, OPT, GPT-J: HF indexes
  // them); RoPE, ALiBi and XGLM's growing table do not.
  for (const char *type : {"gpt2", "opt", "gptj", "llama", "bloom", "xglm"}) {
    Spec s = baseSpec(type);
    if (s.maxPos > 64)
      s.maxPos = 64; // BLOOM has no max_position_embeddings key anyway
    Built m = build(s);
    ASSERT_TRUE(m.model) << type;
    bool fixed = std::string(type) == "gpt2" || std::string(type) == "opt" ||
                 std::string(type) == "gptj";
    std::vector<float> logits;
    EXPECT_EQ(m.model->forward(someTokens(65, s.vocab), logits, error), !fixed)
        << type << ": " << error;
    if (fixed)
      EXPECT_TRUE(contains(error, "65 tokens; the model takes 1 to 64"))
          << error;
  }
}

/// rope_scaling "dynamic" past max_position_embeddings: a full forward of
/// L tokens rotates everything with base(L); cached decode rotates each
/// call's queries and keys with the base of that call's length and keeps
/// the cached keys as they were.
TEST(FamilyForward, DynamicNtkFollowsHFsPerCallBase) {
  for (const char *type : {"llama", "qwen2", "qwen3"}) {
    Spec s = baseSpec(type);
    s.rope = "dynamic";
    s.factor = 2;
    s.maxPos = 16;
    s.window = 0;
    Built b = build(s);
    ASSERT_TRUE(b.model);
    const int64_t n = 24, prefill = 10;
    std::vector<int64_t> tokens = someTokens(n, s.vocab);
    std::vector<float> full = forwardOrDie(*b.model, tokens);
    EXPECT_LE(ref::maxRelError(full, independent(s, b.weights, tokens)),
              kTolerance)
        << type;
    std::vector<float> cached = cachedOrDie(*b.model, tokens, prefill);
    EXPECT_LE(ref::maxRelError(cached,
                               independent(s, b.weights, tokens, {}, prefill)),
              kTolerance)
        << type;
    EXPECT_GT(ref::maxRelError(cached, full), kBugVisible) << type;
    // The calls that end within max_position_embeddings use the plain
    // base: their rows are those of a forward of the first 16 tokens.
    std::vector<float> first = forwardOrDie(
        *b.model, std::vector<int64_t>(tokens.begin(), tokens.begin() + 16));
    EXPECT_EQ(std::memcmp(cached.data(), first.data(), first.size() * 4), 0)
        << type;
    // And the growth is real: base(24) differs from base(17).
    double af;
    ref::RopeScaling sc = b.config.ropeScaling;
    std::vector<double> f17 =
        ref::ropeScaledFrequencies(s.theta, s.headDim, sc, 17, af);
    std::vector<double> f24 =
        ref::ropeScaledFrequencies(s.theta, s.headDim, sc, 24, af);
    EXPECT_GT(f17[1], f24[1]);
  }
}

/// rope_scaling "longrope" (phi3) across original_max_position_embeddings
/// (16): a full forward of L > 16 tokens rotates every position with the
/// long factors; cached decode rotates each call with the table of its own
/// length (long only once the call ends past 16) and keeps the cached keys;
/// everything within 16 is the short table, cached or not. The planted
/// bugs (switch at L >= original, short and long exchanged, attention
/// factor left out) each move the logits and flip argmaxes.
TEST(FamilyForward, LongRopeFollowsHFsPerCallTable) {
  const Spec s = longropeSpec(16);
  Built b = build(s);
  ASSERT_TRUE(b.model);
  ASSERT_EQ(b.config.ropeScaling.type, ref::RopeScaling::Type::LongRope);
  const int64_t n = 24, prefill = 10, vocab = s.vocab;
  std::vector<int64_t> tokens = someTokens(n, vocab);
  std::vector<float> full = forwardOrDie(*b.model, tokens);
  EXPECT_LE(ref::maxRelError(full, independent(s, b.weights, tokens)),
            kTolerance);
  std::vector<float> cached = cachedOrDie(*b.model, tokens, prefill);
  EXPECT_LE(ref::maxRelError(cached,
                             independent(s, b.weights, tokens, {}, prefill)),
            kTolerance);
  EXPECT_GT(ref::maxRelError(cached, full), kBugVisible);
  // Calls ending at or before 16 use the short table: those rows are a
  // forward of the first 16 tokens, bit for bit.
  std::vector<int64_t> first16(tokens.begin(), tokens.begin() + 16);
  std::vector<float> within = forwardOrDie(*b.model, first16);
  EXPECT_EQ(std::memcmp(cached.data(), within.data(), within.size() * 4), 0);
  EXPECT_LE(ref::maxRelError(within, independent(s, b.weights, first16)),
            kTolerance);
  // Within the original length, cached decode is the full forward.
  for (int64_t p : {int64_t(1), int64_t(5), int64_t(16)}) {
    std::vector<float> c16 = cachedOrDie(*b.model, first16, p);
    EXPECT_EQ(std::memcmp(c16.data(), within.data(), within.size() * 4), 0)
        << "prefill " << p;
  }
  // A full forward past 16 is not the short table's.
  Spec shortOnly = s;
  shortOnly.longFactor = shortOnly.shortFactor;
  EXPECT_GT(ref::maxRelError(full, independent(shortOnly, b.weights, tokens)),
            kBugVisible);
  // The tables themselves: short up to 16, long from 17.
  double af = 0;
  const ref::RopeScaling &sc = b.config.ropeScaling;
  std::vector<double> f16 = ref::ropeScaledFrequencies(s.theta, 12, sc, 16, af);
  EXPECT_NEAR(af, std::sqrt(1.5), 1e-15);
  std::vector<double> f17 = ref::ropeScaledFrequencies(s.theta, 12, sc, 17, af);
  for (int i = 0; i < 6; ++i) {
    double plain = std::pow(s.theta, -2.0 * i / 12);
    EXPECT_NEAR(f16[i], plain / s.shortFactor[i], 1e-15);
    EXPECT_NEAR(f17[i], plain / s.longFactor[i], 1e-15);
  }

  struct BugCase {
    std::string what;
    std::vector<int64_t> tokens;
    int64_t prefill;
    std::function<void(Bugs &)> plant;
  };
  const BugCase bugs[] = {
      {"long at L >= original (16 tokens)", first16, -1,
       [](Bugs &g) { g.longAtOriginal = true; }},
      {"long at L >= original (cached across)", tokens, prefill,
       [](Bugs &g) { g.longAtOriginal = true; }},
      {"short and long swapped (24 tokens)", tokens, -1,
       [](Bugs &g) { g.longShortSwapped = true; }},
      {"short and long swapped (16 tokens)", first16, -1,
       [](Bugs &g) { g.longShortSwapped = true; }},
      {"attention factor left out", tokens, -1,
       [](Bugs &g) { g.noLongropeScale = true; }},
  };
  for (const BugCase &c : bugs) {
    std::vector<float> good = independent(s, b.weights, c.tokens, {}, c.prefill);
    Bugs planted;
    c.plant(planted);
    std::vector<float> bad =
        independent(s, b.weights, c.tokens, planted, c.prefill);
    double rel = ref::maxRelError(bad, good);
    int64_t rows = static_cast<int64_t>(c.tokens.size()), flips = 0;
    for (int64_t r = 0; r < rows; ++r)
      flips += ref::argmax(&good[r * vocab], vocab) !=
               ref::argmax(&bad[r * vocab], vocab);
    EXPECT_GT(rel, kBugVisible) << c.what;
    // The cached case moves only the row of the call ending at 16 and
    // what attends to its key.
    EXPECT_GE(flips, 1) << c.what;
    RecordProperty(c.what, sci(rel) + ", " + std::to_string(flips) + " of " +
                               std::to_string(rows) + " argmaxes");
    std::printf("  %s: max rel %s, %lld of %lld argmaxes flip\n",
                c.what.c_str(), sci(rel).c_str(),
                static_cast<long long>(flips), static_cast<long long>(rows));
    std::vector<float> reference =
        c.prefill < 1 ? forwardOrDie(*b.model, c.tokens)
                      : cachedOrDie(*b.model, c.tokens, c.prefill);
    EXPECT_LE(ref::maxRelError(reference, good), kTolerance) << c.what;
  }
}

TEST(FamilyForward, PlantedBugsAreVisible) {
  struct BugCase {
    std::string what;
    Spec spec;
    std::function<void(Bugs &)> plant;
    /// A bug that makes a dense layer sparse, or a sparse one dense, reads
    /// tensors the model does not have: random ones fill them in (those of
    /// the same model all sparse and all dense), which the reference and the
    /// correct composition never read.
    bool moreWeights = false;
  };
  auto spec = [](const std::string &type) { return baseSpec(type); };
  Spec opt350 = baseSpec("opt");
  opt350.normBefore = false;
  Spec phi3Window = baseSpec("phi3");
  phi3Window.window = 6;
  Spec moeStep2 = baseSpec("qwen3_moe");
  moeStep2.sparseStep = 2;
  moeStep2.mlpOnly = {};
  Spec moeNorm = baseSpec("qwen3_moe");
  moeNorm.normTopK = true;
  const std::vector<BugCase> bugs = {
      // Mixture of experts. (A tie's order cannot show with random
      // weights; FamilyMoe.LayersByHand plants one. Nor can softmax over
      // the top k for mixtral: the renormalized top-k probabilities are
      // exactly the softmax of the top-k logits, so for qwen3_moe that bug
      // is norm_topk_prob read as true.)
      {"qwen3_moe norm_topk_prob false read as true", spec("qwen3_moe"),
       [](Bugs &b) { b.moeNormFlipped = true; }},
      {"qwen3_moe norm_topk_prob true read as false", moeNorm,
       [](Bugs &b) { b.moeNormFlipped = true; }},
      {"qwen3_moe softmax over the top k only", spec("qwen3_moe"),
       [](Bugs &b) { b.moeSoftmaxOverTopK = true; }},
      {"qwen3_moe gate_proj and up_proj swapped", spec("qwen3_moe"),
       [](Bugs &b) { b.moeGateUpSwapped = true; }},
      {"qwen3_moe mlp_only_layers ignored", spec("qwen3_moe"),
       [](Bugs &b) { b.moeMlpOnlyIgnored = true; }, true},
      {"qwen3_moe sparse when i % step == 0", moeStep2,
       [](Bugs &b) { b.moeStepShifted = true; }, true},
      // qwen2_moe: the shared expert and its sigmoid gate, the alternating
      // windows below max_window_layers, the biases, the shared layers.
      {"qwen2_moe shared expert dropped", spec("qwen2_moe"),
       [](Bugs &b) { b.sharedExpertDropped = true; }},
      {"qwen2_moe shared expert's gate ignored", spec("qwen2_moe"),
       [](Bugs &b) { b.sharedGateIgnored = true; }},
      {"qwen2_moe shared expert's gate without the sigmoid", spec("qwen2_moe"),
       [](Bugs &b) { b.sharedGateNoSigmoid = true; }},
      {"qwen2_moe window on qwen2's layers (i >= max_window_layers)",
       spec("qwen2_moe"), [](Bugs &b) { b.windowAsQwen2 = true; }},
      {"qwen2_moe window on every even layer", spec("qwen2_moe"),
       [](Bugs &b) { b.windowIgnoresMaxLayers = true; }},
      {"qwen2_moe window on every layer", spec("qwen2_moe"),
       [](Bugs &b) { b.windowAllLayers = true; }},
      {"qwen2_moe without q/k/v biases", spec("qwen2_moe"),
       [](Bugs &b) { b.qkvBiasOff = true; }},
      {"qwen2_moe mlp_only_layers ignored", spec("qwen2_moe"),
       [](Bugs &b) { b.moeMlpOnlyIgnored = true; }, true},
      {"qwen2_moe gate_proj and up_proj swapped", spec("qwen2_moe"),
       [](Bugs &b) { b.moeGateUpSwapped = true; }},
      {"mixtral top-k weights not renormalized", spec("mixtral"),
       [](Bugs &b) { b.moeNoRenorm = true; }},
      {"mixtral w1 and w3 swapped", spec("mixtral"),
       [](Bugs &b) { b.moeGateUpSwapped = true; }},
      {"bloom without ALiBi", spec("bloom"), [](Bugs &b) { b.noAlibi = true; }},
      {"bloom qkv split [q|k|v]", spec("bloom"),
       [](Bugs &b) { b.wrongQkvSplit = true; }},
      {"neox qkv split [q|k|v]", spec("gpt_neox"),
       [](Bugs &b) { b.wrongQkvSplit = true; }},
      {"mistral window off by one", spec("mistral"),
       [](Bugs &b) { b.windowOffByOne = true; }},
      {"qwen2 window off by one", spec("qwen2"),
       [](Bugs &b) { b.windowOffByOne = true; }},
      {"qwen2 window on every layer", spec("qwen2"),
       [](Bugs &b) { b.windowAllLayers = true; }},
      {"qwen2 without q/k/v biases", spec("qwen2"),
       [](Bugs &b) { b.qkvBiasOff = true; }},
      {"phi3 window off by one", phi3Window,
       [](Bugs &b) { b.windowOffByOne = true; }},
      {"opt position offset 0", spec("opt"),
       [](Bugs &b) { b.positionOffsetZero = true; }},
      {"opt-350m read as pre-norm", opt350,
       [](Bugs &b) { b.preNormForOpt350m = true; }},
      {"xglm position offset 0", spec("xglm"),
       [](Bugs &b) { b.positionOffsetZero = true; }},
      {"xglm interleaved sin/cos", spec("xglm"),
       [](Bugs &b) { b.interleavedSinusoid = true; }},
      {"xglm without embed_scale", spec("xglm"),
       [](Bugs &b) { b.noEmbeddingScale = true; }},
      {"neox rotary on all dims", spec("gpt_neox"),
       [](Bugs &b) { b.rotaryAllDims = true; }},
      {"phi3 rotary on all dims", spec("phi3"),
       [](Bugs &b) { b.rotaryAllDims = true; }},
      {"gptj rotary on all dims", spec("gptj"),
       [](Bugs &b) { b.rotaryAllDims = true; }},
      {"gptj rotate_half pairing", spec("gptj"),
       [](Bugs &b) { b.rotateHalfForGptj = true; }},
      {"neox sequential residual", spec("gpt_neox"),
       [](Bugs &b) { b.sequentialResidual = true; }},
      {"gptj sequential residual", spec("gptj"),
       [](Bugs &b) { b.sequentialResidual = true; }},
      {"gemma norm without +1", spec("gemma"),
       [](Bugs &b) { b.noGemmaPlusOne = true; }},
      {"gemma without the normalizer", spec("gemma"),
       [](Bugs &b) { b.noEmbeddingScale = true; }},
      {"qwen3 qk-norm skipped", spec("qwen3"),
       [](Bugs &b) { b.qkNormSkipped = true; }},
      {"qwen3 qk-norm after RoPE", spec("qwen3"),
       [](Bugs &b) { b.qkNormAfterRope = true; }},
      {"qwen3 q_norm and k_norm swapped", spec("qwen3"),
       [](Bugs &b) { b.qkNormSwapped = true; }},
      {"qwen3 window below max_window_layers", spec("qwen3"),
       [](Bugs &b) { b.windowBelowMaxLayers = true; }},
      {"qwen3 window on every layer", spec("qwen3"),
       [](Bugs &b) { b.windowAllLayers = true; }},
      {"qwen3 window off by one", spec("qwen3"),
       [](Bugs &b) { b.windowOffByOne = true; }},
      {"smollm3 NoPE layer rotated", spec("smollm3"),
       [](Bugs &b) { b.nopeRotated = true; }},
      {"smollm3 RoPE layer not rotated", spec("smollm3"),
       [](Bugs &b) { b.firstRopeLayerUnrotated = true; }},
      {"smollm3 interval as i % interval", spec("smollm3"),
       [](Bugs &b) { b.nopeIntervalShifted = true; }},
      {"gemma2 attention softcap off", spec("gemma2"),
       [](Bugs &b) { b.noAttnSoftcap = true; }},
      {"gemma2 final softcap off", spec("gemma2"),
       [](Bugs &b) { b.noFinalSoftcap = true; }},
      {"gemma2 post-attention norm dropped", spec("gemma2"),
       [](Bugs &b) { b.noPostAttentionNorm = true; }},
      {"gemma2 pre-feedforward norm dropped", spec("gemma2"),
       [](Bugs &b) { b.noPreFeedforwardNorm = true; }},
      {"gemma2 post-feedforward norm dropped", spec("gemma2"),
       [](Bugs &b) { b.noPostFeedforwardNorm = true; }},
      {"gemma2 query_pre_attn_scalar ignored", spec("gemma2"),
       [](Bugs &b) { b.scaleByHeadDim = true; }},
      {"gemma2 window on the odd layers", spec("gemma2"),
       [](Bugs &b) { b.slidingShifted = true; }},
      {"gemma2 window off by one", spec("gemma2"),
       [](Bugs &b) { b.windowOffByOne = true; }},
      {"gemma2 norm without +1", spec("gemma2"),
       [](Bugs &b) { b.noGemmaPlusOne = true; }},
      {"gemma3 local layers with the global RoPE", spec("gemma3_text"),
       [](Bugs &b) { b.localGetsGlobalRope = true; }},
      {"gemma3 global RoPE without linear scaling", spec("gemma3_text"),
       [](Bugs &b) { b.globalUnscaled = true; }},
      {"gemma3 qk-norm skipped", spec("gemma3_text"),
       [](Bugs &b) { b.qkNormSkipped = true; }},
      {"gemma3 qk-norm after RoPE", spec("gemma3_text"),
       [](Bugs &b) { b.qkNormAfterRope = true; }},
      {"gemma3 windows on the wrong layers", spec("gemma3_text"),
       [](Bugs &b) { b.slidingShifted = true; }},
      {"gemma3 post-attention norm dropped", spec("gemma3_text"),
       [](Bugs &b) { b.noPostAttentionNorm = true; }},
      {"gemma3 post-feedforward norm dropped", spec("gemma3_text"),
       [](Bugs &b) { b.noPostFeedforwardNorm = true; }},
      {"gemma3 query_pre_attn_scalar ignored", spec("gemma3_text"),
       [](Bugs &b) { b.scaleByHeadDim = true; }},
  };
  for (const BugCase &c : bugs) {
    Built b = build(c.spec);
    ASSERT_TRUE(b.model) << c.what;
    std::vector<int64_t> tokens = someTokens(24, c.spec.vocab);
    std::vector<float> good = independent(c.spec, b.weights, tokens);
    Bugs planted;
    c.plant(planted);
    Weights weights = b.weights;
    if (c.moreWeights) {
      Spec sparse = c.spec, dense = c.spec;
      sparse.sparseStep = 0;
      sparse.mlpOnly = {};
      dense.experts = 0;
      for (const Spec &other : {sparse, dense})
        for (auto &[name, v] : makeWeights(parseOrDie(configJson(other)), 7))
          weights.emplace(name, v); // keeps the model's own
    }
    std::vector<float> bad = independent(c.spec, weights, tokens, planted);
    double rel = ref::maxRelError(bad, good);
    EXPECT_GT(rel, kBugVisible) << c.what;
    RecordProperty(c.what, sci(rel));
    // The reference sits with the correct composition, far from the bug.
    EXPECT_LE(ref::maxRelError(forwardOrDie(*b.model, tokens), good),
              kTolerance)
        << c.what;
  }
}

//===----------------------------------------------------------------------===//
// Hand-computed cases
//===----------------------------------------------------------------------===//

TEST(FamilyForward, OptReadsPositionRowPPlusTwo) {
  Spec s = baseSpec("opt");
  Built b = build(s);
  ASSERT_TRUE(b.model);
  std::vector<int64_t> tokens = someTokens(8, s.vocab);
  std::vector<float> base = forwardOrDie(*b.model, tokens);
  auto withRow = [&](int64_t row) {
    Weights w = b.weights;
    // Not a constant shift: LayerNorm would remove that.
    std::vector<float> delta = ref::randomTensor(s.hidden, 1.0f, 99);
    for (int64_t c = 0; c < s.hidden; ++c)
      w["model.decoder.embed_positions.weight"][row * s.hidden + c] += delta[c];
    std::string error;
    auto m = ModelReference::create(b.config, toStored(b.config, w), error);
    EXPECT_TRUE(m) << error;
    return forwardOrDie(*m, tokens);
  };
  // Rows 0 and 1 are never read.
  EXPECT_EQ(withRow(0), base);
  EXPECT_EQ(withRow(1), base);
  // Row 2 + 5 is position 5's: rows 0..4 are untouched, row 5 moves.
  std::vector<float> moved = withRow(7);
  const int64_t v = s.vocab;
  EXPECT_EQ(std::memcmp(moved.data(), base.data(), 5 * v * 4), 0);
  EXPECT_GT(
      ref::maxAbsError(
          std::vector<float>(moved.begin() + 5 * v, moved.begin() + 6 * v),
          std::vector<float>(base.begin() + 5 * v, base.begin() + 6 * v)),
      0.1);
}

TEST(FamilyForward, XglmTableAsGetEmbeddingBuildsIt) {
  // d = 8: half 4, c = ln(1e4) / 3, frequencies 1e4^(-i/3).
  std::vector<float> t = ref::xglmSinusoidalPositions(4, 8, 1);
  const double f[4] = {1.0, 0.046415888336127786, 0.0021544346900318843,
                       0.0001};
  for (int64_t r : {0, 2, 3})
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(t[r * 8 + i], static_cast<float>(std::sin(r * f[i])))
          << r << " " << i;
      EXPECT_EQ(t[r * 8 + 4 + i], static_cast<float>(std::cos(r * f[i])))
          << r << " " << i;
    }
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(t[8 + i], 0.0f) << "padding row 1";
  // An odd width ends in a zero column.
  std::vector<float> odd = ref::xglmSinusoidalPositions(3, 9, -1);
  EXPECT_EQ(odd[2 * 9 + 8], 0.0f);
  EXPECT_EQ(odd[2 * 9 + 0], static_cast<float>(std::sin(2.0)));
}

//===----------------------------------------------------------------------===//
// Mixture of experts by hand
//===----------------------------------------------------------------------===//
//
// Two tokens whose MoE input rows are x0 = [1, 0] and x1 = [0, 1]; four
// experts, top 2; router rows [2, 0], [1, 1], [1, 1], [0, 3], so that the
// logits are [2, 1, 1, 0] and [0, 1, 1, 3]: experts 1 and 2 tie for the
// second place of both tokens, and the lower, 1, is taken. Expert e's gate
// and down are the identity, its up (e + 1) I: on x = [1, 0] it gives
// [silu(1) (e + 1), 0], on [0, 1] the mirror. With E = e^1 and
// s = silu(1) = E / (E + 1), the nonzero output of each token is
// s * sum_j w_j (e_j + 1):
//   token 0: p = [E^2, E, E, 1] / (E + 1)^2, experts 0 and 1:
//     renormalized  w = [E, 1] / (E + 1)   -> s (E + 2) / (E + 1)
//     as is         w = [E^2, E] / (E+1)^2 -> s E (E + 2) / (E + 1)^2
//   token 1: p = [1, E, E, E^3] / (1 + 2E + E^3), experts 3 and 1:
//     renormalized  w = [E^2, 1] / (E^2 + 1) -> s (4 E^2 + 2) / (E^2 + 1)
//     as is                               -> s (4 E^3 + 2 E) / (1 + 2E + E^3)
// Taking expert 2 at the tie would give s (E + 3) / (E + 1) and
// s (4 E^2 + 3) / (E^2 + 1) (renormalized) instead.

namespace moehand {

const double E = std::exp(1.0);
const double S = E / (E + 1); // silu(1)

/// The hand values above: the nonzero output of token 0 and token 1.
double token0(bool normalized, bool tieHigher = false) {
  double second = tieHigher ? 3 : 2;
  return normalized ? S * (E + second) / (E + 1)
                    : S * (E * E + second * E) / ((E + 1) * (E + 1));
}
double token1(bool normalized, bool tieHigher = false) {
  double second = tieHigher ? 3 : 2;
  return normalized ? S * (4 * E * E + second) / (E * E + 1)
                    : S * (4 * E * E * E + second * E) / (1 + 2 * E + E * E * E);
}

const std::vector<float> kRouter = {2, 0, 1, 1, 1, 1, 0, 3};
const std::vector<float> kIdentity = {1, 0, 0, 1};

std::vector<float> scaledIdentity(float v) { return {v, 0, 0, v}; }

} // namespace moehand

/// ref::sparseMoeBlock on the hand case itself, norm_topk_prob on and off;
/// its routing; NaN input never hidden.
TEST(FamilyMoe, SparseBlockByHand) {
  using namespace moehand;
  std::vector<std::vector<float>> up;
  for (int e = 0; e < 4; ++e)
    up.push_back(scaledIdentity(static_cast<float>(e + 1)));
  ref::ExpertWeights experts;
  for (int e = 0; e < 4; ++e) {
    experts.gate.push_back(&kIdentity);
    experts.up.push_back(&up[e]);
    experts.down.push_back(&kIdentity);
  }
  const std::vector<float> x = {1, 0, 0, 1};
  for (bool normalize : {true, false}) {
    ref::MoeRouting routing;
    std::vector<float> y = ref::sparseMoeBlock(x, 2, 2, kRouter, experts, 2, 2,
                                               normalize, &routing);
    std::vector<float> expected = {static_cast<float>(token0(normalize)), 0,
                                   0, static_cast<float>(token1(normalize))};
    EXPECT_LE(ref::maxAbsError(y, expected), 1e-6) << normalize;
    // The tie went to the lower expert, best first.
    EXPECT_EQ(routing.experts, (std::vector<int32_t>{0, 1, 3, 1}));
    const double z0 = (E + 1) * (E + 1), z1 = 1 + 2 * E + E * E * E;
    std::vector<float> weights =
        normalize ? std::vector<float>{float(E / (E + 1)), float(1 / (E + 1)),
                                       float(E * E / (E * E + 1)),
                                       float(1 / (E * E + 1))}
                  : std::vector<float>{float(E * E / z0), float(E / z0),
                                       float(E * E * E / z1), float(E / z1)};
    EXPECT_LE(ref::maxAbsError(routing.weights, weights), 1e-7) << normalize;
    // And it matters: expert 2 would give other values.
    EXPECT_GT(std::fabs(token0(normalize, true) - token0(normalize)), 0.05);
    EXPECT_GT(std::fabs(token1(normalize, true) - token1(normalize)), 0.05);
  }
  // Top 4 of 4, renormalized: the softmax itself.
  std::vector<float> all =
      ref::sparseMoeBlock(x, 2, 2, kRouter, experts, 2, 4, true);
  const double z0 = (E + 1) * (E + 1);
  EXPECT_NEAR(all[0], S * (E * E + 2 * E + 3 * E + 4) / z0, 1e-6);
  // A NaN in a token's row makes its output NaN and leaves the other's.
  std::vector<float> nanX = {std::nanf(""), 0, 0, 1};
  std::vector<float> y = ref::sparseMoeBlock(nanX, 2, 2, kRouter, experts, 2,
                                             2, true);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_NEAR(y[3], token1(true), 1e-6);
  // Bad sizes and a top k above the experts throw.
  EXPECT_THROW(ref::sparseMoeBlock(x, 2, 2, kRouter, experts, 2, 5, true),
               std::invalid_argument);
  ref::ExpertWeights three = experts;
  three.down.pop_back();
  EXPECT_THROW(ref::sparseMoeBlock(x, 2, 2, kRouter, three, 2, 2, true),
               std::invalid_argument);
}

/// Whole models whose MoE (and dense) MLPs see exactly x0 and x1: the
/// embeddings are [3, 0] and [0, 5], attention adds nothing (o_proj is
/// zero), rms_norm_eps is 0 and post_attention_layernorm's weight
/// 1 / sqrt(2), so the normed rows are [1, 0] and [0, 1] (to a float
/// rounding); every MLP maps a row along its own axis, so every layer's
/// input norms to them again. A dense MLP (gate, up, down the identity)
/// adds s. Each layer's MLP output is its residual difference (inspect).
/// qwen2_moe's shared expert is such a dense MLP, so its sparse layers add
/// sigmoid(g) s to the routed sum, g the logit of shared_expert_gate [g, g]
/// on either row: 0.75 s for g = ln 3, 0.5 s for g = 0 (the whole s if the
/// gate were ignored, g s without the sigmoid, 0 without the expert).
TEST(FamilyMoe, LayersByHand) {
  using namespace moehand;
  struct Model {
    std::string what, json;
    /// Per layer: "dense", "moe" (norm_topk_prob off) or "moe-norm".
    std::vector<std::string> layers;
    /// qwen2_moe: the logit g of the shared expert's gate, and sigmoid(g).
    float sharedLogit = 0;
    double sharedScale = 0;
  };
  const std::string attn =
      "\"vocab_size\": 2, \"hidden_size\": 2, \"num_attention_heads\": 1, "
      "\"num_key_value_heads\": 1, \"head_dim\": 2, \"intermediate_size\": 2, "
      "\"rms_norm_eps\": 0.0, \"tie_word_embeddings\": true, ";
  const std::string qwen =
      "\"model_type\": \"qwen3_moe\", " + attn +
      "\"num_experts\": 4, \"num_experts_per_tok\": 2, "
      "\"moe_intermediate_size\": 2, ";
  const std::string qwen2 =
      "\"model_type\": \"qwen2_moe\", " + attn +
      "\"num_experts\": 4, \"num_experts_per_tok\": 2, "
      "\"moe_intermediate_size\": 2, \"shared_expert_intermediate_size\": 2, "
      "\"qkv_bias\": false, ";
  const std::vector<Model> models = {
      {"qwen3_moe decoder_sparse_step 2",
       "{" + qwen + "\"num_hidden_layers\": 2, \"decoder_sparse_step\": 2}",
       {"dense", "moe"}},
      {"qwen3_moe decoder_sparse_step 2, norm_topk_prob",
       "{" + qwen +
           "\"num_hidden_layers\": 2, \"decoder_sparse_step\": 2, "
           "\"norm_topk_prob\": true}",
       {"dense", "moe-norm"}},
      {"qwen3_moe mlp_only_layers [1]",
       "{" + qwen + "\"num_hidden_layers\": 3, \"mlp_only_layers\": [1]}",
       {"moe", "dense", "moe"}},
      {"mixtral",
       "{\"model_type\": \"mixtral\", " + attn +
           "\"num_hidden_layers\": 2, \"num_local_experts\": 4, "
           "\"num_experts_per_tok\": 2}",
       {"moe-norm", "moe-norm"}},
      {"qwen2_moe decoder_sparse_step 2, shared gate ln 3",
       "{" + qwen2 + "\"num_hidden_layers\": 2, \"decoder_sparse_step\": 2}",
       {"dense", "moe"},
       static_cast<float>(std::log(3.0)),
       0.75},
      {"qwen2_moe mlp_only_layers [1], norm_topk_prob, shared gate 0",
       "{" + qwen2 +
           "\"num_hidden_layers\": 3, \"mlp_only_layers\": [1], "
           "\"norm_topk_prob\": true}",
       {"moe-norm", "dense", "moe-norm"},
       0.0f,
       0.5},
  };
  const float halfRoot = static_cast<float>(1 / std::sqrt(2.0));
  for (const Model &m : models) {
    ModelConfig config = parseOrDie(m.json);
    Weights w;
    for (const auto &entry : ModelReference::expectedWeights(config)) {
      const std::string &name = entry.first;
      const std::vector<int64_t> &shape = entry.second;
      auto has = [&](const char *part) { return contains(name, part); };
      std::vector<float> v;
      if (has("embed_tokens"))
        v = {3, 0, 0, 5};
      else if (has("post_attention_layernorm"))
        v = {halfRoot, halfRoot};
      else if (has("norm"))
        v = {1, 1}; // input_layernorm, q_norm, k_norm, model.norm
      else if (has("o_proj"))
        v = {0, 0, 0, 0};
      else if (has("shared_expert_gate"))
        v = {m.sharedLogit, m.sharedLogit};
      else if (has(".gate.weight"))
        v = kRouter;
      else if (has("experts.")) {
        // experts.E.up_proj / w3: (E + 1) I; gate and down: I.
        size_t at = name.find("experts.") + 8;
        int e = std::stoi(name.substr(at));
        bool isUp = has("up_proj") || has(".w3.");
        v = isUp ? scaledIdentity(static_cast<float>(e + 1)) : kIdentity;
      } else {
        v = kIdentity; // q/k/v_proj, the dense and shared gate/up/down_proj
      }
      ASSERT_EQ(v.size(), static_cast<size_t>(shape.size() == 1
                                                  ? shape[0]
                                                  : shape[0] * shape[1]))
          << name;
      w[name] = v;
    }
    std::string error;
    auto model = ModelReference::create(config, toStored(config, w), error);
    ASSERT_TRUE(model) << m.what << ": " << error;
    ref::Inspection seen;
    std::vector<float> logits;
    ASSERT_TRUE(model->inspect({0, 1}, seen, logits, error)) << error;
    ASSERT_EQ(seen.residual.size(), (m.layers.size() + 1) * 4) << m.what;
    for (size_t l = 0; l < m.layers.size(); ++l) {
      // The layer's MLP output: its residual difference.
      std::vector<float> mlp(4);
      for (int i = 0; i < 4; ++i)
        mlp[i] = seen.residual[(l + 1) * 4 + i] - seen.residual[l * 4 + i];
      const std::string &kind = m.layers[l];
      const double shared = kind == "dense" ? 0 : m.sharedScale * S;
      double y0 = kind == "dense" ? S : token0(kind == "moe-norm") + shared;
      double y1 = kind == "dense" ? S : token1(kind == "moe-norm") + shared;
      std::vector<float> expected = {float(y0), 0, 0, float(y1)};
      EXPECT_LE(ref::maxAbsError(mlp, expected), 2e-6)
          << m.what << ", layer " << l << " (" << kind << "): " << mlp[0]
          << " " << mlp[3] << " vs " << y0 << " " << y1;
      if (kind != "dense") {
        // The planted tie order is far from it.
        std::vector<float> other = {
            float(token0(kind == "moe-norm", true) + shared), 0, 0,
            float(token1(kind == "moe-norm", true) + shared)};
        EXPECT_GT(ref::maxAbsError(mlp, other), 0.05) << m.what << " " << l;
      }
    }
  }
}

/// qwen2_moe's shared expert packed as a dense MLP (q8_0): its products
/// read int8-quantized rows, the token's before gate_proj and up_proj, the
/// SwiGLU's before down_proj, as the dense MLP's do. One sparse layer whose
/// attention adds nothing (o_proj zero), so its MLP reads rmsNorm(x) of the
/// recorded input x; its output (the residual difference) is the routed sum
/// of ref::sparseMoeBlock plus sigmoid(x . shared_expert_gate) times the
/// shared expert composed here of the op references.
TEST(FamilyMoe, Qwen2MoeSharedExpertReadsQuantizedRows) {
  Spec s = baseSpec("qwen2_moe");
  s.layers = 1;
  s.mlpOnly = {};
  s.window = 0;
  s.moeFfn = s.sharedFfn = 32; // whole blocks of 32 along down_proj's input
  const ModelConfig config = parseOrDie(configJson(s));
  Weights w = makeWeights(config, 5);
  const std::string l = "model.layers.0.";
  std::fill(w.at(l + "self_attn.o_proj.weight").begin(),
            w.at(l + "self_attn.o_proj.weight").end(), 0.0f);
  std::string error;
  auto model = ModelReference::create(config, toStored(config, w), error);
  ASSERT_TRUE(model) << error;
  const int64_t n = 6, d = s.hidden, S = s.sharedFfn;
  const ref::QuantFormat q8 = ref::QuantFormat::Q8_0;
  const std::string shared = l + "mlp.shared_expert.";
  ASSERT_TRUE(model->quantizeWeight(shared + "gate_proj.weight", d, true, q8));
  ASSERT_TRUE(model->quantizeWeight(shared + "up_proj.weight", d, true, q8));
  ASSERT_TRUE(model->quantizeWeight(shared + "down_proj.weight", S, true, q8));
  ref::Inspection seen;
  std::vector<float> logits;
  ASSERT_TRUE(model->inspect(someTokens(n, s.vocab), seen, logits, error)) << error;
  const std::vector<float> x(seen.residual.begin(), seen.residual.begin() + n * d);
  std::vector<float> mlp(n * d);
  for (int64_t i = 0; i < n * d; ++i)
    mlp[i] = seen.residual[n * d + i] - x[i];

  const std::vector<float> h = ref::rmsNorm(
      x, n, d, w.at(l + "post_attention_layernorm.weight"), static_cast<float>(s.eps));
  ref::ExpertWeights experts;
  for (int64_t e = 0; e < s.experts; ++e) {
    const std::string m = l + "mlp.experts." + std::to_string(e) + ".";
    experts.gate.push_back(&w.at(m + "gate_proj.weight"));
    experts.up.push_back(&w.at(m + "up_proj.weight"));
    experts.down.push_back(&w.at(m + "down_proj.weight"));
  }
  const std::vector<float> routed = ref::sparseMoeBlock(
      h, n, d, w.at(l + "mlp.gate.weight"), experts, s.moeFfn, s.topK, false);
  auto rounded = [&](const std::string &name, int64_t in) {
    std::vector<float> v = w.at(name);
    ref::roundThroughFormat(v, in, true, q8);
    return v;
  };
  const std::vector<float> gate = rounded(shared + "gate_proj.weight", d),
                           up = rounded(shared + "up_proj.weight", d),
                           down = rounded(shared + "down_proj.weight", S);
  const std::vector<float> gateLogit = ref::linear(
      h, n, d, w.at(l + "mlp.shared_expert_gate.weight"), 1, ref::WeightLayout::OutIn);
  auto expert = [&](bool quantizedRows) {
    auto rows = [&](const std::vector<float> &v, int64_t width) {
      return quantizedRows ? ref::quantizeActivationRows(v, n, width) : v;
    };
    const ref::WeightLayout outIn = ref::WeightLayout::OutIn;
    const std::vector<float> act = ref::swiglu(ref::linear(rows(h, d), n, d, gate, S, outIn),
                                               ref::linear(rows(h, d), n, d, up, S, outIn));
    const std::vector<float> y = ref::linear(rows(act, S), n, S, down, d, outIn);
    std::vector<float> out(n * d);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < d; ++i)
        out[t * d + i] = static_cast<float>(
            routed[t * d + i] + y[t * d + i] / (1 + std::exp(-double(gateLogit[t]))));
    return out;
  };
  // The residual add rounds once more: within 1e-6 of the largest output.
  const double quantized = ref::maxRelError(mlp, expert(true)),
               f32Rows = ref::maxRelError(mlp, expert(false));
  EXPECT_LE(quantized, 1e-6);
  EXPECT_GT(f32Rows, 1e-4);
  RecordProperty("quantized rows", sci(quantized));
  RecordProperty("f32 rows", sci(f32Rows));
}

//===----------------------------------------------------------------------===//
// Files and the command line
//===----------------------------------------------------------------------===//


/// A minimal F32 safetensors writer: header JSON, padding, raw data.
void writeSafetensors(const std::string &path,
                      const std::map<std::string, StoredTensor> &tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  std::string data;
  bool first = true;
  for (const auto &[name, t] : tensors) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i)
      shape += (i ? "," : "") + std::to_string(t.shape[i]);
    uint64_t bytes = t.data.size() * 4;
    header += std::string(first ? "" : ",") + "\"" + name +
              "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    data.append(reinterpret_cast<const char *>(t.data.data()), bytes);
    offset += bytes;
    first = false;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  out << header << data;
}


TEST(FamilyFiles, BareNamesBuffersAndTheCachedCommandLine) {
  TempDir dir;
  Spec s = baseSpec("gpt_neox");
  Built b = build(s);
  ASSERT_TRUE(b.model);
  // Saved from GPTNeoXModel: no "gpt_neox." prefix, old checkpoints'
  // attention.bias / masked_bias / rotary_emb.inv_freq buffers.
  std::map<std::string, StoredTensor> stored;
  for (auto &[name, t] : toStored(b.config, b.weights)) {
    std::string bare = name.rfind("gpt_neox.", 0) == 0 ? name.substr(9) : name;
    stored[bare] = t;
  }
  StoredTensor buffer;
  buffer.dtype = "F32";
  buffer.shape = {2};
  buffer.data = {1, 2};
  stored["layers.0.attention.masked_bias"] = buffer;
  stored["gpt_neox.layers.1.attention.rotary_emb.inv_freq"] = buffer;
  stored["layers.1.attention.bias"] = buffer;
  std::string model = dir.sub("neox");
  fs::create_directories(model);
  std::ofstream(model + "/config.json") << configJson(s);
  writeSafetensors(model + "/model.safetensors", stored);

  std::string error;
  std::vector<std::string> warnings;
  auto loaded = ModelReference::load(model, error, &warnings);
  ASSERT_TRUE(loaded) << error;
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  std::vector<int64_t> tokens = someTokens(12, s.vocab);
  std::vector<float> expected = forwardOrDie(*b.model, tokens);
  EXPECT_EQ(forwardOrDie(*loaded, tokens), expected);

  std::string tokenText;
  for (size_t i = 0; i < tokens.size(); ++i)
    tokenText += (i ? "," : "") + std::to_string(tokens[i]);
  std::string tool = std::string(ATTN_TOOLS_DIR) + "/attn-ref-model";
  for (const std::string &flags : {std::string(""), std::string(" --cached"),
                                   std::string(" --cached --prefill 5")}) {
    std::string npy = dir.sub("out.npy");
    CommandResult r = run(tool + " --model " + model + " --tokens " +
                          tokenText + flags + " --dump-logits " + npy);
    ASSERT_EQ(r.exitCode, 0) << flags << ": " << r.output;
    std::vector<float> dumped;
    std::vector<int64_t> shape;
    ASSERT_TRUE(ref::readNpy(npy, dumped, shape, error)) << error;
    EXPECT_EQ(shape, (std::vector<int64_t>{12, s.vocab}));
    EXPECT_EQ(dumped, expected) << flags;
  }
  CommandResult bad =
      run(tool + " --model " + model + " --tokens 1,2 --prefill 2");
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_TRUE(
      contains(bad.output, "attn-ref-model: error: --prefill needs --cached"))
      << bad.output;
  bad = run(tool + " --model " + model + " --tokens 1,2 --cached --prefill 3");
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_TRUE(contains(bad.output, "--prefill 3 exceeds the 2 tokens"))
      << bad.output;

  // A config note reaches the warnings.
  Spec g = baseSpec("gemma");
  g.extraJson = "\"hidden_activation\": \"gelu\"";
  Built gb = build(g);
  std::string gemmaDir = dir.sub("gemma");
  fs::create_directories(gemmaDir);
  std::ofstream(gemmaDir + "/config.json") << configJson(g);
  writeSafetensors(gemmaDir + "/model.safetensors",
                   toStored(gb.config, gb.weights));
  warnings.clear();
  ASSERT_TRUE(ModelReference::load(gemmaDir, error, &warnings)) << error;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "hidden_activation")) << warnings[0];
}

/// gemma3 checkpoints in both layouts: the files' language_model.model.*
/// (and language_model.lm_head, a tied copy), and transformers >= 4.52's
/// model.language_model.*; the vision tower's tensors in either are
/// skipped, with the config's one note; other unknown tensors still warn.
TEST(FamilyFiles, Gemma3MultimodalCheckpointsInBothLayouts) {
  TempDir dir;
  Spec s = baseSpec("gemma3_text");
  s.multimodal = true;
  Built b = build(s);
  ASSERT_TRUE(b.model);
  std::vector<int64_t> tokens = someTokens(12, s.vocab);
  std::vector<float> expected = forwardOrDie(*b.model, tokens);
  const std::string canonical = "model.language_model.";
  StoredTensor dummy;
  dummy.dtype = "F32";
  dummy.shape = {2};
  dummy.data = {1, 2};
  for (bool oldLayout : {true, false}) {
    std::map<std::string, StoredTensor> stored;
    for (auto &[name, t] : toStored(b.config, b.weights)) {
      ASSERT_EQ(name.rfind(canonical, 0), 0u) << name;
      std::string rest = name.substr(canonical.size());
      stored[(oldLayout ? "language_model.model." : canonical) + rest] = t;
    }
    std::string vision = oldLayout ? "" : "model.";
    stored[vision + "vision_tower.vision_model.post_layernorm.weight"] = dummy;
    stored[vision + "multi_modal_projector.mm_input_projection_weight"] = dummy;
    // Tied: a copy of the embeddings, as real files may carry.
    ASSERT_TRUE(s.tie);
    stored[oldLayout ? "language_model.lm_head.weight" : "lm_head.weight"] =
        stored.at((oldLayout ? "language_model.model." : canonical) +
                  std::string("embed_tokens.weight"));
    stored["language_model.model.layers.0.mystery"] = dummy;
    std::string model = dir.sub(oldLayout ? "old" : "new");
    fs::create_directories(model);
    std::ofstream(model + "/config.json") << configJson(s);
    writeSafetensors(model + "/model.safetensors", stored);
    std::string error;
    std::vector<std::string> warnings;
    auto loaded = ModelReference::load(model, error, &warnings);
    ASSERT_TRUE(loaded) << error;
    ASSERT_EQ(warnings.size(), 2u) << oldLayout;
    EXPECT_TRUE(contains(warnings[0], "language_model.model.layers.0.mystery"))
        << warnings[0];
    EXPECT_TRUE(contains(warnings[1], "image part")) << warnings[1];
    EXPECT_EQ(forwardOrDie(*loaded, tokens), expected) << oldLayout;
  }
}

/// Reading qwen3_moe, qwen2_moe and mixtral folders by HF names: a missing expert
/// tensor is an error naming it, a misshapen one too; attn-ref-model runs
/// them.
TEST(FamilyFiles, MoeFoldersAndErrors) {
  TempDir dir;
  std::string tool = std::string(ATTN_TOOLS_DIR) + "/attn-ref-model";
  for (const char *type : {"qwen3_moe", "qwen2_moe", "mixtral"}) {
    Spec s = baseSpec(type);
    Built b = build(s);
    ASSERT_TRUE(b.model) << type;
    const bool mixtral = std::string(type) == "mixtral";
    const std::string missing =
        mixtral ? "model.layers.1.block_sparse_moe.experts.3.w2.weight"
                : "model.layers.2.mlp.experts.5.down_proj.weight";
    const std::string router = mixtral
                                   ? "model.layers.0.block_sparse_moe.gate.weight"
                                   : "model.layers.0.mlp.gate.weight";
    // In memory.
    std::map<std::string, StoredTensor> stored = toStored(b.config, b.weights);
    ASSERT_TRUE(stored.count(missing)) << missing;
    std::map<std::string, StoredTensor> without = stored;
    without.erase(missing);
    std::string error;
    EXPECT_FALSE(ModelReference::create(b.config, without, error));
    EXPECT_TRUE(contains(error, "missing tensor '" + missing + "'")) << error;
    std::map<std::string, StoredTensor> misshapen = stored;
    misshapen[router].shape = {s.hidden, s.experts};
    EXPECT_FALSE(ModelReference::create(b.config, misshapen, error));
    EXPECT_TRUE(contains(error, "tensor '" + router + "' has shape [32, " +
                                    std::to_string(s.experts) + "], expected [" +
                                    std::to_string(s.experts) + ", 32]"))
        << error;

    // On disk and on the command line.
    const std::string model = dir.sub(type);
    fs::create_directories(model);
    std::ofstream(model + "/config.json") << configJson(s);
    writeSafetensors(model + "/model.safetensors", stored);
    std::vector<int64_t> tokens = someTokens(9, s.vocab);
    std::string tokenText;
    for (size_t i = 0; i < tokens.size(); ++i)
      tokenText += (i ? "," : "") + std::to_string(tokens[i]);
    const std::string npy = dir.sub(std::string(type) + ".npy");
    CommandResult r = run(tool + " --model " + model + " --tokens " +
                          tokenText + " --cached --prefill 4 --dump-logits " +
                          npy);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::vector<float> dumped;
    std::vector<int64_t> shape;
    ASSERT_TRUE(ref::readNpy(npy, dumped, shape, error)) << error;
    EXPECT_EQ(shape, (std::vector<int64_t>{9, s.vocab}));
    EXPECT_EQ(dumped, forwardOrDie(*b.model, tokens)) << type;

    const std::string broken = dir.sub(std::string(type) + "-missing");
    fs::create_directories(broken);
    std::ofstream(broken + "/config.json") << configJson(s);
    writeSafetensors(broken + "/model.safetensors", without);
    r = run(tool + " --model " + broken + " --tokens 1,2");
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_TRUE(contains(r.output, "attn-ref-model: error: ") &&
                contains(r.output, "missing tensor '" + missing + "'"))
        << r.output;
  }
}

/// transformers 5 saves MixtralExperts / Qwen2MoeExperts / Qwen3MoeExperts
/// stacked, renaming block_sparse_moe. to mlp. (its conversion mapping, run
/// backwards here by hand): mlp.experts.gate_up_proj [experts, 2 ffn,
/// hidden] = torch.cat([w1 | gate_proj, w3 | up_proj], dim=1) of the
/// experts stacked (dim 0), mlp.experts.down_proj [experts, hidden, ffn],
/// the router mlp.gate.weight. `layers`: the sparse layers to stack.
std::map<std::string, StoredTensor>
stackedLikeTransformers5(const Spec &s, std::map<std::string, StoredTensor> stored,
                         const std::vector<int64_t> &layers,
                         bool renameRouter = true) {
  const bool mixtral = s.type == "mixtral";
  const int64_t F = mixtral ? s.ffn : s.moeFfn;
  for (int64_t l : layers) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string old = p + (mixtral ? "block_sparse_moe." : "mlp.");
    StoredTensor gateUp, down;
    gateUp.dtype = down.dtype = "F32";
    gateUp.shape = {s.experts, 2 * F, s.hidden};
    down.shape = {s.experts, s.hidden, F};
    for (int64_t e = 0; e < s.experts; ++e) {
      const std::string x = old + "experts." + std::to_string(e) + ".";
      auto take = [&](const char *proj, StoredTensor &into) {
        auto it = stored.find(x + proj + ".weight");
        EXPECT_NE(it, stored.end()) << x << proj;
        if (it == stored.end())
          return;
        into.data.insert(into.data.end(), it->second.data.begin(),
                         it->second.data.end());
        stored.erase(it);
      };
      take(mixtral ? "w1" : "gate_proj", gateUp);
      take(mixtral ? "w3" : "up_proj", gateUp);
      take(mixtral ? "w2" : "down_proj", down);
    }
    stored[p + "mlp.experts.gate_up_proj"] = std::move(gateUp);
    stored[p + "mlp.experts.down_proj"] = std::move(down);
    if (mixtral && renameRouter) {
      stored[p + "mlp.gate.weight"] = stored.at(old + "gate.weight");
      stored.erase(old + "gate.weight");
    }
  }
  return stored;
}

/// The sparse layers of the tiny models of baseSpec.
std::vector<int64_t> sparseLayers(const Spec &s) {
  std::vector<int64_t> out;
  for (int64_t l = 0; l < s.layers; ++l)
    if (moeLayerHF(s, l, {}))
      out.push_back(l);
  return out;
}

/// qwen3_moe, qwen2_moe and mixtral checkpoints with transformers 5's
/// stacked experts (and mixtral's mlp. names) give the logits of the same
/// weights stored per expert, bit for bit: in memory, in a folder, on the
/// command line, one layer stacked and another per expert, mixtral's
/// router under either name, names without the base prefix. A layer
/// holding both forms, one stacked tensor without the other, a misshapen
/// one and a router under both names are errors naming the tensors; a
/// stacked tensor of a dense layer is unknown (a warning).
TEST(FamilyFiles, StackedExpertsAsTransformers5SavesThem) {
  TempDir dir;
  std::string tool = std::string(ATTN_TOOLS_DIR) + "/attn-ref-model";
  for (const char *type : {"qwen3_moe", "qwen2_moe", "mixtral"}) {
    SCOPED_TRACE(type);
    const Spec s = baseSpec(type);
    const bool mixtral = std::string(type) == "mixtral";
    Built b = build(s);
    ASSERT_TRUE(b.model);
    const std::vector<int64_t> tokens = someTokens(16, s.vocab);
    const std::vector<float> expected = forwardOrDie(*b.model, tokens);
    const std::map<std::string, StoredTensor> perExpert =
        toStored(b.config, b.weights);
    const std::vector<int64_t> sparse = sparseLayers(s);
    ASSERT_GE(sparse.size(), 2u);
    auto logitsOf = [&](const std::map<std::string, StoredTensor> &stored) {
      std::string error;
      std::vector<std::string> warnings;
      auto model = ModelReference::create(b.config, stored, error, &warnings);
      EXPECT_TRUE(model) << error;
      EXPECT_TRUE(warnings.empty()) << warnings.front();
      return model ? forwardOrDie(*model, tokens) : std::vector<float>();
    };
    auto errorOf = [&](const std::map<std::string, StoredTensor> &stored) {
      std::string error;
      EXPECT_FALSE(ModelReference::create(b.config, stored, error));
      return error;
    };
    const std::map<std::string, StoredTensor> stacked =
        stackedLikeTransformers5(s, perExpert, sparse);
    const std::string l0 = "model.layers." + std::to_string(sparse[0]) + ".";
    ASSERT_TRUE(stacked.count(l0 + "mlp.experts.gate_up_proj"));
    ASSERT_FALSE(stacked.count(l0 + (mixtral ? "block_sparse_moe.experts.0.w1.weight"
                                             : "mlp.experts.0.gate_proj.weight")));
    EXPECT_EQ(logitsOf(stacked), expected);
    // One layer stacked, the others per expert; mixtral's router by its
    // transformers 4 name beside stacked experts (HF renames it apart).
    EXPECT_EQ(logitsOf(stackedLikeTransformers5(s, perExpert, {sparse.back()})),
              expected);
    if (mixtral)
      EXPECT_EQ(logitsOf(stackedLikeTransformers5(s, perExpert, sparse, false)),
                expected);
    // Saved from the bare model: no "model." prefix.
    std::map<std::string, StoredTensor> bare;
    for (const auto &[name, t] : stacked)
      bare[name.rfind("model.", 0) == 0 ? name.substr(6) : name] = t;
    EXPECT_EQ(logitsOf(bare), expected);

    // A folder and attn-ref-model.
    const std::string folder = dir.sub(std::string(type) + "-v5");
    fs::create_directories(folder);
    std::ofstream(folder + "/config.json") << configJson(s);
    writeSafetensors(folder + "/model.safetensors", stacked);
    std::string error;
    std::vector<std::string> warnings;
    auto loaded = ModelReference::load(folder, error, &warnings);
    ASSERT_TRUE(loaded) << error;
    EXPECT_EQ(forwardOrDie(*loaded, tokens), expected);
    std::string tokenText;
    for (size_t i = 0; i < tokens.size(); ++i)
      tokenText += (i ? "," : "") + std::to_string(tokens[i]);
    const std::string npy = dir.sub(std::string(type) + "-v5.npy");
    CommandResult r = run(tool + " --model " + folder + " --tokens " + tokenText +
                          " --dump-logits " + npy);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::vector<float> dumped;
    std::vector<int64_t> shape;
    ASSERT_TRUE(ref::readNpy(npy, dumped, shape, error)) << error;
    EXPECT_EQ(dumped, expected);

    // Both forms in one layer: the stacked tensors and one expert's.
    const std::string perExpertName =
        l0 + (mixtral ? "block_sparse_moe.experts.3.w2.weight"
                      : "mlp.experts.3.down_proj.weight");
    std::map<std::string, StoredTensor> both = stacked;
    both[perExpertName] = perExpert.at(perExpertName);
    error = errorOf(both);
    EXPECT_TRUE(contains(error, "tensors '" + perExpertName + "' and '" + l0 +
                                    "mlp.experts.gate_up_proj' hold the same "
                                    "layer's experts, per expert and stacked"))
        << error;
    // gate_up_proj stacked, down_proj per expert: both forms again.
    std::map<std::string, StoredTensor> half = stackedLikeTransformers5(s, perExpert, {sparse[0]});
    half.erase(l0 + "mlp.experts.down_proj");
    for (int64_t e = 0; e < s.experts; ++e) {
      const std::string down =
          l0 + (mixtral ? "block_sparse_moe.experts." + std::to_string(e) + ".w2.weight"
                        : "mlp.experts." + std::to_string(e) + ".down_proj.weight");
      half[down] = perExpert.at(down);
    }
    error = errorOf(half);
    EXPECT_TRUE(contains(error, "per expert and stacked")) << error;
    // One stacked tensor alone.
    std::map<std::string, StoredTensor> lone = stacked;
    lone.erase(l0 + "mlp.experts.gate_up_proj");
    const int64_t F = mixtral ? s.ffn : s.moeFfn;
    error = errorOf(lone);
    EXPECT_TRUE(contains(error, "missing tensor '" + l0 +
                                    "mlp.experts.gate_up_proj' (shape [" +
                                    std::to_string(s.experts) + ", " +
                                    std::to_string(2 * F) + ", 32]), stacked with '" +
                                    l0 + "mlp.experts.down_proj'"))
        << error;
    // Misshapen: [experts, ffn, hidden], the gate alone.
    std::map<std::string, StoredTensor> narrow = stacked;
    StoredTensor &gateUp = narrow.at(l0 + "mlp.experts.gate_up_proj");
    gateUp.shape[1] = F;
    gateUp.data.resize(gateUp.data.size() / 2);
    error = errorOf(narrow);
    EXPECT_TRUE(contains(error, "tensor '" + l0 + "mlp.experts.gate_up_proj' has shape [" +
                                    std::to_string(s.experts) + ", " + std::to_string(F) +
                                    ", 32], expected [" + std::to_string(s.experts) +
                                    ", " + std::to_string(2 * F) + ", 32]"))
        << error;
    if (mixtral) {
      std::map<std::string, StoredTensor> twice = stacked;
      twice[l0 + "block_sparse_moe.gate.weight"] = twice.at(l0 + "mlp.gate.weight");
      error = errorOf(twice);
      EXPECT_TRUE(contains(error, "tensor '" + l0 +
                                      "block_sparse_moe.gate.weight' is stored twice"))
          << error;
    } else {
      // qwen3_moe's and qwen2_moe's layer 1 is dense (mlp_only_layers).
      std::map<std::string, StoredTensor> dense = perExpert;
      dense["model.layers.1.mlp.experts.down_proj"] = stacked.at(l0 + "mlp.experts.down_proj");
      warnings.clear();
      ASSERT_TRUE(ModelReference::create(b.config, dense, error, &warnings)) << error;
      ASSERT_EQ(warnings.size(), 1u);
      EXPECT_TRUE(contains(warnings[0], "ignoring unknown tensor "
                                        "'model.layers.1.mlp.experts.down_proj'"))
          << warnings[0];
    }
  }
}

/// Quantized (q8_0) and bf16 experts read alike from either form: the
/// stacked names round each slab's experts as the per-expert names do,
/// idempotently; a checkpoint's per-expert names work on a stacked one and
/// the stacked names on a per-expert one. Mixtral's router under its v5
/// name, and qwen2_moe's shared_expert_gate, are never quantized (the
/// forward names them); the shared expert's projections quantize as a
/// dense MLP's.
TEST(FamilyFiles, StackedExpertsQuantizeAsPerExpert) {
  for (const char *type : {"qwen2_moe", "mixtral"}) {
    SCOPED_TRACE(type);
    Spec s = baseSpec(type);
    const bool mixtral = s.type == "mixtral";
    // Whole q8_0 blocks along every input: hidden 32, experts 32 wide.
    s.moeFfn = s.sharedFfn = 32;
    if (mixtral)
      s.ffn = 32;
    Built b = build(s);
    ASSERT_TRUE(b.model);
    const std::vector<int64_t> tokens = someTokens(12, s.vocab);
    const std::vector<float> exact = forwardOrDie(*b.model, tokens);
    const std::vector<int64_t> sparse = sparseLayers(s);
    const int64_t d = s.hidden, F = mixtral ? s.ffn : s.moeFfn, E = s.experts;
    std::string error;
    auto perExpert = ModelReference::create(b.config, toStored(b.config, b.weights), error);
    ASSERT_TRUE(perExpert) << error;
    auto stacked = ModelReference::create(
        b.config, stackedLikeTransformers5(s, toStored(b.config, b.weights), sparse), error);
    ASSERT_TRUE(stacked) << error;
    // A stacked checkpoint quantized by the per-expert names, and the
    // other way round.
    auto stackedByExpert = ModelReference::create(
        b.config, stackedLikeTransformers5(s, toStored(b.config, b.weights), sparse), error);
    ASSERT_TRUE(stackedByExpert) << error;
    auto perExpertByStack = ModelReference::create(b.config, toStored(b.config, b.weights), error);
    ASSERT_TRUE(perExpertByStack) << error;
    const ref::QuantFormat q8 = ref::QuantFormat::Q8_0;
    for (int64_t l : sparse) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      for (ModelReference *m : {stacked.get(), perExpertByStack.get()}) {
        EXPECT_TRUE(m->quantizeWeight(p + "mlp.experts.gate_up_proj", d, true, q8, E));
        EXPECT_TRUE(m->quantizeWeight(p + "mlp.experts.down_proj", F, true, q8, E));
        EXPECT_FALSE(m->quantizeWeight(p + "mlp.experts.down_proj", F, false, q8, E));
      }
      for (int64_t e = 0; e < E; ++e) {
        const std::string x = p + (mixtral ? "block_sparse_moe." : "mlp.") + "experts." +
                              std::to_string(e) + ".";
        for (ModelReference *m : {perExpert.get(), stackedByExpert.get()}) {
          EXPECT_TRUE(m->quantizeWeight(x + (mixtral ? "w1" : "gate_proj") + ".weight", d,
                                        true, q8, E));
          EXPECT_TRUE(m->quantizeWeight(x + (mixtral ? "w3" : "up_proj") + ".weight", d,
                                        true, q8, E));
          EXPECT_TRUE(m->quantizeWeight(x + (mixtral ? "w2" : "down_proj") + ".weight", F,
                                        true, q8, E));
        }
      }
    }
    const std::vector<float> quantized = forwardOrDie(*perExpert, tokens);
    EXPECT_GT(ref::maxAbsError(quantized, exact), 1e-4);
    EXPECT_EQ(forwardOrDie(*stacked, tokens), quantized);
    EXPECT_EQ(forwardOrDie(*stackedByExpert, tokens), quantized);
    EXPECT_EQ(forwardOrDie(*perExpertByStack, tokens), quantized);
    // Again: already rounded, left as it is.
    const std::string p0 = "model.layers." + std::to_string(sparse[0]) + ".";
    EXPECT_TRUE(stacked->quantizeWeight(p0 + "mlp.experts.gate_up_proj", d, true, q8, E));
    EXPECT_EQ(forwardOrDie(*stacked, tokens), quantized);

    // bf16 through either name.
    auto bf16Stacked = ModelReference::create(
        b.config, stackedLikeTransformers5(s, toStored(b.config, b.weights), sparse), error);
    auto bf16PerExpert = ModelReference::create(b.config, toStored(b.config, b.weights), error);
    ASSERT_TRUE(bf16Stacked && bf16PerExpert);
    EXPECT_TRUE(bf16Stacked->roundWeightToBf16(p0 + "mlp.experts.gate_up_proj"));
    for (int64_t e = 0; e < E; ++e)
      for (const char *proj : {mixtral ? "w1" : "gate_proj", mixtral ? "w3" : "up_proj"})
        EXPECT_TRUE(bf16PerExpert->roundWeightToBf16(
            p0 + (mixtral ? "block_sparse_moe." : "mlp.") + "experts." +
            std::to_string(e) + "." + proj + ".weight"));
    const std::vector<float> rounded = forwardOrDie(*bf16PerExpert, tokens);
    EXPECT_GT(ref::maxAbsError(rounded, exact), 0.0);
    EXPECT_EQ(forwardOrDie(*bf16Stacked, tokens), rounded);

    std::vector<float> logits;
    if (mixtral) {
      // The router by its transformers 5 name: never quantized.
      EXPECT_TRUE(stacked->quantizeWeight(p0 + "mlp.gate.weight", d, true, q8));
      EXPECT_FALSE(stacked->forward(tokens, logits, error));
      EXPECT_TRUE(contains(error, "'" + p0 + "block_sparse_moe.gate.weight': a layer's "
                                  "experts are quantized alike"))
          << error;
      continue;
    }
    // qwen2_moe's shared expert: its projections quantize as a dense MLP's
    // (the forward runs, other logits); its gate never.
    for (const char *proj : {"gate_proj", "up_proj"})
      EXPECT_TRUE(stacked->quantizeWeight(p0 + "mlp.shared_expert." + proj + ".weight", d,
                                          true, q8));
    EXPECT_TRUE(
        stacked->quantizeWeight(p0 + "mlp.shared_expert.down_proj.weight", s.sharedFfn, true, q8));
    std::vector<float> sharedQuantized = forwardOrDie(*stacked, tokens);
    EXPECT_GT(ref::maxAbsError(sharedQuantized, quantized), 1e-5);
    EXPECT_TRUE(stacked->quantizeWeight(p0 + "mlp.shared_expert_gate.weight", d, true, q8));
    EXPECT_FALSE(stacked->forward(tokens, logits, error));
    EXPECT_TRUE(contains(error, "'" + p0 + "mlp.shared_expert_gate.weight': the shared "
                                "expert's gate is never quantized"))
        << error;
  }
}

} // namespace
