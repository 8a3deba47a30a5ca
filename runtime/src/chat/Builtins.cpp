//===- Builtins.cpp - filters, tests and methods of chat templates --------===//

#include "chat/Builtins.h"

#include "Support.h"
#include "tokenizer/Utf8.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

using namespace attnrt;
using namespace attnrt::chat;

//===----------------------------------------------------------------------===//
// Host
//===----------------------------------------------------------------------===//

bool Host::fail(std::string message) {
  if (error.empty())
    error = std::move(message);
  return false;
}

bool Host::charge(uint64_t n) {
  bytes += n;
  if (bytes <= maxBytes)
    return true;
  return fail(format("the template built more than %llu bytes of values "
                     "(a runaway loop?)",
                     static_cast<unsigned long long>(maxBytes)));
}

bool Host::setString(Value &out, std::string s) {
  if (!charge(s.size()))
    return false;
  out = Value::string(std::move(s));
  return true;
}

bool Host::checkDepth(const Value &value) {
  if (value.depth() <= maxDepth)
    return true;
  return fail(format("values nested deeper than %u", maxDepth));
}

bool Host::setList(Value &out, ValueList items, bool tuple) {
  if (!charge(items.size() * sizeof(Value)))
    return false;
  Value list = Value::list(std::move(items), tuple);
  if (!checkDepth(list))
    return false;
  out = std::move(list);
  return true;
}

bool Host::setDict(Value &out, Dict entries, bool isNamespace) {
  if (!charge(entries.entries.size() * (sizeof(Value) + 32)))
    return false;
  Value dict = isNamespace ? Value::newNamespace(std::move(entries))
                           : Value::dict(std::move(entries));
  if (!checkDepth(dict))
    return false;
  out = std::move(dict);
  return true;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// Binds positional, then keyword arguments to the parameters `names` of
/// `what`, as Python would; a parameter not given stays null.
bool bindArgs(Host &host, const char *what, const Args &args,
              std::initializer_list<const char *> names, const Value **out) {
  size_t count = names.size();
  for (size_t k = 0; k < count; ++k)
    out[k] = nullptr;
  if (args.positional.size() > count)
    return host.fail(format("%s takes at most %zu argument(s), %zu given", what,
                            count, args.positional.size()));
  for (size_t k = 0; k < args.positional.size(); ++k)
    out[k] = &args.positional[k];
  for (const auto &keyword : args.keywords) {
    size_t k = 0;
    for (const char *name : names) {
      if (keyword.first == name)
        break;
      ++k;
    }
    if (k == count)
      return host.fail(format("%s got an unexpected keyword argument ", what) +
                       quote(keyword.first));
    if (out[k])
      return host.fail(format("%s got multiple values for argument ", what) +
                       quote(keyword.first));
    out[k] = &keyword.second;
  }
  return true;
}

/// An optional integer argument.
bool intArg(Host &host, const char *what, const Value *arg, int64_t fallback,
            int64_t &out) {
  if (!arg || arg->isNone() || arg->isUndefined()) {
    out = fallback;
    return true;
  }
  if (!arg->isIntegral())
    return host.fail(
        format("%s: expected an integer, not '%s'", what, arg->typeName()));
  out = arg->asInt();
  return true;
}

bool boolArg(const Value *arg, bool fallback) {
  return arg ? arg->truthy() : fallback;
}

/// An optional string argument; null when absent or None.
bool stringArg(Host &host, const char *what, const Value *arg,
               const std::string *&out) {
  out = nullptr;
  if (!arg || arg->isNone())
    return true;
  if (!arg->isString())
    return host.fail(
        format("%s: expected a string, not '%s'", what, arg->typeName()));
  out = &arg->asString();
  return true;
}

/// jinja2's attribute getter: "a.b.0" looks up a, then b, then item 0.
bool getPath(Host &host, const Value &item, const std::string &path,
             Value &out) {
  out = item;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(
        start, dot == std::string::npos ? std::string::npos : dot - start);
    Value next;
    bool numeric = !part.empty() &&
                   part.find_first_not_of("0123456789") == std::string::npos;
    if (numeric && part.size() < 18
            ? !getItem(host, out, Value::integer(std::atoll(part.c_str())),
                       next)
            : !getAttribute(host, out, part, next))
      return false;
    out = std::move(next);
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return true;
}

/// The code points of `s` as one-character strings.
ValueList characters(std::string_view s) {
  ValueList out;
  for (size_t pos = 0; pos < s.size();) {
    size_t length = utf8CharLength(static_cast<unsigned char>(s[pos]));
    out.push_back(Value::string(std::string(s.substr(pos, length))));
    pos += length;
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = asciiLower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z')
    out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

/// Python's str.title(): a letter after a letter is lowered, any other
/// letter raised. Only ASCII letters change case; other non-ASCII code
/// points count as letters, so "élan" stays "élan".
std::string pythonTitle(std::string_view s) {
  std::string out;
  bool previousCased = false;
  for (size_t pos = 0; pos < s.size(); ++pos) {
    unsigned char c = static_cast<unsigned char>(s[pos]);
    bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    if (upper || lower) {
      char mapped = static_cast<char>(c);
      if (previousCased && upper)
        mapped = static_cast<char>(c - 'A' + 'a');
      else if (!previousCased && lower)
        mapped = static_cast<char>(c - 'a' + 'A');
      out += mapped;
      previousCased = true;
    } else {
      out += static_cast<char>(c);
      if (c < 0x80)
        previousCased = false;
      else if ((c & 0xC0) != 0x80)
        previousCased = true;
    }
  }
  return out;
}

/// Python's str.split(sep, maxsplit); sep null splits on whitespace runs.
bool splitString(Host &host, std::string_view s, const std::string *sep,
                 int64_t maxSplit, bool fromRight, ValueList &out) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty())
      return host.fail("split: empty separator");
    if (!fromRight) {
      size_t start = 0;
      while (maxSplit < 0 || static_cast<int64_t>(parts.size()) < maxSplit) {
        size_t at = s.find(*sep, start);
        if (at == std::string_view::npos)
          break;
        parts.emplace_back(s.substr(start, at - start));
        start = at + sep->size();
      }
      parts.emplace_back(s.substr(start));
    } else {
      size_t end = s.size();
      std::vector<std::string> reversed;
      while (maxSplit < 0 || static_cast<int64_t>(reversed.size()) < maxSplit) {
        if (end < sep->size())
          break;
        size_t at = s.rfind(*sep, end - sep->size());
        if (at == std::string_view::npos)
          break;
        reversed.emplace_back(
            s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
      }
      reversed.emplace_back(s.substr(0, end));
      parts.assign(reversed.rbegin(), reversed.rend());
    }
  } else {
    // Whitespace runs separate; none are kept at the ends, except after the
    // last split of a limited one.
    std::vector<std::pair<size_t, size_t>> words;
    for (size_t pos = 0; pos < s.size();) {
      size_t length = utf8CharLength(static_cast<unsigned char>(s[pos]));
      if (isPythonSpace(decodeUtf8(s, pos))) {
        pos += length;
        continue;
      }
      size_t start = pos;
      while (pos < s.size() && !isPythonSpace(decodeUtf8(s, pos)))
        pos += utf8CharLength(static_cast<unsigned char>(s[pos]));
      words.emplace_back(start, pos);
    }
    size_t n = words.size();
    if (maxSplit < 0 || static_cast<size_t>(maxSplit) + 1 >= n) {
      for (auto [a, b] : words)
        parts.emplace_back(s.substr(a, b - a));
    } else if (!fromRight) {
      size_t keep = static_cast<size_t>(maxSplit);
      for (size_t k = 0; k < keep; ++k)
        parts.emplace_back(
            s.substr(words[k].first, words[k].second - words[k].first));
      parts.emplace_back(
          stripPython(s.substr(words[keep].first), false, false, nullptr));
    } else {
      size_t keep = static_cast<size_t>(maxSplit);
      size_t first = n - keep;
      parts.emplace_back(s.substr(0, words[first - 1].second));
      for (size_t k = first; k < n; ++k)
        parts.emplace_back(
            s.substr(words[k].first, words[k].second - words[k].first));
      parts.front() =
          std::string(stripPython(parts.front(), true, false, nullptr));
    }
  }
  uint64_t size = 0;
  for (auto &part : parts) {
    size += part.size();
    out.push_back(Value::string(std::move(part)));
  }
  return host.charge(size);
}

/// Python's str.replace(old, new, count).
std::string replaceString(std::string_view s, std::string_view from,
                          std::string_view to, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (from.empty()) {
    // Inserts `to` around every character.
    size_t pos = 0;
    while (true) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (pos >= s.size())
        break;
      size_t length = utf8CharLength(static_cast<unsigned char>(s[pos]));
      out.append(s, pos, length);
      pos += length;
    }
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(from, start);
    if (at == std::string_view::npos)
      break;
    out.append(s, start, at - start);
    out += to;
    start = at + from.size();
    ++done;
  }
  out.append(s, start, std::string_view::npos);
  return out;
}

