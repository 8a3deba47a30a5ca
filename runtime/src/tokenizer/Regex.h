//===- Regex.h - Unicode regular expressions through PCRE2 -----*- C++ -*-===//
//
// The split patterns of tokenizer.json (GPT-2's, LLaMA-3's, Qwen2's) need
// Unicode properties (\p{L}, \p{N}) and Unicode \s: PCRE2 (Debian's
// libpcre2-8) compiled with PCRE2_UTF | PCRE2_UCP and JIT-compiled when the
// host allows. A compiled Regex is immutable and shared between threads; each
// thread brings its own MatchScratch.
//
// Matches are found left to right without overlap. After an empty match the
// search resumes one character later, as Oniguruma (Hugging Face tokenizers'
// engine) does.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_REGEX_H
#define ATTNRT_TOKENIZER_REGEX_H

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace attnrt {

class Regex {
public:
  Regex();
  ~Regex();
  Regex(Regex &&) noexcept;
  Regex &operator=(Regex &&) noexcept;

  /// Compiles `pattern`; on failure returns false with a message naming the
  /// offset in the pattern and the reason.
  bool compile(std::string_view pattern, std::string &error);
  /// A pattern that matches `literal` exactly.
  bool compileLiteral(std::string_view literal, std::string &error);

  /// Per-thread match state (PCRE2 match data) for one compiled pattern.
  class Scratch {
  public:
    explicit Scratch(const Regex &regex);
    ~Scratch();
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;

  private:
    friend class Regex;
    void *matchData = nullptr;
  };

  /// Finds the first match in text[from, end) (`text` valid UTF-8, `from` at
  /// a character boundary); sets [begin, end) and returns true, or returns
  /// false when there is none. A matching error other than "no match" (the
  /// JIT stack or match limit) is reported as no match with `failed` set.
  bool find(std::string_view text, size_t from, Scratch &scratch,
            size_t &begin, size_t &end, bool &failed) const;

  /// Calls `onMatch(begin, end)` for every match in `text`, in order.
  /// Returns false if PCRE2 failed part way (see find).
  template <typename F>
  bool forEachMatch(std::string_view text, Scratch &scratch,
                    F &&onMatch) const {
    size_t from = 0, begin, end;
    bool failed = false;
    while (from <= text.size() &&
           find(text, from, scratch, begin, end, failed)) {
      onMatch(begin, end);
      if (end > begin) {
        from = end;
      } else if (end < text.size()) {
        from = end + charLength(text, end);
      } else {
        break;
      }
    }
    return !failed;
  }

  bool isValid() const { return code != nullptr; }

private:
  static size_t charLength(std::string_view text, size_t pos);
  void *code = nullptr;
};

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_REGEX_H
