//===- Json.cpp - strict JSON parsing over nlohmann-json ------------------===//

#include "Json.h"

#include "Support.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace attnrt {

namespace {

/// Builds the document like nlohmann's own DOM parser, and stops the parse
/// (returns false) at the first value that breaks a rule of Json.h.
class StrictBuilder {
public:
  StrictBuilder(Json &root, const JsonLimits &limits, std::string &error)
      : root(root), limits(limits), error(error) {}

  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool value) { return scalar(Json(value)); }
  bool number_integer(Json::number_integer_t value) {
    return scalar(Json(value));
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    // Above int64 a number is a double, never an unsigned integer: readers
    // then need only one integer type.
    if (value > static_cast<uint64_t>(INT64_MAX))
      return scalar(Json(static_cast<double>(value)));
    return scalar(Json(static_cast<int64_t>(value)));
  }
  bool number_float(Json::number_float_t value, const std::string &text) {
    if (!std::isfinite(value))
      return fail("number " + quote(text) + " is out of range");
    return scalar(Json(value));
  }
  bool string(std::string &value) { return scalar(Json(std::move(value))); }
  bool binary(Json::binary_t &) { return fail("binary value"); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string &name) {
    auto &members = stack.back()->get_ref<Json::object_t &>();
    auto [it, inserted] = members.emplace(name, nullptr);
    if (!inserted)
      return fail("duplicate key " + quote(name));
    slot = &it->second;
    return true;
  }

  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &exception) {
    // nlohmann says "[json.exception.parse_error.101] parse error at line 1,
    // column 13: syntax error while parsing value - unexpected ']'; ...";
    // keep the location and the reason, in the runtime's one-line form.
    std::string message = exception.what();
    if (message.rfind("[json.exception.", 0) == 0 &&
        message.find("] ") != std::string::npos)
      message = message.substr(message.find("] ") + 2);
    std::string location;
    const std::string lead = "parse error at ";
    size_t colon = message.find(": ");
    if (message.rfind(lead, 0) == 0 && colon != std::string::npos) {
      location = " (" + message.substr(lead.size(), colon - lead.size()) + ")";
      message = message.substr(colon + 2);
    }
    // `position` counts the bytes read, the offending one included.
    error = format("at byte %zu%s: ", position > 0 ? position - 1 : 0,
                   location.c_str());
    // The reason quotes the bytes last read: keep the message printable.
    for (unsigned char c : message)
      error += c >= 0x20 && c < 0x7f ? std::string(1, static_cast<char>(c))
                                     : format("\\x%02x", c);
    return false;
  }

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  bool count() {
    if (++values <= limits.maxValues)
      return true;
    return fail(format("too many values (the limit is %zu)", limits.maxValues));
  }

  /// Stores `value` where the document expects the next value.
  Json *place(Json value) {
    if (stack.empty()) {
      root = std::move(value);
      return &root;
    }
    Json &parent = *stack.back();
    if (parent.is_array()) {
      parent.get_ref<Json::array_t &>().push_back(std::move(value));
      return &parent.get_ref<Json::array_t &>().back();
    }
    *slot = std::move(value);
    return slot;
  }

  bool scalar(Json value) {
    if (!count())
      return false;
    place(std::move(value));
    return true;
  }

  bool open(Json container) {
    if (!count())
      return false;
    if (stack.size() >= limits.maxDepth)
      return fail(format("nesting too deep (the limit is %u levels)",
                         limits.maxDepth));
    // Pointers into the parent stay valid: std::map nodes never move, and an
    // array only grows again once this child is closed.
    stack.push_back(place(std::move(container)));
    return true;
  }

  bool close() {
    stack.pop_back();
    return true;
  }

  Json &root;
  const JsonLimits &limits;
  std::string &error;
  std::vector<Json *> stack;
  Json *slot = nullptr;
  size_t values = 0;
};

} // namespace

bool parseJson(std::string_view text, Json &out, std::string &error,
               const JsonLimits &limits) {
  out = nullptr;
  if (text.size() >= UINT32_MAX) {
    error = "document too large";
    return false;
  }
  // nlohmann ends the input at a NUL byte; JSON text never holds a raw one
  // (inside strings control characters must be escaped).
  // (An empty view may have a null data(), which memchr must not see.)
  const void *nul =
      text.empty() ? nullptr : std::memchr(text.data(), '\0', text.size());
  if (nul) {
    error = format("at byte %zu: NUL byte in the text",
                   static_cast<size_t>(static_cast<const char *>(nul) -
                                       text.data()));
    return false;
  }
  StrictBuilder builder(out, limits, error);
  // sax_parse keeps its own stack of open containers (no recursion), so
  // hostile nesting is stopped by the depth limit, never by the C++ stack.
  bool ok = Json::sax_parse(text.data(), text.data() + text.size(), &builder,
                            Json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  if (!ok)
    out = nullptr;
  return ok;
}

const char *jsonKindName(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return "a number";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "a value";
  }
}

const Json *jsonFind(const Json &object, std::string_view key) {
  if (!object.is_object())
    return nullptr;
  const auto &members = object.get_ref<const Json::object_t &>();
  // object_t compares with std::less<>: no std::string for the lookup.
  auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

bool jsonOnlyMembers(const Json &object,
                     std::initializer_list<std::string_view> allowed,
                     std::string &unknown) {
  if (!object.is_object())
    return true;
  for (const auto &[key, value] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed)
      known |= key == name;
    if (!known) {
      unknown = key;
      return false;
    }
  }
  return true;
}

bool jsonInteger(const Json &value, int64_t &out) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    out = value.get<int64_t>();
    return true;
  }
  if (value.is_number_unsigned()) {
    // Not produced by parseJson; a Json built in code may hold one.
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  return false;
}

} // namespace attnrt
