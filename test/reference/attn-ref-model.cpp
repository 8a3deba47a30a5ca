//===- attn-ref-model.cpp - Reference logits of a model folder ------------===//
//
// attn-ref-model --model DIR --tokens 1,2,3 [--dump-logits out.npy]
//                [--print-argmax] [--check-greedy K [--greedy-tolerance X]]
//                [--cached [--prefill N]]
//
// Runs the naive reference forward pass over the tokens from position 0:
// one call without a KV cache, or with --cached HF's cached generation (the
// first N tokens in one call, then one call per token with a KV cache).
// --check-greedy K treats the last K tokens as generated greedily from the
// ones before and checks each against the argmax of the previous
// position's reference logits. Errors: one line
// "attn-ref-model: error: ...", exit 1.
//
//===----------------------------------------------------------------------===//

#include "ModelReference.h"
#include "Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace attn::ref;

namespace {

const char *kUsage =
    "usage: attn-ref-model --model DIR --tokens 1,2,3 [options]\n"
    "  --dump-logits FILE      write float32 .npy logits [n, vocab]\n"
    "  --print-argmax          print the argmax of every position\n"
    "  --check-greedy K        the last K tokens were generated greedily:\n"
    "                          check each against the previous row's argmax\n"
    "  --greedy-tolerance X    accept a token whose reference logit is within\n"
    "                          X of the maximum (near ties; default 0)\n"
    "  --generated-from FILE   append the ids of the 'generated: ...' line of\n"
    "                          attn-run's output to --tokens and check them\n"
    "                          as with --check-greedy\n"
    "  --cached                HF's cached generation: the first --prefill\n"
    "                          tokens in one call, then one call per token\n"
    "                          with a KV cache (the same logits as without,\n"
    "                          except rope_scaling dynamic past\n"
    "                          max_position_embeddings)\n"
    "  --prefill N             tokens of the first cached call (default 1)\n"
    "\n"
    "model_type: gpt2, llama, mistral, qwen2, qwen3, smollm3, gemma, gemma2,\n"
    "gemma3_text, gemma3, phi3, gpt_neox, gptj, opt, bloom, xglm, and the\n"
    "mixture-of-experts qwen3_moe, qwen2_moe, mixtral and gpt_oss (experts\n"
    "per expert or stacked as transformers 5 saves them); rope_scaling\n"
    "linear, dynamic, yarn, llama3 (the llama-shaped families), longrope\n"
    "(phi3). See docs/reference.md and test/reference/README.md.\n";

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "attn-ref-model: error: " << message << "\n";
  std::exit(1);
}

std::vector<int64_t> parseTokens(const std::string &text) {
  std::vector<int64_t> tokens;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!item.empty() && item.front() == ' ')
      item.erase(item.begin());
    while (!item.empty() && item.back() == ' ')
      item.pop_back();
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE)
      fail("--tokens expects comma-separated integers, got '" + item + "'");
    tokens.push_back(v);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return tokens;
}

/// The ids of the "generated: 1 2 3" line attn-run prints.
std::vector<int64_t> readGenerated(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail("cannot read '" + path + "'");
  std::string line;
  const std::string prefix = "generated:";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0)
      continue;
    std::vector<int64_t> ids;
    std::istringstream words(line.substr(prefix.size()));
    std::string word;
    while (words >> word) {
      char *end = nullptr;
      errno = 0;
      long long id = std::strtoll(word.c_str(), &end, 10);
      if (*end != '\0' || errno == ERANGE)
        fail("'" + path + "': bad token id '" + word + "'");
      ids.push_back(id);
    }
    return ids;
  }
  fail("'" + path + "' has no 'generated:' line");
}

