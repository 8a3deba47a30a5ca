//===- Json.h - a small strict JSON parser ---------------------*- C++ -*-===//
//
// Parses untrusted JSON (safetensors headers, model manifests) into a flat
// node array: one allocation for the nodes, one for the decoded strings, and
// a depth limit so hostile nesting cannot exhaust the stack. Strict RFC 8259:
// no comments, trailing commas, NaN, leading zeros or invalid UTF-8; duplicate
// object keys are rejected too (safetensors forbids duplicate tensor names).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_JSON_H
#define ATTNRT_JSON_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

enum class JsonKind : uint8_t { Null, Bool, Number, String, Array, Object };

/// The name of a kind for error messages ("an object", "a string", ...).
const char *jsonKindName(JsonKind kind);

class JsonDocument;

/// A view of one value in a JsonDocument; invalid (default) when a lookup
/// found nothing. Cheap to copy; valid as long as the document lives.
class JsonValue {
public:
  JsonValue() = default;

  bool isValid() const { return doc != nullptr; }
  JsonKind kind() const;
  bool is(JsonKind k) const { return isValid() && kind() == k; }

  bool getBool() const;
  /// True for numbers written without fraction or exponent that fit int64.
  bool isInteger() const;
  int64_t getInteger() const;
  double getNumber() const;
  std::string_view getString() const;

  /// Elements of an array or members of an object.
  size_t size() const;
  /// First element/member, or invalid when empty or not a container.
  JsonValue firstChild() const;
  /// The next element/member of the same container, or invalid at the end.
  JsonValue nextSibling() const;
  /// The key of an object member.
  std::string_view key() const;
  /// The member named `name` of an object, or invalid.
  JsonValue find(std::string_view name) const;

private:
  friend class JsonDocument;
  JsonValue(const JsonDocument *doc, uint32_t index, uint32_t parentEnd)
      : doc(doc), index(index), parentEnd(parentEnd) {}

  const JsonDocument *doc = nullptr;
  uint32_t index = 0;
  // One past the last node of the enclosing container: where siblings stop.
  uint32_t parentEnd = 0;
};

class JsonDocument {
public:
  struct Limits {
    unsigned maxDepth = 64;
    size_t maxNodes = size_t(1) << 22;
  };

  /// Parses `text`; on failure returns false with a message naming the byte
  /// offset and what was expected.
  bool parse(std::string_view text, std::string &error) {
    return parse(text, Limits(), error);
  }
  bool parse(std::string_view text, const Limits &limits, std::string &error);

  JsonValue root() const;

private:
  friend class JsonValue;
  friend class JsonParser;

  struct Node {
    JsonKind kind;
    bool flag;         // Bool: the value; Number: written as an integer.
    uint32_t size = 0; // Containers: children; strings: bytes.
    uint32_t end = 0;  // One past the last node of this subtree.
    uint32_t keyOffset = 0, keyLength = 0; // Object members: the key.
    union {
      double number;
      int64_t integer;
      uint64_t stringOffset;
    };
  };

  std::vector<Node> nodes;
  std::string strings;
};

} // namespace attnrt

#endif // ATTNRT_JSON_H
