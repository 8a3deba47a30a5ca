//===- Parser.cpp - chat-template source into a Program -------------------===//

#include "chat/Parser.h"

#include "Support.h"
#include "chat/Builtins.h"
#include "chat/Lexer.h"

#include <algorithm>
#include <initializer_list>
#include <set>

using namespace attnrt;
using namespace attnrt::chat;

namespace {

/// Bounds on nesting, so that parsing, evaluating and freeing a program never
/// recurse deeply whatever the source (real templates nest a few levels).
constexpr unsigned kMaxExprHeight = 200;
constexpr int kMaxNesting = 100;

/// The functions a template may call (jinja2's globals that transformers
/// templates use, plus its raise_exception and strftime_now).
const char *const kFunctions[] = {"range", "namespace", "dict",
                                  "raise_exception", "strftime_now"};

class Parser {
public:
  Parser(std::vector<Segment> &segments, std::string &error)
      : segments(segments), error(error) {}

  bool parseProgram(Program &program);

private:
  //===--- Errors and the token cursor ----------------------------------===//

  bool fail(int line, const std::string &message) {
    if (error.empty())
      error = format("line %d: ", line) + message;
    return false;
  }
  bool failHere(const std::string &message) {
    return fail(peek().line, message);
  }
  /// "'x'", "end of tag" or "'name'" for messages.
  std::string describe(const Token &token) const {
    switch (token.kind) {
    case Token::Kind::End:
      return "the end of the tag";
    case Token::Kind::String:
      return "a string literal";
    case Token::Kind::Integer:
    case Token::Kind::Float:
      return "a number";
    default:
      return quote(token.text);
    }
  }
  const Token &peek(size_t ahead = 0) const {
    size_t at = std::min(tokenIndex + ahead, tokens->size() - 1);
    return (*tokens)[at];
  }
  const Token &next() {
    const Token &token = peek();
    if (tokenIndex + 1 < tokens->size())
      ++tokenIndex;
    return token;
  }
  bool acceptOp(std::string_view op) {
    if (!peek().isOperator(op))
      return false;
    next();
    return true;
  }
  bool acceptName(std::string_view name) {
    if (!peek().isName(name))
      return false;
    next();
    return true;
  }
  bool expectOp(std::string_view op) {
    if (acceptOp(op))
      return true;
    return failHere("expected '" + std::string(op) + "', found " +
                    describe(peek()));
  }
  bool expectName(std::string &name, const char *what) {
    if (peek().kind != Token::Kind::Name)
      return failHere(std::string("expected ") + what + ", found " +
                      describe(peek()));
    name = next().text;
    return true;
  }
  /// The end of the current tag; moves to the next segment.
  bool finishSegment() {
    if (peek().kind != Token::Kind::End)
      return failHere("unexpected " + describe(peek()) + " in the tag");
    ++segmentIndex;
    return true;
  }

  //===--- Statements ---------------------------------------------------===//

  bool parseBody(Body &body, std::initializer_list<const char *> ends,
                 std::string &found, int openLine, const char *openTag);
  bool parseStatement(Body &body, const std::string &keyword, int line);
  bool parseFor(Body &body, int line);
  bool parseIf(Body &body, int line);
  bool parseSet(Body &body, int line);
  bool parseMacro(Body &body, int line);

  //===--- Expressions (jinja2's precedence, loosest first) -------------===//

  bool parseTuple(ExprPtr &out, bool withCondExpr = true);
  bool parseExpression(ExprPtr &out, bool withCondExpr = true);
  bool parseOr(ExprPtr &out);
  bool parseAnd(ExprPtr &out);
  bool parseNot(ExprPtr &out);
  bool parseCompare(ExprPtr &out);
  bool parseMath1(ExprPtr &out);
  bool parseConcat(ExprPtr &out);
  bool parseMath2(ExprPtr &out);
  bool parsePow(ExprPtr &out);
  bool parseUnary(ExprPtr &out, bool withFilter = true);
  bool parsePrimary(ExprPtr &out);
  bool parsePostfix(ExprPtr &out);
  bool parseFilterExpr(ExprPtr &out);
  bool parseSubscript(ExprPtr &out);
  bool parseCallArgs(Expr &call);

  ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  /// Sets e's height from its children; fails past the bound.
  bool seal(Expr &e);
  bool binary(ExprPtr &left, ExprKind kind, BinaryOp op, ExprPtr right,
              int line) {
    ExprPtr e = make(kind, line);
    e->op = op;
    e->lhs = std::move(left);
    e->rhs = std::move(right);
    left = std::move(e);
    return seal(*left);
  }

