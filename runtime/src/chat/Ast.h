//===- Ast.h - the parsed form of a chat template ---------------*- C++ -*-===//
//
// Expressions and statements of the supported Jinja subset. Every node keeps
// its source line for runtime errors. Names of filters, tests and methods are
// resolved at parse time (an unknown one is a load error), so the
// interpreter only dispatches.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_AST_H
#define ATTNRT_CHAT_AST_H

#include "chat/Value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnrt::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
  Literal,     // value
  Name,        // name
  List,        // items
  Tuple,       // items
  DictLiteral, // items: key, value, key, value, ...
  Attribute,   // lhs.name (also lhs.0, which is an Index)
  Index,       // lhs[rhs]
  Slice,       // lhs[slice[0]:slice[1]:slice[2]], each part optional
  Call,        // lhs(items, keywords)
  MethodCall,  // lhs.name(items, keywords), method `builtin`
  Filter,      // lhs | name(items, keywords), filter `builtin`
  Test,        // lhs is [not] name(items), test `builtin`
  Negate,      // -lhs
  Plus,        // +lhs
  Not,         // not lhs
  And,         // lhs and rhs
  Or,          // lhs or rhs
  Binary,      // lhs op rhs
  Compare,     // lhs ops[0] items[0] ops[1] items[1] ... (chained)
  Conditional, // lhs if rhs else third (third optional)
};

enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  Concat
};
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
  ExprKind kind = ExprKind::Literal;
  int line = 0;
  /// The height of the tree under this node; the parser bounds it so that
  /// evaluating and freeing never recurse deeply.
  unsigned height = 1;
  Value value;
  std::string name;
  int builtin = -1;
  BinaryOp op = BinaryOp::Add;
  bool negated = false;
  ExprPtr lhs, rhs, third;
  ExprPtr slice[3];
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<CompareOp> ops;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class NodeKind : uint8_t {
  Text,       // text
  Output,     // {{ expr }}
  If,         // branches
  For,        // for targets in expr [if filter] body [else elseBody]
  Set,        // set targets = expr, or set targets[0].attribute = expr
  SetBlock,   // set targets[0] %} body {% endset
  Macro,      // macro
  Break,      // break
  Continue,   // continue
  Generation, // HF's {% generation %} body {% endgeneration %}: just body
};

struct IfBranch {
  ExprPtr condition; // null for else
  Body body;
};

/// {% macro name(params[0], params[1]=defaults[1], ...) %}
struct MacroNode {
  std::string name;
  int line = 0;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults; // per parameter; null when it has none
  Body body;
};

struct Node {
  NodeKind kind = NodeKind::Text;
  int line = 0;
  std::string text;
  ExprPtr expr, filter;
  std::vector<std::string> targets;
  std::string attribute;
  std::vector<IfBranch> branches;
  Body body, elseBody;
  std::unique_ptr<MacroNode> macro;
};

struct Program {
  Body body;
};

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_AST_H
