//===- TokenizerJsonFuzzer.cpp - loading tokenizer.json -------------------===//
//
// The input is a tokenizer.json. Loading must succeed or fail with one line
// naming the file; a tokenizer that loads must encode a few fixed texts (and
// reject invalid UTF-8) into ids of its vocabulary that decode to valid
// UTF-8, streamed or not, with no crash, hang or leak.
//
//===----------------------------------------------------------------------===//

#include "TokenizerFuzzUtil.h"

using namespace attnrt;
using namespace attn::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  TokenizerSources sources;
  sources.tokenizerJson.assign(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(sources, error);
  if (!tokenizer) {
    FUZZ_CHECK(error.rfind("tokenizer.json: ", 0) == 0 &&
                   error.find('\n') == std::string::npos,
               "load error: %s", error.c_str());
    return 0;
  }
  static const char *const texts[] = {
      "", "a", "hello world", "  two  spaces ", "it's 2024!\n\nNew line\t",
      "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x99\x82",
      "<|endoftext|><s></s><unk>", "\xE2\x96\x81x\xE2\x96\x81"};
  for (const char *text : texts) {
    for (unsigned flags = 0; flags < 4; ++flags) {
      std::vector<int32_t> ids;
      FUZZ_CHECK(tokenizer->encode(text, flags, ids, error), "encode '%s': %s",
                 text, error.c_str());
      checkEncoded(*tokenizer, ids);
    }
  }
  std::vector<int32_t> ids;
  FUZZ_CHECK(!tokenizer->encode("a\xFF", Tokenizer::AddSpecial, ids, error),
             "invalid UTF-8 accepted");
  return 0;
}
