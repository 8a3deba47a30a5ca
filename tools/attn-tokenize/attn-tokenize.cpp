//===- attn-tokenize.cpp - text to token ids and back ---------------------===//
//
//   attn-tokenize MODEL_DIR (-p TEXT | -f FILE) [--no-special] [--no-parse-special]
//                 [--pieces]
//   attn-tokenize MODEL_DIR --decode 1,2,3 [--skip-special]
//
// Encodes with the folder's tokenizer.json (+ tokenizer_config.json) and
// prints the ids comma-separated on one line (--pieces: one "id<TAB>piece"
// per line instead); --decode prints the text of the ids, then a newline.
// Like llama-tokenize. Errors: one line "attn-tokenize: error: ...", exit 1.
//
//===----------------------------------------------------------------------===//

#include "ToolSupport.h"

#include "attn/Support/Version.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace attn::tools;

namespace {

const char *const tool = "attn-tokenize";

const char *const usage =
    "usage: attn-tokenize MODEL_DIR (-p TEXT | -f FILE) [--no-special]\n"
    "                     [--no-parse-special] [--pieces]\n"
    "       attn-tokenize MODEL_DIR --decode IDS [--skip-special]\n"
    "\n"
    "  -p, --prompt TEXT    the text to encode\n"
    "  -f, --file FILE      encode the contents of FILE\n"
    "  --no-special         no BOS/EOS from the post-processor\n"
    "                       (add_special_tokens=False)\n"
    "  --no-parse-special   special tokens written in the text stay text\n"
    "  --pieces             one \"id<TAB>piece\" line per token\n"
    "  --decode IDS         print the text of comma-separated ids\n"
    "  --skip-special       with --decode: leave out special tokens\n";

int run(int argc, char **argv) {
  std::string dir, prompt, file, decode;
  bool havePrompt = false, haveFile = false, haveDecode = false;
  bool noSpecial = false, noParseSpecial = false, pieces = false,
       skipSpecial = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage, stdout);
      return 0;
    } else if (arg == "--version") {
      std::fputs(attnVersionText(tool).c_str(), stdout);
      return 0;
    } else if (arg == "-p" || arg == "--prompt") {
      if (!value(prompt))
        return fail(tool, "missing value for " + arg);
      havePrompt = true;
    } else if (arg == "-f" || arg == "--file") {
      if (!value(file))
        return fail(tool, "missing value for " + arg);
      haveFile = true;
    } else if (arg == "--decode") {
      if (!value(decode))
        return fail(tool, "missing value for --decode");
      haveDecode = true;
    } else if (arg == "--no-special") {
      noSpecial = true;
    } else if (arg == "--no-parse-special") {
      noParseSpecial = true;
    } else if (arg == "--pieces") {
      pieces = true;
    } else if (arg == "--skip-special") {
      skipSpecial = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail(tool, "unknown option '" + arg + "' (see --help)");
    } else if (dir.empty()) {
      dir = arg;
    } else {
      return fail(tool, "unexpected argument '" + arg + "' (see --help)");
    }
  }
  if (dir.empty())
    return fail(tool, "missing MODEL_DIR (see --help)");
  if (havePrompt + haveFile + haveDecode != 1)
    return fail(tool, "give exactly one of -p TEXT, -f FILE or --decode IDS");

  char error[1024];
  TokenizerPtr tokenizer(attnrt_tokenizer_load(dir.c_str(), error, sizeof(error)));
  if (!tokenizer)
    return fail(tool, error);

  std::string message;
  if (haveDecode) {
    std::vector<int32_t> ids;
    std::string text;
    if (!parseTokenList(decode, "--decode", ids, message) ||
        !detokenize(tokenizer.get(), ids, skipSpecial, text, message))
      return fail(tool, message);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
  }

  std::string text = prompt, what = "-p";
  if (haveFile) {
    if (!readTextFile(file, text, message))
      return fail(tool, message);
    what = "'" + file + "'";
  }
  int flags = (noSpecial ? 0 : ATTNRT_TOKENIZE_ADD_SPECIAL) |
              (noParseSpecial ? 0 : ATTNRT_TOKENIZE_PARSE_SPECIAL);
  std::vector<int32_t> ids;
  if (!tokenize(tokenizer.get(), text, flags, what, ids, message))
    return fail(tool, message);
  if (pieces) {
    for (int32_t id : ids) {
      const char *piece = attnrt_tokenizer_piece(tokenizer.get(), id);
      std::printf("%d\t%s\n", id, piece ? piece : "");
    }
    return 0;
  }
  std::printf("%s\n", joinTokens(ids).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