/// Python's str.splitlines() (without the line ends).
std::vector<std::string> splitLines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0, pos = 0;
  while (pos < s.size()) {
    size_t length = utf8CharLength(static_cast<unsigned char>(s[pos]));
    uint32_t cp = decodeUtf8(s, pos);
    bool isBreak = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C ||
                   (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 || cp == 0x2028 ||
                   cp == 0x2029;
    if (!isBreak) {
      pos += length;
      continue;
    }
    lines.emplace_back(s.substr(start, pos - start));
    pos += length;
    if (cp == '\r' && pos < s.size() && s[pos] == '\n')
      ++pos;
    start = pos;
  }
  if (start < s.size())
    lines.emplace_back(s.substr(start));
  return lines;
}

/// A key for sorting and unique: strings lowered unless case sensitive.
Value sortKey(const Value &v, bool caseSensitive) {
  if (!caseSensitive && v.isString())
    return Value::string(asciiLower(v.asString()));
  return v;
}

/// `items` sorted by their first member, stably as Python's sorted() (ties
/// keep their order: std::sort on (key, position), since std::stable_sort's
/// buffer is deprecated in this libstdc++).
bool sortValues(Host &host, std::vector<std::pair<Value, Value>> &items,
                bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t k = 0; k < order.size(); ++k)
    order[k] = k;
  bool ok = true;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int c = 0;
    if (ok && !compareValues(host, items[a].first, items[b].first, c))
      ok = false;
    if (!ok || c == 0)
      return a < b;
    return reverse ? c > 0 : c < 0;
  });
  if (!ok)
    return false;
  std::vector<std::pair<Value, Value>> sorted;
  sorted.reserve(items.size());
  for (size_t k : order)
    sorted.push_back(std::move(items[k]));
  items = std::move(sorted);
  return true;
}

//===----------------------------------------------------------------------===//
// Filters
//===----------------------------------------------------------------------===//

bool filterAbs(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "filter 'abs'", args, {}, none))
    return false;
  if (in.isIntegral()) {
    if (in.asInt() == INT64_MIN)
      return host.fail("integer overflow in abs");
    out = Value::integer(std::llabs(in.asInt()));
    return true;
  }
  if (in.kind() == Value::Kind::Float) {
    out = Value::number(std::fabs(in.asDouble()));
    return true;
  }
  return host.fail(format("bad operand type for abs(): '%s'", in.typeName()));
}

bool filterCapitalize(Host &host, const Value &in, const Args &args,
                      Value &out) {
  const Value *none[1];
  return bindArgs(host, "filter 'capitalize'", args, {}, none) &&
         host.setString(out, capitalize(in.str()));
}

bool filterDefault(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "filter 'default'", args, {"default_value", "boolean"},
                a))
    return false;
  bool useDefault = in.isUndefined() || (boolArg(a[1], false) && !in.truthy());
  out = useDefault ? (a[0] ? *a[0] : Value::string("")) : in;
  return true;
}

bool filterDictsort(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[3];
  if (!bindArgs(host, "filter 'dictsort'", args,
                {"case_sensitive", "by", "reverse"}, a))
    return false;
  if (!in.isDict())
    return host.fail(
        format("filter 'dictsort': expected a dict, not '%s'", in.typeName()));
  const std::string *by = nullptr;
  if (!stringArg(host, "filter 'dictsort'", a[1], by))
    return false;
  bool byValue = by && *by == "value";
  if (by && !byValue && *by != "key")
    return host.fail("filter 'dictsort': 'by' must be 'key' or 'value'");
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto &entry : in.asDict().entries) {
    Value pair = Value::list({Value::string(entry.first), entry.second}, true);
    keyed.emplace_back(
        sortKey(byValue ? entry.second : Value::string(entry.first),
                boolArg(a[0], false)),
        pair);
  }
  if (!sortValues(host, keyed, boolArg(a[2], false)))
    return false;
  ValueList items;
  for (auto &k : keyed)
    items.push_back(std::move(k.second));
  return host.setList(out, std::move(items));
}

