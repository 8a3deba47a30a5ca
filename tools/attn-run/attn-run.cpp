//===- attn-run.cpp - run a model from the command line -------------------===//
//
// From a Hugging Face model folder (compiled on first use and cached):
//
//   attn-run MODEL_DIR (-p TEXT | -f FILE | --tokens 1,2,3) [-n N] [--ctx N]
//            [sampling options] [--threads N] [--dump-logits out.npy]
//
// prints the prompt and streams the generated text to stdout as tokens come,
// stops at the end-of-sequence token (generation_config.json or
// tokenizer_config.json), and ends with the prefill/decode rates on stderr.
//
// From a compiled library and its weights (the form tests and scripts use):
//
//   attn-run --lib libmodel.so --weights model.safetensors --tokens 1,2,3
//            [--generate N] [sampling options] [--dump-logits out.npy]
//
// An interactive conversation, like llama-cli -cnv (Chat.h):
//
//   attn-run MODEL_DIR --chat [--system TEXT] [-n N] [--verbose]
//   attn-run --lib ... --weights ... --tokenizer DIR --chat ...
//
// prints (parsed by tests):
//   generated: <ids separated by spaces>
//   prefill: <n> tokens in <ms> ms (<tok/s> tok/s)
//   decode: <N> tokens in <ms> ms (<tok/s> tok/s)
//
// In both, generation prefills the prompt, samples the first token from the
// prefill's last logits row and feeds each generated token back with one
// decode call. Errors: one line "attn-run: error: ..." on stderr, exit code
// 1. Under mpirun -np N every process runs one rank of an N-way tensor-
// parallel split (ProcessGroup.h). A thin main over the runtime's C API;
// links libattnrt (and attnrt-mpi when the build has MPI).
//
//===----------------------------------------------------------------------===//

#include "Chat.h"
#include "ProcessGroup.h"
#include "ToolSupport.h"

#include "attn/Support/Version.h"

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace attn::tools;

