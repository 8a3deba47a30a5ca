//===- Interpreter.h - rendering a parsed chat template ---------*- C++ -*-===//
//
// A tree-walking interpreter with jinja2's scoping: a loop body is a new
// scope each iteration (so {% set %} inside a loop does not leak out, which
// is why templates use namespace()), a macro body sees only its arguments
// and the template's top level. Every render is bounded (ChatLimits): a
// template can loop, recurse or grow strings, but a server never hangs or
// runs out of memory on one.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_INTERPRETER_H
#define ATTNRT_CHAT_INTERPRETER_H

#include "chat/Ast.h"

#include <cstdint>
#include <string>

namespace attnrt::chat {

struct ChatLimits {
  /// Bytes of rendered text (also of any one {% set %} block or macro
  /// result).
  uint64_t maxOutput = uint64_t(32) << 20;
  /// Statements run, expressions evaluated and loop iterations, together:
  /// one to a few seconds of work at most. A real template spends ~100 per
  /// message.
  uint64_t maxSteps = 10'000'000;
  /// Bytes of strings and list items built along the way (values are
  /// immutable, so `ns.s = ns.s + x` in a loop builds quadratically).
  uint64_t maxBytes = uint64_t(256) << 20;
  /// Nested evaluation (blocks, expressions, macro calls) and nesting of
  /// built values.
  unsigned maxDepth = 400;
};

/// Renders `program` with the variables `globals` into `out`. On failure
/// returns false with `error` set to "line N: what" (a type error, a limit,
/// or the message of raise_exception).
bool renderProgram(const Program &program, const Dict &globals,
                   const ChatLimits &limits, std::string &out,
                   std::string &error);

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_INTERPRETER_H