bool filterEscape(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "filter 'escape'", args, {}, none))
    return false;
  std::string s;
  for (char c : in.str()) {
    switch (c) {
    case '&':
      s += "&amp;";
      break;
    case '<':
      s += "&lt;";
      break;
    case '>':
      s += "&gt;";
      break;
    case '"':
      s += "&#34;";
      break;
    case '\'':
      s += "&#39;";
      break;
    default:
      s += c;
    }
  }
  return host.setString(out, std::move(s));
}

bool filterFirstLast(Host &host, const Value &in, const Args &args, Value &out,
                     bool last) {
  const Value *none[1];
  if (!bindArgs(host, last ? "filter 'last'" : "filter 'first'", args, {},
                none))
    return false;
  ValueList items;
  if (!iterate(host, in, items))
    return false;
  if (items.empty()) {
    out = Value::undefined(last ? "No last item, sequence was empty."
                                : "No first item, sequence was empty.");
    return true;
  }
  out = last ? items.back() : items.front();
  return true;
}

bool filterFirst(Host &host, const Value &in, const Args &args, Value &out) {
  return filterFirstLast(host, in, args, out, false);
}

bool filterLast(Host &host, const Value &in, const Args &args, Value &out) {
  return filterFirstLast(host, in, args, out, true);
}

/// Python's float(str), which allows surrounding whitespace and `_`.
bool parseFloat(std::string_view text, double &out) {
  std::string s(stripPython(text, true, true, nullptr));
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool filterFloat(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[1];
  if (!bindArgs(host, "filter 'float'", args, {"default"}, a))
    return false;
  double f = 0;
  if (in.isNumber())
    out = Value::number(in.asDouble());
  else if (in.isString() && parseFloat(in.asString(), f))
    out = Value::number(f);
  else
    out = a[0] ? *a[0] : Value::number(0.0);
  return true;
}

bool filterInt(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "filter 'int'", args, {"default", "base"}, a))
    return false;
  int64_t base = 10;
  if (!intArg(host, "filter 'int'", a[1], 10, base))
    return false;
  Value fallback = a[0] ? *a[0] : Value::integer(0);
  if (in.isIntegral()) {
    out = Value::integer(in.asInt());
    return true;
  }
  if (in.kind() == Value::Kind::Float) {
    double f = in.asDouble();
    out = std::isfinite(f) && std::fabs(f) < 9.2e18
              ? Value::integer(static_cast<int64_t>(f))
              : fallback;
    return true;
  }
  if (!in.isString() || base < 2 || base > 36) {
    out = fallback;
    return true;
  }
  std::string s(stripPython(in.asString(), true, true, nullptr));
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(s.c_str(), &end, static_cast<int>(base));
  if (!s.empty() && end == s.c_str() + s.size() && errno != ERANGE) {
    out = Value::integer(value);
    return true;
  }
  // jinja2 then tries int(float(value)).
  double f = 0;
  if (base == 10 && parseFloat(in.asString(), f) && std::isfinite(f) &&
      std::fabs(f) < 9.2e18)
    out = Value::integer(static_cast<int64_t>(f));
  else
    out = fallback;
  return true;
}

bool filterIndent(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[3];
  if (!bindArgs(host, "filter 'indent'", args, {"width", "first", "blank"}, a))
    return false;
  std::string indentation;
  if (a[0] && a[0]->isString()) {
    indentation = a[0]->asString();
  } else {
    int64_t width = 4;
    if (!intArg(host, "filter 'indent'", a[0], 4, width))
      return false;
    if (width > 0 && !host.charge(static_cast<uint64_t>(width)))
      return false;
    indentation.assign(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  std::vector<std::string> lines = splitLines(in.str() + "\n");
  std::string s;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k) {
      s += '\n';
      if (boolArg(a[2], false) || !lines[k].empty())
        s += indentation;
    }
    s += lines[k];
  }
  if (boolArg(a[1], false))
    s = indentation + s;
  return host.setString(out, std::move(s));
}

bool filterItems(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "filter 'items'", args, {}, none))
    return false;
  if (in.isUndefined())
    return host.setList(out, {});
  if (!in.isDict())
    return host.fail(format("filter 'items': can only get item pairs from a "
                            "mapping, not '%s'",
                            in.typeName()));
  ValueList items;
  for (const auto &entry : in.asDict().entries)
    items.push_back(
        Value::list({Value::string(entry.first), entry.second}, true));
  return host.setList(out, std::move(items));
}

bool filterJoin(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "filter 'join'", args, {"d", "attribute"}, a))
    return false;
  ValueList items;
  if (!iterate(host, in, items))
    return false;
  std::string separator = a[0] ? a[0]->str() : "";
  std::string s;
  for (size_t k = 0; k < items.size(); ++k) {
    if (k)
      s += separator;
    Value item = items[k];
    if (a[1] && !getPath(host, items[k], a[1]->str(), item))
      return false;
    item.appendStr(s);
    if (!host.charge(0))
      return false;
  }
  return host.setString(out, std::move(s));
}

bool lengthOf(Host &host, const Value &in, int64_t &n) {
  switch (in.kind()) {
  case Value::Kind::Undefined:
    n = 0;
    return true;
  case Value::Kind::String:
    n = static_cast<int64_t>(codePointCount(in.asString()));
    return true;
  case Value::Kind::List:
    n = static_cast<int64_t>(in.asList().size());
    return true;
  case Value::Kind::Dict:
    n = static_cast<int64_t>(in.asDict().entries.size());
    return true;
  default:
    return host.fail(format("object of type '%s' has no len()", in.typeName()));
  }
}

bool filterLength(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  int64_t n = 0;
  if (!bindArgs(host, "filter 'length'", args, {}, none) ||
      !lengthOf(host, in, n))
    return false;
  out = Value::integer(n);
  return true;
}

bool filterList(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  ValueList items;
  return bindArgs(host, "filter 'list'", args, {}, none) &&
         iterate(host, in, items) && host.setList(out, std::move(items));
}

bool filterLower(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  return bindArgs(host, "filter 'lower'", args, {}, none) &&
         host.setString(out, asciiLower(in.str()));
}

bool filterUpper(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  return bindArgs(host, "filter 'upper'", args, {}, none) &&
         host.setString(out, asciiUpper(in.str()));
}