namespace {

const char *const tool = "attn-run";

const char *const usage =
    "usage: attn-run MODEL_DIR (-p TEXT | -f FILE | --tokens IDS) [-n N] [--ctx N]\n"
    "                [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
    "                [--threads N] [--dump-logits out.npy] [--ignore-eos]\n"
    "       attn-run --lib libmodel.so --weights model.safetensors --tokens IDS\n"
    "                [--generate N] [sampling and other options as above]\n"
    "       attn-run MODEL_DIR --chat [--system TEXT] [-n N] [--verbose] [...]\n"
    "\n"
    "  MODEL_DIR           a Hugging Face folder (config.json, model.safetensors\n"
    "                      or shards, tokenizer.json); compiled on first use and\n"
    "                      cached (MODEL_DIR/.attn, else $XDG_CACHE_HOME/attn);\n"
    "                      or a GGUF file (llama, mistral, mixtral, qwen2,\n"
    "                      qwen3, qwen3moe, gpt2: docs/gguf.md)\n"
    "  -p, --prompt TEXT   the prompt, encoded with the folder's tokenizer\n"
    "  -f, --file FILE     the prompt is the contents of FILE\n"
    "  --tokens IDS        the prompt as token ids, comma separated\n"
    "  -n, --generate N    tokens to generate (-1: until end of sequence or the\n"
    "                      context is full; default -1 with MODEL_DIR, 0 with --lib)\n"
    "  --ctx N             positions of the KV cache (default: the config's\n"
    "                      max_position_embeddings, at most 4096)\n"
    "  --weight-format F   how MODEL_DIR's projections are stored: f32 (default;\n"
    "                      a .gguf: the format its tensors call for), bf16\n"
    "                      (half the bytes to stream per token), or\n"
    "                      llama.cpp's q8_0 / q4_0 blocks (AVX2 or AVX-512)\n"
    "  --head-format F     the output projection's format when not the weight\n"
    "                      format's (llama.cpp keeps a Q4_0 file's output in\n"
    "                      Q6_K: q8_0 keeps it close; a .gguf: its output's)\n"
    "  --kv-format F       how MODEL_DIR's KV cache stores keys and values: f32\n"
    "                      (default), bf16 or f16 (half the bytes per position)\n"
    "  --temperature T     0 = greedy (default); > 0 samples\n"
    "  --top-k K           keep the K most likely tokens (0 = all, default)\n"
    "  --top-p P           nucleus sampling mass in (0, 1] (default 1)\n"
    "  --seed S            sampling seed (default 0)\n"
    "  --threads N         threads the compiled code may use\n"
    "  --ignore-eos        do not stop at the end-of-sequence token\n"
    "  --dump-logits PATH  write float32 .npy logits, [prompt + generated, vocab]\n"
    "  --chat              a conversation: each line of stdin is a user turn (EOF\n"
    "                      ends it); the folder's chat template renders the whole\n"
    "                      conversation each turn and the reply streams to stdout;\n"
    "                      the KV cache is kept, only new tokens are prefilled;\n"
    "                      -n caps each reply (default: until the end of the turn)\n"
    "  --system TEXT       with --chat: a first system message\n"
    "  --verbose           with --chat: each turn's token counts (prompt, cached,\n"
    "                      prefilled, generated) on stderr\n"
    "  --tokenizer DIR     with --lib: the folder of tokenizer.json and the chat\n"
    "                      template\n"
    "  --lib PATH          a model library built by attn-compile\n"
    "  --weights PATH      safetensors weights (a file, a shard index or a folder)\n"
    "  --compiler PATH     the attn-compile to run for MODEL_DIR\n"
    "  --cache-dir DIR     where MODEL_DIR's compiled library is cached\n"
    "\n"
    "Under mpirun -np N: N-way tensor parallel, each process one rank's slice\n"
    "of the model (MODEL_DIR is compiled with --tensor-parallel N; a --lib must\n"
    "be such a library); rank 0 prints and writes --dump-logits\n"
    "(docs/scale-out.md). $ATTN_TP_TIMEOUT: seconds a rank waits for the others\n"
    "(default 60) before it ends the job.\n";

struct Options {
  std::string modelDir, lib, weights, tokens, prompt, file, dumpLogits;
  std::string system, tokenizerDir;
  bool chat = false, verbose = false, haveSystem = false;
  FolderOptions folder;
  bool haveTokens = false, havePrompt = false, haveFile = false;
  bool haveGenerate = false, ignoreEos = false;
  int64_t generate = 0;
  int64_t context = 0;
  float temperature = 0.0f;
  int64_t topK = 0;
  float topP = 1.0f;
  uint64_t seed = 0;
};

/// Parses argv; returns -1 to continue, otherwise the exit code.
int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
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
    std::string name = arg, value;
    bool haveValue = false;
    size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      haveValue = true;
    }
    if (name == "-p")
      name = "--prompt";
    else if (name == "-f")
      name = "--file";
    else if (name == "-n")
      name = "--generate";
    if (name == "--ignore-eos") {
      options.ignoreEos = true;
      continue;
    }
    if (name == "--chat" || name == "--verbose") {
      (name == "--chat" ? options.chat : options.verbose) = true;
      continue;
    }
    static const char *const known[] = {
        "--lib",     "--weights",     "--tokens",   "--generate",
        "--prompt",  "--file",        "--ctx",      "--temperature",
        "--top-k",   "--top-p",       "--seed",     "--dump-logits",
        "--system",  "--tokenizer"};
    bool isKnown = FolderOptions::isOption(name);
    for (const char *k : known)
      isKnown |= name == k;
    if (!isKnown)
      return fail(tool, "unknown option '" + name + "' (see --help)");
    if (!haveValue) {
      if (i + 1 >= argc)
        return fail(tool, "missing value for " + name);
      value = argv[++i];
    }

    std::string error;
    if (FolderOptions::isOption(name)) {
      if (!options.folder.parse(name, value, error))
        return fail(tool, error);
    } else if (name == "--system") {
      options.system = value;
      options.haveSystem = true;
    } else if (name == "--tokenizer") {
      options.tokenizerDir = value;
    } else if (name == "--lib") {
      options.lib = value;
    } else if (name == "--weights") {
      options.weights = value;
    } else if (name == "--tokens") {
      options.tokens = value;
      options.haveTokens = true;
    } else if (name == "--prompt") {
      options.prompt = value;
      options.havePrompt = true;
    } else if (name == "--file") {
      options.file = value;
      options.haveFile = true;
    } else if (name == "--dump-logits") {
      options.dumpLogits = value;
      if (value.empty())
        return fail(tool, "--dump-logits needs a path");
    } else if (name == "--generate") {
      if (!parseInteger(value, options.generate) || options.generate < -1)
        return fail(tool, "--generate must be an integer >= -1 (-1: until "
                          "the end), got '" + value + "'");
      options.haveGenerate = true;
    } else if (name == "--ctx") {
      if (!parseInteger(value, options.context) || options.context < 1)
        return fail(tool, "--ctx must be an integer >= 1, got '" + value + "'");
    } else if (name == "--temperature") {
      if (!parseFloat(value, options.temperature) || options.temperature < 0)
        return fail(tool,
                    "--temperature must be a number >= 0, got '" + value + "'");
    } else if (name == "--top-k") {
      if (!parseInteger(value, options.topK) || options.topK < 0 ||
          options.topK > INT32_MAX)
        return fail(tool, "--top-k must be an integer >= 0 (0 = all), got '" +
                              value + "'");
    } else if (name == "--top-p") {
      if (!parseFloat(value, options.topP) || !(options.topP > 0) ||
          options.topP > 1)
        return fail(tool, "--top-p must be in (0, 1], got '" + value + "'");
    } else if (name == "--seed") {
      if (!parseInteger(value, options.seed))
        return fail(tool, "--seed must be an integer in [0, 2^64), got '" +
                              value + "'");
    }
  }
  bool folder = !options.modelDir.empty();
  if (!options.chat && (options.haveSystem || options.verbose))
    return fail(tool, std::string(options.haveSystem ? "--system" : "--verbose") +
                          " needs --chat");
  if (!options.tokenizerDir.empty() && (folder || !options.chat))
    return fail(tool, "--tokenizer is for --chat with --lib (MODEL_DIR has "
                      "its own tokenizer)");
  if (options.chat) {
    if (options.haveTokens || options.havePrompt || options.haveFile ||
        !options.dumpLogits.empty())
      return fail(tool, "--chat reads its turns from stdin: give no -p, -f, "
                        "--tokens or --dump-logits");
    if (!folder && (options.lib.empty() || options.weights.empty() ||
                    options.tokenizerDir.empty()))
      return fail(tool, "--chat needs MODEL_DIR, or --lib, --weights and "
                        "--tokenizer DIR");
    if (!options.haveGenerate)
      options.generate = -1;
    return -1;
  }
  if (folder && (!options.lib.empty() || !options.weights.empty()))
    return fail(tool, "give either MODEL_DIR or --lib and --weights, not both");
  if (!folder) {
    if (options.lib.empty())
      return fail(tool, "missing MODEL_DIR or --lib (see --help)");
    if (options.weights.empty())
      return fail(tool, "missing --weights (see --help)");
    if (!options.haveTokens)
      return fail(tool, options.havePrompt || options.haveFile
                            ? "-p and -f need MODEL_DIR (its tokenizer); with "
                              "--lib give --tokens"
                            : "missing --tokens (see --help)");
    if (options.context)
      return fail(tool, "--ctx needs MODEL_DIR (a --lib library has its "
                        "context compiled in)");
    if (!options.folder.weightFormat.empty() || !options.folder.headFormat.empty())
      return fail(tool, std::string(options.folder.weightFormat.empty()
                                        ? "--head-format"
                                        : "--weight-format") +
                            " needs MODEL_DIR (a --lib library has its weight "
                            "formats compiled in)");
    if (!options.folder.kvFormat.empty())
      return fail(tool, "--kv-format needs MODEL_DIR (a --lib library has "
                        "its KV cache format compiled in)");
  }
  if (options.haveTokens + options.havePrompt + options.haveFile != 1)
    return fail(tool, folder ? "give exactly one of -p TEXT, -f FILE or "
                               "--tokens IDS"
                             : "missing --tokens (see --help)");
  if (!options.haveGenerate)
    options.generate = folder ? -1 : 0;
  return -1;
}

