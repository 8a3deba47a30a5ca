//===- Value.cpp - Python semantics of chat-template values ---------------===//

#include "chat/Value.h"

#include "tokenizer/Utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace attnrt;
using namespace attnrt::chat;

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

const Value *Dict::find(std::string_view key) const {
  for (const auto &entry : entries)
    if (entry.first == key)
      return &entry.second;
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto &entry : entries)
    if (entry.first == key) {
      entry.second = std::move(value);
      return;
    }
  entries.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.text = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.tag = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.tag = Kind::Bool;
  v.i = b ? 1 : 0; // arithmetic reads a bool as the int it is in Python
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.tag = Kind::Int;
  v.i = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.tag = Kind::Float;
  v.f = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.tag = Kind::String;
  v.text = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(ValueList items, bool tuple) {
  Value v;
  v.tag = Kind::List;
  v.tuple = tuple;
  uint32_t depth = 0;
  for (const Value &item : items) {
    depth = std::max(depth, item.nesting);
    v.hasNamespace = v.hasNamespace || item.hasNamespace;
  }
  v.nesting = depth + 1;
  v.items = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::dict(Dict entries) {
  Value v;
  v.tag = Kind::Dict;
  uint32_t depth = 0;
  for (const auto &entry : entries.entries) {
    depth = std::max(depth, entry.second.nesting);
    v.hasNamespace = v.hasNamespace || entry.second.hasNamespace;
  }
  v.nesting = depth + 1;
  v.dictPtr = std::make_shared<Dict>(std::move(entries));
  return v;
}

void Value::refreshNesting() {
  if (tag != Kind::Dict)
    return;
  uint32_t depth = 0;
  hasNamespace = false;
  for (const auto &entry : dictPtr->entries) {
    depth = std::max(depth, entry.second.nesting);
    hasNamespace = hasNamespace || entry.second.hasNamespace;
  }
  nesting = depth + 1;
}

Value Value::newNamespace(Dict entries) {
  Value v = dict(std::move(entries));
  v.tag = Kind::Namespace;
  v.hasNamespace = true;
  return v;
}

Value Value::macro(const MacroNode *node) {
  Value v;
  v.tag = Kind::Macro;
  v.macroPtr = node;
  return v;
}

Value Value::function(Function f) {
  Value v;
  v.tag = Kind::Function;
  v.fn = f;
  return v;
}

const std::string &Value::asString() const {
  static const std::string empty;
  return text ? *text : empty;
}

const ValueList &Value::asList() const {
  static const ValueList empty;
  return items ? *items : empty;
}

const Dict &Value::asDict() const {
  static const Dict empty;
  return dictPtr ? *dictPtr : empty;
}

//===----------------------------------------------------------------------===//
// Python semantics
//===----------------------------------------------------------------------===//

bool Value::truthy() const {
  switch (tag) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
  case Kind::Int:
    return i != 0;
  case Kind::Float:
    return f != 0.0;
  case Kind::String:
    return !text->empty();
  case Kind::List:
    return !items->empty();
  case Kind::Dict:
    return !dictPtr->entries.empty();
  case Kind::Namespace:
  case Kind::Macro:
  case Kind::Function:
    return true;
  }
  return false;
}

const char *Value::typeName() const {
  switch (tag) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return tuple ? "tuple" : "list";
  case Kind::Dict:
    return "dict";
  case Kind::Namespace:
    return "Namespace";
  case Kind::Macro:
    return "Macro";
  case Kind::Function:
    return "builtin_function_or_method";
  }
  return "object";
}

void attnrt::chat::appendFloatRepr(std::string &out, double value) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  // The shortest round-trip digits, then Python's layout of them.
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, value,
                              std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(result.ptr - buf));
  size_t e = sci.find('e');
  std::string_view mantissa = sci.substr(0, e);
  int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative)
    mantissa.remove_prefix(1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.')
      digits += c;
  if (negative)
    out += '-';
  if (exponent >= -4 && exponent < 16) {
    int point = exponent + 1; // digits before the decimal point
    if (point <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-point), '0');
      out += digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(point) - digits.size(), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(point));
      out += '.';
      out.append(digits, static_cast<size_t>(point), std::string::npos);
    }
    return;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1, std::string::npos);
  }
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  out += exp;
}

/// Whether repr() shows code point `cp` as is (Python's str.isprintable(),
/// for the characters templates meet; other format and separator
/// characters are escaped).
static bool isPrintable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD)
    return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
      (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x2064) ||
      cp == 0x3000 || cp == 0xFEFF)
    return false;
  return true;
}

