//===- Regex.cpp - Unicode regular expressions through PCRE2 --------------===//

#include "tokenizer/Regex.h"

#include "Support.h"
#include "tokenizer/Utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace attnrt {

Regex::Regex() = default;

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code *>(code)); }

Regex::Regex(Regex &&other) noexcept : code(other.code) { other.code = nullptr; }

Regex &Regex::operator=(Regex &&other) noexcept {
  if (this != &other) {
    pcre2_code_free(static_cast<pcre2_code *>(code));
    code = other.code;
    other.code = nullptr;
  }
  return *this;
}

static bool compileWith(void *&code, std::string_view pattern, uint32_t options,
                        std::string &error) {
  int status = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code *compiled =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                    pattern.size(), options, &status,
                    &offset, nullptr);
  if (!compiled) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(status, message, sizeof(message));
    error = format("invalid regex at offset %zu: %s", static_cast<size_t>(offset),
                   reinterpret_cast<const char *>(message));
    return false;
  }
  // The interpreter gives the same matches when the host forbids JIT
  // (executable memory), only slower.
  (void)pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE);
  pcre2_code_free(static_cast<pcre2_code *>(code));
  code = compiled;
  return true;
}

bool Regex::compile(std::string_view pattern, std::string &error) {
  return compileWith(code, pattern, PCRE2_UTF | PCRE2_UCP, error);
}

bool Regex::compileLiteral(std::string_view literal, std::string &error) {
  // PCRE2_UCP is not allowed with PCRE2_LITERAL (nor needed).
  return compileWith(code, literal, PCRE2_LITERAL | PCRE2_UTF, error);
}

Regex::Scratch::Scratch(const Regex &regex)
    : matchData(pcre2_match_data_create_from_pattern(
          static_cast<const pcre2_code *>(regex.code), nullptr)) {
  if (!matchData)
    throw std::bad_alloc();
}

Regex::Scratch::~Scratch() {
  pcre2_match_data_free(static_cast<pcre2_match_data *>(matchData));
}

bool Regex::find(std::string_view text, size_t from, Scratch &scratch,
                 size_t &begin, size_t &end, bool &failed) const {
  auto *data = static_cast<pcre2_match_data *>(scratch.matchData);
  // The text was validated once by the caller: no per-call UTF check.
  int rc = pcre2_match(static_cast<const pcre2_code *>(code),
                       reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                       from, PCRE2_NO_UTF_CHECK, data, nullptr);
  if (rc < 0) {
    failed = rc != PCRE2_ERROR_NOMATCH;
    return false;
  }
  PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(data);
  begin = ovector[0];
  end = ovector[1];
  // \K in a lookaround can report a match that ends before it begins or
  // starts before `from`: no split pattern means that.
  if (end < begin || begin < from) {
    failed = true;
    return false;
  }
  return true;
}

size_t Regex::charLength(std::string_view text, size_t pos) {
  return utf8CharLength(static_cast<unsigned char>(text[pos]));
}

} // namespace attnrt
