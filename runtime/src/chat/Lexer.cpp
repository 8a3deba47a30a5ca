//===- Lexer.cpp - chat-template source into text and tag tokens ----------===//

#include "chat/Lexer.h"

#include "Support.h"
#include "chat/Value.h"
#include "tokenizer/Utf8.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

using namespace attnrt;
using namespace attnrt::chat;

namespace {

/// One pass over the normalized source.
class Lexer {
public:
  Lexer(std::string source, std::vector<Segment> &segments, std::string &error)
      : src(std::move(source)), segments(segments), error(error) {
    for (size_t pos = 0; pos < src.size(); ++pos)
      if (src[pos] == '\n')
        lineStarts.push_back(pos + 1);
  }

  bool run();

private:
  int lineAt(size_t pos) const {
    return static_cast<int>(
               std::upper_bound(lineStarts.begin(), lineStarts.end(), pos) -
               lineStarts.begin()) +
           1;
  }
  bool fail(size_t pos, const std::string &message) {
    error = format("line %d: ", lineAt(pos)) + message;
    return false;
  }
  bool startsWith(size_t pos, std::string_view s) const {
    return src.compare(pos, s.size(), s) == 0;
  }

  void emitText(std::string text, size_t at);
  /// After a tag's closing delimiter at `pos`: skips what `-` strips or what
  /// trim_blocks drops, and returns where the next text starts.
  size_t afterTag(size_t pos, char modifier, bool isBlock);
  bool lexComment(size_t open, size_t body, size_t &next);
  bool lexTag(size_t open, size_t body, bool isBlock, size_t &next);
  bool lexString(size_t &pos, Token &token);
  bool lexNumber(size_t &pos, Token &token, bool afterDot);

  std::string src;
  std::vector<Segment> &segments;
  std::string &error;
  std::vector<size_t> lineStarts;
};

} // namespace

void Lexer::emitText(std::string text, size_t at) {
  if (text.empty())
    return;
  Segment segment;
  segment.kind = Segment::Kind::Text;
  segment.line = lineAt(at);
  segment.text = std::move(text);
  segments.push_back(std::move(segment));
}

/// The length of the run of Python whitespace starting at s[pos].
static size_t spaceRun(std::string_view s, size_t pos) {
  size_t start = pos;
  while (pos < s.size() && isPythonSpace(decodeUtf8(s, pos)))
    pos += utf8CharLength(static_cast<unsigned char>(s[pos]));
  return pos - start;
}

size_t Lexer::afterTag(size_t pos, char modifier, bool isBlock) {
  if (modifier == '-')
    return pos + spaceRun(src, pos);
  if (isBlock && modifier != '+' && pos < src.size() && src[pos] == '\n')
    return pos + 1;
  return pos;
}

bool Lexer::run() {
  size_t pos = 0;
  while (true) {
    // The next tag opening: {{, {% or {#.
    size_t open = pos;
    while ((open = src.find('{', open)) != std::string::npos) {
      if (open + 1 < src.size() &&
          (src[open + 1] == '{' || src[open + 1] == '%' ||
           src[open + 1] == '#'))
        break;
      ++open;
    }
    if (open == std::string::npos) {
      emitText(src.substr(pos), pos);
      return true;
    }
    std::string text = src.substr(pos, open - pos);
    char kind = src[open + 1];
    size_t body = open + 2;
    char modifier = body < src.size() && (src[body] == '-' || src[body] == '+')
                        ? src[body]
                        : 0;
    if (modifier)
      ++body;
    if (modifier == '-') {
      text = std::string(stripPython(text, false, true, nullptr));
    } else if (kind != '{' && modifier != '+') {
      // lstrip_blocks: only spaces and tabs between the line start and the
      // tag.
      size_t lineStart = text.rfind('\n');
      lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
      bool atLineStart = lineStart > 0 || pos == 0 || src[pos - 1] == '\n';
      if (atLineStart &&
          text.find_first_not_of(" \t", lineStart) == std::string::npos)
        text.resize(lineStart);
    }
    emitText(std::move(text), pos);
    size_t next = 0;
    if (kind == '#' ? !lexComment(open, body, next)
                    : !lexTag(open, body, kind == '%', next))
      return false;
    pos = next;
  }
}

bool Lexer::lexComment(size_t open, size_t body, size_t &next) {
  size_t close = src.find("#}", body);
  if (close == std::string::npos)
    return fail(open, "unclosed comment ({# without #})");
  char modifier = 0;
  if (close > body && (src[close - 1] == '-' || src[close - 1] == '+'))
    modifier = src[close - 1];
  next = afterTag(close + 2, modifier, true);
  return true;
}

