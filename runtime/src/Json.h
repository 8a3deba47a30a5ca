//===- Json.h - strict JSON parsing over nlohmann-json ---------*- C++ -*-===//
//
// Untrusted JSON (safetensors headers, model manifests, tokenizer.json,
// tokenizer_config.json) is parsed by nlohmann-json (header-only, so the
// runtime still links nothing but libc and libdl) through a SAX handler that
// adds what the library does not check: duplicate object keys are rejected
// (safetensors forbids duplicate tensor names, and a tokenizer with two
// entries for one piece is ambiguous), nesting depth and the number of values
// are bounded, and numbers outside double range are rejected. nlohmann itself
// is strict RFC 8259: no comments, trailing commas, NaN, leading zeros,
// invalid UTF-8 or unpaired surrogates.
//
// Integers are numbers written without fraction or exponent that fit int64;
// larger ones are stored as doubles, so is_number_integer() never holds an
// unsigned value above INT64_MAX.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_JSON_H
#define ATTNRT_JSON_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace attnrt {

using Json = nlohmann::json;

struct JsonLimits {
  /// Containers nested deeper than this are rejected.
  unsigned maxDepth = 64;
  /// Values (containers, strings, numbers, literals) in the document.
  size_t maxValues = size_t(1) << 22;
};

/// Parses `text` into `out`. On failure returns false, leaves `out` null and
/// sets `error` to one line: "at byte N (line L, column C): what" for syntax
/// errors, "duplicate key 'k'", "nesting too deep", "too many values".
bool parseJson(std::string_view text, Json &out, std::string &error,
               const JsonLimits &limits = JsonLimits());

/// The kind of a value for error messages ("an object", "a string", ...).
const char *jsonKindName(const Json &value);

/// The member `key` of an object, or null when `object` is not an object or
/// has no such member.
const Json *jsonFind(const Json &object, std::string_view key);

/// False when `object` has a member not in `allowed`; `unknown` is then the
/// first such key. Readers of hand-editable files use it so that a misspelt
/// key is an error rather than a setting silently left at its default.
bool jsonOnlyMembers(const Json &object,
                     std::initializer_list<std::string_view> allowed,
                     std::string &unknown);

/// True (and sets `out`) when `value` is an integer (see above).
bool jsonInteger(const Json &value, int64_t &out);

} // namespace attnrt

#endif // ATTNRT_JSON_H