std::string formatFloat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  std::optional<std::string> modelDir, tokensText, dumpPath, generatedFrom;
  std::optional<int64_t> checkGreedy;
  std::optional<int64_t> prefill;
  double greedyTolerance = 0.0;
  bool printArgmax = false, cached = false;

  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool hasInlineValue = false;
    if (flag.rfind("--", 0) != 0)
      fail("unexpected argument '" + flag + "' (flags start with --)");
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      hasInlineValue = true;
    }
    auto takeValue = [&]() -> std::string {
      if (hasInlineValue)
        return value;
      if (i + 1 >= args.size())
        fail(flag + " expects a value");
      return args[++i];
    };
    if (flag == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (flag == "--model") {
      modelDir = takeValue();
    } else if (flag == "--tokens") {
      tokensText = takeValue();
    } else if (flag == "--generated-from") {
      generatedFrom = takeValue();
    } else if (flag == "--dump-logits") {
      dumpPath = takeValue();
    } else if (flag == "--print-argmax") {
      if (hasInlineValue)
        fail("--print-argmax takes no value");
      printArgmax = true;
    } else if (flag == "--check-greedy") {
      std::string text = takeValue();
      char *end = nullptr;
      errno = 0;
      long long k = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE || k < 1)
        fail("--check-greedy expects a positive integer, got '" + text + "'");
      checkGreedy = k;
    } else if (flag == "--cached") {
      if (hasInlineValue)
        fail("--cached takes no value");
      cached = true;
    } else if (flag == "--prefill") {
      std::string text = takeValue();
      char *end = nullptr;
      errno = 0;
      long long k = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE || k < 1)
        fail("--prefill expects a positive integer, got '" + text + "'");
      prefill = k;
    } else if (flag == "--greedy-tolerance") {
      std::string text = takeValue();
      char *end = nullptr;
      double x = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(x >= 0))
        fail("--greedy-tolerance expects a non-negative number, got '" + text +
             "'");
      greedyTolerance = x;
    } else {
      fail("unknown flag '" + flag + "' (see --help)");
    }
  }
  if (!modelDir)
    fail("--model DIR is required");
  if (!tokensText)
    fail("--tokens is required (e.g. --tokens 1,2,3)");
  std::vector<int64_t> tokens = parseTokens(*tokensText);
  if (generatedFrom) {
    if (checkGreedy)
      fail("--generated-from and --check-greedy are exclusive");
    std::vector<int64_t> generated = readGenerated(*generatedFrom);
    tokens.insert(tokens.end(), generated.begin(), generated.end());
    if (!generated.empty())
      checkGreedy = static_cast<int64_t>(generated.size());
  }
  int64_t n = static_cast<int64_t>(tokens.size());
  if (prefill && !cached)
    fail("--prefill needs --cached");
  if (prefill && *prefill > n)
    fail("--prefill " + std::to_string(*prefill) + " exceeds the " +
         std::to_string(n) + " tokens");
  if (checkGreedy && *checkGreedy >= n)
    fail("--check-greedy " + std::to_string(*checkGreedy) +
         " needs more than " + std::to_string(*checkGreedy) +
         " tokens (at least one prompt token)");

  std::string error;
  std::vector<std::string> warnings;
  std::unique_ptr<ModelReference> model =
      ModelReference::load(*modelDir, error, &warnings);
  for (const std::string &w : warnings)
    std::cerr << "attn-ref-model: warning: " << w << "\n";
  if (!model)
    fail(error);
  std::vector<float> logits;
  bool ok =
      cached ? model->forwardCached(tokens, prefill.value_or(1), logits, error)
             : model->forward(tokens, logits, error);
  if (!ok)
    fail(error);
  int64_t vocab = model->config().vocab;

  if (dumpPath && !writeNpy(*dumpPath, logits, {n, vocab}, error))
    fail(error);

  if (printArgmax) {
    std::cout << "argmax: ";
    for (int64_t p = 0; p < n; ++p)
      std::cout << (p ? "," : "") << argmax(&logits[p * vocab], vocab);
    std::cout << "\n";
  }

  if (checkGreedy) {
    for (int64_t p = n - *checkGreedy; p < n; ++p) {
      const float *row = &logits[(p - 1) * vocab];
      int64_t best = argmax(row, vocab);
      if (best == tokens[p])
        continue;
      double gap = static_cast<double>(row[best]) - row[tokens[p]];
      if (gap <= greedyTolerance)
        continue;
      std::cout << "greedy: mismatch at position " << p << ": token "
                << tokens[p] << ", but the reference argmax of position "
                << p - 1 << " is " << best << " (logit "
                << formatFloat(row[best]) << " vs "
                << formatFloat(row[tokens[p]]) << ", gap " << formatFloat(gap)
                << ")\n";
      return 1;
    }
    std::cout << "greedy: ok\n";
  }

  if (!dumpPath && !printArgmax && !checkGreedy)
    std::cout << "logits: [" << n << ", " << vocab << "], last position argmax "
              << argmax(&logits[(n - 1) * vocab], vocab) << "\n";
  return 0;
}
