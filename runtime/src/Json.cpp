//===- Json.cpp - a small strict JSON parser ------------------------------===//

#include "Json.h"

#include "Support.h"

#include <algorithm>
#include <charconv>

namespace attnrt {

const char *jsonKindName(JsonKind kind) {
  switch (kind) {
  case JsonKind::Null:
    return "null";
  case JsonKind::Bool:
    return "a boolean";
  case JsonKind::Number:
    return "a number";
  case JsonKind::String:
    return "a string";
  case JsonKind::Array:
    return "an array";
  case JsonKind::Object:
    return "an object";
  }
  return "a value";
}

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

JsonKind JsonValue::kind() const { return doc->nodes[index].kind; }

bool JsonValue::getBool() const {
  return is(JsonKind::Bool) && doc->nodes[index].flag;
}

bool JsonValue::isInteger() const {
  return is(JsonKind::Number) && doc->nodes[index].flag;
}

int64_t JsonValue::getInteger() const {
  return isInteger() ? doc->nodes[index].integer : 0;
}

double JsonValue::getNumber() const {
  if (!is(JsonKind::Number))
    return 0;
  const JsonDocument::Node &node = doc->nodes[index];
  return node.flag ? static_cast<double>(node.integer) : node.number;
}

std::string_view JsonValue::getString() const {
  if (!is(JsonKind::String))
    return {};
  const JsonDocument::Node &node = doc->nodes[index];
  return std::string_view(doc->strings).substr(node.stringOffset, node.size);
}

size_t JsonValue::size() const {
  if (!is(JsonKind::Array) && !is(JsonKind::Object))
    return 0;
  return doc->nodes[index].size;
}

JsonValue JsonValue::firstChild() const {
  if (size() == 0)
    return {};
  return JsonValue(doc, index + 1, doc->nodes[index].end);
}

JsonValue JsonValue::nextSibling() const {
  if (!isValid())
    return {};
  uint32_t next = doc->nodes[index].end;
  if (next >= parentEnd)
    return {};
  return JsonValue(doc, next, parentEnd);
}

std::string_view JsonValue::key() const {
  if (!isValid())
    return {};
  const JsonDocument::Node &node = doc->nodes[index];
  return std::string_view(doc->strings).substr(node.keyOffset, node.keyLength);
}

JsonValue JsonValue::find(std::string_view name) const {
  if (!is(JsonKind::Object))
    return {};
  for (JsonValue member = firstChild(); member.isValid();
       member = member.nextSibling())
    if (member.key() == name)
      return member;
  return {};
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

JsonValue JsonDocument::root() const {
  if (nodes.empty())
    return {};
  return JsonValue(this, 0, nodes[0].end);
}

/// Recursive descent bounded by Limits::maxDepth, writing nodes in document
/// order; each container's `end` is patched once its children are parsed.
class JsonParser {
public:
  JsonParser(JsonDocument &doc, std::string_view text,
             const JsonDocument::Limits &limits, std::string &error)
      : doc(doc), text(text), limits(limits), error(error) {}

  bool run() {
    skipWhitespace();
    if (!parseValue(0, 0, 0))
      return false;
    skipWhitespace();
    if (pos != text.size())
      return fail("unexpected content after the top-level value");
    return true;
  }

private:
  bool fail(const char *what) {
    error = format("at byte %zu: %s", pos, what);
    return false;
  }

  void skipWhitespace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  bool addNode(JsonKind kind, uint32_t keyOffset, uint32_t keyLength,
               uint32_t &index) {
    if (doc.nodes.size() >= limits.maxNodes)
      return fail("too many values");
    index = static_cast<uint32_t>(doc.nodes.size());
    JsonDocument::Node node;
    node.kind = kind;
    node.flag = false;
    node.keyOffset = keyOffset;
    node.keyLength = keyLength;
    node.integer = 0;
    doc.nodes.push_back(node);
    return true;
  }

  bool parseValue(unsigned depth, uint32_t keyOffset, uint32_t keyLength) {
    if (pos >= text.size())
      return fail("unexpected end of input, expected a value");
    uint32_t index;
    char c = text[pos];
    switch (c) {
    case '{':
    case '[':
      return parseContainer(depth, keyOffset, keyLength);
    case '"': {
      uint32_t offset, length;
      if (!parseString(offset, length) ||
          !addNode(JsonKind::String, keyOffset, keyLength, index))
        return false;
      doc.nodes[index].stringOffset = offset;
      doc.nodes[index].size = length;
      break;
    }
    case 't':
    case 'f':
    case 'n': {
      bool isTrue = consumeWord("true");
      bool isFalse = !isTrue && consumeWord("false");
      bool isNull = !isTrue && !isFalse && consumeWord("null");
      if (!isTrue && !isFalse && !isNull)
        return fail("invalid literal");
      if (!addNode(isNull ? JsonKind::Null : JsonKind::Bool, keyOffset,
                   keyLength, index))
        return false;
      doc.nodes[index].flag = isTrue;
      break;
    }
    default:
      if (c != '-' && (c < '0' || c > '9'))
        return fail("expected a value");
      if (!addNode(JsonKind::Number, keyOffset, keyLength, index) ||
          !parseNumber(index))
        return false;
      break;
    }
    doc.nodes[index].end = index + 1;
    return true;
  }

  bool parseContainer(unsigned depth, uint32_t keyOffset, uint32_t keyLength) {
    if (depth >= limits.maxDepth)
      return fail("nesting too deep");
    bool isObject = text[pos] == '{';
    char close = isObject ? '}' : ']';
    uint32_t index;
    if (!addNode(isObject ? JsonKind::Object : JsonKind::Array, keyOffset,
                 keyLength, index))
      return false;
    ++pos;
    skipWhitespace();
    uint32_t count = 0;
    if (pos < text.size() && text[pos] == close) {
      ++pos;
    } else {
      while (true) {
        uint32_t memberKeyOffset = 0, memberKeyLength = 0;
        if (isObject) {
          if (pos >= text.size() || text[pos] != '"')
            return fail("expected a string key");
          if (!parseString(memberKeyOffset, memberKeyLength))
            return false;
          skipWhitespace();
          if (pos >= text.size() || text[pos] != ':')
            return fail("expected ':' after an object key");
          ++pos;
          skipWhitespace();
        }
        if (!parseValue(depth + 1, memberKeyOffset, memberKeyLength))
          return false;
        ++count;
        skipWhitespace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          skipWhitespace();
          continue;
        }
        if (pos < text.size() && text[pos] == close) {
          ++pos;
          break;
        }
        return fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
    JsonDocument::Node &node = doc.nodes[index];
    node.size = count;
    node.end = static_cast<uint32_t>(doc.nodes.size());
    return !isObject || checkDuplicateKeys(index);
  }

  bool checkDuplicateKeys(uint32_t index) {
    keys.clear();
    uint32_t end = doc.nodes[index].end;
    std::string_view strings = doc.strings;
    for (uint32_t child = index + 1; child < end; child = doc.nodes[child].end)
      keys.push_back(strings.substr(doc.nodes[child].keyOffset,
                                    doc.nodes[child].keyLength));
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup == keys.end())
      return true;
    error = "duplicate key " + quote(*dup);
    return false;
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

  bool parseHex4(uint32_t &value) {
    if (text.size() - pos < 4)
      return fail("truncated \\u escape");
    value = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = hexValue(text[pos + i]);
      if (digit < 0)
        return fail("invalid \\u escape");
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    pos += 4;
    return true;
  }

  void appendUtf8(uint32_t cp) {
    std::string &out = doc.strings;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  /// Length of the well-formed UTF-8 sequence at `pos` (lead byte >= 0x80),
  /// or 0 (overlong forms, surrogates and code points past U+10FFFF fail).
  size_t utf8SequenceLength() const {
    auto byte = [&](size_t i) -> unsigned {
      return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i])
                                   : 0;
    };
    auto cont = [](unsigned b, unsigned lo = 0x80, unsigned hi = 0xBF) {
      return b >= lo && b <= hi;
    };
    unsigned b0 = byte(0);
    if (b0 >= 0xC2 && b0 <= 0xDF)
      return cont(byte(1)) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
      unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
      return cont(byte(1), lo, hi) && cont(byte(2)) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
      unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
      return cont(byte(1), lo, hi) && cont(byte(2)) && cont(byte(3)) ? 4 : 0;
    }
    return 0;
  }

  bool parseString(uint32_t &offset, uint32_t &length) {
    ++pos; // The opening quote.
    size_t start = doc.strings.size();
    while (true) {
      if (pos >= text.size())
        return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"') {
        ++pos;
        break;
      }
      if (c < 0x20)
        return fail("control character in a string");
      if (c >= 0x80) {
        size_t n = utf8SequenceLength();
        if (n == 0)
          return fail("invalid UTF-8 in a string");
        doc.strings.append(text.data() + pos, n);
        pos += n;
        continue;
      }
      if (c != '\\') {
        // Copy the run of plain characters in one go.
        size_t runEnd = pos + 1;
        while (runEnd < text.size()) {
          unsigned char d = static_cast<unsigned char>(text[runEnd]);
          if (d == '"' || d == '\\' || d < 0x20 || d >= 0x80)
            break;
          ++runEnd;
        }
        doc.strings.append(text.data() + pos, runEnd - pos);
        pos = runEnd;
        continue;
      }
      ++pos;
      if (pos >= text.size())
        return fail("unterminated escape");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        doc.strings += e;
        break;
      case 'b':
        doc.strings += '\b';
        break;
      case 'f':
        doc.strings += '\f';
        break;
      case 'n':
        doc.strings += '\n';
        break;
      case 'r':
        doc.strings += '\r';
        break;
      case 't':
        doc.strings += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return fail("unpaired low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (!consumeWord("\\u") || !parseHex4(low) || low < 0xDC00 ||
              low > 0xDFFF)
            return fail("unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(cp);
        break;
      }
      default:
        --pos;
        return fail("invalid escape");
      }
    }
    if (doc.strings.size() > UINT32_MAX)
      return fail("strings too long");
    offset = static_cast<uint32_t>(start);
    length = static_cast<uint32_t>(doc.strings.size() - start);
    return true;
  }

  bool parseNumber(uint32_t index) {
    size_t start = pos;
    auto isDigit = [&](size_t i) {
      return i < text.size() && text[i] >= '0' && text[i] <= '9';
    };
    if (text[pos] == '-')
      ++pos;
    if (!isDigit(pos))
      return fail("expected a digit");
    if (text[pos] == '0') {
      ++pos;
      if (isDigit(pos))
        return fail("leading zero in a number");
    } else {
      while (isDigit(pos))
        ++pos;
    }
    bool integral = true;
    if (pos < text.size() && text[pos] == '.') {
      integral = false;
      ++pos;
      if (!isDigit(pos))
        return fail("expected a digit after '.'");
      while (isDigit(pos))
        ++pos;
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      integral = false;
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!isDigit(pos))
        return fail("expected a digit in the exponent");
      while (isDigit(pos))
        ++pos;
    }
    JsonDocument::Node &node = doc.nodes[index];
    const char *first = text.data() + start;
    const char *last = text.data() + pos;
    if (integral) {
      int64_t value;
      auto result = std::from_chars(first, last, value);
      if (result.ec == std::errc() && result.ptr == last) {
        node.flag = true;
        node.integer = value;
        return true;
      }
      // Too large for int64: keep it as a double, not an integer.
    }
    double value;
    auto result = std::from_chars(first, last, value);
    if (result.ec != std::errc() || result.ptr != last) {
      pos = start;
      return fail("number out of range");
    }
    node.number = value;
    return true;
  }

  JsonDocument &doc;
  std::string_view text;
  const JsonDocument::Limits &limits;
  std::string &error;
  size_t pos = 0;
  std::vector<std::string_view> keys;
};

bool JsonDocument::parse(std::string_view text, const Limits &limits,
                         std::string &error) {
  nodes.clear();
  strings.clear();
  if (text.size() >= UINT32_MAX) {
    error = "document too large";
    return false;
  }
  JsonParser parser(*this, text, limits, error);
  if (parser.run())
    return true;
  nodes.clear();
  strings.clear();
  return false;
}

} // namespace attnrt
