//===- Builtins.h - chat-template filters, tests, methods -------*- C++ -*-===//
//
// Each filter (`x | trim`), test (`x is string`) and method (`x.strip()`) is
// one row of a table keyed by its Jinja name. The parser looks names up
// there, so a template that uses anything else fails at load naming it; the
// interpreter calls the row's function. Semantics follow jinja2 3.1's
// builtins and Python's str and dict methods, with transformers' tojson.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_BUILTINS_H
#define ATTNRT_CHAT_BUILTINS_H

#include "chat/Value.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnrt::chat {

/// Call arguments, evaluated.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

/// What a builtin needs from the interpreter: a place for its error and the
/// budget every value it builds is charged to.
class Host {
public:
  Host(uint64_t maxBytes, unsigned maxDepth)
      : maxBytes(maxBytes), maxDepth(maxDepth) {}

  /// Records `message` (without a line: the interpreter adds it) and
  /// returns false.
  bool fail(std::string message);
  /// Charges `bytes` of built strings or list items; false (with an error)
  /// once the total passes the limit.
  bool charge(uint64_t bytes);
  /// Charges for `s`, then makes it the result.
  bool setString(Value &out, std::string s);
  /// Charges for the items and checks the nesting (see Value::depth), then
  /// makes the list or dict the result.
  bool setList(Value &out, ValueList items, bool tuple = false);
  bool setDict(Value &out, Dict entries, bool isNamespace = false);

  std::string error;

private:
  bool checkDepth(const Value &value);

  uint64_t maxBytes, bytes = 0;
  unsigned maxDepth;
};

using FilterFn = bool (*)(Host &host, const Value &input, const Args &args,
                          Value &out);
using TestFn = bool (*)(Host &host, const Value &input, const Args &args,
                        bool &out);
using MethodFn = bool (*)(Host &host, const Value &self, const Args &args,
                          Value &out);

/// The index of a filter, test or method name, or -1 when unsupported.
int findFilter(std::string_view name);
int findTest(std::string_view name);
int findMethod(std::string_view name);

bool applyFilter(int filter, Host &host, const Value &input, const Args &args,
                 Value &out);
bool applyTest(int test, Host &host, const Value &input, const Args &args,
               bool &out);
/// Fails naming the receiver's type when it has no method of that name.
bool callMethod(int method, Host &host, const Value &self, const Args &args,
                Value &out);
const char *methodName(int method);

/// Python's iter(): list and tuple items, dict keys, the characters of a
/// string; Undefined is empty. Anything else fails ("'int' object is not
/// iterable").
bool iterate(Host &host, const Value &value, ValueList &out);

/// Python's ordering (`<`) of numbers, strings and lists; false with an error
/// for other pairs. `result` is -1, 0 or 1.
bool compareValues(Host &host, const Value &a, const Value &b, int &result);

/// Python's `needle in haystack` (substring, item, or dict key).
bool containsValue(Host &host, const Value &haystack, const Value &needle,
                   bool &result);

/// jinja2's getattr / getitem: a dict's key, a namespace's attribute, a
/// list's or string's item; Undefined (with a hint naming what is missing)
/// when absent. Fails only when `object` is itself Undefined.
bool getAttribute(Host &host, const Value &object, const std::string &name,
                  Value &out);
bool getItem(Host &host, const Value &object, const Value &key, Value &out);

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_BUILTINS_H
