//===- GgufNames.h - llama.cpp's names for Hugging Face tensors -*- C++ -*-===//
//
// llama.cpp's converter (convert_hf_to_gguf.py, gguf-py's tensor_mapping.py)
// renames every tensor of a checkpoint ("model.layers.3.self_attn.q_proj.
// weight" becomes "blk.3.attn_q.weight") and records the architecture under
// its own name ("mistral" checkpoints are written as "llama"). This table is
// both directions of that renaming for the architectures Attn reads and
// writes as GGUF, so the writer (attn-make-model --gguf) and the readers
// cannot disagree.
//
// The converter also changes some tensors' values: for the "llama"
// architecture it interleaves the two rotary halves of every head's q and k
// rows (LlamaModel.permute: rotate-half pairing becomes adjacent pairs), and
// for Gemma it adds 1 to RMSNorm weights; GPT-2's Conv1D weights are
// transposed. ggufPermutedRow says where a row goes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_GGUFNAMES_H
#define ATTNRT_GGUFNAMES_H

#include <cstdint>
#include <string>
#include <string_view>

namespace attnrt {

/// The GGUF architecture name of a Hugging Face model_type ("mistral" ->
/// "llama"), or "" for a model_type Attn does not write or read as GGUF.
std::string_view ggufArchitecture(std::string_view modelType);

/// llama.cpp's name for the Hugging Face tensor `hf` of a GGUF
/// `architecture`, or "" when the table has none.
std::string ggufTensorName(std::string_view architecture, std::string_view hf);
/// The Hugging Face name of GGUF tensor `gguf`, or "".
std::string hfTensorName(std::string_view architecture, std::string_view gguf);

/// For a Hugging Face expert matrix ("model.layers.1.mlp.experts.3.
/// gate_proj.weight"), the stacked GGUF tensor that holds it as one slice
/// ("blk.1.ffn_gate_exps.weight", [experts, rows, columns]) and the expert;
/// false for any other name.
bool ggufExpertName(std::string_view architecture, std::string_view hf,
                    std::string &gguf, int64_t &expert);
/// The Hugging Face name of expert `expert`'s slice of stacked GGUF tensor
/// `gguf`, or "" when `gguf` is not a stacked expert tensor.
std::string hfExpertName(std::string_view architecture, std::string_view gguf,
                         int64_t expert);

/// True for the matrices the converter transposes: GPT-2's Conv1D weights
/// are [in, out] in Hugging Face's checkpoints and [out, in] (as every
/// other linear layer) in GGUF files.
bool ggufTransposesMatrix(std::string_view architecture,
                          std::string_view gguf);

/// True for the tensors whose values the converter stored as 1 + w: every
/// "*norm.weight" of the Gemma architectures (gemma, gemma2, gemma3; their
/// q/k norms too), so that llama.cpp multiplies by them as by any RMSNorm
/// weight, where Hugging Face's GemmaRMSNorm scales by (1 + w).
bool ggufShiftsNorm(std::string_view architecture, std::string_view gguf);

/// True when the converter permutes the q/k rows of `architecture`'s files
/// (only "llama": the others keep HF's rotate-half layout).
bool ggufPermutesQueryKey(std::string_view architecture);

/// Where LlamaModel.permute puts row `row` of a q or k projection whose
/// heads have `headDim` rows: in each head, row i of the first half goes to
/// 2i and row i of the second half to 2i + 1.
inline int64_t ggufPermutedRow(int64_t row, int64_t headDim) {
  int64_t head = row / headDim, r = row % headDim, half = headDim / 2;
  return head * headDim + (r < half ? 2 * r : 2 * (r - half) + 1);
}

} // namespace attnrt

#endif // ATTNRT_GGUFNAMES_H