static void appendStringRepr(std::string &out, std::string_view s) {
  char quote = '\'';
  if (s.find('\'') != std::string_view::npos &&
      s.find('"') == std::string_view::npos)
    quote = '"';
  out += quote;
  for (size_t pos = 0; pos < s.size();) {
    size_t length = utf8CharLength(static_cast<unsigned char>(s[pos]));
    uint32_t cp = decodeUtf8(s, pos);
    if (cp == static_cast<unsigned char>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!isPrintable(cp)) {
      char buf[16];
      if (cp < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      else if (cp < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", cp);
      out += buf;
    } else {
      out.append(s, pos, length);
    }
    pos += length;
  }
  out += quote;
}

void Value::appendStr(std::string &out) const {
  switch (tag) {
  case Kind::Undefined:
    return;
  case Kind::String:
    out += *text;
    return;
  default:
    appendRepr(out);
  }
}

std::string Value::str() const {
  std::string out;
  appendStr(out);
  return out;
}

void Value::appendRepr(std::string &out) const {
  switch (tag) {
  case Kind::Undefined:
    return;
  case Kind::None:
    out += "None";
    return;
  case Kind::Bool:
    out += i ? "True" : "False";
    return;
  case Kind::Int:
    out += std::to_string(i);
    return;
  case Kind::Float:
    appendFloatRepr(out, f);
    return;
  case Kind::String:
    appendStringRepr(out, *text);
    return;
  case Kind::List: {
    out += tuple ? '(' : '[';
    for (size_t k = 0; k < items->size(); ++k) {
      if (k)
        out += ", ";
      (*items)[k].appendRepr(out);
    }
    if (tuple && items->size() == 1)
      out += ',';
    out += tuple ? ')' : ']';
    return;
  }
  case Kind::Dict:
  case Kind::Namespace: {
    if (tag == Kind::Namespace)
      out += "<Namespace ";
    out += '{';
    bool first = true;
    for (const auto &entry : dictPtr->entries) {
      if (!first)
        out += ", ";
      first = false;
      appendStringRepr(out, entry.first);
      out += ": ";
      entry.second.appendRepr(out);
    }
    out += '}';
    if (tag == Kind::Namespace)
      out += '>';
    return;
  }
  case Kind::Macro:
    out += "<Macro>";
    return;
  case Kind::Function:
    out += "<built-in function>";
    return;
  }
}

bool Value::equals(const Value &other) const {
  if (isNumber() && other.isNumber()) {
    if (isIntegral() && other.isIntegral())
      return i == other.i;
    return asDouble() == other.asDouble();
  }
  if (tag != other.tag)
    return false;
  switch (tag) {
  case Kind::Undefined:
  case Kind::None:
    return true;
  case Kind::String:
    return *text == *other.text;
  case Kind::List: {
    if (tuple != other.tuple || items->size() != other.items->size())
      return false;
    for (size_t k = 0; k < items->size(); ++k)
      if (!(*items)[k].equals((*other.items)[k]))
        return false;
    return true;
  }
  case Kind::Dict: {
    if (dictPtr->entries.size() != other.dictPtr->entries.size())
      return false;
    for (const auto &entry : dictPtr->entries) {
      const Value *match = other.dictPtr->find(entry.first);
      if (!match || !entry.second.equals(*match))
        return false;
    }
    return true;
  }
  case Kind::Namespace:
    return dictPtr == other.dictPtr;
  case Kind::Macro:
    return macroPtr == other.macroPtr;
  case Kind::Function:
    return fn == other.fn;
  default:
    return false;
  }
}

/// Value::fromJson for nlohmann's sorted and insertion-ordered documents.
template <typename JsonT> static Value valueFromJson(const JsonT &json) {
  switch (json.type()) {
  case JsonT::value_t::null:
    return Value::none();
  case JsonT::value_t::boolean:
    return Value::boolean(json.template get<bool>());
  case JsonT::value_t::number_integer:
    return Value::integer(json.template get<int64_t>());
  case JsonT::value_t::number_unsigned: {
    // Above int64 a number is a double, as parseJson reads it.
    uint64_t u = json.template get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX))
      return Value::integer(static_cast<int64_t>(u));
    return Value::number(static_cast<double>(u));
  }
  case JsonT::value_t::number_float:
    return Value::number(json.template get<double>());
  case JsonT::value_t::string:
    return Value::string(json.template get<std::string>());
  case JsonT::value_t::array: {
    ValueList items;
    items.reserve(json.size());
    for (const JsonT &item : json)
      items.push_back(valueFromJson(item));
    return Value::list(std::move(items));
  }
  case JsonT::value_t::object: {
    Dict entries;
    entries.entries.reserve(json.size());
    for (auto it = json.begin(); it != json.end(); ++it)
      entries.entries.emplace_back(it.key(), valueFromJson(it.value()));
    return Value::dict(std::move(entries));
  }
  default:
    return Value::none();
  }
}

Value Value::fromJson(const Json &json) { return valueFromJson(json); }

bool Value::parseJson(std::string_view text, Value &out, std::string &error) {
  // The strict parse checks the text (duplicate keys, depth, count, range);
  // a text it accepts is read again keeping the keys in order.
  Json checked;
  if (!attnrt::parseJson(text, checked, error))
    return false;
  checked = nullptr;
  out = valueFromJson(nlohmann::ordered_json::parse(text));
  return true;
}

