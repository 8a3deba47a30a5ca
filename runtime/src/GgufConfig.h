//===- GgufConfig.h - a GGUF file's model as config.json --------*- C++ -*-===//
//
// The Hugging Face config.json of the model a GGUF file holds, from its
// `<architecture>.*` metadata and its tensor list, as transformers' GGUF
// loader maps them: the compiler reads it with the family's own reader, so
// a family is still written once. The keys llama.cpp's converter writes
// (GgufModelWriter.cpp writes them the same way) map back one to one;
// what a file's metadata says that Attn cannot honour yet is refused by
// name, never dropped.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_GGUFCONFIG_H
#define ATTNRT_GGUFCONFIG_H

#include "Gguf.h"

#include <string>

namespace attnrt {

/// Sets `json` to the config.json text of `file`'s model. Errors are one
/// line naming the file and the key or tensor.
bool ggufConfigJson(const GgufFile &file, std::string &json,
                    std::string &error);

/// The factor llama.cpp's converter writes in rope_freqs.weight for one
/// rotary frequency of Llama 3's rope scaling
/// (LlamaModel.generate_extra_tensors): 1 above the band, `factor` below
/// it, interpolated in 1/f between.
double ggufLlama3RopeFactor(double frequency, double factor, double low,
                            double high, double original);

/// Opens `path` and does the same; with `weightFormat` and `headFormat`,
/// also sets them to ggufWeightFormat and ggufHeadFormat of the file.
bool ggufConfigJson(const std::string &path, std::string &json,
                    std::string &error, std::string *weightFormat = nullptr,
                    std::string *headFormat = nullptr);

/// The weight format (--weight-format) a file runs in when none is asked
/// for: the one nearest its matrices' most common type by elements that
/// holds no more bytes than needed. F32 and F16 run as f32 (exactly),
/// BF16 as bf16, Q8_0 and Q4_0 as q8_0 and q4_0 (the same blocks: the
/// loader's dequantize-requantize gives their bytes back), and the types
/// Attn has no kernels for yet (the K-quants, Q4_1, Q5_0, Q5_1) as q8_0.
const char *ggufWeightFormat(const GgufFile &file);

/// The format of the output projection (output.weight, else a tied
/// token_embd.weight) by the same rule, when it is not ggufWeightFormat's:
/// llama-quantize keeps the output of a Q4_0 file in Q6_K (Q8_0 when its
/// rows are not whole 256-element blocks), which runs as q8_0 rather than
/// losing bits to q4_0 (attn-compile --head-format). "" otherwise.
std::string ggufHeadFormat(const GgufFile &file);

} // namespace attnrt

#endif // ATTNRT_GGUFCONFIG_H