bool filterMap(Host &host, const Value &in, const Args &args, Value &out) {
  ValueList items, mapped;
  if (in.truthy() && !iterate(host, in, items)) // as select: None maps to []
    return false;
  const Value *attribute = nullptr, *fallback = nullptr;
  Args rest;
  for (const auto &keyword : args.keywords) {
    if (keyword.first == "attribute")
      attribute = &keyword.second;
    else if (keyword.first == "default")
      fallback = &keyword.second;
    else
      rest.keywords.push_back(keyword);
  }
  if (attribute) {
    if (!args.positional.empty() || !rest.keywords.empty())
      return host.fail("filter 'map': attribute= takes no other arguments "
                       "but default=");
    for (const Value &item : items) {
      Value v;
      if (!getPath(host, item, attribute->str(), v))
        return false;
      mapped.push_back(v.isUndefined() && fallback ? *fallback : v);
    }
    return host.setList(out, std::move(mapped));
  }
  if (args.positional.empty() || !args.positional[0].isString())
    return host.fail("filter 'map' needs a filter name or attribute=");
  int filter = findFilter(args.positional[0].asString());
  if (filter < 0)
    return host.fail("unsupported filter " +
                     quote(args.positional[0].asString()) + " in map");
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  for (const Value &item : items) {
    Value v;
    if (!applyFilter(filter, host, item, rest, v))
      return false;
    mapped.push_back(std::move(v));
  }
  return host.setList(out, std::move(mapped));
}

bool filterMinMax(Host &host, const Value &in, const Args &args, Value &out,
                  bool max) {
  const Value *a[2];
  if (!bindArgs(host, max ? "filter 'max'" : "filter 'min'", args,
                {"case_sensitive", "attribute"}, a))
    return false;
  ValueList items;
  if (!iterate(host, in, items))
    return false;
  if (items.empty()) {
    out = Value::undefined("No aggregated item, sequence was empty.");
    return true;
  }
  const Value *best = nullptr;
  Value bestKey;
  for (const Value &item : items) {
    Value key = item;
    if (a[1] && !getPath(host, item, a[1]->str(), key))
      return false;
    key = sortKey(key, boolArg(a[0], false));
    int order = 0;
    if (best && !compareValues(host, key, bestKey, order))
      return false;
    if (!best || (max ? order > 0 : order < 0)) {
      best = &item;
      bestKey = key;
    }
  }
  out = *best;
  return true;
}

bool filterMax(Host &host, const Value &in, const Args &args, Value &out) {
  return filterMinMax(host, in, args, out, true);
}

bool filterMin(Host &host, const Value &in, const Args &args, Value &out) {
  return filterMinMax(host, in, args, out, false);
}

/// select, reject, selectattr, rejectattr.
bool selectItems(Host &host, const Value &in, const Args &args, Value &out,
                 bool keep, bool byAttribute) {
  const char *what =
      byAttribute ? (keep ? "filter 'selectattr'" : "filter 'rejectattr'")
                  : (keep ? "filter 'select'" : "filter 'reject'");
  if (!args.keywords.empty())
    return host.fail(format("%s takes no keyword arguments", what));
  size_t next = 0;
  std::string attribute;
  if (byAttribute) {
    if (args.positional.empty())
      return host.fail(format("%s needs an attribute name", what));
    attribute = args.positional[next++].str();
  }
  int test = -1;
  if (next < args.positional.size()) {
    const Value &name = args.positional[next++];
    test = name.isString() ? findTest(name.asString()) : -1;
    if (test < 0)
      return host.fail(format("%s: unsupported test ", what) +
                       quote(name.str()));
  }
  Args testArgs;
  testArgs.positional.assign(args.positional.begin() + static_cast<long>(next),
                             args.positional.end());
  ValueList items, kept;
  // jinja2 iterates only a truthy sequence (`if seq:`), so None selects [].
  if (in.truthy() && !iterate(host, in, items))
    return false;
  for (const Value &item : items) {
    Value subject = item;
    if (byAttribute && !getPath(host, item, attribute, subject))
      return false;
    bool passes = subject.truthy();
    if (test >= 0 && !applyTest(test, host, subject, testArgs, passes))
      return false;
    if (passes == keep)
      kept.push_back(item);
  }
  return host.setList(out, std::move(kept));
}

bool filterSelect(Host &host, const Value &in, const Args &args, Value &out) {
  return selectItems(host, in, args, out, true, false);
}

bool filterReject(Host &host, const Value &in, const Args &args, Value &out) {
  return selectItems(host, in, args, out, false, false);
}

bool filterSelectattr(Host &host, const Value &in, const Args &args,
                      Value &out) {
  return selectItems(host, in, args, out, true, true);
}

bool filterRejectattr(Host &host, const Value &in, const Args &args,
                      Value &out) {
  return selectItems(host, in, args, out, false, true);
}

bool filterReplace(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[3];
  if (!bindArgs(host, "filter 'replace'", args, {"old", "new", "count"}, a))
    return false;
  if (!a[0] || !a[1])
    return host.fail("filter 'replace' needs the old and the new string");
  int64_t count = -1;
  if (!intArg(host, "filter 'replace'", a[2], -1, count))
    return false;
  return host.setString(
      out, replaceString(in.str(), a[0]->str(), a[1]->str(), count));
}

bool filterReverse(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "filter 'reverse'", args, {}, none))
    return false;
  ValueList items;
  if (!iterate(host, in, items))
    return false;
  std::reverse(items.begin(), items.end());
  if (in.isString()) {
    std::string s;
    for (const Value &c : items)
      s += c.asString();
    return host.setString(out, std::move(s));
  }
  return host.setList(out, std::move(items));
}

bool filterRound(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "filter 'round'", args, {"precision", "method"}, a))
    return false;
  if (!in.isNumber())
    return host.fail(
        format("filter 'round': expected a number, not '%s'", in.typeName()));
  int64_t precision = 0;
  if (!intArg(host, "filter 'round'", a[0], 0, precision))
    return false;
  std::string method = a[1] ? a[1]->str() : "common";
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = in.asDouble() * scale;
  if (method == "common")
    x = std::nearbyint(x); // Python's round(): half to even
  else if (method == "ceil")
    x = std::ceil(x);
  else if (method == "floor")
    x = std::floor(x);
  else
    return host.fail("filter 'round': method must be 'common', 'ceil' or "
                     "'floor'");
  out = Value::number(x / scale);
  return true;
}

bool filterSafe(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "filter 'safe'", args, {}, none))
    return false;
  out = in;
  return true;
}

bool filterSort(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[3];
  if (!bindArgs(host, "filter 'sort'", args,
                {"reverse", "case_sensitive", "attribute"}, a))
    return false;
  ValueList items;
  if (!iterate(host, in, items))
    return false;
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value &item : items) {
    Value key = item;
    if (a[2] && !getPath(host, item, a[2]->str(), key))
      return false;
    keyed.emplace_back(sortKey(key, boolArg(a[1], false)), item);
  }
  if (!sortValues(host, keyed, boolArg(a[0], false)))
    return false;
  items.clear();
  for (auto &k : keyed)
    items.push_back(std::move(k.second));
  return host.setList(out, std::move(items));
}