  /// Counts recursion into nested expressions and blocks.
  struct Nesting {
    Nesting(Parser &parser) : parser(parser) { ++parser.nesting; }
    ~Nesting() { --parser.nesting; }
    bool ok() const { return parser.nesting <= kMaxNesting; }
    Parser &parser;
  };

  std::vector<Segment> &segments;
  std::string &error;
  size_t segmentIndex = 0;
  const std::vector<Token> *tokens = nullptr;
  size_t tokenIndex = 0;
  int nesting = 0;
  int loopDepth = 0;
  /// Names a template defines (macros, set and loop variables), and the
  /// names it calls: a call of something else is an unsupported function.
  std::set<std::string> definedNames;
  std::vector<std::pair<std::string, int>> calledNames;
};

} // namespace

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Parser::parseProgram(Program &program) {
  static const std::vector<Token> noTokens(1);
  tokens = &noTokens;
  std::string found;
  if (!parseBody(program.body, {}, found, 0, nullptr))
    return false;
  for (const auto &[name, line] : calledNames) {
    bool known = definedNames.count(name) > 0;
    for (const char *function : kFunctions)
      known = known || name == function;
    if (!known)
      return fail(line, "unsupported function " + quote(name));
  }
  return true;
}

bool Parser::parseBody(Body &body, std::initializer_list<const char *> ends,
                       std::string &found, int openLine, const char *openTag) {
  Nesting guard(*this);
  if (!guard.ok())
    return fail(openLine, "blocks nested too deeply");
  while (segmentIndex < segments.size()) {
    Segment &segment = segments[segmentIndex];
    if (segment.kind == Segment::Kind::Text) {
      auto node = std::make_unique<Node>();
      node->kind = NodeKind::Text;
      node->line = segment.line;
      node->text = std::move(segment.text);
      body.push_back(std::move(node));
      ++segmentIndex;
      continue;
    }
    tokens = &segment.tokens;
    tokenIndex = 0;
    if (segment.kind == Segment::Kind::Output) {
      auto node = std::make_unique<Node>();
      node->kind = NodeKind::Output;
      node->line = segment.line;
      if (peek().kind == Token::Kind::End)
        return fail(segment.line, "empty expression {{ }}");
      if (!parseTuple(node->expr) || !finishSegment())
        return false;
      body.push_back(std::move(node));
      continue;
    }
    if (peek().kind != Token::Kind::Name)
      return fail(segment.line,
                  "expected a tag name after {%, found " + describe(peek()));
    std::string keyword = next().text;
    for (const char *end : ends)
      if (keyword == end) {
        found = keyword;
        return true;
      }
    if (!parseStatement(body, keyword, segment.line))
      return false;
  }
  if (ends.size() == 0)
    return true;
  return fail(openLine, format("{%% %s %%} is not closed (no {%% %s %%})",
                               openTag, *(ends.end() - 1)));
}

bool Parser::parseStatement(Body &body, const std::string &keyword, int line) {
  if (keyword == "for")
    return parseFor(body, line);
  if (keyword == "if")
    return parseIf(body, line);
  if (keyword == "set")
    return parseSet(body, line);
  if (keyword == "macro")
    return parseMacro(body, line);
  if (keyword == "break" || keyword == "continue") {
    if (loopDepth == 0)
      return fail(line, quote(keyword) + " outside a loop");
    auto node = std::make_unique<Node>();
    node->kind = keyword == "break" ? NodeKind::Break : NodeKind::Continue;
    node->line = line;
    body.push_back(std::move(node));
    return finishSegment();
  }
  if (keyword == "generation") {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::Generation;
    node->line = line;
    std::string found;
    if (!finishSegment() ||
        !parseBody(node->body, {"endgeneration"}, found, line, "generation") ||
        !finishSegment())
      return false;
    body.push_back(std::move(node));
    return true;
  }
  static const char *const strays[] = {
      "endfor", "endif", "elif", "else", "endset", "endmacro", "endgeneration"};
  for (const char *stray : strays)
    if (keyword == stray)
      return fail(line, format("unexpected {%% %s %%}", stray));
  return fail(line, "unsupported tag " + quote(keyword));
}