void printRate(FILE *out, const char *what, int64_t tokens, double seconds) {
  double rate = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  std::fprintf(out, "%s: %" PRId64 " tokens in %.1f ms (%.1f tok/s)\n", what,
               tokens, seconds * 1e3, rate);
}

/// attn-run --chat: the tokenizer (MODEL_DIR's, or --tokenizer DIR's with
/// --lib), that folder's chat template, then the conversation.
int chat(const Options &options, attnrt_model *model,
         const attnrt_tokenizer *folderTokenizer, ProcessGroup &group) {
  if (group.communicator())
    return group.fail(tool, "--chat does not run under mpirun (yet)");
  char error[1024];
  std::string dir =
      options.modelDir.empty() ? options.tokenizerDir : options.modelDir;
  TokenizerPtr own;
  const attnrt_tokenizer *tokenizer = folderTokenizer;
  if (!tokenizer) {
    own.reset(attnrt_tokenizer_load(dir.c_str(), error, sizeof error));
    if (!own)
      return fail(tool, error);
    tokenizer = own.get();
  }
  std::string message;
  if (!checkTokenizerFits(tokenizer, model, dir, message))
    return fail(tool, message);
  std::unique_ptr<attnrt_chat_template, void (*)(attnrt_chat_template *)>
      chatTemplate(attnrt_chat_template_load(dir.c_str(), error, sizeof error),
                   attnrt_chat_template_free);
  if (!chatTemplate)
    return fail(tool, error);
  attnrt_sampler_params params;
  params.temperature = options.temperature;
  params.top_k = static_cast<int32_t>(options.topK);
  params.top_p = options.topP;
  params.seed = options.seed;
  SamplerPtr sampler(attnrt_sampler_create(
      &params, attnrt_model_vocab_size(model), error, sizeof(error)));
  if (!sampler)
    return fail(tool, error);
  ChatOptions chatOptions;
  chatOptions.system = options.system;
  chatOptions.maxTokens = options.generate;
  chatOptions.verbose = options.verbose;
  chatOptions.ignoreEos = options.ignoreEos;
  return runChat(tool, model, tokenizer, chatTemplate.get(), sampler.get(),
                 chatOptions, stdin);
}