bool filterString(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  return bindArgs(host, "filter 'string'", args, {}, none) &&
         host.setString(out, in.str());
}

bool filterSum(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "filter 'sum'", args, {"attribute", "start"}, a))
    return false;
  ValueList items;
  if (!iterate(host, in, items))
    return false;
  Value total = a[1] ? *a[1] : Value::integer(0);
  for (const Value &item : items) {
    Value v = item;
    if (a[0] && !getPath(host, item, a[0]->str(), v))
      return false;
    if (!total.isNumber() || !v.isNumber())
      return host.fail(format("filter 'sum': unsupported operand type(s) for "
                              "+: '%s' and '%s'",
                              total.typeName(), v.typeName()));
    int64_t sum = 0;
    if (total.isIntegral() && v.isIntegral()) {
      if (__builtin_add_overflow(total.asInt(), v.asInt(), &sum))
        return host.fail("integer overflow in filter 'sum'");
      total = Value::integer(sum);
    } else {
      total = Value::number(total.asDouble() + v.asDouble());
    }
  }
  out = total;
  return true;
}

/// jinja2's title filter: words start after `-`, whitespace, `(`, `[`, `{`
/// or `<`; each is capitalized.
bool filterTitle(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "filter 'title'", args, {}, none))
    return false;
  std::string s = in.str(), result;
  bool wordStart = true;
  for (size_t pos = 0; pos < s.size();) {
    size_t length = utf8CharLength(static_cast<unsigned char>(s[pos]));
    uint32_t cp = decodeUtf8(s, pos);
    bool separator = cp == '-' || cp == '(' || cp == '[' || cp == '{' ||
                     cp == '<' || isPythonSpace(cp);
    std::string piece = s.substr(pos, length);
    if (separator)
      result += piece;
    else
      result += wordStart ? asciiUpper(piece) : asciiLower(piece);
    wordStart = separator;
    pos += length;
  }
  return host.setString(out, std::move(result));
}

bool filterTojson(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[4];
  if (!bindArgs(host, "filter 'tojson'", args,
                {"ensure_ascii", "indent", "separators", "sort_keys"}, a))
    return false;
  JsonDumpOptions options;
  options.ensureAscii = boolArg(a[0], false);
  options.sortKeys = boolArg(a[3], false);
  if (a[1] && !a[1]->isNone()) {
    int64_t indent = 0;
    if (!intArg(host, "filter 'tojson' indent", a[1], 0, indent))
      return false;
    options.indent = static_cast<int>(std::clamp<int64_t>(indent, 0, 64));
  }
  if (a[2] && !a[2]->isNone()) {
    const ValueList &pair = a[2]->asList();
    if (!a[2]->isList() || pair.size() != 2 || !pair[0].isString() ||
        !pair[1].isString())
      return host.fail("filter 'tojson': separators must be two strings");
    options.customSeparators = true;
    options.itemSeparator = pair[0].asString();
    options.keySeparator = pair[1].asString();
  }
  std::string s, message;
  if (!appendJson(s, in, options, message))
    return host.fail(message);
  return host.setString(out, std::move(s));
}

bool filterTrim(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[1];
  const std::string *chars = nullptr;
  if (!bindArgs(host, "filter 'trim'", args, {"chars"}, a) ||
      !stringArg(host, "filter 'trim'", a[0], chars))
    return false;
  std::string s = in.str();
  return host.setString(out, std::string(stripPython(s, true, true, chars)));
}

bool filterUnique(Host &host, const Value &in, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "filter 'unique'", args, {"case_sensitive", "attribute"},
                a))
    return false;
  ValueList items, kept, seen;
  if (!iterate(host, in, items))
    return false;
  for (const Value &item : items) {
    Value key = item;
    if (a[1] && !getPath(host, item, a[1]->str(), key))
      return false;
    key = sortKey(key, boolArg(a[0], false));
    bool found = false;
    for (const Value &s : seen)
      found = found || s.equals(key);
    if (!host.charge(seen.size()))
      return false;
    if (found)
      continue;
    seen.push_back(key);
    kept.push_back(item);
  }
  return host.setList(out, std::move(kept));
}

struct FilterRow {
  const char *name;
  FilterFn fn;
};

const FilterRow filters[] = {
    {"abs", filterAbs},
    {"capitalize", filterCapitalize},
    {"count", filterLength},
    {"d", filterDefault},
    {"default", filterDefault},
    {"dictsort", filterDictsort},
    {"e", filterEscape},
    {"escape", filterEscape},
    {"first", filterFirst},
    {"float", filterFloat},
    {"indent", filterIndent},
    {"int", filterInt},
    {"items", filterItems},
    {"join", filterJoin},
    {"last", filterLast},
    {"length", filterLength},
    {"list", filterList},
    {"lower", filterLower},
    {"map", filterMap},
    {"max", filterMax},
    {"min", filterMin},
    {"reject", filterReject},
    {"rejectattr", filterRejectattr},
    {"replace", filterReplace},
    {"reverse", filterReverse},
    {"round", filterRound},
    {"safe", filterSafe},
    {"select", filterSelect},
    {"selectattr", filterSelectattr},
    {"sort", filterSort},
    {"string", filterString},
    {"sum", filterSum},
    {"title", filterTitle},
    {"tojson", filterTojson},
    {"trim", filterTrim},
    {"unique", filterUnique},
    {"upper", filterUpper},
};

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

/// A test of its input alone.
template <bool (*Predicate)(const Value &)>
bool unaryTest(Host &host, const Value &in, const Args &args, bool &out) {
  if (!args.positional.empty() || !args.keywords.empty())
    return host.fail("this test takes no arguments");
  out = Predicate(in);
  return true;
}

