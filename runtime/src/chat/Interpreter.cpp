//===- Interpreter.cpp - rendering a parsed chat template -----------------===//

#include "chat/Interpreter.h"

#include "Support.h"
#include "chat/Builtins.h"

#include <cmath>
#include <ctime>

using namespace attnrt;
using namespace attnrt::chat;

namespace {

enum class Flow { Next, Break, Continue, Fail };

/// `message` on one line: control characters escaped, UTF-8 kept (the
/// message of raise_exception is the template author's text, often not
/// ASCII).
std::string oneLine(std::string_view message) {
  std::string out;
  for (unsigned char c : message) {
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7F)
      out += format("\\x%02x", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

class Renderer {
public:
  Renderer(const ChatLimits &limits, std::string &out)
      : limits(limits), host(limits.maxBytes, limits.maxDepth), out(&out) {}

  bool run(const Program &program, const Dict &globals);

  std::string error;

private:
  //===--- Errors and limits --------------------------------------------===//

  bool fail(int line, const std::string &message) {
    if (error.empty())
      error = format("line %d: ", line) + message;
    return false;
  }
  /// A builtin's failure, at `line`.
  bool failHost(int line) {
    return fail(line, host.error.empty() ? "internal error" : host.error);
  }
  bool step(int line) {
    if (++steps <= limits.maxSteps)
      return true;
    return fail(line, format("more than %llu steps (a runaway loop?)",
                             static_cast<unsigned long long>(limits.maxSteps)));
  }
  bool checkOutput(int line) {
    if (out->size() <= limits.maxOutput)
      return true;
    return fail(line,
                format("the output passed %llu bytes",
                       static_cast<unsigned long long>(limits.maxOutput)));
  }
  /// Counts one level of recursion while alive.
  struct Deeper {
    explicit Deeper(Renderer &r) : r(r) { ++r.depth; }
    ~Deeper() { --r.depth; }
    bool ok(int line) const {
      return r.depth <= r.limits.maxDepth ||
             r.fail(line, format("nested deeper than %u (recursion?)",
                                 r.limits.maxDepth));
    }
    Renderer &r;
  };

  //===--- Scopes -------------------------------------------------------===//

  struct Frame {
    std::vector<std::pair<std::string, Value>> vars;
    /// A macro's frame: names not bound in it are looked up at the top
    /// level, not in the caller's frames.
    bool isolated = false;
  };
  const Value *lookup(const std::string &name) const;
  void assign(const std::string &name, Value value);
  /// Binds a loop's or a set's targets to `value` (unpacking several).
  bool bindTargets(int line, const std::vector<std::string> &targets,
                   const Value &value);

  //===--- Statements ---------------------------------------------------===//

  Flow render(const Body &body, int line);
  Flow renderNode(const Node &node);
  Flow renderFor(const Node &node);
  bool renderSet(const Node &node);
  /// Renders `body` into `text` rather than the output.
  bool capture(const Body &body, int line, std::string &text);

  //===--- Expressions --------------------------------------------------===//

  bool eval(const Expr &e, Value &result);
  bool evalArgs(const Expr &e, Args &args);
  bool evalBinary(const Expr &e, const Value &a, const Value &b, Value &result);
  bool evalCompare(const Expr &e, Value &result);
  bool evalSlice(const Expr &e, Value &result);
  bool evalUnary(const Expr &e, const Value &v, Value &result);
  bool call(const Expr &e, const Value &callee, const Args &args,
            Value &result);
  bool callFunction(int line, Function function, const Args &args,
                    Value &result);
  bool callMacro(int line, const MacroNode &macro, const Args &args,
                 Value &result);

  const ChatLimits &limits;
  Host host;
  std::string *out;
  std::vector<Frame> frames;
  uint64_t steps = 0;
  unsigned depth = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// Scopes
//===----------------------------------------------------------------------===//

const Value *Renderer::lookup(const std::string &name) const {
  size_t k = frames.size();
  while (k-- > 0) {
    for (const auto &var : frames[k].vars)
      if (var.first == name)
        return &var.second;
    if (frames[k].isolated && k > 1)
      k = 1; // next: the top level, frames[0]
  }
  return nullptr;
}

void Renderer::assign(const std::string &name, Value value) {
  for (auto &var : frames.back().vars)
    if (var.first == name) {
      var.second = std::move(value);
      return;
    }
  frames.back().vars.emplace_back(name, std::move(value));
}

bool Renderer::bindTargets(int line, const std::vector<std::string> &targets,
                           const Value &value) {
  if (targets.size() == 1) {
    assign(targets[0], value);
    return true;
  }
  ValueList items;
  if (!iterate(host, value, items))
    return failHost(line);
  if (items.size() != targets.size())
    return fail(
        line, format("%s values to unpack (expected %zu, got %zu)",
                     items.size() > targets.size() ? "too many" : "not enough",
                     targets.size(), items.size()));
  for (size_t k = 0; k < targets.size(); ++k)
    assign(targets[k], items[k]);
  return true;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Renderer::run(const Program &program, const Dict &globals) {
  Frame top;
  top.vars = globals.entries;
  frames.push_back(std::move(top));
  return render(program.body, 1) == Flow::Next;
}

Flow Renderer::render(const Body &body, int line) {
  Deeper guard(*this);
  if (!guard.ok(line))
    return Flow::Fail;
  for (const NodePtr &node : body) {
    Flow flow = renderNode(*node);
    if (flow != Flow::Next)
      return flow;
  }
  return Flow::Next;
}

Flow Renderer::renderNode(const Node &node) {
  if (!step(node.line))
    return Flow::Fail;
  switch (node.kind) {
  case NodeKind::Text:
    *out += node.text;
    return checkOutput(node.line) ? Flow::Next : Flow::Fail;
  case NodeKind::Output: {
    Value v;
    if (!eval(*node.expr, v))
      return Flow::Fail;
    v.appendStr(*out);
    return checkOutput(node.line) ? Flow::Next : Flow::Fail;
  }
  case NodeKind::If:
    for (const IfBranch &branch : node.branches) {
      if (branch.condition) {
        Value condition;
        if (!eval(*branch.condition, condition))
          return Flow::Fail;
        if (!condition.truthy())
          continue;
      }
      return render(branch.body, node.line);
    }
    return Flow::Next;
  case NodeKind::For:
    return renderFor(node);
  case NodeKind::Set:
    return renderSet(node) ? Flow::Next : Flow::Fail;
  case NodeKind::SetBlock: {
    std::string text;
    if (!capture(node.body, node.line, text))
      return Flow::Fail;
    Value value;
    if (!host.setString(value, std::move(text))) {
      failHost(node.line);
      return Flow::Fail;
    }
    assign(node.targets[0], std::move(value));
    return Flow::Next;
  }
  case NodeKind::Macro:
    assign(node.macro->name, Value::macro(node.macro.get()));
    return Flow::Next;
  case NodeKind::Break:
    return Flow::Break;
  case NodeKind::Continue:
    return Flow::Continue;
  case NodeKind::Generation:
    return render(node.body, node.line);
  }
  return Flow::Next;
}

Flow Renderer::renderFor(const Node &node) {
  Value iterable;
  if (!eval(*node.expr, iterable))
    return Flow::Fail;
  // A list is walked in place (`iterable` keeps it alive); anything else
  // becomes one.
  ValueList copied;
  const ValueList *items = &iterable.asList();
  if (!iterable.isList() || node.filter) {
    if (!iterate(host, iterable, copied)) {
      failHost(node.line);
      return Flow::Fail;
    }
    items = &copied;
  }
  // `for x in y if cond` filters first: loop.index and loop.length count
  // the items kept.
  if (node.filter) {
    ValueList kept;
    for (Value &item : copied) {
      if (!step(node.line))
        return Flow::Fail;
      frames.emplace_back();
      Value keep;
      bool ok = bindTargets(node.line, node.targets, item) &&
                eval(*node.filter, keep);
      frames.pop_back();
      if (!ok)
        return Flow::Fail;
      if (keep.truthy())
        kept.push_back(std::move(item));
    }
    copied = std::move(kept);
  }
  if (items->empty())
    return render(node.elseBody, node.line);
  // One `loop` object and one frame serve every iteration: each starts with
  // the frame emptied (a set in the body lasts one iteration) and the loop's
  // fields updated in place.
  int64_t n = static_cast<int64_t>(items->size());
  Dict fields;
  for (const char *name :
       {"index", "index0", "revindex", "revindex0", "first", "last", "length",
        "depth", "depth0", "previtem", "nextitem"})
    fields.entries.emplace_back(name, Value());
  Value loop = Value::dict(std::move(fields));
  auto &entries = loop.namespaceEntries().entries;
  frames.emplace_back();
  Flow flow = Flow::Next;
  for (int64_t k = 0; k < n && flow != Flow::Fail; ++k) {
    if (!step(node.line)) {
      flow = Flow::Fail;
      break;
    }
    const ValueList &list = *items;
    entries[0].second = Value::integer(k + 1);
    entries[1].second = Value::integer(k);
    entries[2].second = Value::integer(n - k);
    entries[3].second = Value::integer(n - k - 1);
    entries[4].second = Value::boolean(k == 0);
    entries[5].second = Value::boolean(k == n - 1);
    entries[6].second = Value::integer(n);
    entries[7].second = Value::integer(1);
    entries[8].second = Value::integer(0);
    entries[9].second = k > 0 ? list[static_cast<size_t>(k - 1)]
                              : Value::undefined("there is no previous item");
    entries[10].second = k + 1 < n ? list[static_cast<size_t>(k + 1)]
                                   : Value::undefined("there is no next item");
    loop.refreshNesting();
    frames.back().vars.clear();
    frames.back().vars.emplace_back("loop", loop);
    flow = bindTargets(node.line, node.targets, list[static_cast<size_t>(k)])
               ? render(node.body, node.line)
               : Flow::Fail;
    if (flow == Flow::Break)
      break;
  }
  frames.pop_back();
  return flow == Flow::Fail ? Flow::Fail : Flow::Next;
}

bool Renderer::renderSet(const Node &node) {
  Value value;
  if (!eval(*node.expr, value))
    return false;
  if (node.attribute.empty())
    return bindTargets(node.line, node.targets, value);
  const Value *target = lookup(node.targets[0]);
  if (!target || !target->isNamespace())
    return fail(node.line, "cannot set attribute " + quote(node.attribute) +
                               " of " + quote(node.targets[0]) + " (" +
                               (target ? target->typeName() : "undefined") +
                               "): only a namespace() has settable attributes");
  // A namespace inside a namespace could be made to hold itself: a cycle
  // that printing would never leave and reference counting never free.
  if (value.holdsNamespace())
    return fail(node.line, "cannot store a namespace in a namespace");
  target->namespaceEntries().set(node.attribute, std::move(value));
  return true;
}

bool Renderer::capture(const Body &body, int line, std::string &text) {
  std::string *saved = out;
  out = &text;
  Flow flow = render(body, line);
  out = saved;
  return flow == Flow::Next;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

bool Renderer::evalArgs(const Expr &e, Args &args) {
  for (const ExprPtr &item : e.items) {
    Value v;
    if (!eval(*item, v))
      return false;
    args.positional.push_back(std::move(v));
  }
  for (const auto &keyword : e.keywords) {
    Value v;
    if (!eval(*keyword.second, v))
      return false;
    args.keywords.emplace_back(keyword.first, std::move(v));
  }
  return true;
}

bool Renderer::eval(const Expr &e, Value &result) {
  Deeper guard(*this);
  if (!guard.ok(e.line) || !step(e.line))
    return false;
  switch (e.kind) {
  case ExprKind::Literal:
    result = e.value;
    return true;
  case ExprKind::Name:
    if (const Value *v = lookup(e.name))
      result = *v;
    else
      result = Value::undefined(quote(e.name) + " is undefined");
    return true;
  case ExprKind::List:
  case ExprKind::Tuple: {
    ValueList items;
    for (const ExprPtr &item : e.items) {
      Value v;
      if (!eval(*item, v))
        return false;
      items.push_back(std::move(v));
    }
    return host.setList(result, std::move(items), e.kind == ExprKind::Tuple) ||
           failHost(e.line);
  }
  case ExprKind::DictLiteral: {
    Dict entries;
    for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
      Value key, v;
      if (!eval(*e.items[k], key) || !eval(*e.items[k + 1], v))
        return false;
      if (!key.isString())
        return fail(e.line, format("dict keys must be strings here, not '%s'",
                                   key.typeName()));
      entries.set(key.asString(), std::move(v));
    }
    return host.setDict(result, std::move(entries)) || failHost(e.line);
  }
  case ExprKind::Attribute: {
    Value object;
    if (!eval(*e.lhs, object))
      return false;
    return getAttribute(host, object, e.name, result) || failHost(e.line);
  }
  case ExprKind::Index: {
    Value object, key;
    if (!eval(*e.lhs, object) || !eval(*e.rhs, key))
      return false;
    return getItem(host, object, key, result) || failHost(e.line);
  }
  case ExprKind::Slice:
    return evalSlice(e, result);
  case ExprKind::Call: {
    Value callee;
    Args args;
    if (!eval(*e.lhs, callee) || !evalArgs(e, args))
      return false;
    return call(e, callee, args, result);
  }
  case ExprKind::MethodCall: {
    Value self;
    Args args;
    if (!eval(*e.lhs, self) || !evalArgs(e, args))
      return false;
    return callMethod(e.builtin, host, self, args, result) || failHost(e.line);
  }
  case ExprKind::Filter: {
    Value input;
    Args args;
    if (!eval(*e.lhs, input) || !evalArgs(e, args))
      return false;
    return applyFilter(e.builtin, host, input, args, result) ||
           failHost(e.line);
  }
  case ExprKind::Test: {
    Value input;
    Args args;
    bool passes = false;
    if (!eval(*e.lhs, input) || !evalArgs(e, args))
      return false;
    if (!applyTest(e.builtin, host, input, args, passes))
      return failHost(e.line);
    result = Value::boolean(passes != e.negated);
    return true;
  }
  case ExprKind::Negate:
  case ExprKind::Plus: {
    Value v;
    return eval(*e.lhs, v) && evalUnary(e, v, result);
  }
  case ExprKind::Not: {
    Value v;
    if (!eval(*e.lhs, v))
      return false;
    result = Value::boolean(!v.truthy());
    return true;
  }
  case ExprKind::And:
  case ExprKind::Or: {
    if (!eval(*e.lhs, result))
      return false;
    bool decided = e.kind == ExprKind::And ? !result.truthy() : result.truthy();
    return decided || eval(*e.rhs, result);
  }
  case ExprKind::Binary: {
    Value a, b;
    return eval(*e.lhs, a) && eval(*e.rhs, b) && evalBinary(e, a, b, result);
  }
  case ExprKind::Compare:
    return evalCompare(e, result);
  case ExprKind::Conditional: {
    Value condition;
    if (!eval(*e.rhs, condition))
      return false;
    if (condition.truthy())
      return eval(*e.lhs, result);
    if (e.third)
      return eval(*e.third, result);
    result = Value::undefined(format("the inline if-expression on line %d "
                                     "evaluated to false and no else section "
                                     "was defined",
                                     e.line));
    return true;
  }
  }
  return fail(e.line, "internal error: unknown expression");
}

bool Renderer::evalUnary(const Expr &e, const Value &v, Value &result) {
  const char *op = e.kind == ExprKind::Negate ? "-" : "+";
  if (v.isUndefined())
    return fail(e.line, v.asString());
  if (v.isIntegral()) {
    if (e.kind == ExprKind::Negate && v.asInt() == INT64_MIN)
      return fail(e.line, "integer overflow");
    result =
        Value::integer(e.kind == ExprKind::Negate ? -v.asInt() : v.asInt());
    return true;
  }
  if (v.kind() == Value::Kind::Float) {
    result = Value::number(e.kind == ExprKind::Negate ? -v.asDouble()
                                                      : v.asDouble());
    return true;
  }
  return fail(e.line,
              format("bad operand type for unary %s: '%s'", op, v.typeName()));
}

/// Python's integer a ** b for b >= 0, false on overflow.
static bool intPow(int64_t base, int64_t exponent, int64_t &result) {
  result = 1;
  while (exponent > 0) {
    if ((exponent & 1) && __builtin_mul_overflow(result, base, &result))
      return false;
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base))
      return false;
  }
  return true;
}

bool Renderer::evalBinary(const Expr &e, const Value &a, const Value &b,
                          Value &result) {
  static const char *const spellings[] = {"+",  "-", "*",  "/",
                                          "//", "%", "**", "~"};
  if (e.op == BinaryOp::Concat) {
    std::string s = a.str();
    std::string t = b.str();
    // Charged before the result is built: a doubling loop stops at the
    // limit, not after allocating twice as much.
    if (!host.charge(s.size() + t.size()))
      return failHost(e.line);
    s += t;
    result = Value::string(std::move(s));
    return true;
  }
  if (a.isUndefined() || b.isUndefined())
    return fail(e.line, (a.isUndefined() ? a : b).asString());
  auto unsupported = [&]() {
    return fail(e.line, format("unsupported operand type(s) for %s: '%s' and "
                               "'%s'",
                               spellings[static_cast<int>(e.op)], a.typeName(),
                               b.typeName()));
  };
  auto overflow = [&]() { return fail(e.line, "integer overflow"); };
  if (a.isNumber() && b.isNumber()) {
    bool integral = a.isIntegral() && b.isIntegral();
    int64_t x = a.asInt(), y = b.asInt(), r = 0;
    double f = a.asDouble(), g = b.asDouble();
    switch (e.op) {
    case BinaryOp::Add:
      if (!integral)
        return result = Value::number(f + g), true;
      if (__builtin_add_overflow(x, y, &r))
        return overflow();
      return result = Value::integer(r), true;
    case BinaryOp::Sub:
      if (!integral)
        return result = Value::number(f - g), true;
      if (__builtin_sub_overflow(x, y, &r))
        return overflow();
      return result = Value::integer(r), true;
    case BinaryOp::Mul:
      if (!integral)
        return result = Value::number(f * g), true;
      if (__builtin_mul_overflow(x, y, &r))
        return overflow();
      return result = Value::integer(r), true;
    case BinaryOp::Div:
      if (g == 0)
        return fail(e.line, "division by zero");
      return result = Value::number(f / g), true;
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
      if (integral) {
        if (y == 0)
          return fail(e.line, "integer division or modulo by zero");
        if (x == INT64_MIN && y == -1)
          return overflow();
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) { // Python floors
          --q;
          m += y;
        }
        return result = Value::integer(e.op == BinaryOp::Mod ? m : q), true;
      }
      if (g == 0)
        return fail(e.line, "float division or modulo by zero");
      if (e.op == BinaryOp::FloorDiv)
        return result = Value::number(std::floor(f / g)), true;
      {
        double m = std::fmod(f, g);
        if (m != 0 && ((m < 0) != (g < 0)))
          m += g;
        return result = Value::number(m), true;
      }
    case BinaryOp::Pow:
      if (integral && y >= 0) {
        if (!intPow(x, y, r))
          return overflow();
        return result = Value::integer(r), true;
      }
      if (f == 0 && g < 0)
        return fail(e.line, "0.0 cannot be raised to a negative power");
      return result = Value::number(std::pow(f, g)), true;
    case BinaryOp::Concat:
      break;
    }
    return unsupported();
  }
  if (e.op == BinaryOp::Add) {
    if (a.isString() && b.isString()) {
      if (!host.charge(a.asString().size() + b.asString().size()))
        return failHost(e.line);
      result = Value::string(a.asString() + b.asString());
      return true;
    }
    if (a.isList() && b.isList() && a.isTuple() == b.isTuple()) {
      ValueList items = a.asList();
      items.insert(items.end(), b.asList().begin(), b.asList().end());
      return host.setList(result, std::move(items), a.isTuple()) ||
             failHost(e.line);
    }
    return unsupported();
  }
  if (e.op == BinaryOp::Mul && (a.isIntegral() || b.isIntegral()) &&
      (a.isString() || b.isString() || a.isList() || b.isList())) {
    const Value &sequence = a.isIntegral() ? b : a;
    int64_t count = std::max<int64_t>(0, (a.isIntegral() ? a : b).asInt());
    uint64_t unit = sequence.isString()
                        ? sequence.asString().size()
                        : sequence.asList().size() * sizeof(Value);
    if (unit > 0 && static_cast<uint64_t>(count) > limits.maxBytes / unit)
      return fail(e.line, "the repeated sequence would be too large");
    if (sequence.isString()) {
      std::string s;
      for (int64_t k = 0; k < count; ++k)
        s += sequence.asString();
      return host.setString(result, std::move(s)) || failHost(e.line);
    }
    ValueList items;
    for (int64_t k = 0; k < count; ++k)
      items.insert(items.end(), sequence.asList().begin(),
                   sequence.asList().end());
    return host.setList(result, std::move(items), sequence.isTuple()) ||
           failHost(e.line);
  }
  if (e.op == BinaryOp::Mod && a.isString())
    return fail(e.line, "unsupported printf-style formatting (string % ...)");
  return unsupported();
}

bool Renderer::evalCompare(const Expr &e, Value &result) {
  Value left;
  if (!eval(*e.lhs, left))
    return false;
  for (size_t k = 0; k < e.ops.size(); ++k) {
    Value right;
    if (!eval(*e.items[k], right))
      return false;
    bool holds = false;
    int order = 0;
    switch (e.ops[k]) {
    case CompareOp::Eq:
      holds = left.equals(right);
      break;
    case CompareOp::Ne:
      holds = !left.equals(right);
      break;
    case CompareOp::In:
    case CompareOp::NotIn:
      if (!containsValue(host, right, left, holds))
        return failHost(e.line);
      holds = holds == (e.ops[k] == CompareOp::In);
      break;
    default:
      if (!compareValues(host, left, right, order))
        return failHost(e.line);
      holds = e.ops[k] == CompareOp::Lt   ? order < 0
              : e.ops[k] == CompareOp::Le ? order <= 0
              : e.ops[k] == CompareOp::Gt ? order > 0
                                          : order >= 0;
    }
    if (!holds) {
      result = Value::boolean(false);
      return true;
    }
    left = std::move(right);
  }
  result = Value::boolean(true);
  return true;
}

bool Renderer::evalSlice(const Expr &e, Value &result) {
  Value object;
  if (!eval(*e.lhs, object))
    return false;
  int64_t parts[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; ++k) {
    if (!e.slice[k])
      continue;
    Value v;
    if (!eval(*e.slice[k], v))
      return false;
    if (v.isNone() || v.isUndefined())
      continue;
    if (!v.isIntegral())
      return fail(e.line, format("slice indices must be integers or None, "
                                 "not '%s'",
                                 v.typeName()));
    parts[k] = v.asInt();
    given[k] = true;
  }
  if (object.isUndefined())
    return fail(e.line, object.asString());
  if (!object.isList() && !object.isString()) {
    result = Value::undefined(
        format("'%s object' cannot be sliced", object.typeName()));
    return true;
  }
  int64_t step = given[2] ? parts[2] : 1;
  if (step == 0)
    return fail(e.line, "slice step cannot be zero");
  if (step == INT64_MIN)
    step = -INT64_MAX;
  std::vector<size_t> offsets;
  int64_t n = 0;
  if (object.isString()) {
    offsets = codePointOffsets(object.asString());
    n = static_cast<int64_t>(offsets.size()) - 1;
  } else {
    n = static_cast<int64_t>(object.asList().size());
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](int64_t index, bool isGiven, int64_t fallback) {
    if (!isGiven)
      return fallback;
    if (index < 0) {
      index += n;
      if (index < 0)
        index = step < 0 ? -1 : 0;
    } else if (index >= n) {
      index = step < 0 ? n - 1 : n;
    }
    return index;
  };
  int64_t start = adjust(parts[0], given[0], step < 0 ? n - 1 : 0);
  int64_t stop = adjust(parts[1], given[1], step < 0 ? -1 : n);
  std::vector<int64_t> picked;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
    picked.push_back(k);
    if ((step > 0 && k > INT64_MAX - step) ||
        (step < 0 && k < INT64_MIN - step))
      break;
  }
  if (object.isString()) {
    const std::string &s = object.asString();
    std::string sliced;
    for (int64_t k : picked) {
      size_t at = offsets[static_cast<size_t>(k)];
      sliced.append(s, at, offsets[static_cast<size_t>(k) + 1] - at);
    }
    return host.setString(result, std::move(sliced)) || failHost(e.line);
  }
  ValueList items;
  for (int64_t k : picked)
    items.push_back(object.asList()[static_cast<size_t>(k)]);
  return host.setList(result, std::move(items), object.isTuple()) ||
         failHost(e.line);
}

bool Renderer::call(const Expr &e, const Value &callee, const Args &args,
                    Value &result) {
  switch (callee.kind()) {
  case Value::Kind::Function:
    return callFunction(e.line, callee.asFunction(), args, result);
  case Value::Kind::Macro:
    return callMacro(e.line, *callee.asMacro(), args, result);
  case Value::Kind::Undefined:
    return fail(e.line, callee.asString());
  default:
    return fail(e.line,
                format("'%s' object is not callable", callee.typeName()));
  }
}

bool Renderer::callFunction(int line, Function function, const Args &args,
                            Value &result) {
  switch (function) {
  case Function::Range: {
    if (!args.keywords.empty() || args.positional.empty() ||
        args.positional.size() > 3)
      return fail(line, "range() takes 1 to 3 integer arguments");
    int64_t parts[3] = {0, 0, 1};
    for (const Value &v : args.positional)
      if (!v.isIntegral())
        return fail(line, format("range() arguments must be integers, not "
                                 "'%s'",
                                 v.typeName()));
    if (args.positional.size() == 1) {
      parts[1] = args.positional[0].asInt();
    } else {
      for (size_t k = 0; k < args.positional.size(); ++k)
        parts[k] = args.positional[k].asInt();
    }
    int64_t start = parts[0], stop = parts[1], step = parts[2];
    if (step == 0)
      return fail(line, "range() step must not be zero");
    // Counted in long double: stop - start may overflow int64.
    long double span = static_cast<long double>(stop) - start;
    long double count = std::ceil(span / step);
    if (count < 0)
      count = 0;
    if (count * sizeof(Value) > static_cast<long double>(limits.maxBytes))
      return fail(line, format("range() of %.0Lf numbers is too long", count));
    if (!host.charge(static_cast<uint64_t>(count) * sizeof(Value)))
      return failHost(line);
    ValueList items;
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
      items.push_back(Value::integer(start + k * step));
    result = Value::list(std::move(items));
    return true;
  }
  case Function::Namespace:
  case Function::Dict: {
    const char *name = function == Function::Dict ? "dict()" : "namespace()";
    Dict entries;
    if (args.positional.size() > 1 ||
        (args.positional.size() == 1 && !args.positional[0].isDict()))
      return fail(line, format("%s takes at most one dict and keyword "
                               "arguments",
                               name));
    if (!args.positional.empty())
      entries = args.positional[0].asDict();
    for (const auto &keyword : args.keywords)
      entries.set(keyword.first, keyword.second);
    if (function == Function::Namespace)
      for (const auto &entry : entries.entries)
        if (entry.second.holdsNamespace())
          return fail(line, "cannot store a namespace in a namespace");
    return host.setDict(result, std::move(entries),
                        function == Function::Namespace) ||
           failHost(line);
  }
  case Function::RaiseException: {
    std::string message =
        args.positional.empty() ? std::string() : args.positional[0].str();
    return fail(line, "raise_exception: " + oneLine(message));
  }
  case Function::StrftimeNow: {
    if (args.positional.size() != 1 || !args.positional[0].isString())
      return fail(line, "strftime_now() takes one format string");
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[512];
    size_t length = std::strftime(
        buf, sizeof buf, args.positional[0].asString().c_str(), &local);
    result = Value::string(std::string(buf, length));
    return true;
  }
  }
  return fail(line, "internal error: unknown function");
}

bool Renderer::callMacro(int line, const MacroNode &macro, const Args &args,
                         Value &result) {
  if (args.positional.size() > macro.params.size())
    return fail(line, "macro " + quote(macro.name) +
                          format(" takes not more than %zu argument(s)",
                                 macro.params.size()));
  Frame frame;
  frame.isolated = true;
  std::vector<bool> bound(macro.params.size(), false);
  for (size_t k = 0; k < args.positional.size(); ++k) {
    frame.vars.emplace_back(macro.params[k], args.positional[k]);
    bound[k] = true;
  }
  for (const auto &keyword : args.keywords) {
    size_t k = 0;
    while (k < macro.params.size() && macro.params[k] != keyword.first)
      ++k;
    if (k == macro.params.size())
      return fail(line, "macro " + quote(macro.name) +
                            " takes no keyword argument " +
                            quote(keyword.first));
    if (bound[k])
      return fail(line, "macro " + quote(macro.name) +
                            " got multiple values for argument " +
                            quote(keyword.first));
    frame.vars.emplace_back(keyword.first, keyword.second);
    bound[k] = true;
  }
  frames.push_back(std::move(frame));
  bool ok = true;
  for (size_t k = 0; ok && k < macro.params.size(); ++k) {
    if (bound[k])
      continue;
    Value v = Value::undefined("parameter " + quote(macro.params[k]) +
                               " was not provided");
    if (macro.defaults[k])
      ok = eval(*macro.defaults[k], v);
    assign(macro.params[k], std::move(v));
  }
  std::string text;
  ok = ok && capture(macro.body, line, text);
  frames.pop_back();
  if (!ok)
    return false;
  return host.setString(result, std::move(text)) || failHost(line);
}

bool attnrt::chat::renderProgram(const Program &program, const Dict &globals,
                                 const ChatLimits &limits, std::string &out,
                                 std::string &error) {
  Renderer renderer(limits, out);
  if (renderer.run(program, globals))
    return true;
  error = renderer.error.empty() ? "render failed" : renderer.error;
  return false;
}
