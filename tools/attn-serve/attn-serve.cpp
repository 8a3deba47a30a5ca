//===- attn-serve.cpp - an OpenAI-compatible server over the runtime ------===//
//
//   attn-serve MODEL_DIR [--host 127.0.0.1] [--port 8080] [--parallel N]
//              [--ctx N] [--api-key K] [--chat-template FILE] [...]
//
// Serves one model folder (compiled on first use and cached, as attn-run
// does) over HTTP: POST /v1/completions, POST /v1/chat/completions (both
// streamed as server-sent events with "stream": true), GET /v1/models,
// GET /health, POST /tokenize, POST /detokenize and GET /metrics. Up to
// --parallel requests decode together, one batched step at a time
// (Scheduler.h); docs/serve.md describes what is supported.
//
// Prints "attn-serve: listening on http://HOST:PORT" on stderr once it
// accepts connections (with --port 0 the port is a free one, which tests
// read from this line). SIGINT or SIGTERM stops it: new requests get 503,
// running ones get a few seconds to finish, then it exits with 0.
//
// This file is the flags and the route table; Endpoints.cpp has the
// handlers, Http.cpp the HTTP layer, Scheduler.cpp the batching.
//
//===----------------------------------------------------------------------===//

#include "Endpoints.h"
#include "GroupModel.h"
#include "Http.h"
#include "ProcessGroup.h"
#include "Protocol.h"
#include "RuntimeModel.h"
#include "Scheduler.h"
#include "ToolSupport.h"

#include "attn/Support/Version.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <thread>

using namespace attn::tools;
using namespace attn::serve;