bool isDefined(const Value &v) { return !v.isUndefined(); }
bool isUndefinedValue(const Value &v) { return v.isUndefined(); }
bool isNoneValue(const Value &v) { return v.isNone(); }
bool isStringValue(const Value &v) { return v.isString(); }
bool isNumberValue(const Value &v) { return v.isNumber(); }
bool isIntegerValue(const Value &v) { return v.kind() == Value::Kind::Int; }
bool isFloatValue(const Value &v) { return v.kind() == Value::Kind::Float; }
bool isBooleanValue(const Value &v) { return v.kind() == Value::Kind::Bool; }
bool isTrueValue(const Value &v) {
  return v.kind() == Value::Kind::Bool && v.asBool();
}
bool isFalseValue(const Value &v) {
  return v.kind() == Value::Kind::Bool && !v.asBool();
}
bool isMappingValue(const Value &v) { return v.isDict(); }
bool isSequenceValue(const Value &v) {
  return v.isString() || v.isList() || v.isDict();
}
bool isIterableValue(const Value &v) {
  return v.isString() || v.isList() || v.isDict() || v.isUndefined();
}
// jinja2's Undefined has __call__ (it raises), so it counts as callable.
bool isCallableValue(const Value &v) {
  return v.isCallable() || v.isUndefined();
}
bool isOddValue(const Value &v) { return v.isIntegral() && (v.asInt() & 1); }
bool isEvenValue(const Value &v) { return v.isIntegral() && !(v.asInt() & 1); }
/// str.islower()/isupper(): some cased letter, none of the other case.
bool hasCase(const Value &v, bool upper) {
  if (!v.isString())
    return false;
  bool cased = false;
  for (char c : v.asString()) {
    if (c >= 'a' && c <= 'z') {
      if (upper)
        return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (!upper)
        return false;
      cased = true;
    }
  }
  return cased;
}
bool isLowerValue(const Value &v) { return hasCase(v, false); }
bool isUpperValue(const Value &v) { return hasCase(v, true); }
bool isEscapedValue(const Value &) { return false; }

/// A test against one argument.
bool binaryTestArg(Host &host, const char *what, const Args &args,
                   const Value *&other) {
  const Value *a[1];
  if (!bindArgs(host, what, args, {"other"}, a))
    return false;
  if (!a[0])
    return host.fail(format("%s needs an argument", what));
  other = a[0];
  return true;
}

bool testDivisibleby(Host &host, const Value &in, const Args &args, bool &out) {
  const Value *other;
  if (!binaryTestArg(host, "test 'divisibleby'", args, other))
    return false;
  if (!in.isIntegral() || !other->isIntegral())
    return host.fail("test 'divisibleby' needs integers");
  if (other->asInt() == 0)
    return host.fail("integer modulo by zero");
  out = other->asInt() == -1 || in.asInt() % other->asInt() == 0;
  return true;
}

bool testEq(Host &host, const Value &in, const Args &args, bool &out) {
  const Value *other;
  if (!binaryTestArg(host, "test 'eq'", args, other))
    return false;
  out = in.equals(*other);
  return true;
}

bool testNe(Host &host, const Value &in, const Args &args, bool &out) {
  const Value *other;
  if (!binaryTestArg(host, "test 'ne'", args, other))
    return false;
  out = !in.equals(*other);
  return true;
}

template <int Sign, bool OrEqual>
bool testOrder(Host &host, const Value &in, const Args &args, bool &out) {
  const Value *other;
  int order = 0;
  if (!binaryTestArg(host, "comparison test", args, other) ||
      !compareValues(host, in, *other, order))
    return false;
  out = order == Sign || (OrEqual && order == 0);
  return true;
}

bool testIn(Host &host, const Value &in, const Args &args, bool &out) {
  const Value *other;
  return binaryTestArg(host, "test 'in'", args, other) &&
         containsValue(host, *other, in, out);
}

/// Python's `is`: the same object. Scalars compare by value (CPython shares
/// None, True, False and small ints), containers by identity.
bool testSameas(Host &host, const Value &in, const Args &args, bool &out) {
  const Value *other;
  if (!binaryTestArg(host, "test 'sameas'", args, other))
    return false;
  if (in.kind() != other->kind())
    out = false;
  else if (in.isList())
    out = &in.asList() == &other->asList();
  else if (in.isDict() || in.isNamespace())
    out = &in.asDict() == &other->asDict();
  else
    out = in.equals(*other);
  return true;
}

bool testFilter(Host &host, const Value &in, const Args &args, bool &out) {
  if (!args.positional.empty() || !args.keywords.empty())
    return host.fail("test 'filter' takes no arguments");
  out = in.isString() && findFilter(in.asString()) >= 0;
  return true;
}

bool testTest(Host &host, const Value &in, const Args &args, bool &out) {
  if (!args.positional.empty() || !args.keywords.empty())
    return host.fail("test 'test' takes no arguments");
  out = in.isString() && findTest(in.asString()) >= 0;
  return true;
}

struct TestRow {
  const char *name;
  TestFn fn;
};

const TestRow tests[] = {
    {"!=", testNe},
    {"<", testOrder<-1, false>},
    {"<=", testOrder<-1, true>},
    {"==", testEq},
    {">", testOrder<1, false>},
    {">=", testOrder<1, true>},
    {"boolean", unaryTest<isBooleanValue>},
    {"callable", unaryTest<isCallableValue>},
    {"defined", unaryTest<isDefined>},
    {"divisibleby", testDivisibleby},
    {"eq", testEq},
    {"equalto", testEq},
    {"escaped", unaryTest<isEscapedValue>},
    {"even", unaryTest<isEvenValue>},
    {"false", unaryTest<isFalseValue>},
    {"filter", testFilter},
    {"float", unaryTest<isFloatValue>},
    {"ge", testOrder<1, true>},
    {"greaterthan", testOrder<1, false>},
    {"gt", testOrder<1, false>},
    {"in", testIn},
    {"integer", unaryTest<isIntegerValue>},
    {"iterable", unaryTest<isIterableValue>},
    {"le", testOrder<-1, true>},
    {"lessthan", testOrder<-1, false>},
    {"lower", unaryTest<isLowerValue>},
    {"lt", testOrder<-1, false>},
    {"mapping", unaryTest<isMappingValue>},
    {"ne", testNe},
    {"none", unaryTest<isNoneValue>},
    {"number", unaryTest<isNumberValue>},
    {"odd", unaryTest<isOddValue>},
    {"sameas", testSameas},
    {"sequence", unaryTest<isSequenceValue>},
    {"string", unaryTest<isStringValue>},
    {"test", testTest},
    {"true", unaryTest<isTrueValue>},
    {"undefined", unaryTest<isUndefinedValue>},
    {"upper", unaryTest<isUpperValue>},
};

//===----------------------------------------------------------------------===//
// Methods
//===----------------------------------------------------------------------===//

bool methodStrip(Host &host, const Value &self, const Args &args, Value &out,
                 bool left, bool right) {
  const Value *a[1];
  const std::string *chars = nullptr;
  if (!bindArgs(host, "strip()", args, {"chars"}, a) ||
      !stringArg(host, "strip()", a[0], chars))
    return false;
  return host.setString(
      out, std::string(stripPython(self.asString(), left, right, chars)));
}

bool methodStripBoth(Host &host, const Value &self, const Args &args,
                     Value &out) {
  return methodStrip(host, self, args, out, true, true);
}

