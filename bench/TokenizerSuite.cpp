//===- TokenizerSuite.cpp - encode speed beside the node references -------===//
//
// MB/s of text encoded by the runtime's tokenizer (the C API, one thread),
// one call per paragraph as a server or the perplexity tool feeds it, beside
// the JavaScript references run on the same file by
// test/data/encode-speed.mjs (@lenml/tokenizers for GPT-2, Qwen3 and
// Llama 3; gpt-3-encoder for GPT-2). The rounds interleave ours and theirs so
// that the machine's noise hits both alike; each prints the median of
// --repeats passes after a warm-up, and the table gives the median and the
// range over the rounds.
// The tokenizers and texts are what scripts/test-data.sh writes.
//
//===----------------------------------------------------------------------===//

#include "Suites.h"

#include "attnrt/attnrt.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace attn::bench;

namespace {

constexpr int kRounds = 3;

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::vector<std::string> paragraphs(const std::string &text) {
  // The rule of test/data/reference-ids.mjs: split on runs of two or more
  // "\n", drop empty pieces.
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t at = text.find("\n\n", start);
    if (at == std::string::npos) {
      out.push_back(text.substr(start));
      break;
    }
    if (at > start)
      out.push_back(text.substr(start, at - start));
    start = at;
    while (start < text.size() && text[start] == '\n')
      ++start;
  }
  return out;
}

/// The medians of encode-speed.mjs's JSON line, by reference name
/// (gpt-3-encoder for gpt2 only; `gpt3` is left alone for the others).
bool runNodeReference(const std::string &testData, const std::string &name,
                      const std::string &textFile, double &gpt3,
                      double &lenml) {
  std::string command = "node '" ATTN_SOURCE_DIR "/test/data/encode-speed.mjs' "
                        "--testdata '" +
                        testData + "' --tokenizer '" + name + "' '" + textFile +
                        "' 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return false;
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe))
    output.append(buffer, n);
  if (pclose(pipe) != 0) {
    std::printf("tokenizer suite: the node reference failed: %s\n",
                output.c_str());
    return false;
  }
  auto median = [&](const char *name, double &out) {
    size_t at = output.find(std::string("\"") + name + "\"");
    at = at == std::string::npos ? at : output.find("\"median\":", at);
    if (at == std::string::npos)
      return false;
    out = std::atof(output.c_str() + at + 9);
    return out > 0;
  };
  return (name != "gpt2" || median("gpt-3-encoder", gpt3)) &&
         median("@lenml/tokenizers", lenml);
}


} // namespace

void attn::bench::runTokenizerSuite(const BenchOptions &options) {
  std::string text, textFile = options.testData + "/text/persuasion.txt";
  {
    std::ifstream in(textFile, std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    text = contents.str();
  }
  if (text.empty()) {
    std::printf("\n## Tokenizer: skipped (%s is missing: run "
                "scripts/test-data.sh)\n",
                textFile.c_str());
    return;
  }
  std::vector<std::string> pieces = paragraphs(text);
  double megabytes = static_cast<double>(text.size()) / 1e6;
  std::printf("\n## Tokenizer: encode %s (%.2f MB, %zu paragraphs, one call "
              "each), 1 thread, MB/s: median (range) of %d interleaved rounds\n",
              textFile.c_str(), megabytes, pieces.size(), kRounds);
  std::printf("| tokenizer | attn | gpt-3-encoder (node) | @lenml/tokenizers "
              "(node) | attn load (ms) |\n| --- | --- | --- | --- | --- |\n");

  bool haveNode = exists(options.testData + "/npm/node_modules");
  // The JS references run where they are a comparison worth its minute:
  // GPT-2 (both), and @lenml on the byte-level files of 2026's families.
  for (const char *name : {"gpt2", "llama2", "mistral", "qwen3", "llama3"}) {
    bool withNode = haveNode && (std::string(name) == "gpt2" ||
                                 std::string(name) == "qwen3" ||
                                 std::string(name) == "llama3");
    std::string dir = options.testData + "/tokenizers/" + name;
    char error[1024];
    Range ours, gpt3, lenml;
    double loadSeconds = medianSeconds(3, [&] {
      attnrt_tokenizer_free(attnrt_tokenizer_load(dir.c_str(), error, sizeof error));
    });
    attnrt_tokenizer *tokenizer =
        attnrt_tokenizer_load(dir.c_str(), error, sizeof error);
    if (!tokenizer) {
      std::printf("| %s | %s | | | |\n", name, error);
      continue;
    }
    std::vector<int32_t> ids(text.size() + 16);
    bool failed = false;
    auto pass = [&] {
      for (const std::string &piece : pieces) {
        int64_t count = 0;
        if (attnrt_tokenize(tokenizer, piece.data(), piece.size(),
                            ATTNRT_TOKENIZE_DEFAULT, ids.data(),
                            static_cast<int64_t>(ids.size()), &count, error,
                            sizeof error) != ATTNRT_OK)
          failed = true;
      }
    };
    for (int round = 0; round < kRounds && !failed; ++round) {
      ours.values.push_back(megabytes / medianSeconds(options.repeats, pass));
      double a = 0, b;
      if (withNode &&
          runNodeReference(options.testData, name, textFile, a, b)) {
        if (a > 0)
          gpt3.values.push_back(a);
        lenml.values.push_back(b);
      }
    }
    if (failed)
      std::printf("| %s | encode failed: %s | | | |\n", name, error);
    else
      std::printf("| %s | %s | %s | %s | %.1f |\n", name,
                  ours.format().c_str(), gpt3.format().c_str(),
                  lenml.format().c_str(), loadSeconds * 1e3);
    attnrt_tokenizer_free(tokenizer);
  }
}
