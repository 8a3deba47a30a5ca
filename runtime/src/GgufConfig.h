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

/// Opens `path` and does the same.
bool ggufConfigJson(const std::string &path, std::string &json,
                    std::string &error);

} // namespace attnrt

#endif // ATTNRT_GGUFCONFIG_H