bool methodLstrip(Host &host, const Value &self, const Args &args, Value &out) {
  return methodStrip(host, self, args, out, true, false);
}

bool methodRstrip(Host &host, const Value &self, const Args &args, Value &out) {
  return methodStrip(host, self, args, out, false, true);
}

bool methodAffix(Host &host, const Value &self, const Args &args, Value &out,
                 bool prefix) {
  const Value *a[1];
  if (!bindArgs(host, prefix ? "startswith()" : "endswith()", args, {"affix"},
                a))
    return false;
  if (!a[0])
    return host.fail("startswith()/endswith() needs an argument");
  ValueList candidates;
  if (a[0]->isList())
    candidates = a[0]->asList();
  else
    candidates.push_back(*a[0]);
  const std::string &s = self.asString();
  bool match = false;
  for (const Value &candidate : candidates) {
    if (!candidate.isString())
      return host.fail(format("startswith()/endswith() takes strings, not "
                              "'%s'",
                              candidate.typeName()));
    const std::string &affix = candidate.asString();
    match = match || (affix.size() <= s.size() &&
                      (prefix ? s.compare(0, affix.size(), affix) == 0
                              : s.compare(s.size() - affix.size(), affix.size(),
                                          affix) == 0));
  }
  out = Value::boolean(match);
  return true;
}

bool methodStartswith(Host &host, const Value &self, const Args &args,
                      Value &out) {
  return methodAffix(host, self, args, out, true);
}

bool methodEndswith(Host &host, const Value &self, const Args &args,
                    Value &out) {
  return methodAffix(host, self, args, out, false);
}

bool methodSplitAny(Host &host, const Value &self, const Args &args, Value &out,
                    bool fromRight) {
  const Value *a[2];
  const std::string *sep = nullptr;
  int64_t maxSplit = -1;
  ValueList parts;
  if (!bindArgs(host, "split()", args, {"sep", "maxsplit"}, a) ||
      !stringArg(host, "split()", a[0], sep) ||
      !intArg(host, "split()", a[1], -1, maxSplit) ||
      !splitString(host, self.asString(), sep, maxSplit, fromRight, parts))
    return false;
  return host.setList(out, std::move(parts));
}

bool methodSplit(Host &host, const Value &self, const Args &args, Value &out) {
  return methodSplitAny(host, self, args, out, false);
}

bool methodRsplit(Host &host, const Value &self, const Args &args, Value &out) {
  return methodSplitAny(host, self, args, out, true);
}

bool methodUpper(Host &host, const Value &self, const Args &args, Value &out) {
  return filterUpper(host, self, args, out);
}

bool methodLower(Host &host, const Value &self, const Args &args, Value &out) {
  return filterLower(host, self, args, out);
}

bool methodTitle(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *none[1];
  return bindArgs(host, "title()", args, {}, none) &&
         host.setString(out, pythonTitle(self.asString()));
}

bool methodCapitalize(Host &host, const Value &self, const Args &args,
                      Value &out) {
  return filterCapitalize(host, self, args, out);
}

bool methodReplace(Host &host, const Value &self, const Args &args,
                   Value &out) {
  const Value *a[3];
  if (!bindArgs(host, "replace()", args, {"old", "new", "count"}, a))
    return false;
  if (!a[0] || !a[1] || !a[0]->isString() || !a[1]->isString())
    return host.fail("replace() needs two strings");
  int64_t count = -1;
  if (!intArg(host, "replace()", a[2], -1, count))
    return false;
  return host.setString(out, replaceString(self.asString(), a[0]->asString(),
                                           a[1]->asString(), count));
}

bool methodFind(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *a[1];
  if (!bindArgs(host, "find()", args, {"sub"}, a))
    return false;
  if (!a[0] || !a[0]->isString())
    return host.fail("find() needs a string");
  const std::string &s = self.asString();
  size_t at = s.find(a[0]->asString());
  out = Value::integer(at == std::string::npos
                           ? -1
                           : static_cast<int64_t>(codePointCount(
                                 std::string_view(s).substr(0, at))));
  return true;
}

bool methodCount(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *a[1];
  if (!bindArgs(host, "count()", args, {"sub"}, a))
    return false;
  if (!a[0] || !a[0]->isString())
    return host.fail("count() needs a string");
  const std::string &s = self.asString(), &sub = a[0]->asString();
  int64_t n = 0;
  if (sub.empty()) {
    n = static_cast<int64_t>(codePointCount(s)) + 1;
  } else {
    for (size_t at = s.find(sub); at != std::string::npos;
         at = s.find(sub, at + sub.size()))
      ++n;
  }
  out = Value::integer(n);
  return true;
}

bool methodJoin(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *a[1];
  if (!bindArgs(host, "join()", args, {"iterable"}, a))
    return false;
  ValueList items;
  if (!a[0] || !iterate(host, *a[0], items))
    return a[0] ? false : host.fail("join() needs an iterable");
  std::string s;
  for (size_t k = 0; k < items.size(); ++k) {
    if (!items[k].isString())
      return host.fail(format("join(): sequence item %zu: expected str, "
                              "'%s' found",
                              k, items[k].typeName()));
    if (k)
      s += self.asString();
    s += items[k].asString();
  }
  return host.setString(out, std::move(s));
}

bool methodItems(Host &host, const Value &self, const Args &args, Value &out) {
  return filterItems(host, self, args, out);
}

bool methodKeys(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "keys()", args, {}, none))
    return false;
  ValueList keys;
  for (const auto &entry : self.asDict().entries)
    keys.push_back(Value::string(entry.first));
  return host.setList(out, std::move(keys));
}

bool methodValues(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *none[1];
  if (!bindArgs(host, "values()", args, {}, none))
    return false;
  ValueList values;
  for (const auto &entry : self.asDict().entries)
    values.push_back(entry.second);
  return host.setList(out, std::move(values));
}

bool methodGet(Host &host, const Value &self, const Args &args, Value &out) {
  const Value *a[2];
  if (!bindArgs(host, "get()", args, {"key", "default"}, a))
    return false;
  if (!a[0])
    return host.fail("get() needs a key");
  const Value *found =
      a[0]->isString() ? self.asDict().find(a[0]->asString()) : nullptr;
  out = found ? *found : a[1] ? *a[1] : Value::none();
  return true;
}

struct MethodRow {
  const char *name;
  Value::Kind receiver;
  MethodFn fn;
};