namespace {

const char *const tool = "attn-serve";

const char *const usage =
    "usage: attn-serve MODEL_DIR [--host H] [--port P] [--parallel N] [--ctx N]\n"
    "                  [--api-key K] [--chat-template FILE] [options]\n"
    "\n"
    "  MODEL_DIR            a Hugging Face folder (config.json, weights,\n"
    "                       tokenizer.json); compiled on first use and cached\n"
    "  --host H             address to listen on (default 127.0.0.1: this\n"
    "                       machine only; 0.0.0.0 for every interface)\n"
    "  --port P             port (default 8080; 0 = any free one, printed)\n"
    "  --parallel N         requests decoded together, one session each\n"
    "                       (default 4)\n"
    "  --queue N            requests that may wait for a slot; more get 503\n"
    "                       (default 64)\n"
    "  --ctx N              positions per session (default: the config's\n"
    "                       max_position_embeddings, at most 4096)\n"
    "  --prefill-chunk N    prompt tokens prefilled per step between decode\n"
    "                       steps (default 64)\n"
    "  --api-key K          require 'Authorization: Bearer K' on every path\n"
    "                       but /health (default: $ATTN_API_KEY, else none)\n"
    "  --chat-template FILE a Jinja chat template instead of the one in\n"
    "                       tokenizer_config.json\n"
    "  --model-name NAME    the model id /v1/models lists (default: the\n"
    "                       folder's name)\n"
    "  --max-body BYTES     largest request body (default 1048576; more: 413)\n"
    "  --timeout S          seconds a client may take to send a request or\n"
    "                       to take our writes (default 10)\n"
    "  --keep-alive S       seconds an idle connection stays open (default 5)\n"
    "  --http-threads N     most connections served at once (default 512)\n"
    "  --quiet              no line per request on stderr\n"
    "  --weight-format F    f32 (default; a .gguf: its tensors' format), bf16,\n"
    "                       q8_0 or q4_0 (as attn-run)\n"
    "  --head-format F      the output projection's, when not the weight\n"
    "                       format's (as attn-run)\n"
    "  --kv-format F        f32 (default), bf16 or f16\n"
    "  --threads N          threads the compiled code may use\n"
    "  --compiler PATH      the attn-compile to run for MODEL_DIR\n"
    "  --cache-dir DIR      where MODEL_DIR's compiled library is cached\n"
    "\n"
    "Under mpirun -np N: the model split N-way tensor parallel, rank 0 serving\n"
    "and the other ranks running its model calls (docs/scale-out.md).\n";

struct Options {
  std::string modelDir, host = "127.0.0.1", apiKey, chatTemplate, modelName;
  FolderOptions folder;
  int64_t port = 8080, parallel = 4, queue = 64, context = 0, prefillChunk = 64;
  int64_t maxBody = 1 << 20, timeout = 10, keepAlive = 5, httpThreads = 512;
  bool quiet = false;
};

/// Parses argv; returns -1 to continue, otherwise the exit code.
int parseOptions(int argc, char **argv, Options &options) {
  if (const char *key = std::getenv("ATTN_API_KEY"))
    options.apiKey = key;
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
    if (arg == "--quiet") {
      options.quiet = true;
      continue;
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
    struct Integer {
      const char *name;
      int64_t *value;
      int64_t low, high;
    };
    const Integer integers[] = {
        {"--port", &options.port, 0, 65535},
        {"--parallel", &options.parallel, 1, 256},
        {"--queue", &options.queue, 0, 1 << 20},
        {"--ctx", &options.context, 1, INT32_MAX},
        {"--prefill-chunk", &options.prefillChunk, 1, INT32_MAX},
        {"--max-body", &options.maxBody, 1, INT64_C(1) << 32},
        {"--timeout", &options.timeout, 1, 3600},
        {"--keep-alive", &options.keepAlive, 1, 3600},
        {"--http-threads", &options.httpThreads, 1, 4096},
    };
    const Integer *integer = nullptr;
    for (const Integer &entry : integers)
      if (name == entry.name)
        integer = &entry;
    bool isText = name == "--host" || name == "--api-key" || name == "--chat-template" ||
                  name == "--model-name";
    if (!integer && !isText && !FolderOptions::isOption(name))
      return fail(tool, "unknown option '" + name + "' (see --help)");
    if (!haveValue) {
      if (i + 1 >= argc)
        return fail(tool, "missing value for " + name);
      value = argv[++i];
    }
    std::string error;
    if (integer) {
      if (!parseInteger(value, *integer->value) || *integer->value < integer->low ||
          *integer->value > integer->high)
        return fail(tool, name + " must be an integer in [" + std::to_string(integer->low) + ", " +
                              std::to_string(integer->high) + "], got '" + value + "'");
    } else if (FolderOptions::isOption(name)) {
      if (!options.folder.parse(name, value, error))
        return fail(tool, error);
    } else if (name == "--host") {
      options.host = value;
    } else if (name == "--api-key") {
      options.apiKey = value;
    } else if (name == "--chat-template") {
      options.chatTemplate = value;
    } else if (name == "--model-name") {
      options.modelName = value;
    }
  }
  if (options.modelDir.empty())
    return fail(tool, "missing MODEL_DIR (see --help)");
  if (options.modelName.empty()) {
    std::string dir = options.modelDir;
    while (dir.size() > 1 && dir.back() == '/')
      dir.pop_back();
    size_t slash = dir.rfind('/');
    options.modelName = slash == std::string::npos ? dir : dir.substr(slash + 1);
  }
  return -1;
}

struct ChatTemplateDeleter {
  void operator()(attnrt_chat_template *t) const { attnrt_chat_template_free(t); }
};
using ChatTemplatePtr = std::unique_ptr<attnrt_chat_template, ChatTemplateDeleter>;

/// The --chat-template file, or the folder's own template; a folder without
/// one is no error (chat requests then get 400, with `why`).
bool loadChatTemplate(const Options &options, const attnrt_tokenizer *tokenizer,
                      ChatTemplatePtr &chatTemplate, std::string &why, std::string &error) {
  char message[1024];
  if (options.chatTemplate.empty()) {
    chatTemplate.reset(
        attnrt_chat_template_load(options.modelDir.c_str(), message, sizeof(message)));
    if (!chatTemplate)
      why = message;
    return true;
  }
  std::string source;
  if (!readTextFile(options.chatTemplate, source, error))
    return false;
  const char *bos = attnrt_tokenizer_piece(tokenizer, attnrt_tokenizer_bos(tokenizer));
  int32_t eosId = -1;
  attnrt_tokenizer_eos(tokenizer, &eosId, 1);
  const char *eos = eosId >= 0 ? attnrt_tokenizer_piece(tokenizer, eosId) : nullptr;
  chatTemplate.reset(
      attnrt_chat_template_parse(source.c_str(), bos, eos, message, sizeof(message)));
  if (!chatTemplate) {
    error = options.chatTemplate + ": " + message;
    return false;
  }
  return true;
}

/// SIGINT and SIGTERM are blocked in every thread and taken by one that
/// waits for them, so the shutdown runs as ordinary code, not in a handler.
sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

int run(int argc, char **argv) {
  Options options;
  int status = parseOptions(argc, argv, options);
  if (status >= 0)
    return status;

  // Before any thread exists, so that all of them inherit the mask.
  sigset_t signals = stopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that leaves mid-write must not kill the server.
  std::signal(SIGPIPE, SIG_IGN);

  // Under mpirun -np N: rank 0 serves, the others run its model calls on
  // their slices (GroupModel.h). A rank that fails ends the whole job.
  ProcessGroup group;
  std::string message;
  if (!group.start(&argc, &argv, message))
    return fail(tool, message);

  ModelPtr model(loadModelFolder(tool, options.modelDir, options.context, options.folder, message,
                                 /*inspect=*/false, group.communicator()));
  if (!model)
    return group.fail(tool, message);
  if (!group.waitForLoads(message))
    return group.fail(tool, message);
  if (int32_t threads = group.threadsFor(options.folder.threads);
      threads > 0 && !attnrt_model_set_num_threads(model.get(), threads))
    warn(tool, "the library does not export attn_model_set_num_threads; --threads ignored");
  if (!group.leader()) {
    std::unique_ptr<RuntimeModel> slots =
        RuntimeModel::create(model.get(), static_cast<int>(options.parallel), message);
    if (!slots)
      return group.fail(tool, message);
    followLeader(*slots, group);
    return 0;
  }
  for (const char *w = attnrt_model_warnings(model.get()); *w;) {
    const char *end = std::strchr(w, '\n');
    size_t length = end ? static_cast<size_t>(end - w) : std::strlen(w);
    warn(tool, std::string(w, length));
    w += length + (end ? 1 : 0);
  }
  char error[1024];
  TokenizerPtr tokenizer(attnrt_tokenizer_load(options.modelDir.c_str(), error, sizeof(error)));
  if (!tokenizer)
    return group.fail(tool, error);
  if (!checkTokenizerFits(tokenizer.get(), model.get(), options.modelDir, message))
    return group.fail(tool, message);
  ChatTemplatePtr chatTemplate;
  std::string noTemplate;
  if (!loadChatTemplate(options, tokenizer.get(), chatTemplate, noTemplate, message))
    return group.fail(tool, message);
  if (!chatTemplate)
    warn(tool, "no chat template (" + noTemplate +
                   "): /v1/chat/completions answers 400; --chat-template FILE gives one");

  std::unique_ptr<RuntimeModel> batched =
      RuntimeModel::create(model.get(), static_cast<int>(options.parallel), message);
  if (!batched)
    return group.fail(tool, message);
  // Destroyed after the scheduler: it then tells the other ranks to stop.
  std::unique_ptr<LeaderModel> leader;
  if (group.communicator())
    leader = std::make_unique<LeaderModel>(*batched, group);
  SchedulerOptions schedulerOptions;
  schedulerOptions.prefillChunk = options.prefillChunk;
  schedulerOptions.maxQueue = static_cast<size_t>(options.queue);
  Scheduler scheduler(leader ? static_cast<BatchedModel &>(*leader) : *batched, schedulerOptions);

  HttpOptions http;
  http.host = options.host;
  http.port = static_cast<int>(options.port);
  http.apiKey = options.apiKey;
  http.publicPaths = {"/health"};
  http.maxBodyBytes = static_cast<size_t>(options.maxBody);
  http.readTimeoutSeconds = static_cast<int>(options.timeout);
  http.writeTimeoutSeconds = static_cast<int>(options.timeout);
  http.keepAliveSeconds = static_cast<int>(options.keepAlive);
  http.minThreads = static_cast<size_t>(options.parallel) + 4;
  http.maxThreads = std::max(static_cast<size_t>(options.httpThreads), http.minThreads);
  http.logRequests = !options.quiet;
  HttpServer server(http, [](int status, const std::string &text, const std::string &type,
                             const std::string &code) {
    ApiError error;
    error.status = status;
    error.message = text;
    error.type = type;
    error.code = code;
    return errorBody(error);
  });

  ServedModel served;
  served.tokenizer = tokenizer.get();
  served.chatTemplate = chatTemplate.get();
  served.chatTemplateError = noTemplate;
  served.id = options.modelName;
  served.vocab = attnrt_model_vocab_size(model.get());
  served.context = attnrt_model_max_seq(model.get());
  served.slots = options.parallel;
  served.created = static_cast<int64_t>(std::time(nullptr));
  Endpoints endpoints(served, scheduler, server);

  // The route table.
  using Method = void (Endpoints::*)(const HttpRequest &, HttpResponse &);
  auto route = [&](Method method) {
    return [&endpoints, method](const HttpRequest &request, HttpResponse &response) {
      (endpoints.*method)(request, response);
    };
  };
  server.post("/v1/completions", route(&Endpoints::completions));
  server.post("/v1/chat/completions", route(&Endpoints::chatCompletions));
  server.get("/v1/models", route(&Endpoints::models));
  server.get(R"(/v1/models/([^/]+))", route(&Endpoints::models));
  server.get("/health", route(&Endpoints::health));
  server.post("/tokenize", route(&Endpoints::tokenize));
  server.post("/detokenize", route(&Endpoints::detokenize));
  server.get("/metrics", route(&Endpoints::metrics));

  if (!server.bind(message))
    return group.fail(tool, message);
  scheduler.start();

  // The first of SIGINT/SIGTERM, or the poke below when the server ended on
  // its own, stops everything: the scheduler first (running requests get
  // the grace period, new ones 503), then the listener.
  std::atomic<bool> stopping{false};
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    stopping = true;
    std::fprintf(stderr, "%s: %s: shutting down\n", tool, strsignal(signal));
    scheduler.shutdown(std::chrono::seconds(5));
    endpoints.waitForStreams(std::chrono::seconds(2));
    server.stop();
  });
  std::fprintf(stderr, "%s: listening on http://%s:%d (model '%s', %lld slots, context %lld)\n",
               tool, options.host.c_str(), server.port(), options.modelName.c_str(),
               static_cast<long long>(options.parallel), static_cast<long long>(served.context));
  bool listened = server.run();
  if (!stopping)
    pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  if (!listened)
    return group.fail(tool, "the listening socket failed");
  return 0;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
