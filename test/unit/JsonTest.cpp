//===- JsonTest.cpp - the runtime's strict JSON layer over nlohmann-json --===//

#include "Json.h"

#include <gtest/gtest.h>

using namespace attnrt;

namespace {

bool parses(const std::string &text, std::string *error = nullptr,
            const JsonLimits &limits = JsonLimits()) {
  Json doc;
  std::string message;
  bool ok = parseJson(text, doc, message, limits);
  if (error)
    *error = message;
  return ok;
}

TEST(Json, ParsesEveryKind) {
  Json doc;
  std::string error;
  ASSERT_TRUE(parseJson(R"( {"a": [1, -2.5, 3e2, true, false, null],
                             "b": {"c": "d"}, "e": [], "f": {}} )",
                        doc, error))
      << error;
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc.size(), 4u);
  const Json *a = jsonFind(doc, "a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(a->size(), 6u);
  int64_t n = 0;
  EXPECT_TRUE(jsonInteger((*a)[0], n));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(jsonInteger((*a)[1], n));
  EXPECT_EQ((*a)[1].get<double>(), -2.5);
  EXPECT_FALSE(jsonInteger((*a)[2], n)) << "an exponent makes a number non-integer";
  EXPECT_EQ((*a)[2].get<double>(), 300.0);
  EXPECT_TRUE((*a)[3].is_boolean() && (*a)[3].get<bool>());
  EXPECT_TRUE((*a)[4].is_boolean() && !(*a)[4].get<bool>());
  EXPECT_TRUE((*a)[5].is_null());
  EXPECT_EQ(*jsonFind(*jsonFind(doc, "b"), "c"), "d");
  EXPECT_TRUE(jsonFind(doc, "e")->empty());
  EXPECT_TRUE(jsonFind(doc, "f")->is_object());
  EXPECT_EQ(jsonFind(doc, "missing"), nullptr);
  EXPECT_EQ(jsonFind(*a, "a"), nullptr) << "an array has no members";
  EXPECT_STREQ(jsonKindName(*a), "an array");
  EXPECT_STREQ(jsonKindName(doc), "an object");
  EXPECT_STREQ(jsonKindName((*a)[5]), "null");
}

TEST(Json, StringEscapes) {
  Json doc;
  std::string error;
  ASSERT_TRUE(parseJson(
      R"(["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20ac", "\ud83d\ude00", "\u0000x", "é"])",
      doc, error))
      << error;
  EXPECT_EQ(doc[0], "\"\\/\b\f\n\r\t");
  EXPECT_EQ(doc[1], "A\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(doc[2], "\xF0\x9F\x98\x80");
  EXPECT_EQ(doc[3].get<std::string>(), std::string("\0x", 2));
  EXPECT_EQ(doc[4], "\xC3\xA9");
}

TEST(Json, Integers) {
  Json doc;
  std::string error;
  ASSERT_TRUE(parseJson("[9223372036854775807, -9223372036854775808, "
                        "9223372036854775808, -0, 0]",
                        doc, error));
  int64_t n = 0;
  EXPECT_TRUE(jsonInteger(doc[0], n));
  EXPECT_EQ(n, INT64_MAX);
  EXPECT_TRUE(jsonInteger(doc[1], n));
  EXPECT_EQ(n, INT64_MIN);
  EXPECT_FALSE(jsonInteger(doc[2], n)) << "past int64: a double, not an integer";
  EXPECT_FALSE(doc[2].is_number_integer());
  EXPECT_EQ(doc[2].get<double>(), 9223372036854775808.0);
  EXPECT_TRUE(jsonInteger(doc[3], n));
  EXPECT_EQ(n, 0);
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
  // An empty view may have no data at all (an empty file's mapping): the
  // same error as "", and no null pointer handed to memchr (UBSan).
  Json value;
  std::string fromNull, fromEmpty;
  EXPECT_FALSE(parseJson(std::string_view(nullptr, 0), value, fromNull));
  EXPECT_FALSE(parseJson("", value, fromEmpty));
  EXPECT_EQ(fromNull, fromEmpty);
}

TEST(Json, ErrorsNameTheOffset) {
  std::string error;
  EXPECT_FALSE(parses("{\"a\": [1, 2,]}", &error));
  EXPECT_EQ(error.rfind("at byte 12 (line 1, column 13): ", 0), 0u) << error;
  EXPECT_NE(error.find("unexpected ']'"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_FALSE(parses("{\n  \"a\": tru\n}", &error));
  EXPECT_NE(error.find("invalid literal"), std::string::npos) << error;
  EXPECT_FALSE(parses("[1e999]", &error));
  EXPECT_EQ(error, "at byte 5: number overflow parsing '1e999'");
  // Bytes the reason quotes are escaped: the message stays printable ASCII.
  EXPECT_FALSE(parses("[\xC3\xA9]", &error));
  EXPECT_NE(error.find("\\xc3"), std::string::npos) << error;
  for (unsigned char c : error)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << error;
  EXPECT_FALSE(parses(std::string("[1]\0 ", 5), &error));
  EXPECT_EQ(error, "at byte 3: NUL byte in the text");
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
  JsonLimits shallow;
  shallow.maxDepth = 2;
  EXPECT_TRUE(parses("[[1]]", nullptr, shallow));
  EXPECT_FALSE(parses("[[[1]]]", nullptr, shallow));
}

TEST(Json, ValueLimit) {
  JsonLimits limits;
  limits.maxValues = 4;
  std::string error;
  EXPECT_TRUE(parses("[1, 2, 3]", &error, limits));
  EXPECT_FALSE(parses("[1, 2, 3, 4]", &error, limits));
  EXPECT_NE(error.find("too many values"), std::string::npos);
  Json doc = 5;
  EXPECT_FALSE(parseJson("[1, 2, 3, 4]", doc, error, limits));
  EXPECT_TRUE(doc.is_null()) << "a failed parse leaves no document";
}

} // namespace
