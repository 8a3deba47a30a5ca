//===- attn-inspect.cpp - what a model's heads attend to, as a report -----===//
//
//   attn-inspect MODEL_DIR (-p TEXT | -f FILE | --tokens IDS) --out DIR
//                [--top-k K] [--ctx N] [--threads N] [--compiler PATH]
//                [--cache-dir DIR] [--weight-format F] [--kv-format F]
//
// Compiles MODEL_DIR with the inspection entry points (attn-compile
// --inspect, cached beside the fast library), runs the prompt once and
// writes DIR: index.html (every head's heat map, its pattern scores, the
// residual stream's norms and the logit lens), a PNG per head, attention.npy
// [layers, heads, T, T], residual.npy [layers + 1, T, hidden],
// final_norm.npy [T, hidden], tokens.txt and scores.json (InspectReport.h).
// The logit lens reads each residual through the model's own final norm
// and output head (attnrt_unembed): the top K tokens at every layer and
// position.
//
//===----------------------------------------------------------------------===//

#include "InspectReport.h"
#include "ToolSupport.h"

#include "attn/Support/Version.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

using namespace attn::tools;

namespace {

const char *const tool = "attn-inspect";

const char *const usage =
    "usage: attn-inspect MODEL_DIR (-p TEXT | -f FILE | --tokens IDS) --out DIR\n"
    "                    [--top-k K] [--ctx N] [--threads N]\n"
    "\n"
    "  -p, --prompt TEXT      the prompt (tokenized as the model's tokenizer does,\n"
    "                         BOS included when it adds one)\n"
    "  -f, --file FILE        the prompt from a file\n"
    "  --tokens IDS           the prompt as comma-separated token ids\n"
    "  -o, --out DIR          where to write the report (created when missing)\n"
    "  --top-k K              tokens per cell of the logit lens (default 5)\n"
    "  --ctx N                the KV cache the model is compiled for (default:\n"
    "                         the prompt's length rounded up to 64)\n"
    "  --threads N            threads the compiled code may use\n"
    "  --compiler PATH        the attn-compile to run for MODEL_DIR\n"
    "  --cache-dir DIR        where MODEL_DIR's compiled library is cached\n"
    "  --weight-format F      how the projections are stored: f32 (default; a\n"
    "                         .gguf: the format its tensors call for), bf16,\n"
    "                         q8_0 or q4_0\n"
    "  --head-format F        the output projection's format when not the\n"
    "                         weight format's (as attn-run)\n"
    "  --kv-format F          how the KV cache stores keys and values: f32\n"
    "                         (default), bf16 or f16\n"
    "\n"
    "The attention maps are [layers, heads, T, T]: prompts of a few hundred\n"
    "tokens make a page of a few megabytes. A mixture of experts' report also\n"
    "shows each layer's routing (experts.npy, expert_weights.npy).\n";

struct Options {
  std::string modelDir, prompt, file, tokens, out;
  bool havePrompt = false;
  int64_t topK = 5, ctx = 0;
  FolderOptions folder;
};

int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::fputs(attnVersionText(tool).c_str(), stdout);
      return 0;
    }
    if (arg.empty() || arg[0] != '-') {
      if (!options.modelDir.empty())
        return fail(tool, "unexpected argument '" + arg + "' (see --help)");
      options.modelDir = arg;
      continue;
    }
    static const char *const known[] = {"-p", "--prompt", "-f",      "--file", "--tokens",
                                        "-o", "--out",    "--top-k", "--ctx"};
    if (std::none_of(std::begin(known), std::end(known),
                     [&](const char *k) { return arg == k; }) &&
        !FolderOptions::isOption(arg))
      return fail(tool, "unknown option '" + arg + "' (see --help)");
    if (i + 1 >= argc)
      return fail(tool, "missing value for " + arg);
    std::string value = argv[++i], error;
    if (FolderOptions::isOption(arg)) {
      if (!options.folder.parse(arg, value, error))
        return fail(tool, error);
    } else if (arg == "-p" || arg == "--prompt") {
      options.prompt = value;
      options.havePrompt = true;
    } else if (arg == "-f" || arg == "--file") {
      options.file = value;
    } else if (arg == "--tokens") {
      options.tokens = value;
    } else if (arg == "-o" || arg == "--out") {
      options.out = value;
    } else if (arg == "--top-k") {
      if (!parseInteger(value, options.topK) || options.topK < 1 || options.topK > 100)
        return fail(tool, "--top-k must be an integer in [1, 100], got '" + value + "'");
    } else if (arg == "--ctx") {
      if (!parseInteger(value, options.ctx) || options.ctx < 1)
        return fail(tool, "--ctx must be a positive integer, got '" + value + "'");
    }
  }
  if (options.modelDir.empty())
    return fail(tool, "missing MODEL_DIR (see --help)");
  int sources = options.havePrompt + !options.file.empty() + !options.tokens.empty();
  if (sources != 1)
    return fail(tool, "give the prompt once: -p TEXT, -f FILE or --tokens IDS (see --help)");
  if (options.out.empty())
    return fail(tool, "missing --out DIR (see --help)");
  return -1;
}

/// The folder's last path component, for the page's title.
std::string folderName(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

/// The K most probable tokens of a logits row, most probable first.
std::vector<attn::inspect::LensEntry> topTokens(const float *logits, int64_t vocab,
                                                int64_t k) {
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, vocab);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  float maximum = logits[order[0]];
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(static_cast<double>(logits[v]) - maximum);
  std::vector<attn::inspect::LensEntry> top;
  for (int64_t i = 0; i < k; ++i)
    top.push_back({order[i], static_cast<float>(
                                 std::exp(static_cast<double>(logits[order[i]]) - maximum) /
                                 sum)});
  return top;
}