bool Parser::parseFor(Body &body, int line) {
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::For;
  node->line = line;
  bool parenthesized = acceptOp("(");
  do {
    std::string target;
    if (!expectName(target, "a loop variable"))
      return false;
    node->targets.push_back(target);
    definedNames.insert(target);
  } while (acceptOp(","));
  if (parenthesized && !expectOp(")"))
    return false;
  if (!acceptName("in"))
    return failHere("expected 'in' in {% for %}, found " + describe(peek()));
  if (!parseTuple(node->expr, /*withCondExpr=*/false))
    return false;
  if (acceptName("if") && !parseExpression(node->filter))
    return false;
  if (peek().isName("recursive"))
    return failHere("unsupported recursive loop");
  if (!finishSegment())
    return false;
  std::string found;
  ++loopDepth;
  bool ok = parseBody(node->body, {"else", "endfor"}, found, line, "for");
  --loopDepth;
  if (!ok)
    return false;
  if (found == "else" &&
      (!finishSegment() ||
       !parseBody(node->elseBody, {"endfor"}, found, line, "for")))
    return false;
  if (!finishSegment())
    return false;
  body.push_back(std::move(node));
  return true;
}

bool Parser::parseIf(Body &body, int line) {
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::If;
  node->line = line;
  std::string found = "if";
  while (found != "endif") {
    IfBranch branch;
    if (found != "else" && !parseExpression(branch.condition))
      return false;
    if (!finishSegment())
      return false;
    std::initializer_list<const char *> ends = {"elif", "else", "endif"};
    std::initializer_list<const char *> last = {"endif"};
    if (!parseBody(branch.body, found == "else" ? last : ends, found, line,
                   "if"))
      return false;
    node->branches.push_back(std::move(branch));
  }
  if (!finishSegment())
    return false;
  body.push_back(std::move(node));
  return true;
}

bool Parser::parseSet(Body &body, int line) {
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::Set;
  node->line = line;
  bool parenthesized = acceptOp("(");
  do {
    std::string target;
    if (!expectName(target, "a variable name"))
      return false;
    node->targets.push_back(target);
    if (node->targets.size() == 1 && acceptOp(".")) {
      if (!expectName(node->attribute, "an attribute name"))
        return false;
      break;
    }
    definedNames.insert(target);
  } while (acceptOp(","));
  if (parenthesized && !expectOp(")"))
    return false;
  if (acceptOp("=")) {
    if (!parseTuple(node->expr) || !finishSegment())
      return false;
    body.push_back(std::move(node));
    return true;
  }
  // {% set name %}...{% endset %}
  if (node->targets.size() != 1 || !node->attribute.empty())
    return failHere("expected '=' in {% set %}, found " + describe(peek()));
  if (peek().isOperator("|"))
    return failHere("unsupported filter on a {% set %} block");
  node->kind = NodeKind::SetBlock;
  std::string found;
  if (!finishSegment() ||
      !parseBody(node->body, {"endset"}, found, line, "set") ||
      !finishSegment())
    return false;
  body.push_back(std::move(node));
  return true;
}

