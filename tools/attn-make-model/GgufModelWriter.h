//===- GgufModelWriter.h - test models as llama.cpp's GGUF files -*- C++ -*-===//
//
// Writes the model writeModel writes as a folder as the GGUF file llama.cpp's
// converter (convert_hf_to_gguf.py) and llama-quantize would make of that
// folder: the architecture's metadata keys from config.json, llama.cpp's
// tensor names (GgufNames.h), the llama architecture's q/k rows interleaved,
// 1-D tensors in F32, and the 2-D weights in the chosen type, quantized with
// ggml's reference quantizers (GgmlTypes.h). So CI has GGUF files of every
// shape without downloading any.
//
// Architectures: llama (and mistral and mixtral checkpoints, written as
// llama), qwen2, qwen3, qwen3moe (experts stacked per kind), gpt2 (Conv1D
// weights transposed, the output a copy of the token embedding); Llama 3 rope scaling as rope_freqs.weight. Refused by name,
// rather than written wrong: other families, other rope scaling, sliding
// windows (llama-architecture files cannot record them).
// With --gguf-tokenizer DIR, DIR's tokenizer goes in too (byte-level or
// SentencePiece BPE). writeGgufFromFolder converts a real checkpoint the
// same way.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_MAKEMODEL_GGUFMODELWRITER_H
#define ATTN_TOOLS_MAKEMODEL_GGUFMODELWRITER_H

#include "ModelWriter.h"

#include <string>

namespace attn {
namespace modelgen {

/// What the 2-D weights become, as llama.cpp's file types name them:
/// f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 (every matrix in that
/// type; as convert_hf_to_gguf --outtype, a row length the block does not
/// divide stays F16), q4_k, q5_k, q6_k (every matrix; a row length 256 does
/// not divide falls back as llama-quantize does: q4_k to q5_0, q5_k to
/// q5_1, q6_k to q8_0), and q4_k_m (llama-quantize's Q4_K_M recipe: q4_k,
/// with the output (a tied token_embd), and the attn_v and ffn_down of the
/// first and last eighth of the layers and every third one between, in
/// q6_k).
bool isGgufWeightType(const std::string &type);
/// "f32, f16, ..." for messages.
std::string ggufWeightTypes();

/// Writes `path`. Returns false and sets `error` (one line) for a model it
/// cannot write or a failed write. A non-empty `tokenizerDir` adds the
/// tokenizer of that folder's tokenizer.json (and tokenizer_config.json) as
/// the converter writes it: a byte-level BPE as tokenizer.ggml.model "gpt2"
/// (the tokens by id with their types, the merges, the pre-tokenizer's
/// name from GgufTokenizer.h's table), a SentencePiece BPE as "llama" (the
/// pieces, scores from the merge order, types, add_space_prefix); BOS/EOS
/// ids and whether they are added; the chat template.
bool writeGgufModel(const ModelSpec &spec, const std::string &path,
                    const std::string &type, std::string &error,
                    const std::string &tokenizerDir = "");

/// The same for the Hugging Face folder `dir` (config.json and its F32,
/// F16 or BF16 safetensors, sharded or not): convert_hf_to_gguf.py and
/// llama-quantize in one step, for checkpoints that are not test models.
bool writeGgufFromFolder(const std::string &dir, const std::string &path,
                         const std::string &type, std::string &error,
                         const std::string &tokenizerDir = "");

} // namespace modelgen
} // namespace attn

#endif // ATTN_TOOLS_MAKEMODEL_GGUFMODELWRITER_H