//===----------------------------------------------------------------------===//
// json.dumps
//===----------------------------------------------------------------------===//

static void appendJsonString(std::string &out, std::string_view s,
                             bool ensureAscii) {
  out += '"';
  for (size_t pos = 0; pos < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[pos]);
    size_t length = utf8CharLength(c);
    char buf[16];
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else if (c >= 0x80 && ensureAscii) {
        uint32_t cp = decodeUtf8(s, pos);
        if (cp >= 0x10000) {
          cp -= 0x10000;
          std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                        0xDC00 + (cp & 0x3FF));
        } else {
          std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        }
        out += buf;
      } else {
        out.append(s, pos, length);
      }
    }
    pos += length;
  }
  out += '"';
}

static bool appendJsonAt(std::string &out, const Value &value,
                         const JsonDumpOptions &options, int level,
                         std::string &error) {
  std::string itemSep = options.customSeparators ? options.itemSeparator
                        : options.indent >= 0    ? ","
                                                 : ", ";
  std::string keySep = options.customSeparators ? options.keySeparator : ": ";
  auto newline = [&](int at) {
    if (options.indent < 0)
      return;
    out += '\n';
    out.append(static_cast<size_t>(options.indent) * static_cast<size_t>(at),
               ' ');
  };
  switch (value.kind()) {
  case Value::Kind::None:
    out += "null";
    return true;
  case Value::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return true;
  case Value::Kind::Int:
    out += std::to_string(value.asInt());
    return true;
  case Value::Kind::Float: {
    double f = value.asDouble();
    if (std::isnan(f))
      out += "NaN";
    else if (std::isinf(f))
      out += f < 0 ? "-Infinity" : "Infinity";
    else
      appendFloatRepr(out, f);
    return true;
  }
  case Value::Kind::String:
    appendJsonString(out, value.asString(), options.ensureAscii);
    return true;
  case Value::Kind::List: {
    const ValueList &items = value.asList();
    if (items.empty()) {
      out += "[]";
      return true;
    }
    out += '[';
    for (size_t k = 0; k < items.size(); ++k) {
      if (k)
        out += itemSep;
      newline(level + 1);
      if (!appendJsonAt(out, items[k], options, level + 1, error))
        return false;
    }
    newline(level);
    out += ']';
    return true;
  }
  case Value::Kind::Dict: {
    std::vector<const std::pair<std::string, Value> *> entries;
    for (const auto &entry : value.asDict().entries)
      entries.push_back(&entry);
    if (entries.empty()) {
      out += "{}";
      return true;
    }
    if (options.sortKeys)
      std::sort(entries.begin(), entries.end(), // keys are unique
                [](auto *a, auto *b) { return a->first < b->first; });
    out += '{';
    for (size_t k = 0; k < entries.size(); ++k) {
      if (k)
        out += itemSep;
      newline(level + 1);
      appendJsonString(out, entries[k]->first, options.ensureAscii);
      out += keySep;
      if (!appendJsonAt(out, entries[k]->second, options, level + 1, error))
        return false;
    }
    newline(level);
    out += '}';
    return true;
  }
  default:
    error = std::string("Object of type ") + value.typeName() +
            " is not JSON serializable";
    return false;
  }
}

bool attnrt::chat::appendJson(std::string &out, const Value &value,
                              const JsonDumpOptions &options,
                              std::string &error) {
  return appendJsonAt(out, value, options, 0, error);
}

//===----------------------------------------------------------------------===//
// UTF-8 strings
//===----------------------------------------------------------------------===//

bool attnrt::chat::isPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
         cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t attnrt::chat::codePointCount(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<size_t> attnrt::chat::codePointOffsets(std::string_view s) {
  std::vector<size_t> offsets;
  for (size_t pos = 0; pos < s.size();
       pos += utf8CharLength(static_cast<unsigned char>(s[pos])))
    offsets.push_back(pos);
  offsets.push_back(s.size());
  return offsets;
}

/// The start of the code point that ends at s[end - 1].
static size_t previousStart(std::string_view s, size_t end) {
  size_t pos = end - 1;
  while (pos > 0 && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80)
    --pos;
  return pos;
}

std::string_view attnrt::chat::stripPython(std::string_view s, bool left,
                                           bool right,
                                           const std::string *chars) {
  auto strips = [&](uint32_t cp) {
    if (!chars)
      return isPythonSpace(cp);
    for (size_t pos = 0; pos < chars->size();
         pos += utf8CharLength(static_cast<unsigned char>((*chars)[pos])))
      if (decodeUtf8(*chars, pos) == cp)
        return true;
    return false;
  };
  size_t begin = 0, end = s.size();
  while (left && begin < end && strips(decodeUtf8(s, begin)))
    begin += utf8CharLength(static_cast<unsigned char>(s[begin]));
  while (right && end > begin) {
    size_t start = previousStart(s, end);
    if (!strips(decodeUtf8(s, start)))
      break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

std::string attnrt::chat::asciiUpper(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'a' && c <= 'z')
      c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string attnrt::chat::asciiLower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}