bool Lexer::lexTag(size_t open, size_t body, bool isBlock, size_t &next) {
  Segment segment;
  segment.kind = isBlock ? Segment::Kind::Statement : Segment::Kind::Output;
  segment.line = lineAt(open);
  const char *closeText = isBlock ? "%}" : "}}";
  int braces = 0; // open { of dict literals, so that `}}` inside one is not
                  // the end of the tag
  size_t pos = body;
  while (true) {
    while (pos < src.size() &&
           (src[pos] == ' ' || src[pos] == '\t' || src[pos] == '\n' ||
            src[pos] == '\r' || src[pos] == '\f' || src[pos] == '\v'))
      ++pos;
    if (pos >= src.size())
      return fail(open, isBlock ? "unclosed tag ({% without %})"
                                : "unclosed expression ({{ without }})");
    if (braces == 0) {
      char modifier = 0;
      size_t at = pos;
      if (src[at] == '-' || src[at] == '+') {
        modifier = src[at];
        ++at;
      }
      if (startsWith(at, closeText)) {
        next = afterTag(at + 2, modifier, isBlock);
        break;
      }
    }
    Token token;
    token.line = lineAt(pos);
    unsigned char c = static_cast<unsigned char>(src[pos]);
    if (c == '\'' || c == '"') {
      if (!lexString(pos, token))
        return false;
    } else if (c >= '0' && c <= '9') {
      bool afterDot =
          !segment.tokens.empty() && segment.tokens.back().isOperator(".");
      if (!lexNumber(pos, token, afterDot))
        return false;
    } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      size_t start = pos;
      while (pos < src.size() &&
             (src[pos] == '_' ||
              std::isalnum(static_cast<unsigned char>(src[pos]))))
        ++pos;
      token.kind = Token::Kind::Name;
      token.text = src.substr(start, pos - start);
    } else {
      static const char *const operators[] = {
          "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
          ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
      const char *match = nullptr;
      for (const char *op : operators)
        if (startsWith(pos, op)) {
          match = op;
          break;
        }
      if (!match) {
        size_t length = utf8CharLength(c);
        return fail(pos, "unexpected character " +
                             quote(src.substr(pos, length)) + " in a tag");
      }
      token.kind = Token::Kind::Operator;
      token.text = match;
      pos += token.text.size();
      if (token.text == "{")
        ++braces;
      else if (token.text == "}" && braces > 0)
        --braces;
    }
    segment.tokens.push_back(std::move(token));
  }
  Token end;
  end.line = lineAt(pos);
  segment.tokens.push_back(end);
  // A raw block's body is not Jinja: say so before lexing it as such.
  if (isBlock && segment.tokens.front().isName("raw"))
    return fail(open, "unsupported tag 'raw'");
  segments.push_back(std::move(segment));
  return true;
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// A string literal, with the escapes of Python's unicode_escape (which
/// jinja2 applies): \n \t \r \\ \' \" \a \b \f \v, octal, \xhh, \uXXXX,
/// \UXXXXXXXX; an unknown escape stays as written. Surrogates, which UTF-8
/// cannot hold, become U+FFFD.
bool Lexer::lexString(size_t &pos, Token &token) {
  char quoteChar = src[pos];
  size_t open = pos++;
  std::string value;
  while (true) {
    if (pos >= src.size())
      return fail(open, "unterminated string literal");
    char c = src[pos];
    if (c == quoteChar) {
      ++pos;
      break;
    }
    if (c != '\\' || pos + 1 >= src.size()) {
      value += c;
      ++pos;
      continue;
    }
    char e = src[pos + 1];
    pos += 2;
    switch (e) {
    case 'n':
      value += '\n';
      continue;
    case 't':
      value += '\t';
      continue;
    case 'r':
      value += '\r';
      continue;
    case '\\':
    case '\'':
    case '"':
      value += e;
      continue;
    case 'a':
      value += '\a';
      continue;
    case 'b':
      value += '\b';
      continue;
    case 'f':
      value += '\f';
      continue;
    case 'v':
      value += '\v';
      continue;
    case '\n':
      continue; // a line continuation
    default:
      break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t cp = static_cast<uint32_t>(e - '0');
      for (int k = 0;
           k < 2 && pos < src.size() && src[pos] >= '0' && src[pos] <= '7'; ++k)
        cp = cp * 8 + static_cast<uint32_t>(src[pos++] - '0');
      appendUtf8(value, cp);
      continue;
    }
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits == 0) {
      value += '\\';
      value += e;
      continue;
    }
    uint32_t cp = 0;
    for (int k = 0; k < digits; ++k) {
      int h = pos + static_cast<size_t>(k) < src.size()
                  ? hexValue(src[pos + static_cast<size_t>(k)])
                  : -1;
      if (h < 0)
        return fail(pos,
                    format("truncated \\%c escape in a string literal", e));
      cp = cp * 16 + static_cast<uint32_t>(h);
    }
    pos += static_cast<size_t>(digits);
    if (cp > 0x10FFFF)
      return fail(pos, "escape past U+10FFFF in a string literal");
    if (cp >= 0xD800 && cp <= 0xDFFF)
      cp = 0xFFFD;
    appendUtf8(value, cp);
  }
  token.kind = Token::Kind::String;
  token.text = std::move(value);
  return true;
}

