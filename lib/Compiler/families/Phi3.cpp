//===- Phi3.cpp - model_type "phi3" ---------------------------------------===//
//
// Phi-3 (modeling_phi3.py): LLaMA with q|k|v in one qkv_proj weight and
// gate|up in one gate_up_proj, RoPE on the first partial_rotary_factor of
// each head, and an optional sliding window on every layer. Its long-context
// RoPE (longrope) is not supported.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readPhi3(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"phi3"};
  defaults.maxPositions = 4096;
  defaults.epsilon = 1e-5;
  defaults.partialRotary = true;
  ModelConfig config = readLlamaStyle(reader, defaults);
  config.attention.qkv = QkvStorage::Fused;
  config.mlp.fusedGateUp = true;
  readSlidingWindow(reader, config, /*fallback=*/std::nullopt);

  double factor = reader.positiveNumber("partial_rotary_factor", 1.0);
  if (factor > 1.0)
    reader.fail("key 'partial_rotary_factor' must be at most 1, got " +
                llvm::Twine(std::to_string(factor)));
  int64_t rotaryDims = static_cast<int64_t>(config.headDim * factor);
  if (rotaryDims % 2 != 0 || rotaryDims == 0)
    reader.fail("key 'partial_rotary_factor' (" + llvm::Twine(std::to_string(factor)) +
                ") gives " + llvm::Twine(rotaryDims) +
                " rotary features per head; an even, positive number is needed");
  if (rotaryDims != config.headDim) {
    config.positions.rotaryDims = rotaryDims;
    reader.fail("key 'partial_rotary_factor' is not supported yet: partial "
                "rotary embeddings (got " +
                llvm::Twine(std::to_string(factor)) + ")");
  }

  WeightNames &n = config.names;
  n.qkv = "self_attn.qkv_proj.";
  n.gateUp = "mlp.gate_up_proj.";
  return config;
}