const MethodRow methods[] = {
    {"capitalize", Value::Kind::String, methodCapitalize},
    {"count", Value::Kind::String, methodCount},
    {"endswith", Value::Kind::String, methodEndswith},
    {"find", Value::Kind::String, methodFind},
    {"get", Value::Kind::Dict, methodGet},
    {"items", Value::Kind::Dict, methodItems},
    {"join", Value::Kind::String, methodJoin},
    {"keys", Value::Kind::Dict, methodKeys},
    {"lower", Value::Kind::String, methodLower},
    {"lstrip", Value::Kind::String, methodLstrip},
    {"replace", Value::Kind::String, methodReplace},
    {"rsplit", Value::Kind::String, methodRsplit},
    {"rstrip", Value::Kind::String, methodRstrip},
    {"split", Value::Kind::String, methodSplit},
    {"startswith", Value::Kind::String, methodStartswith},
    {"strip", Value::Kind::String, methodStripBoth},
    {"title", Value::Kind::String, methodTitle},
    {"upper", Value::Kind::String, methodUpper},
    {"values", Value::Kind::Dict, methodValues},
};

template <typename Row, size_t N>
int findRow(const Row (&rows)[N], std::string_view name) {
  for (size_t k = 0; k < N; ++k)
    if (name == rows[k].name)
      return static_cast<int>(k);
  return -1;
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

int attnrt::chat::findFilter(std::string_view name) {
  return findRow(filters, name);
}

int attnrt::chat::findTest(std::string_view name) {
  return findRow(tests, name);
}

int attnrt::chat::findMethod(std::string_view name) {
  return findRow(methods, name);
}

const char *attnrt::chat::methodName(int method) {
  return methods[method].name;
}

bool attnrt::chat::applyFilter(int filter, Host &host, const Value &input,
                               const Args &args, Value &out) {
  return filters[filter].fn(host, input, args, out);
}

bool attnrt::chat::applyTest(int test, Host &host, const Value &input,
                             const Args &args, bool &out) {
  return tests[test].fn(host, input, args, out);
}

bool attnrt::chat::callMethod(int method, Host &host, const Value &self,
                              const Args &args, Value &out) {
  if (self.isUndefined())
    return host.fail(self.asString());
  // Rows sharing a name (none yet) would be tried in order.
  std::string_view name = methods[method].name;
  for (const MethodRow &row : methods)
    if (name == row.name && row.receiver == self.kind())
      return row.fn(host, self, args, out);
  return host.fail(format("'%s' object has no attribute ", self.typeName()) +
                   quote(name));
}

bool attnrt::chat::iterate(Host &host, const Value &value, ValueList &out) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    out.clear();
    return true;
  case Value::Kind::List:
    out = value.asList();
    break;
  case Value::Kind::Dict:
    out.clear();
    for (const auto &entry : value.asDict().entries)
      out.push_back(Value::string(entry.first));
    break;
  case Value::Kind::String:
    out = characters(value.asString());
    break;
  default:
    return host.fail(format("'%s' object is not iterable", value.typeName()));
  }
  return host.charge(out.size() * sizeof(Value));
}

bool attnrt::chat::compareValues(Host &host, const Value &a, const Value &b,
                                 int &result) {
  if (a.isNumber() && b.isNumber()) {
    if (a.isIntegral() && b.isIntegral())
      result = a.asInt() < b.asInt() ? -1 : a.asInt() > b.asInt() ? 1 : 0;
    else
      result = a.asDouble() < b.asDouble()   ? -1
               : a.asDouble() > b.asDouble() ? 1
                                             : 0;
    return true;
  }
  if (a.isString() && b.isString()) {
    int c = a.asString().compare(b.asString());
    result = c < 0 ? -1 : c > 0 ? 1 : 0;
    return true;
  }
  if (a.isList() && b.isList() && a.isTuple() == b.isTuple()) {
    const ValueList &x = a.asList(), &y = b.asList();
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (x[k].equals(y[k]))
        continue;
      return compareValues(host, x[k], y[k], result);
    }
    result = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    return true;
  }
  if (a.isUndefined() || b.isUndefined())
    return host.fail((a.isUndefined() ? a : b).asString());
  return host.fail(format("ordering not supported between instances of '%s' "
                          "and '%s'",
                          a.typeName(), b.typeName()));
}

bool attnrt::chat::containsValue(Host &host, const Value &haystack,
                                 const Value &needle, bool &result) {
  result = false;
  switch (haystack.kind()) {
  case Value::Kind::Undefined:
    return true;
  case Value::Kind::String:
    if (!needle.isString())
      return host.fail(format("'in <string>' requires string as left "
                              "operand, not %s",
                              needle.typeName()));
    result = haystack.asString().find(needle.asString()) != std::string::npos;
    return true;
  case Value::Kind::List:
    for (const Value &item : haystack.asList())
      if (item.equals(needle)) {
        result = true;
        break;
      }
    return true;
  case Value::Kind::Dict:
  case Value::Kind::Namespace:
    result = needle.isString() && haystack.asDict().find(needle.asString());
    return true;
  default:
    return host.fail(
        format("argument of type '%s' is not iterable", haystack.typeName()));
  }
}

bool attnrt::chat::getAttribute(Host &host, const Value &object,
                                const std::string &name, Value &out) {
  if (object.isUndefined())
    return host.fail(object.asString());
  if (object.isDict() || object.isNamespace()) {
    if (const Value *found = object.asDict().find(name)) {
      out = *found;
      return true;
    }
  }
  out = Value::undefined(
      format("'%s object' has no attribute ", object.typeName()) + quote(name));
  return true;
}

bool attnrt::chat::getItem(Host &host, const Value &object, const Value &key,
                           Value &out) {
  if (object.isUndefined())
    return host.fail(object.asString());
  if (key.isString())
    return getAttribute(host, object, key.asString(), out);
  if (key.isIntegral() && (object.isList() || object.isString())) {
    int64_t index = key.asInt();
    if (object.isList()) {
      const ValueList &items = object.asList();
      int64_t n = static_cast<int64_t>(items.size());
      if (index < 0)
        index += n;
      if (index >= 0 && index < n) {
        out = items[static_cast<size_t>(index)];
        return true;
      }
    } else {
      const std::string &s = object.asString();
      std::vector<size_t> offsets = codePointOffsets(s);
      int64_t n = static_cast<int64_t>(offsets.size()) - 1;
      if (index < 0)
        index += n;
      if (index >= 0 && index < n) {
        size_t at = offsets[static_cast<size_t>(index)];
        out = Value::string(
            s.substr(at, offsets[static_cast<size_t>(index) + 1] - at));
        return true;
      }
    }
  }
  std::string shown;
  key.appendRepr(shown);
  out = Value::undefined(format("'%s object' has no element %s",
                                object.typeName(), shown.c_str()));
  return true;
}