/// Integers (decimal with `_` separators, 0x, 0o, 0b) and floats
/// (1.5, 1e3, 2.5e-3). After a `.` only digits are read, so that `x.0.1`
/// is two subscripts.
bool Lexer::lexNumber(size_t &pos, Token &token, bool afterDot) {
  size_t start = pos;
  auto digitsOf = [&](auto isDigit) {
    size_t begin = pos;
    while (
        pos < src.size() &&
        (isDigit(src[pos]) || (src[pos] == '_' && pos > begin &&
                               pos + 1 < src.size() && isDigit(src[pos + 1]))))
      ++pos;
    return pos > begin;
  };
  auto isDecimal = [](char c) { return c >= '0' && c <= '9'; };
  auto clean = [&](size_t from) {
    std::string s;
    for (size_t k = from; k < pos; ++k)
      if (src[k] != '_')
        s += src[k];
    return s;
  };
  if (!afterDot && src[pos] == '0' && pos + 1 < src.size() &&
      std::string_view("xXoObB").find(src[pos + 1]) != std::string_view::npos) {
    char base = static_cast<char>(std::tolower(src[pos + 1]));
    pos += 2;
    int radix = base == 'x' ? 16 : base == 'o' ? 8 : 2;
    if (!digitsOf([&](char c) {
          int h = hexValue(c);
          return h >= 0 && h < radix;
        }))
      return fail(start, "malformed number literal");
    errno = 0;
    std::string digits = clean(start + 2);
    long long value = std::strtoll(digits.c_str(), nullptr, radix);
    if (errno == ERANGE)
      return fail(start, "integer literal out of range");
    token.kind = Token::Kind::Integer;
    token.integer = value;
    return true;
  }
  digitsOf(isDecimal);
  bool isFloat = false;
  if (!afterDot && pos + 1 < src.size() && src[pos] == '.' &&
      isDecimal(src[pos + 1])) {
    ++pos;
    digitsOf(isDecimal);
    isFloat = true;
  }
  if (!afterDot && pos < src.size() && (src[pos] == 'e' || src[pos] == 'E')) {
    size_t mark = pos++;
    if (pos < src.size() && (src[pos] == '+' || src[pos] == '-'))
      ++pos;
    if (digitsOf(isDecimal))
      isFloat = true;
    else
      pos = mark;
  }
  std::string text = clean(start);
  errno = 0;
  if (isFloat) {
    token.kind = Token::Kind::Float;
    token.number = std::strtod(text.c_str(), nullptr);
    return true;
  }
  long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return fail(start, "integer literal out of range");
  token.kind = Token::Kind::Integer;
  token.integer = value;
  return true;
}

bool attnrt::chat::lexTemplate(std::string_view source,
                               std::vector<Segment> &segments,
                               std::string &error) {
  segments.clear();
  // jinja2 reads the source as lines: every line break becomes \n, and the
  // last one goes.
  std::string text;
  text.reserve(source.size());
  for (size_t pos = 0; pos < source.size(); ++pos) {
    if (source[pos] == '\r') {
      text += '\n';
      if (pos + 1 < source.size() && source[pos + 1] == '\n')
        ++pos;
      continue;
    }
    text += source[pos];
  }
  if (!text.empty() && text.back() == '\n')
    text.pop_back();
  size_t bad = findInvalidUtf8(text);
  if (bad != std::string::npos) {
    int line =
        1 + static_cast<int>(std::count(
                text.begin(), text.begin() + static_cast<long>(bad), '\n'));
    error = format("line %d: invalid UTF-8 at byte %zu", line, bad);
    return false;
  }
  Lexer lexer(std::move(text), segments, error);
  return lexer.run();
}
