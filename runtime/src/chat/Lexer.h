//===- Lexer.h - chat-template source into text and tag tokens -*- C++ -*-===//
//
// Splits a Jinja template into text, {{ expression }} and {% statement %}
// segments, dropping {# comments #}, with the whitespace rules transformers
// configures for apply_chat_template (trim_blocks=True, lstrip_blocks=True)
// on top of jinja2's defaults:
//
//  - newlines (\r\n, \r) become \n and one trailing newline of the source is
//    dropped (keep_trailing_newline=False);
//  - `{%-`, `{{-`, `{#-` strip all whitespace before the tag, `-%}`, `-}}`,
//    `-#}` all whitespace after it;
//  - trim_blocks: a newline right after `%}` or `#}` is dropped (not after
//    `}}`, nor after `+%}`);
//  - lstrip_blocks: spaces and tabs between the start of a line and `{%` or
//    `{#` are dropped (not before `{{`, nor before `{%+`).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_LEXER_H
#define ATTNRT_CHAT_LEXER_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt::chat {

struct Token {
  enum class Kind : uint8_t { Name, String, Integer, Float, Operator, End };
  Kind kind = Kind::End;
  /// A name, an operator's spelling, or a string literal's value (escapes
  /// resolved).
  std::string text;
  int64_t integer = 0;
  double number = 0;
  int line = 0;

  bool isOperator(std::string_view op) const {
    return kind == Kind::Operator && text == op;
  }
  bool isName(std::string_view name) const {
    return kind == Kind::Name && text == name;
  }
};

struct Segment {
  enum class Kind : uint8_t { Text, Output, Statement };
  Kind kind = Kind::Text;
  int line = 0;
  /// Text segments: the text, after whitespace control.
  std::string text;
  /// Output and statement segments: the tokens inside the delimiters, ending
  /// with an End token.
  std::vector<Token> tokens;
};

/// Splits `source`. On failure returns false with `error` set to
/// "line N: what" (an unclosed tag, a bad character or string literal,
/// invalid UTF-8).
bool lexTemplate(std::string_view source, std::vector<Segment> &segments,
                 std::string &error);

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_LEXER_H