int run(const Options &options) {
  std::string error;
  char message[1024] = "";
  TokenizerPtr tokenizer;
  std::vector<int32_t> ids;
  if (!options.tokens.empty()) {
    if (!parseTokenList(options.tokens, "--tokens", ids, error))
      return fail(tool, error);
  }
  // The tokenizer names the prompt's tokens in the page (and makes them from
  // text); with --tokens it is optional.
  tokenizer.reset(attnrt_tokenizer_load(options.modelDir.c_str(), message, sizeof message));
  if (!tokenizer && options.tokens.empty())
    return fail(tool, message);
  if (options.tokens.empty()) {
    std::string text = options.prompt, what = "-p";
    if (!options.file.empty()) {
      if (!readTextFile(options.file, text, error))
        return fail(tool, error);
      what = options.file;
    }
    if (!tokenize(tokenizer.get(), text, ATTNRT_TOKENIZE_DEFAULT, what, ids, error))
      return fail(tool, error);
  }
  if (ids.empty())
    return fail(tool, "the prompt has no tokens");
  const int64_t n = static_cast<int64_t>(ids.size());

  int64_t ctx = options.ctx > 0 ? options.ctx : (n + 63) / 64 * 64;
  if (n > ctx)
    return fail(tool, "the prompt has " + std::to_string(n) + " tokens, more than --ctx " +
                          std::to_string(ctx));
  ModelPtr model(
      loadModelFolder(tool, options.modelDir, ctx, options.folder, error, /*inspect=*/true));
  if (!model)
    return fail(tool, error);
  if (tokenizer && !checkTokenizerFits(tokenizer.get(), model.get(), options.modelDir, error))
    return fail(tool, error);
  if (options.folder.threads > 0)
    attnrt_model_set_num_threads(model.get(), static_cast<int32_t>(options.folder.threads));
  const attnrt_model_info &info = *attnrt_model_get_info(model.get());
  SessionPtr session(attnrt_session_create(model.get(), message, sizeof message));
  if (!session)
    return fail(tool, message);

  attn::inspect::InspectData data;
  data.model = folderName(options.modelDir);
  data.layers = info.num_layers;
  data.heads = info.num_heads;
  data.kvHeads = info.num_kv_heads;
  data.hidden = info.hidden_size;
  data.ids = ids;
  const int64_t vocab = info.vocab_size, d = info.hidden_size;
  data.attention.resize(data.layers * data.heads * n * n);
  data.residual.resize((data.layers + 1) * n * d);
  data.finalNorm.resize(n * d);
  data.numExperts = info.num_experts;
  data.expertsPerToken = info.experts_per_token;
  data.experts.resize(data.layers * n * data.expertsPerToken);
  data.expertWeights.resize(data.experts.size());
  const bool routed = data.expertsPerToken > 0;
  std::vector<float> logits(n * vocab);
  if (attnrt_inspect_routing(session.get(), ids.data(), n, data.attention.data(),
                             data.residual.data(), data.finalNorm.data(), nullptr,
                             routed ? data.experts.data() : nullptr,
                             routed ? data.expertWeights.data() : nullptr, message,
                             sizeof message))
    return fail(tool, message);
  // The logit lens, one residual at a time (that of the last is the
  // model's output).
  for (int64_t layer = 0; layer <= data.layers; ++layer) {
    if (attnrt_unembed(session.get(), data.residual.data() + layer * n * d, n, logits.data(),
                       message, sizeof message))
      return fail(tool, message);
    for (int64_t t = 0; t < n; ++t)
      data.lens.push_back(topTokens(logits.data() + t * vocab, vocab, options.topK));
  }

  // The prompt's tokens as the text decodes to them, one piece per token.
  if (tokenizer) {
    DetokenizerPtr detokenizer(
        attnrt_detokenizer_create(tokenizer.get(), 0, message, sizeof message));
    if (!detokenizer)
      return fail(tool, message);
    for (int32_t id : ids) {
      size_t length = 0;
      const char *piece =
          attnrt_detokenizer_step(detokenizer.get(), id, &length, message, sizeof message);
      if (!piece)
        return fail(tool, message);
      data.pieces.emplace_back(piece, length);
    }
    std::string text;
    if (detokenize(tokenizer.get(), ids, false, text, error))
      data.prompt = text;
    data.pieceOf = [t = tokenizer.get()](int32_t id) {
      std::string text, ignored;
      return detokenize(t, {id}, false, text, ignored) ? text : "#" + std::to_string(id);
    };
  } else {
    for (int32_t id : ids)
      data.pieces.push_back("#" + std::to_string(id));
    data.prompt = options.tokens;
  }
  if (!attn::inspect::writeReport(data, options.out, error))
    return fail(tool, error);

  int standing = 0;
  for (int64_t layer = 0; layer < data.layers; ++layer)
    for (int64_t head = 0; head < data.heads; ++head)
      standing += attn::inspect::previousTokenStandsOut(
          attn::inspect::scoreHead(data.attention.data() + (layer * data.heads + head) * n * n,
                                   n, ids),
          n);
  std::fprintf(stderr,
               "%s: %lld tokens, %lld layers x %lld heads (%d previous-token heads) -> "
               "%s/index.html\n",
               tool, static_cast<long long>(n), static_cast<long long>(data.layers),
               static_cast<long long>(data.heads), standing, options.out.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (int code = parseOptions(argc, argv, options); code >= 0)
    return code;
  return run(options);
}
