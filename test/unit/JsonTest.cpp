//===- JsonTest.cpp - the runtime's strict JSON parser --------------------===//

#include "Json.h"

#include <gtest/gtest.h>

using namespace attnrt;

namespace {

bool parses(const std::string &text, std::string *error = nullptr) {
  JsonDocument doc;
  std::string message;
  bool ok = doc.parse(text, message);
  if (error)
    *error = message;
  return ok;
}

TEST(Json, ParsesEveryKind) {
  JsonDocument doc;
  std::string error;
  ASSERT_TRUE(doc.parse(R"( {"a": [1, -2.5, 3e2, true, false, null],
                             "b": {"c": "d"}, "e": [], "f": {}} )",
                        error))
      << error;
  JsonValue root = doc.root();
  ASSERT_TRUE(root.is(JsonKind::Object));
  EXPECT_EQ(root.size(), 4u);
  JsonValue a = root.find("a");
  ASSERT_TRUE(a.is(JsonKind::Array));
  EXPECT_EQ(a.size(), 6u);
  JsonValue x = a.firstChild();
  EXPECT_TRUE(x.isInteger());
  EXPECT_EQ(x.getInteger(), 1);
  x = x.nextSibling();
  EXPECT_FALSE(x.isInteger());
  EXPECT_EQ(x.getNumber(), -2.5);
  x = x.nextSibling();
  EXPECT_FALSE(x.isInteger()) << "an exponent makes a number non-integer";
  EXPECT_EQ(x.getNumber(), 300.0);
  x = x.nextSibling();
  EXPECT_TRUE(x.is(JsonKind::Bool));
  EXPECT_TRUE(x.getBool());
  x = x.nextSibling();
  EXPECT_FALSE(x.getBool());
  x = x.nextSibling();
  EXPECT_TRUE(x.is(JsonKind::Null));
  EXPECT_FALSE(x.nextSibling().isValid());
  EXPECT_EQ(root.find("b").find("c").getString(), "d");
  EXPECT_EQ(root.find("e").size(), 0u);
  EXPECT_FALSE(root.find("e").firstChild().isValid());
  EXPECT_TRUE(root.find("f").is(JsonKind::Object));
  EXPECT_FALSE(root.find("missing").isValid());
  // Member order is kept, and a nested container is skipped over as a unit.
  std::vector<std::string> keys;
  for (JsonValue m = root.firstChild(); m.isValid(); m = m.nextSibling())
    keys.emplace_back(m.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "e", "f"}));
}

TEST(Json, StringEscapes) {
  JsonDocument doc;
  std::string error;
  ASSERT_TRUE(doc.parse(
      R"(["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20ac", "\ud83d\ude00", "\u0000x", "é"])",
      error))
      << error;
  JsonValue s = doc.root().firstChild();
  EXPECT_EQ(s.getString(), "\"\\/\b\f\n\r\t");
  s = s.nextSibling();
  EXPECT_EQ(s.getString(), "A\xC3\xA9\xE2\x82\xAC");
  s = s.nextSibling();
  EXPECT_EQ(s.getString(), "\xF0\x9F\x98\x80");
  s = s.nextSibling();
  EXPECT_EQ(s.getString(), std::string("\0x", 2));
  s = s.nextSibling();
  EXPECT_EQ(s.getString(), "\xC3\xA9");
}

TEST(Json, Integers) {
  JsonDocument doc;
  std::string error;
  ASSERT_TRUE(doc.parse("[9223372036854775807, -9223372036854775808, "
                        "9223372036854775808, -0, 0]",
                        error));
  JsonValue v = doc.root().firstChild();
  EXPECT_EQ(v.getInteger(), INT64_MAX);
  v = v.nextSibling();
  EXPECT_EQ(v.getInteger(), INT64_MIN);
  v = v.nextSibling();
  EXPECT_FALSE(v.isInteger()) << "past int64: a double, not an integer";
  EXPECT_EQ(v.getNumber(), 9223372036854775808.0);
  v = v.nextSibling();
  EXPECT_TRUE(v.isInteger());
  EXPECT_EQ(v.getInteger(), 0);
}

