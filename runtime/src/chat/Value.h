//===- Value.h - the values of the chat-template interpreter ---*- C++ -*-===//
//
// Jinja evaluates Python objects; chat templates use a handful of them:
// None, bool, int, float, str, list, tuple, dict, jinja2's Undefined, the
// namespace() object, macros and a few global functions. Value models exactly
// those, with Python's semantics where templates can observe them: str() and
// repr() spellings ("True", "None", "1.0", "['a', 1]"), truthiness, ==
// between int, float and bool, ordering, and json.dumps for tojson.
//
// Strings are UTF-8 and indexed by code point, as Python indexes str.
// Containers are shared and immutable (transformers renders in jinja2's
// ImmutableSandboxedEnvironment, where list.append fails); only a namespace
// changes, through {% set ns.attr = ... %}, and it is shared by reference as
// in Python.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_VALUE_H
#define ATTNRT_CHAT_VALUE_H

#include "Json.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnrt::chat {

struct MacroNode;
class Value;

using ValueList = std::vector<Value>;

struct Dict;

/// The global functions a template can call (DESIGN: builtins are table rows;
/// these are dispatched in the interpreter).
enum class Function : uint8_t {
  Range,
  Namespace,
  Dict,
  RaiseException,
  StrftimeNow,
};

class Value {
public:
  enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List, // also tuples (isTuple()), which differ only in repr()
    Dict,
    Namespace,
    Macro,
    Function,
  };

  /// Undefined, as jinja2's default Undefined: falsy, renders as "", iterates
  /// as empty; any other use is an error quoting `hint` (e.g. "'foo' is
  /// undefined").
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(ValueList items, bool tuple = false);
  static Value dict(Dict entries);
  static Value newNamespace(Dict entries);
  static Value macro(const MacroNode *node);
  static Value function(Function f);

  Kind kind() const { return tag; }
  bool isUndefined() const { return tag == Kind::Undefined; }
  bool isNone() const { return tag == Kind::None; }
  bool isString() const { return tag == Kind::String; }
  bool isList() const { return tag == Kind::List; }
  bool isTuple() const { return tag == Kind::List && tuple; }
  bool isDict() const { return tag == Kind::Dict; }
  bool isNamespace() const { return tag == Kind::Namespace; }
  /// int, float or bool (bool is an int in Python).
  bool isNumber() const {
    return tag == Kind::Int || tag == Kind::Float || tag == Kind::Bool;
  }
  bool isIntegral() const { return tag == Kind::Int || tag == Kind::Bool; }
  bool isCallable() const {
    return tag == Kind::Macro || tag == Kind::Function;
  }

  bool asBool() const { return i != 0; }
  int64_t asInt() const { return tag == Kind::Float ? int64_t(f) : i; }
  double asDouble() const { return tag == Kind::Float ? f : double(i); }
  /// The string of a String, the hint of an Undefined, else "".
  const std::string &asString() const;
  const ValueList &asList() const;
  /// The entries of a Dict or a Namespace.
  const Dict &asDict() const;
  /// A namespace's entries, which {% set ns.x = ... %} changes.
  Dict &namespaceEntries() const { return *dictPtr; }
  const MacroNode *asMacro() const { return macroPtr; }
  Function asFunction() const { return fn; }

  /// Containers nested inside this value, counting itself (0 for scalars).
  /// Bounded by the interpreter so that printing and freeing a value never
  /// recurses deeply.
  uint32_t depth() const { return nesting; }
  /// True when a namespace is this value or inside it: storing such a value
  /// in a namespace could make a cycle, which the interpreter refuses.
  bool holdsNamespace() const { return hasNamespace; }
  /// Recomputes both for a dict whose entries were changed in place (the
  /// interpreter's `loop` object, updated each iteration).
  void refreshNesting();

  /// Python's bool(value).
  bool truthy() const;
  /// Python's type name, for messages: "str", "int", "NoneType", ...
  const char *typeName() const;

  /// Appends str(value): what {{ value }} renders (Undefined renders "").
  void appendStr(std::string &out) const;
  std::string str() const;
  /// Appends repr(value), as str() of a container shows its items.
  void appendRepr(std::string &out) const;

  /// Python's ==, which also holds between 1, 1.0 and True.
  bool equals(const Value &other) const;

  /// A value from JSON: objects become dicts (with nlohmann's key order,
  /// sorted), arrays lists.
  static Value fromJson(const Json &json);
  /// A value from JSON text, parsed as strictly as parseJson (Json.h) and
  /// with its objects' keys in the order written, as Python's json.loads
  /// keeps them (tojson of a tool's schema prints them in that order).
  static bool parseJson(std::string_view text, Value &out, std::string &error);

private:
  Kind tag = Kind::Undefined;
  bool tuple = false;
  bool hasNamespace = false;
  uint32_t nesting = 0;
  union {
    int64_t i = 0; // Int, and Bool as 0 or 1
    double f;
    const MacroNode *macroPtr;
    Function fn;
  };
  std::shared_ptr<const std::string> text;
  std::shared_ptr<const ValueList> items;
  std::shared_ptr<Dict> dictPtr;
};

/// A dict or a namespace: string keys in insertion order, as Python dicts
/// iterate. Templates build small ones (messages have a few keys), so lookup
/// is a linear scan.
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;

  const Value *find(std::string_view key) const;
  /// Replaces the value of `key`, or appends it.
  void set(std::string key, Value value);
};

/// Python's float repr: the shortest digits that read back to `value`,
/// positional for exponents in [-4, 16) ("1.0", "0.0001", "1e-05", "1e+16").
void appendFloatRepr(std::string &out, double value);

/// The options of json.dumps that HF's tojson filter exposes
/// (transformers overrides jinja2's tojson, which would escape HTML).
struct JsonDumpOptions {
  bool ensureAscii = false;
  /// Negative: no indentation (one line); else spaces per level.
  int indent = -1;
  bool sortKeys = false;
  /// json.dumps' separators; defaults as Python: ", " (", " with
  /// indentation becomes ",") and ": ".
  std::string itemSeparator, keySeparator;
  bool customSeparators = false;
};

/// json.dumps(value). False with `error` set for values JSON cannot hold
/// (Undefined, namespaces, macros); NaN and infinities are written as
/// Python writes them (NaN, Infinity).
bool appendJson(std::string &out, const Value &value,
                const JsonDumpOptions &options, std::string &error);

//===----------------------------------------------------------------------===//
// UTF-8 strings as Python str
//===----------------------------------------------------------------------===//

/// Python's str.isspace() for one code point (what strip() and split()
/// remove, and what {%- and -%} trim).
bool isPythonSpace(uint32_t cp);

/// The number of code points of valid UTF-8 `s` (Python's len()).
size_t codePointCount(std::string_view s);

/// The byte offset of every code point of `s`, plus s.size() at the end.
std::vector<size_t> codePointOffsets(std::string_view s);

/// `s` without leading (`left`) and/or trailing (`right`) characters: Python
/// whitespace when `chars` is null, else the code points of *chars.
std::string_view stripPython(std::string_view s, bool left, bool right,
                             const std::string *chars);

/// ASCII case mapping (non-ASCII letters are left as they are).
std::string asciiUpper(std::string_view s);
std::string asciiLower(std::string_view s);

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_VALUE_H