int run(int argc, char **argv) {
  Options options;
  int status = parseOptions(argc, argv, options);
  if (status >= 0)
    return status;
  bool folder = !options.modelDir.empty();

  // Under mpirun -np N: one rank of an N-way tensor-parallel run. Every rank
  // runs the same steps on the same tokens (rank 0's prompt and samples);
  // rank 0 prints and writes files. A rank that fails ends the whole job.
  ProcessGroup group;
  {
    std::string message;
    if (!group.start(&argc, &argv, message))
      return fail(tool, message);
  }
  // Writes `text` to stdout now (the user watches it stream).
  auto emit = [&](const char *text, size_t length) {
    if (!group.leader())
      return;
    std::fwrite(text, 1, length, stdout);
    std::fflush(stdout);
  };

  char error[1024];
  ModelPtr model;
  TokenizerPtr tokenizer;
  if (folder) {
    std::string message;
    model.reset(loadModelFolder(tool, options.modelDir, options.context, options.folder,
                                message, /*inspect=*/false, group.communicator()));
    if (!model)
      return group.fail(tool, message);
    // The tokenizer is optional with --tokens (the output is then ids).
    tokenizer.reset(
        attnrt_tokenizer_load(options.modelDir.c_str(), error, sizeof(error)));
    if (!tokenizer && !options.haveTokens)
      return group.fail(tool, error);
  } else {
    model.reset(attnrt_model_load_parallel(options.lib.c_str(), options.weights.c_str(),
                                           group.communicator(), error, sizeof(error)));
    if (!model)
      return group.fail(tool, error);
  }
  {
    std::string message;
    if (!group.waitForLoads(message))
      return group.fail(tool, message);
  }
  // Warnings come one per line, each ending in '\n'.
  for (const char *w = group.leader() ? attnrt_model_warnings(model.get()) : ""; *w;) {
    const char *end = std::strchr(w, '\n');
    size_t length = end ? static_cast<size_t>(end - w) : std::strlen(w);
    warn(tool, std::string(w, length));
    w += length + (end ? 1 : 0);
  }
  if (int32_t threads = group.threadsFor(options.folder.threads);
      threads > 0 && !attnrt_model_set_num_threads(model.get(), threads))
    warn(tool, "the library does not export attn_model_set_num_threads; "
               "--threads ignored");

  if (options.chat)
    return chat(options, model.get(), tokenizer.get(), group);

  int64_t vocab = attnrt_model_vocab_size(model.get());
  int64_t maxSeq = attnrt_model_max_seq(model.get());
  std::string message, promptText;
  if (tokenizer &&
      !checkTokenizerFits(tokenizer.get(), model.get(), options.modelDir, message))
    return group.fail(tool, message);

  // The prompt.
  std::vector<int32_t> prompt;
  if (options.haveTokens) {
    if (!parseTokenList(options.tokens, "--tokens", prompt, message))
      return group.fail(tool, message);
  } else {
    std::string what = "-p";
    promptText = options.prompt;
    if (options.haveFile) {
      if (!readTextFile(options.file, promptText, message))
        return group.fail(tool, message);
      what = "'" + options.file + "'";
    }
    if (!tokenize(tokenizer.get(), promptText, ATTNRT_TOKENIZE_DEFAULT, what,
                  prompt, message))
      return group.fail(tool, message);
    if (prompt.empty())
      return group.fail(tool, "the prompt encodes to no tokens (this tokenizer adds "
                        "no BOS): give some text");
  }
  if (group.communicator()) {
    int64_t length = static_cast<int64_t>(prompt.size());
    group.broadcast(&length, sizeof length);
    prompt.resize(static_cast<size_t>(length));
    group.broadcast(prompt.data(), length * static_cast<int64_t>(sizeof(int32_t)));
  }
  int64_t promptLength = static_cast<int64_t>(prompt.size());
  for (int64_t i = 0; i < promptLength; ++i)
    if (prompt[i] >= vocab)
      return group.fail(tool, "token " + std::to_string(prompt[i]) + " at index " +
                            std::to_string(i) +
                            " is outside the vocabulary [0, " +
                            std::to_string(vocab) + ")");
  if (promptLength > maxSeq)
    return group.fail(tool, "the prompt is " + std::to_string(promptLength) +
                          " tokens, longer than the context of " +
                          std::to_string(maxSeq) + " positions" +
                          (folder ? " (--ctx)" : ""));
  int64_t generate = options.generate < 0 ? maxSeq - promptLength : options.generate;
  if (generate > maxSeq - promptLength)
    return group.fail(tool, "prompt of " + std::to_string(promptLength) +
                          " tokens plus " + std::to_string(generate) +
                          " generated exceeds the context of " +
                          std::to_string(maxSeq) + " positions");

  attnrt_sampler_params params;
  params.temperature = options.temperature;
  params.top_k = static_cast<int32_t>(options.topK);
  params.top_p = options.topP;
  params.seed = options.seed;
  SamplerPtr sampler(attnrt_sampler_create(&params, vocab, error, sizeof(error)));
  if (!sampler)
    return group.fail(tool, error);
  SessionPtr session(attnrt_session_create(model.get(), error, sizeof(error)));
  if (!session)
    return group.fail(tool, error);

  // Text output: the prompt as written, then the continuation streamed by a
  // detokenizer primed with the prompt (so " the" after it keeps its
  // space).
  DetokenizerPtr detokenizer;
  if (folder && tokenizer) {
    detokenizer.reset(
        attnrt_detokenizer_create(tokenizer.get(), 1, error, sizeof(error)));
    if (!detokenizer)
      return group.fail(tool, error);
    for (int32_t id : prompt)
      if (!attnrt_detokenizer_step(detokenizer.get(), id, nullptr, error,
                                   sizeof(error)))
        return group.fail(tool, error);
    if (options.haveTokens &&
        !detokenize(tokenizer.get(), prompt, true, promptText, message))
      return group.fail(tool, message);
  }

  // Every buffer exists before the clock starts. With --dump-logits each
  // call writes its rows in place; otherwise one row is reused.
  // Every rank computes the same rows (their collectives must match); rank
  // 0 writes them.
  bool dump = !options.dumpLogits.empty();
  int64_t rows = dump ? promptLength + generate : 1;
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  std::vector<int32_t> generated;
  generated.reserve(static_cast<size_t>(generate));
  if (dump && group.leader()) {
    // Fail on an unwritable path now, not after the run.
    FILE *probe = std::fopen(options.dumpLogits.c_str(), "wb");
    if (!probe)
      return group.fail(tool, "cannot write '" + options.dumpLogits +
                            "': " + std::strerror(errno));
    std::fclose(probe);
  }
  if (detokenizer)
    emit(promptText.data(), promptText.size());

  using Clock = std::chrono::steady_clock;
  auto prefillStart = Clock::now();
  if (attnrt_prefill(session.get(), prompt.data(), promptLength, logits.data(),
                     dump ? 1 : 0, error, sizeof(error)) != ATTNRT_OK)
    return group.fail(tool, error);
  auto prefillEnd = Clock::now();

  // Decode time covers sampling and printing too: it is the cost per
  // generated token.
  const float *row =
      dump ? logits.data() + (promptLength - 1) * vocab : logits.data();
  group.resetTimes();
  auto decodeStart = Clock::now();
  int64_t decoded = 0;
  bool warnedNoText = false;
  for (int64_t i = 0; i < generate; ++i) {
    int32_t token = attnrt_sample(sampler.get(), row, vocab);
    group.broadcast(&token, sizeof token);
    if (token < 0)
      return group.fail(tool, "every logit is NaN: nothing to sample");
    generated.push_back(token);
    // The end-of-sequence token ends the text; it is not fed back.
    if (tokenizer && !options.ignoreEos &&
        attnrt_tokenizer_is_eos(tokenizer.get(), token))
      break;
    // A model may have more ids than its tokenizer (a vocabulary padded for
    // speed); such a token has no text.
    if (detokenizer && !attnrt_tokenizer_piece(tokenizer.get(), token)) {
      if (!warnedNoText && group.leader())
        warn(tool, "generated token " + std::to_string(token) +
                       " is not in the tokenizer; tokens without text are "
                       "not printed");
      warnedNoText = true;
    } else if (detokenizer) {
      size_t length = 0;
      const char *piece = attnrt_detokenizer_step(detokenizer.get(), token,
                                                  &length, error, sizeof(error));
      if (!piece)
        return group.fail(tool, error);
      emit(piece, length);
    }
    float *out = dump ? logits.data() + (promptLength + i) * vocab : logits.data();
    if (attnrt_decode(session.get(), token, out, error, sizeof(error)) !=
        ATTNRT_OK)
      return group.fail(tool, error);
    ++decoded;
    row = out;
  }
  auto decodeEnd = Clock::now();
  double collectiveSeconds = 0;
  int64_t collectives = 0;
  group.collectiveTime(collectiveSeconds, collectives);
  if (dump)
    rows = promptLength + decoded;
  if (!group.leader())
    return 0;

  FILE *rates = stdout;
  if (detokenizer) {
    size_t length = 0;
    const char *rest =
        attnrt_detokenizer_flush(detokenizer.get(), &length, error, sizeof(error));
    if (!rest)
      return group.fail(tool, error);
    emit(rest, length);
    emit("\n", 1);
    rates = stderr;
  } else {
    std::string line = "generated:";
    for (int32_t token : generated)
      line += " " + std::to_string(token);
    std::printf("%s\n", line.c_str());
  }
  printRate(rates, "prefill", promptLength,
            std::chrono::duration<double>(prefillEnd - prefillStart).count());
  double decodeSeconds = std::chrono::duration<double>(decodeEnd - decodeStart).count();
  printRate(rates, "decode", decoded, decoded ? decodeSeconds : 0.0);
  if (group.communicator())
    std::fprintf(rates,
                 "tensor parallel: %d ranks; decode spent %.1f ms (%.1f%%) in %" PRId64
                 " all-reduces and gathers on rank 0\n",
                 group.size(), collectiveSeconds * 1e3,
                 decodeSeconds > 0 ? 100.0 * collectiveSeconds / decodeSeconds : 0.0,
                 collectives);
  std::fflush(stdout);

  if (dump) {
    int64_t shape[2] = {rows, vocab};
    if (attnrt_npy_write_f32(options.dumpLogits.c_str(), logits.data(), 2,
                             shape, error, sizeof(error)) != ATTNRT_OK)
      return group.fail(tool, error);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