TEST(Json, RejectsMalformedInput) {
  const char *bad[] = {
      "",
      "   ",
      "{",
      "[1, 2",
      "[1, 2,]",
      "{\"a\": 1,}",
      "{\"a\" 1}",
      "{a: 1}",
      "{'a': 1}",
      "[01]",
      "[1.]",
      "[.5]",
      "[1e]",
      "[+1]",
      "[-]",
      "[NaN]",
      "[Infinity]",
      "[tru]",
      "[nul]",
      "[1] [2]",
      "[1] x",
      "\"abc",
      "\"a\nb\"",             // raw control character
      "\"\\x\"",              // unknown escape
      "\"\\u12\"",            // short \u
      "\"\\u12g4\"",          // bad hex
      "\"\\ud800\"",          // lone high surrogate
      "\"\\udc00\"",          // lone low surrogate
      "\"\\ud800\\u0041\"",   // high surrogate + non-surrogate
      "\"\xC3\"",             // truncated UTF-8
      "\"\xC0\xAF\"",         // overlong
      "\"\xED\xA0\x80\"",     // encoded surrogate
      "\"\xF4\x90\x80\x80\"", // past U+10FFFF
      "\"\xFF\"",
      "[1e999]", // out of double range
      "// comment\n{}",
  };
  for (const char *text : bad)
    EXPECT_FALSE(parses(text)) << "accepted: " << text;
  // A NUL byte inside the text is not whitespace.
  EXPECT_FALSE(parses(std::string("{}\0", 3)));
  EXPECT_FALSE(parses(std::string("[1,\0 2]", 7)));
}

TEST(Json, ErrorsNameTheOffset) {
  std::string error;
  EXPECT_FALSE(parses("{\"a\": [1, 2,]}", &error));
  EXPECT_EQ(error, "at byte 12: expected a value");
}

TEST(Json, RejectsDuplicateKeys) {
  std::string error;
  EXPECT_FALSE(parses(R"({"x": 1, "y": {"a": 1, "a": 2}})", &error));
  EXPECT_EQ(error, "duplicate key 'a'");
  EXPECT_FALSE(parses(R"({"b": 1, "a": 2, "b": 3})", &error));
  EXPECT_EQ(error, "duplicate key 'b'");
  // The same key in different objects is fine.
  EXPECT_TRUE(parses(R"({"a": {"a": 1}, "b": {"a": 2}})"));
}

TEST(Json, DepthLimit) {
  std::string deep(64, '[');
  deep += std::string(64, ']');
  EXPECT_TRUE(parses(deep));
  std::string tooDeep(65, '[');
  tooDeep += std::string(65, ']');
  std::string error;
  EXPECT_FALSE(parses(tooDeep, &error));
  EXPECT_NE(error.find("nesting too deep"), std::string::npos) << error;
  // Hostile nesting fails fast instead of overflowing the stack.
  EXPECT_FALSE(parses(std::string(1 << 20, '[')));
  EXPECT_FALSE(parses(std::string(1 << 20, '{')));
}

TEST(Json, NodeLimit) {
  JsonDocument doc;
  std::string error;
  JsonDocument::Limits limits;
  limits.maxNodes = 4;
  EXPECT_TRUE(doc.parse("[1, 2, 3]", limits, error));
  EXPECT_FALSE(doc.parse("[1, 2, 3, 4]", limits, error));
  EXPECT_NE(error.find("too many values"), std::string::npos);
  EXPECT_FALSE(doc.root().isValid()) << "a failed parse leaves no document";
}

TEST(Json, AccessorsOnWrongKindsAreSafe) {
  JsonDocument doc;
  std::string error;
  ASSERT_TRUE(doc.parse("[\"s\", 1]", error));
  JsonValue s = doc.root().firstChild();
  EXPECT_EQ(s.size(), 0u);
  EXPECT_FALSE(s.firstChild().isValid());
  EXPECT_FALSE(s.find("x").isValid());
  EXPECT_EQ(s.getInteger(), 0);
  EXPECT_FALSE(s.getBool());
  EXPECT_EQ(s.nextSibling().getString(), "");
  JsonValue invalid;
  EXPECT_FALSE(invalid.nextSibling().isValid());
  EXPECT_EQ(invalid.key(), "");
  EXPECT_FALSE(invalid.is(JsonKind::Null));
}

} // namespace
