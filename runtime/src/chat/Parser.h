//===- Parser.h - chat-template source into a Program -----------*- C++ -*-===//
//
// Parses the supported Jinja subset (docs/chat-templates.md) with jinja2's
// grammar and operator precedence. Anything outside it (a tag, filter, test,
// method or function the runtime does not implement) is an error here, at
// load, naming the construct and its line, rather than a surprise when some
// conversation first reaches that branch.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_PARSER_H
#define ATTNRT_CHAT_PARSER_H

#include "chat/Ast.h"

#include <memory>
#include <string>
#include <string_view>

namespace attnrt::chat {

/// The program of `source`, or null with `error` set to
/// "line N: what".
std::unique_ptr<Program> parseTemplate(std::string_view source,
                                       std::string &error);

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_PARSER_H