bool Parser::parseMacro(Body &body, int line) {
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::Macro;
  node->line = line;
  node->macro = std::make_unique<MacroNode>();
  MacroNode &macro = *node->macro;
  macro.line = line;
  if (!expectName(macro.name, "a macro name") || !expectOp("("))
    return false;
  definedNames.insert(macro.name);
  while (!acceptOp(")")) {
    if (!macro.params.empty() && !expectOp(","))
      return false;
    if (acceptOp(")"))
      break;
    std::string param;
    if (!expectName(param, "a parameter name"))
      return false;
    ExprPtr fallback;
    if (acceptOp("=") && !parseExpression(fallback))
      return false;
    macro.params.push_back(param);
    macro.defaults.push_back(std::move(fallback));
  }
  if (!finishSegment())
    return false;
  std::string found;
  int outerLoops = loopDepth;
  loopDepth = 0; // a loop around the definition is not around the body
  bool ok = parseBody(macro.body, {"endmacro"}, found, line, "macro");
  loopDepth = outerLoops;
  if (!ok || !finishSegment())
    return false;
  body.push_back(std::move(node));
  return true;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

bool Parser::seal(Expr &e) {
  unsigned height = 0;
  auto see = [&](const ExprPtr &child) {
    if (child)
      height = std::max(height, child->height);
  };
  see(e.lhs);
  see(e.rhs);
  see(e.third);
  for (const ExprPtr &part : e.slice)
    see(part);
  for (const ExprPtr &item : e.items)
    see(item);
  for (const auto &keyword : e.keywords)
    see(keyword.second);
  e.height = height + 1;
  if (e.height > kMaxExprHeight)
    return fail(e.line, "expression nested too deeply");
  return true;
}

/// Expressions separated by commas make a tuple: `{% set a, b = 1, 2 %}`.
bool Parser::parseTuple(ExprPtr &out, bool withCondExpr) {
  int line = peek().line;
  std::vector<ExprPtr> items;
  bool comma = false;
  while (true) {
    if (!items.empty()) {
      if (!acceptOp(","))
        break;
      comma = true;
      const Token &t = peek();
      if (t.kind == Token::Kind::End || t.isOperator(")") || t.isName("if"))
        break; // a trailing comma
    }
    ExprPtr item;
    if (!parseExpression(item, withCondExpr))
      return false;
    items.push_back(std::move(item));
  }
  if (!comma) {
    out = std::move(items.front());
    return true;
  }
  out = make(ExprKind::Tuple, line);
  out->items = std::move(items);
  return seal(*out);
}

bool Parser::parseExpression(ExprPtr &out, bool withCondExpr) {
  Nesting guard(*this);
  if (!guard.ok())
    return failHere("expression nested too deeply");
  if (!parseOr(out))
    return false;
  while (withCondExpr && peek().isName("if")) {
    int line = next().line;
    ExprPtr condition, otherwise;
    if (!parseOr(condition))
      return false;
    if (acceptName("else") && !parseExpression(otherwise))
      return false;
    ExprPtr e = make(ExprKind::Conditional, line);
    e->lhs = std::move(out);
    e->rhs = std::move(condition);
    e->third = std::move(otherwise);
    out = std::move(e);
    if (!seal(*out))
      return false;
  }
  return true;
}

bool Parser::parseOr(ExprPtr &out) {
  if (!parseAnd(out))
    return false;
  while (peek().isName("or")) {
    int line = next().line;
    ExprPtr right;
    if (!parseAnd(right) ||
        !binary(out, ExprKind::Or, BinaryOp::Add, std::move(right), line))
      return false;
  }
  return true;
}

bool Parser::parseAnd(ExprPtr &out) {
  if (!parseNot(out))
    return false;
  while (peek().isName("and")) {
    int line = next().line;
    ExprPtr right;
    if (!parseNot(right) ||
        !binary(out, ExprKind::And, BinaryOp::Add, std::move(right), line))
      return false;
  }
  return true;
}

bool Parser::parseNot(ExprPtr &out) {
  if (!peek().isName("not"))
    return parseCompare(out);
  Nesting guard(*this);
  if (!guard.ok())
    return failHere("expression nested too deeply");
  int line = next().line;
  ExprPtr operand;
  if (!parseNot(operand))
    return false;
  out = make(ExprKind::Not, line);
  out->lhs = std::move(operand);
  return seal(*out);
}

bool Parser::parseCompare(ExprPtr &out) {
  int line = peek().line;
  if (!parseMath1(out))
    return false;
  ExprPtr compare;
  while (true) {
    const Token &t = peek();
    CompareOp op;
    if (t.isOperator("=="))
      op = CompareOp::Eq;
    else if (t.isOperator("!="))
      op = CompareOp::Ne;
    else if (t.isOperator("<"))
      op = CompareOp::Lt;
    else if (t.isOperator("<="))
      op = CompareOp::Le;
    else if (t.isOperator(">"))
      op = CompareOp::Gt;
    else if (t.isOperator(">="))
      op = CompareOp::Ge;
    else if (t.isName("in"))
      op = CompareOp::In;
    else if (t.isName("not") && peek(1).isName("in"))
      op = CompareOp::NotIn;
    else
      break;
    next();
    if (op == CompareOp::NotIn)
      next();
    ExprPtr right;
    if (!parseMath1(right))
      return false;
    if (!compare) {
      compare = make(ExprKind::Compare, line);
      compare->lhs = std::move(out);
    }
    compare->ops.push_back(op);
    compare->items.push_back(std::move(right));
    if (!seal(*compare))
      return false;
  }
  if (compare)
    out = std::move(compare);
  return true;
}

bool Parser::parseMath1(ExprPtr &out) {
  if (!parseConcat(out))
    return false;
  while (peek().isOperator("+") || peek().isOperator("-")) {
    const Token &t = next();
    BinaryOp op = t.text == "+" ? BinaryOp::Add : BinaryOp::Sub;
    ExprPtr right;
    if (!parseConcat(right) ||
        !binary(out, ExprKind::Binary, op, std::move(right), t.line))
      return false;
  }
  return true;
}

bool Parser::parseConcat(ExprPtr &out) {
  if (!parseMath2(out))
    return false;
  while (peek().isOperator("~")) {
    int line = next().line;
    ExprPtr right;
    if (!parseMath2(right) || !binary(out, ExprKind::Binary, BinaryOp::Concat,
                                      std::move(right), line))
      return false;
  }
  return true;
}

bool Parser::parseMath2(ExprPtr &out) {
  if (!parsePow(out))
    return false;
  while (true) {
    const Token &t = peek();
    BinaryOp op;
    if (t.isOperator("*"))
      op = BinaryOp::Mul;
    else if (t.isOperator("/"))
      op = BinaryOp::Div;
    else if (t.isOperator("//"))
      op = BinaryOp::FloorDiv;
    else if (t.isOperator("%"))
      op = BinaryOp::Mod;
    else
      break;
    int line = next().line;
    ExprPtr right;
    if (!parsePow(right) ||
        !binary(out, ExprKind::Binary, op, std::move(right), line))
      return false;
  }
  return true;
}

bool Parser::parsePow(ExprPtr &out) {
  if (!parseUnary(out))
    return false;
  while (peek().isOperator("**")) {
    int line = next().line;
    ExprPtr right;
    if (!parseUnary(right) ||
        !binary(out, ExprKind::Binary, BinaryOp::Pow, std::move(right), line))
      return false;
  }
  return true;
}

bool Parser::parseUnary(ExprPtr &out, bool withFilter) {
  Nesting guard(*this);
  if (!guard.ok())
    return failHere("expression nested too deeply");
  const Token &t = peek();
  if (t.isOperator("-") || t.isOperator("+")) {
    int line = next().line;
    ExprKind kind = t.text == "-" ? ExprKind::Negate : ExprKind::Plus;
    ExprPtr operand;
    if (!parseUnary(operand, false))
      return false;
    out = make(kind, line);
    out->lhs = std::move(operand);
    if (!seal(*out))
      return false;
  } else if (!parsePrimary(out)) {
    return false;
  }
  if (!parsePostfix(out))
    return false;
  return !withFilter || parseFilterExpr(out);
}

bool Parser::parsePrimary(ExprPtr &out) {
  const Token &t = peek();
  int line = t.line;
  switch (t.kind) {
  case Token::Kind::Name: {
    next();
    out = make(ExprKind::Literal, line);
    if (t.text == "true" || t.text == "True")
      out->value = Value::boolean(true);
    else if (t.text == "false" || t.text == "False")
      out->value = Value::boolean(false);
    else if (t.text == "none" || t.text == "None")
      out->value = Value::none();
    else {
      out->kind = ExprKind::Name;
      out->name = t.text;
    }
    return true;
  }
  case Token::Kind::String: {
    std::string text;
    while (peek().kind == Token::Kind::String) // 'a' 'b' is 'ab'
      text += next().text;
    out = make(ExprKind::Literal, line);
    out->value = Value::string(std::move(text));
    return true;
  }
  case Token::Kind::Integer:
    out = make(ExprKind::Literal, line);
    out->value = Value::integer(next().integer);
    return true;
  case Token::Kind::Float:
    out = make(ExprKind::Literal, line);
    out->value = Value::number(next().number);
    return true;
  case Token::Kind::Operator:
    if (t.text == "(") {
      next();
      if (acceptOp(")")) { // ()
        out = make(ExprKind::Tuple, line);
        return true;
      }
      if (!parseTuple(out) || !expectOp(")"))
        return false;
      return true;
    }
    if (t.text == "[" || t.text == "{") {
      bool isList = t.text == "[";
      const char *close = isList ? "]" : "}";
      next();
      out = make(isList ? ExprKind::List : ExprKind::DictLiteral, line);
      while (!acceptOp(close)) {
        if (!out->items.empty() && !expectOp(","))
          return false;
        if (acceptOp(close))
          break;
        ExprPtr item;
        if (!parseExpression(item))
          return false;
        out->items.push_back(std::move(item));
        if (isList)
          continue;
        ExprPtr value;
        if (!expectOp(":") || !parseExpression(value))
          return false;
        out->items.push_back(std::move(value));
      }
      return seal(*out);
    }
    break;
  default:
    break;
  }
  if (t.kind == Token::Kind::End)
    return failHere("an expression is missing before the end of the tag");
  return failHere("unexpected " + describe(t) + " in an expression");
}

bool Parser::parsePostfix(ExprPtr &out) {
  while (true) {
    const Token &t = peek();
    int line = t.line;
    if (t.isOperator(".")) {
      next();
      const Token &attr = peek();
      if (attr.kind == Token::Kind::Integer) { // x.0 is x[0]
        ExprPtr e = make(ExprKind::Index, line);
        e->lhs = std::move(out);
        e->rhs = make(ExprKind::Literal, line);
        e->rhs->value = Value::integer(next().integer);
        out = std::move(e);
      } else {
        std::string name;
        if (!expectName(name, "an attribute name"))
          return false;
        if (peek().isOperator("(")) {
          int method = findMethod(name);
          if (method < 0)
            return fail(line, "unsupported method " + quote(name));
          ExprPtr e = make(ExprKind::MethodCall, line);
          e->lhs = std::move(out);
          e->name = name;
          e->builtin = method;
          next();
          if (!parseCallArgs(*e))
            return false;
          out = std::move(e);
        } else {
          ExprPtr e = make(ExprKind::Attribute, line);
          e->lhs = std::move(out);
          e->name = name;
          out = std::move(e);
        }
      }
    } else if (t.isOperator("[")) {
      next();
      if (!parseSubscript(out))
        return false;
    } else if (t.isOperator("(")) {
      next();
      ExprPtr e = make(ExprKind::Call, line);
      if (out->kind == ExprKind::Name)
        calledNames.emplace_back(out->name, line);
      e->lhs = std::move(out);
      if (!parseCallArgs(*e))
        return false;
      out = std::move(e);
    } else {
      return true;
    }
    if (!seal(*out))
      return false;
  }
}

bool Parser::parseSubscript(ExprPtr &out) {
  int line = peek().line;
  ExprPtr parts[3];
  bool isSlice = false;
  if (!peek().isOperator(":") && !parseExpression(parts[0]))
    return false;
  if (acceptOp(":")) {
    isSlice = true;
    if (!peek().isOperator("]") && !peek().isOperator(":") &&
        !parseExpression(parts[1]))
      return false;
    if (acceptOp(":") && !peek().isOperator("]") && !parseExpression(parts[2]))
      return false;
  }
  if (!expectOp("]"))
    return false;
  ExprPtr e = make(isSlice ? ExprKind::Slice : ExprKind::Index, line);
  e->lhs = std::move(out);
  if (isSlice)
    for (int k = 0; k < 3; ++k)
      e->slice[k] = std::move(parts[k]);
  else
    e->rhs = std::move(parts[0]);
  out = std::move(e);
  return true;
}

bool Parser::parseFilterExpr(ExprPtr &out) {
  while (true) {
    const Token &t = peek();
    int line = t.line;
    if (t.isOperator("|")) {
      next();
      std::string name;
      if (!expectName(name, "a filter name"))
        return false;
      int filter = findFilter(name);
      if (filter < 0)
        return fail(line, "unsupported filter " + quote(name));
      ExprPtr e = make(ExprKind::Filter, line);
      e->lhs = std::move(out);
      e->name = name;
      e->builtin = filter;
      if (acceptOp("(") && !parseCallArgs(*e))
        return false;
      out = std::move(e);
    } else if (t.isName("is")) {
      next();
      ExprPtr e = make(ExprKind::Test, line);
      e->negated = acceptName("not");
      const Token &nameToken = peek();
      if (nameToken.kind != Token::Kind::Name &&
          !(nameToken.kind == Token::Kind::Operator &&
            findTest(nameToken.text) >= 0))
        return failHere("expected a test name after 'is', found " +
                        describe(nameToken));
      std::string name = next().text;
      int test = findTest(name);
      if (test < 0)
        return fail(line, "unsupported test " + quote(name));
      e->lhs = std::move(out);
      e->name = name;
      e->builtin = test;
      const Token &arg = peek();
      bool startsArgument =
          (arg.kind == Token::Kind::Name &&
           !(arg.isName("else") || arg.isName("or") || arg.isName("and") ||
             arg.isName("if") || arg.isName("in") || arg.isName("is") ||
             arg.isName("not"))) ||
          arg.kind == Token::Kind::String || arg.kind == Token::Kind::Integer ||
          arg.kind == Token::Kind::Float || arg.isOperator("[") ||
          arg.isOperator("{");
      if (acceptOp("(")) {
        if (!parseCallArgs(*e))
          return false;
      } else if (startsArgument) { // `x is divisibleby 3`
        ExprPtr value;
        if (!parsePrimary(value) || !parsePostfix(value))
          return false;
        e->items.push_back(std::move(value));
      }
      out = std::move(e);
    } else if (t.isOperator("(")) {
      next();
      ExprPtr e = make(ExprKind::Call, line);
      e->lhs = std::move(out);
      if (!parseCallArgs(*e))
        return false;
      out = std::move(e);
    } else {
      return true;
    }
    if (!seal(*out))
      return false;
  }
}

/// After `(`: positional arguments, then name=value ones, up to `)`.
bool Parser::parseCallArgs(Expr &call) {
  while (!acceptOp(")")) {
    if ((!call.items.empty() || !call.keywords.empty()) && !expectOp(","))
      return false;
    if (acceptOp(")"))
      break;
    if (peek().isOperator("*") || peek().isOperator("**"))
      return failHere("unsupported *args or **kwargs in a call");
    if (peek().kind == Token::Kind::Name && peek(1).isOperator("=")) {
      std::string name = next().text;
      next();
      ExprPtr value;
      if (!parseExpression(value))
        return false;
      call.keywords.emplace_back(name, std::move(value));
      continue;
    }
    if (!call.keywords.empty())
      return failHere("positional argument after a keyword argument");
    ExprPtr value;
    if (!parseExpression(value))
      return false;
    call.items.push_back(std::move(value));
  }
  return true;
}

std::unique_ptr<Program> attnrt::chat::parseTemplate(std::string_view source,
                                                     std::string &error) {
  error.clear();
  std::vector<Segment> segments;
  if (!lexTemplate(source, segments, error))
    return nullptr;
  auto program = std::make_unique<Program>();
  Parser parser(segments, error);
  if (!parser.parseProgram(*program))
    return nullptr;
  return program;
}
