//===- ChatTemplateTest.cpp - the Jinja subset of chat templates ----------===//
//
// Expressions, filters, loops and whitespace control against what Python's
// jinja2 (3.1, as transformers configures it: trim_blocks, lstrip_blocks,
// its tojson and raise_exception) renders for the same source; errors at
// load and at render; the limits; the C API's buffer protocol; and whole
// real templates rendered to exact strings. The pinned Mistral template
// against the node reference is in ChatTemplateReferenceTest.
//
//===----------------------------------------------------------------------===//

#include "chat/ChatTemplate.h"

#include "Json.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <thread>

using namespace attnrt;
using namespace attnrt::chat;

namespace {

/// Renders `source` with the variables of the JSON object `context` (whose
/// keys nlohmann sorts: tests do not print dicts built from it); on failure
/// "ERROR: " and the message.
std::string render(const std::string &source, const std::string &context = "{}",
                   const ChatLimits &limits = ChatLimits()) {
  std::string error;
  std::unique_ptr<ChatTemplate> chat = ChatTemplate::parse(source, error);
  if (!chat)
    return "ERROR: " + error;
  Json json;
  if (!parseJson(context, json, error))
    return "BAD CONTEXT: " + error;
  std::string out;
  if (!chat->render(Value::fromJson(json).asDict(), out, error, limits))
    return "ERROR: " + error;
  return out;
}

/// The load error of `source` ("" when it parses).
std::string parseError(const std::string &source) {
  std::string error;
  return ChatTemplate::parse(source, error) ? "" : error;
}

using Turns = std::vector<std::pair<const char *, const char *>>;

/// attnrt_chat_template_apply through the C API; "ERROR: ..." on failure.
std::string apply(const char *source, const Turns &turns,
                  bool addGenerationPrompt, const char *bos = "<s>",
                  const char *eos = "</s>") {
  char error[512] = "";
  attnrt_chat_template *chat =
      attnrt_chat_template_parse(source, bos, eos, error, sizeof error);
  if (!chat)
    return std::string("ERROR: ") + error;
  std::vector<attnrt_chat_message> messages;
  for (const auto &[role, content] : turns)
    messages.push_back({role, content});
  size_t length = 0;
  std::string text;
  int rc = attnrt_chat_template_apply(
      chat, messages.data(), static_cast<int64_t>(messages.size()),
      addGenerationPrompt, nullptr, 0, &length, error, sizeof error);
  if (rc == ATTNRT_OK) {
    text.resize(length + 1);
    rc = attnrt_chat_template_apply(chat, messages.data(),
                                    static_cast<int64_t>(messages.size()),
                                    addGenerationPrompt, &text[0], text.size(),
                                    &length, error, sizeof error);
    text.resize(length);
  }
  attnrt_chat_template_free(chat);
  return rc == ATTNRT_OK ? text : std::string("ERROR: ") + error;
}

} // namespace

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

TEST(ChatTemplateExpr, LiteralsRenderAsPythonStr) {
  EXPECT_EQ(render("{{ none }} {{ None }} {{ true }} {{ False }} {{ 42 }} "
                   "{{ 1_000 }} {{ 0x10 }}"),
            "None None True False 42 1000 16");
  // Python's float repr: shortest digits, ".0" on integers, exponents
  // outside [-4, 16).
  EXPECT_EQ(render("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} "
                   "{{ 0.0001 }} {{ 0.00001 }} {{ 1.5e-7 }} {{ -0.0 }}"),
            "1.0 0.30000000000000004 1e+16 1000000000000000.0 0.0001 1e-05 "
            "1.5e-07 -0.0");
  EXPECT_EQ(render("{{ [1, 'a', none, 1.5] }} {{ ('a', 1) }} {{ (1,) }} "
                   "{{ {'k': \"it's\"} }}"),
            "[1, 'a', None, 1.5] ('a', 1) (1,) {'k': \"it's\"}");
  // Adjacent literals join; Python's escapes; unknown ones stay.
  EXPECT_EQ(render(R"({{ 'a' "b" }} {{ "x\ty\u00e9\x41\q" }})"),
            "ab x\ty\xC3\xA9"
            "A\\q");
}

TEST(ChatTemplateExpr, ArithmeticFollowsPython) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 10 / 4 }} {{ 10 / 5 }} {{ 7 // 2 }} "
                   "{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} "
                   "{{ 2 ** -1 }} {{ 5.0 % 2 }} {{ true + 1 }}"),
            "7 2.5 2.0 3 -4 2 -2 1024 0.5 1.0 2");
  // jinja2 parses ** left to right, and unary minus binds tighter.
  EXPECT_EQ(render("{{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}"), "64 4");
  EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [1] * 2 }} {{ 'a' + 'b' }} "
                   "{{ [1] + [2] }} {{ 'a' ~ 1 ~ none ~ undefined }}"),
            "ababab [1, 1] ab [1, 2] a1None");
  // `~` binds tighter than `+`, looser than `*`.
  EXPECT_EQ(render("{{ 1 + 2 ~ 3 }}"), "ERROR: chat template line 1: "
                                       "unsupported operand type(s) for +: "
                                       "'int' and 'str'");
  EXPECT_EQ(render("{{ 'x' ~ 2 * 3 }}"), "x6");
}

TEST(ChatTemplateExpr, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} "
                   "{{ [1, 2] == [1, 2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"),
            "True True True True True False");
  EXPECT_EQ(render("{{ 'a' in 'cat' }} {{ 'x' not in ['a'] }} "
                   "{{ 'k' in {'k': 1} }} {{ not 1 == 2 }}"),
            "True True True True");
  // and / or return an operand, as in Python.
  EXPECT_EQ(render("{{ 1 and 'a' }}|{{ 0 or [] }}|{{ none or 'd' }}|"
                   "{{ '' and x.y }}"),
            "a|[]|d|");
  EXPECT_EQ(render("{{ 'yes' if 1 else 'no' }}|{{ 'x' if false }}|"
                   "{{ 'a' if false else 'b' if true else 'c' }}"),
            "yes||b");
}

TEST(ChatTemplateExpr, AttributesSubscriptsAndSlices) {
  const char *context = R"({"m": [{"role": "user", "content": "héllo"}]})";
  EXPECT_EQ(render("{{ m[0]['role'] }} {{ m[0].role }} {{ m.0.role }} "
                   "{{ m[-1].content }}",
                   context),
            "user user user héllo");
  // Code points, not bytes, as Python's str.
  EXPECT_EQ(render("{{ m[0].content[1] }} {{ m[0].content | length }} "
                   "{{ m[0].content[::-1] }} {{ m[0].content[1:3] }}",
                   context),
            "é 5 olléh él");
  EXPECT_EQ(render("{{ [1, 2, 3, 4][1:] }} {{ [1, 2, 3, 4][::-2] }} "
                   "{{ [1, 2, 3][-2:] }} {{ [1, 2, 3][:-1] }}"),
            "[2, 3, 4] [4, 2] [2, 3] [1, 2]");
  // Missing keys and indices are undefined (rendered ""), not errors...
  EXPECT_EQ(
      render("[{{ m[5] }}{{ m[0].nope }}{{ none[0] }}{{ 'a'.b }}]", context),
      "[]");
  // ... but using an undefined value is, as in jinja2.
  EXPECT_EQ(render("{{ m[0].nope.x }}", context),
            "ERROR: chat template line 1: 'dict object' has no attribute "
            "'nope'");
  EXPECT_EQ(render("\n\n{{ foo.bar }}"),
            "ERROR: chat template line 3: 'foo' is undefined");
  EXPECT_EQ(render("{{ x + 1 }}"),
            "ERROR: chat template line 1: 'x' is undefined");
}

TEST(ChatTemplateExpr, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ x is undefined }} {{ none is none }} "
                   "{{ 1 is not none }} {{ 'a' is string }} {{ 1 is number }} "
                   "{{ true is number }} {{ 1 is integer }} {{ 1.0 is float }} "
                   "{{ true is boolean }}"),
            "False True True True True True True True True True");
  EXPECT_EQ(render("{{ {} is mapping }} {{ [] is sequence }} "
                   "{{ 'x' is iterable }} {{ 3 is odd }} {{ 4 is even }} "
                   "{{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} "
                   "{{ 2 is eq 2 }} {{ 2 is in [1, 2] }} {{ 'ab' is lower }} "
                   "{{ range is callable }} {{ true is true }}"),
            "True True True True True True False True True True True True");
}

//===----------------------------------------------------------------------===//
// Filters and methods
//===----------------------------------------------------------------------===//

TEST(ChatTemplateFilters, Strings) {
  EXPECT_EQ(render("[{{ '  x \n' | trim }}] {{ 'xxaxx' | trim('x') }} "
                   "{{ 'ab' | upper }} {{ 'AB' | lower }} "
                   "{{ 'hello WORLD' | capitalize }} "
                   "{{ 'hello wORLD-foo they\\'re' | title }} "
                   "{{ 'aaa' | replace('a', 'b', 2) }} {{ 42 | string }}"),
            "[x] a AB ab Hello world Hello World-Foo They're bba 42");
  EXPECT_EQ(render("{{ 'a\nb\n' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}"),
            "a\n  b\n|  a\n  b");
  EXPECT_EQ(render("{{ '<a href=\"x\">' | e }}"), "&lt;a href=&#34;x&#34;&gt;");
}

TEST(ChatTemplateFilters, Sequences) {
  EXPECT_EQ(
      render("{{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} "
             "{{ ['b', 'A'] | sort }} {{ [1, 2, 3] | join(', ') }} "
             "{{ 'abc' | list }} {{ [1, 2] | first }} {{ 'abc' | last }} "
             "{{ [1, 2] | reverse | list }} {{ ['a', 'A', 'b'] | unique | list "
             "}}"),
      "[1, 2, 3] [3, 2, 1] ['A', 'b'] 1, 2, 3 ['a', 'b', 'c'] 1 c "
      "[2, 1] ['a', 'b']");
  EXPECT_EQ(
      render("{{ [1, 2] | length }} {{ {'a': 1} | count }} "
             "{{ [1, 2, 3] | sum }} {{ [3, 1] | max }} {{ [3, 1] | min }} "
             "{{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }}"),
      "2 1 6 3 1 3 2.57 2.0");
  const char *context = R"({"m": [{"role": "system", "content": "s"},
                                  {"role": "user", "content": "u"}]})";
  EXPECT_EQ(
      render("{{ m | map(attribute='role') | join(',') }} "
             "{{ m | selectattr('role', 'equalto', 'user') | list | length }} "
             "{{ m | rejectattr('role', 'eq', 'user') | "
             "map(attribute='content') | first }} "
             "{{ [1, 2, 3, 4] | select('odd') | list }} "
             "{{ [1, 2, 3] | reject('even') | list }} "
             "{{ [1, 2, 3] | map('string') | join('-') }}",
             context),
      "system,user 1 s [1, 3] [1, 3] 1-2-3");
  EXPECT_EQ(
      render("{{ {'b': 1, 'a': 2} | dictsort }} {{ {'b': 1} | items | list }}"),
      "[('a', 2), ('b', 1)] [('b', 1)]");
}

TEST(ChatTemplateFilters, DefaultAndConversions) {
  EXPECT_EQ(render("{{ x | default('d') }} {{ '' | default('d', true) }} "
                   "{{ none | default('d') }} {{ x | d('e') }}"),
            "d d None e");
  EXPECT_EQ(render("{{ 3.7 | int }} {{ '42' | int }} {{ '4.5' | int }} "
                   "{{ 'x' | int }} {{ 'x' | int(7) }} {{ '2.5' | float }} "
                   "{{ 3 | float }}"),
            "3 42 4 0 7 2.5 3.0");
}

TEST(ChatTemplateFilters, TojsonIsJsonDumps) {
  // transformers' tojson: json.dumps(ensure_ascii=False), no HTML escaping.
  EXPECT_EQ(render(R"({{ {'a': [1, 2.0, "x\n</", none, true]} | tojson }})"),
            R"({"a": [1, 2.0, "x\n</", null, true]})");
  EXPECT_EQ(render("{{ 'é' | tojson }} {{ 'é' | tojson(ensure_ascii=true) }} "
                   "{{ '\\u0001' | tojson }}"),
            "\"\xC3\xA9\" \"\\u00e9\" \"\\u0001\"");
  EXPECT_EQ(
      render("{{ {'b': 1, 'a': [1, {}]} | tojson(indent=2, sort_keys=true) }}"),
      "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": 1\n}");
  EXPECT_EQ(
      render("{{ {'a': 1, 'b': [1, 2]} | tojson(separators=(',', ':')) }}"),
      R"({"a":1,"b":[1,2]})");
  EXPECT_EQ(render("{{ x | tojson }}"),
            "ERROR: chat template line 1: Object of type Undefined is not JSON "
            "serializable");
}

TEST(ChatTemplateMethods, StringsAndDicts) {
  EXPECT_EQ(
      render("[{{ '  a  b '.strip() }}] [{{ ' a '.lstrip() }}] "
             "[{{ ' a '.rstrip() }}] {{ 'xxaxx'.strip('x') }} "
             "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} "
             "{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} "
             "{{ 'they\\'re here'.title() }} {{ 'aXa'.replace('a', 'b') }}"),
      "[a  b] [a ] [ a] a True True HELLO hello They'Re Here bXb");
  EXPECT_EQ(
      render(
          "{{ ' a b  c '.split() }} {{ 'a,b,,c'.split(',') }} "
          "{{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} "
          "{{ 'x</think>y'.split('</think>')[-1] }} {{ ','.join(['a', 'b']) }} "
          "{{ 'abcb'.find('b') }} {{ 'abcb'.count('b') }}"),
      "['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b c'] ['a b', 'c'] y a,b "
      "1 2");
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} "
                   "{{ d.keys() | list }} {{ d.values() | list }} "
                   "{% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}",
                   R"({"d": {"a": 1}})"),
            "1 None 5 ['a'] [1] a=1");
  EXPECT_EQ(render("{{ [1].strip() }}"),
            "ERROR: chat template line 1: 'list' object has no attribute "
            "'strip'");
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

TEST(ChatTemplateStatements, ForLoops) {
  EXPECT_EQ(
      render("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}"
             "{{ loop.revindex }}{{ loop.first }}{{ loop.last }}"
             "{{ loop.length }} {% endfor %}"),
      "103TrueFalse3 212FalseFalse3 321FalseTrue3 ");
  EXPECT_EQ(
      render("{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}"
             "{% for x in [] %}x{% else %}empty{% endfor %}"
             "{% for x in none_such %}x{% else %}!{% endfor %}"),
      "1234empty!");
  // A filtered loop counts only the kept items.
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}:"
                   "{{ loop.index }}/{{ loop.length }} {% endfor %}"),
            "2:1/2 4:2/2 ");
  EXPECT_EQ(render("{% for x in range(5) %}{% if x == 1 %}{% continue %}"
                   "{% endif %}{{ x }}{% if x == 3 %}{% break %}{% endif %}"
                   "{% endfor %}"),
            "023");
  EXPECT_EQ(render("{% for x in range(1, 7, 2) %}{{ x }}{% endfor %}"
                   "{% for x in range(3, 0, -1) %}{{ x }}{% endfor %}"),
            "135321");
  EXPECT_EQ(render("{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}"
                   "{% for c in 'hé' %}[{{ c }}]{% endfor %}"),
            "ba[h][é]");
}

TEST(ChatTemplateStatements, ScopingAndNamespace) {
  // A set inside a loop lasts for that iteration only, as in jinja2.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 9 %}"
                   "{{ x }}{% endfor %}{{ x }}"),
            "19191");
  EXPECT_EQ(
      render(
          "{% set ns = namespace(total=0, seen=false) %}"
          "{% for i in range(4) %}{% set ns.total = ns.total + i %}"
          "{% set ns.seen = true %}{% endfor %}{{ ns.total }} {{ ns.seen }}"),
      "6 True");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set c %}in{{ 1 }}"
                   "{% endset %}{{ c }}{% set d = 1, 2 %}{{ d }}"),
            "12in1(1, 2)");
  EXPECT_EQ(render("{% set x = 1 %}{% set x.y = 2 %}"),
            "ERROR: chat template line 1: cannot set attribute 'y' of 'x' "
            "(int): only a namespace() has settable attributes");
}

TEST(ChatTemplateStatements, IfAndMacros) {
  EXPECT_EQ(
      render("{% if x %}a{% elif 0 %}b{% elif 'y' %}c{% else %}d{% endif %}"
             "{% if [] %}e{% else %}f{% endif %}"),
      "cf");
  // Macros see their arguments and the top level, defaults fill the rest.
  EXPECT_EQ(
      render("{% macro f(a, b='B') %}[{{ a }}{{ b }}{{ x }}]{% endmacro %}"
             "{% set x = 'X' %}{{ f(1) }}{{ f(1, b=2) }}{{ f() }}"),
      "[1BX][12X][BX]");
  EXPECT_EQ(
      render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}"
             "{% endmacro %}{{ f(3) }}"),
      "321");
  EXPECT_EQ(render("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}"),
            "ERROR: chat template line 1: macro 'f' takes not more than 1 "
            "argument(s)");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

//===----------------------------------------------------------------------===//
// Whitespace: jinja2 with trim_blocks and lstrip_blocks
//===----------------------------------------------------------------------===//

TEST(ChatTemplateWhitespace, TrimAndLstripBlocks) {
  // The newline after a block tag goes (not after {{ }}); spaces before a
  // block tag on its own line go (not before {{ }}); a comment is a block.
  EXPECT_EQ(render("a  \n  {% if true %}\n    yes\n  {% endif %}\n  {{ 'v' }}\n"
                   "  {# c #}\nz"),
            "a  \n    yes\n  v\nz");
  EXPECT_EQ(render("{% for x in [1, 2] %}\n{{ x }}\n{% endfor %}\n"), "1\n2\n");
  // `+` keeps what lstrip/trim would drop.
  EXPECT_EQ(render("  {%+ if true %}k{% endif +%}\nnext"), "  k\nnext");
  // Text before a tag on the same line is not stripped.
  EXPECT_EQ(render("x  {% if true %}y{% endif %}"), "x  y");
}

TEST(ChatTemplateWhitespace, MinusStripsAllWhitespace) {
  EXPECT_EQ(render("a \n {%- if true -%} \n x \n {%- endif -%} \n b"), "axb");
  EXPECT_EQ(render("a  {{- ' y ' -}}  b"), "a y b");
  EXPECT_EQ(render("a\n{#- comment -#}\nb"), "ab");
}

TEST(ChatTemplateWhitespace, SourceNewlines) {
  // One trailing newline of the source goes (keep_trailing_newline=False);
  // \r\n and \r are newlines.
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
  EXPECT_EQ(render("{% if true %}\r\nx{% endif %}"), "x");
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(ChatTemplateErrors, UnsupportedConstructsFailAtLoadNamingTheLine) {
  EXPECT_EQ(parseError("a\nb\n{{ x | wordwrap }}"),
            "chat template line 3: unsupported filter 'wordwrap'");
  // Even in a branch no conversation reaches.
  EXPECT_EQ(parseError("{% if false %}\n{{ x is prime }}{% endif %}"),
            "chat template line 2: unsupported test 'prime'");
  EXPECT_EQ(parseError("{{ messages.append(1) }}"),
            "chat template line 1: unsupported method 'append'");
  EXPECT_EQ(parseError("{{ cycler(1, 2) }}"),
            "chat template line 1: unsupported function 'cycler'");
  EXPECT_EQ(parseError("\n{% include 'x.j2' %}"),
            "chat template line 2: unsupported tag 'include'");
  EXPECT_EQ(parseError("{% raw %}{{ x }}{% endraw %}"),
            "chat template line 1: unsupported tag 'raw'");
  EXPECT_EQ(parseError("{% call f() %}x{% endcall %}"),
            "chat template line 1: unsupported tag 'call'");
  EXPECT_EQ(parseError("{% for x in y recursive %}{% endfor %}"),
            "chat template line 1: unsupported recursive loop");
}

TEST(ChatTemplateErrors, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(parseError("\n{% for x in y %}\nno end"),
            "chat template line 2: {% for %} is not closed (no {% endfor %})");
  EXPECT_EQ(parseError("{% endif %}"),
            "chat template line 1: unexpected {% endif %}");
  EXPECT_EQ(parseError("{{ 1 +  }}"),
            "chat template line 1: an expression is missing before the end "
            "of the tag");
  EXPECT_EQ(parseError("\n\n{{ 'abc }}"),
            "chat template line 3: unterminated string literal");
  EXPECT_EQ(parseError("x {{ y"),
            "chat template line 1: unclosed expression ({{ without }})");
  EXPECT_EQ(parseError("{# never closed"),
            "chat template line 1: unclosed comment ({# without #})");
  EXPECT_EQ(parseError("{% break %}"),
            "chat template line 1: 'break' outside a loop");
  EXPECT_EQ(parseError("{{ a ? b }}"),
            "chat template line 1: unexpected character '?' in a tag");
  EXPECT_EQ(parseError("ok\n\xFF"),
            "chat template line 2: invalid UTF-8 at byte 3");
  EXPECT_EQ(parseError("{{ 99999999999999999999 }}"),
            "chat template line 1: integer literal out of range");
}

TEST(ChatTemplateErrors, RenderErrorsNameTheLine) {
  EXPECT_EQ(render("{{ 'a' + 1 }}"),
            "ERROR: chat template line 1: unsupported operand type(s) for +: "
            "'str' and 'int'");
  EXPECT_EQ(render("\n{{ 1 / 0 }}"),
            "ERROR: chat template line 2: division by zero");
  EXPECT_EQ(render("{{ 1 < 'a' }}"),
            "ERROR: chat template line 1: ordering not supported between "
            "instances of 'int' and 'str'");
  EXPECT_EQ(render("{% for a, b in [[1]] %}{% endfor %}"),
            "ERROR: chat template line 1: not enough values to unpack "
            "(expected 2, got 1)");
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"),
            "ERROR: chat template line 1: integer overflow");
}

TEST(ChatTemplateErrors, RaiseExceptionFailsTheRender) {
  EXPECT_EQ(
      render("ok\n{{ raise_exception('Bad roles: ' ~ 'user/user') }}"),
      "ERROR: chat template line 2: raise_exception: Bad roles: user/user");
  // The message stays one line.
  EXPECT_EQ(render("{{ raise_exception('a\nb') }}"),
            "ERROR: chat template line 1: raise_exception: a\\nb");
}

//===----------------------------------------------------------------------===//
// Limits: a template can never hang or exhaust a server
//===----------------------------------------------------------------------===//

TEST(ChatTemplateLimits, RunawayLoopsStop) {
  ChatLimits small;
  small.maxSteps = 100000;
  EXPECT_EQ(render("{% for i in range(100000) %}{% for j in range(100000) %}"
                   "{% endfor %}{% endfor %}",
                   "{}", small),
            "ERROR: chat template line 1: more than 100000 steps (a runaway "
            "loop?)");
  small.maxOutput = 1000;
  EXPECT_EQ(render("{% for i in range(1000) %}xx{% endfor %}", "{}", small),
            "ERROR: chat template line 1: the output passed 1000 bytes");
  // Doubling a string in a namespace grows exponentially: stopped before
  // the string that passes the limit is built.
  small.maxBytes = 1 << 20;
  EXPECT_EQ(render("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                   "{% set ns.s = ns.s + ns.s %}{% endfor %}",
                   "{}", small),
            "ERROR: chat template line 1: the template built more than "
            "1048576 bytes of values (a runaway loop?)");
  EXPECT_EQ(render("{{ 'x' * 10000000000 }}"),
            "ERROR: chat template line 1: the repeated sequence would be too "
            "large");
  EXPECT_EQ(render("{{ range(10000000000000) | length }}"),
            "ERROR: chat template line 1: range() of 10000000000000 numbers is "
            "too long");
}

TEST(ChatTemplateLimits, RecursionAndNestingStop) {
  EXPECT_EQ(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
            "ERROR: chat template line 1: nested deeper than 400 (recursion?)");
  EXPECT_EQ(render("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}"
                   "{% set ns.x = [ns.x] %}{% endfor %}"),
            "ERROR: chat template line 1: values nested deeper than 400");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = [ns] %}"),
            "ERROR: chat template line 1: cannot store a namespace in a "
            "namespace");
  std::string deep =
      "{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}";
  EXPECT_EQ(parseError(deep), "chat template line 1: expression nested too "
                              "deeply");
  std::string chain = "{{ 1";
  for (int k = 0; k < 1000; ++k)
    chain += " ~ 1";
  EXPECT_EQ(parseError(chain + " }}"),
            "chat template line 1: expression nested too deeply");
}

//===----------------------------------------------------------------------===//
// Whole templates, from the models' tokenizer_config.json (copied as data)
//===----------------------------------------------------------------------===//

/// Qwen/Qwen2-7B-Instruct tokenizer_config.json: ChatML with a default
/// system prompt.
const char *const kChatMlQwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != "
    "'system' %}{{ '<|im_start|>system\nYou are a helpful "
    "assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] "
    "+ '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// meta-llama/Llama-2-7b-chat-hf tokenizer_config.json: the system message
/// folded into the first user turn, roles must alternate.
const char *const kLlama2Chat =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = "
    "messages[1:] %}{% set system_message = messages[0]['content'] %}{% else "
    "%}{% set loop_messages = messages %}{% set system_message = false %}{% "
    "endif %}{% for message in loop_messages %}{% if (message['role'] == "
    "'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
    "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% "
    "if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + "
    "message['content'] %}{% else %}{% set content = message['content'] %}{% "
    "endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
    "content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' "
    "%}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

/// HuggingFaceH4/zephyr-7b-beta tokenizer_config.json: a newline after every
/// tag, which trim_blocks removes.
const char *const kZephyr =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ "
    "'<|user|>\n' + message['content'] + eos_token }}\n{% elif "
    "message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] "
    "+ eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ "
    "'<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% "
    "if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% "
    "endif %}\n{% endfor %}";

/// meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json: `| trim`
/// binds to message['content'] alone, inside the `+` chain.
const char *const kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% "
    "set content = '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% "
    "if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif "
    "%}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

TEST(ChatTemplateReal, ChatMlQwen2) {
  EXPECT_EQ(apply(kChatMlQwen2,
                  {{"system", "You are terse."}, {"user", "Hello!"}}, true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n"
            "Hello!<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(
      apply(kChatMlQwen2, {{"user", "What is the capital of France?"}}, false),
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n");
}

TEST(ChatTemplateReal, Llama2Chat) {
  EXPECT_EQ(apply(kLlama2Chat,
                  {{"system", "You are a helpful assistant"},
                   {"user", "Hello"},
                   {"assistant", "Hi there"},
                   {"user", "Who are you"},
                   {"assistant", "   I am an assistant   "},
                   {"user", "Another question"}},
                  false),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello "
            "[/INST] Hi there </s><s>[INST] Who are you [/INST] I am an "
            "assistant </s><s>[INST] Another question [/INST]");
  EXPECT_EQ(apply(kLlama2Chat,
                  {{"system", "You are terse."}, {"user", "Hello!"}}, true),
            "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHello! [/INST]");
  EXPECT_EQ(apply(kLlama2Chat, {{"user", "One"}, {"user", "Two"}}, true),
            "ERROR: chat template line 1: raise_exception: Conversation roles "
            "must alternate user/assistant/user/assistant/...");
}

TEST(ChatTemplateReal, Zephyr) {
  EXPECT_EQ(
      apply(kZephyr, {{"system", "You are terse."}, {"user", "Hello!"}}, true),
      "<|system|>\nYou are terse.</s>\n<|user|>\nHello!</s>\n"
      "<|assistant|>\n");
  EXPECT_EQ(apply(kZephyr,
                  {{"user", "Hello"},
                   {"assistant", "Hi there"},
                   {"user", "Who are you?"}},
                  false),
            "<|user|>\nHello</s>\n<|assistant|>\nHi there</s>\n<|user|>\n"
            "Who are you?</s>\n");
}

TEST(ChatTemplateReal, Llama3) {
  EXPECT_EQ(apply(kLlama3, {{"system", "You are terse."}, {"user", "Hello!"}},
                  true, "<|begin_of_text|>", "<|eot_id|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "You are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>"
            "\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
            "\n\n");
}

//===----------------------------------------------------------------------===//
// Loading and the C API
//===----------------------------------------------------------------------===//

TEST(ChatTemplateLoad, ReadsTokenizerConfig) {
  test::TempDir dir;
  test::writeFile(dir.file("tokenizer_config.json"), R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>",
    "chat_template": [
      {"name": "tool_use", "template": "tools"},
      {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}
    ]})");
  char error[512] = "";
  attnrt_chat_template *chat =
      attnrt_chat_template_load(dir.name().c_str(), error, sizeof error);
  ASSERT_TRUE(chat) << error;
  attnrt_chat_message message = {"user", "hi"};
  char text[64];
  size_t length = 0;
  ASSERT_EQ(attnrt_chat_template_apply(chat, &message, 1, 1, text, sizeof text,
                                       &length, error, sizeof error),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(std::string(text), "<s>hi</s>");
  attnrt_chat_template_free(chat);

  // chat_template.jinja, when present, wins (as in transformers).
  test::writeFile(dir.file("chat_template.jinja"), "[{{ eos_token }}]\n");
  chat = attnrt_chat_template_load(dir.name().c_str(), error, sizeof error);
  ASSERT_TRUE(chat) << error;
  ASSERT_EQ(attnrt_chat_template_apply(chat, &message, 1, 0, text, sizeof text,
                                       &length, error, sizeof error),
            ATTNRT_OK);
  EXPECT_EQ(std::string(text), "[</s>]");
  attnrt_chat_template_free(chat);
}

TEST(ChatTemplateLoad, ErrorsNameTheFile) {
  test::TempDir dir;
  std::string config = dir.file("tokenizer_config.json");
  auto loadError = [&](const std::string &json) {
    test::writeFile(config, json);
    std::string error;
    EXPECT_FALSE(ChatTemplate::loadDirectory(dir.name(), error));
    return error;
  };
  EXPECT_EQ(loadError("{\"chat_template\": 1"),
            config + ": at byte 19 (line 1, column 20): syntax error while "
                     "parsing object - unexpected end of input; expected '}'");
  EXPECT_EQ(loadError("{\"bos_token\": \"<s>\"}"),
            config + ": there is no chat_template");
  EXPECT_EQ(
      loadError(R"({"chat_template": [{"name": "rag", "template": "x"}]})"),
      config + ": chat_template has no \"default\" entry (it has 'rag')");
  EXPECT_EQ(loadError(R"({"chat_template": "x", "eos_token": 3})"),
            config + ": eos_token is a number, not a string or "
                     "{\"content\": ...}");
  EXPECT_EQ(loadError(R"({"chat_template": "\n{{ x | wordwrap }}"})"),
            config + ": chat template line 2: unsupported filter 'wordwrap'");
  test::TempDir empty;
  std::string error;
  EXPECT_FALSE(ChatTemplate::loadDirectory(empty.name(), error));
  EXPECT_EQ(error, empty.file("tokenizer_config.json") +
                       ": the file is missing or empty (and there is no " +
                       empty.file("chat_template.jinja") + ")");
}

TEST(ChatTemplateApi, BufferProtocol) {
  char error[256] = "";
  attnrt_chat_template *chat = attnrt_chat_template_parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}",
      nullptr, nullptr, error, sizeof error);
  ASSERT_TRUE(chat) << error;
  attnrt_chat_message messages[] = {{"user", "hello"}, {"assistant", "hi"}};
  // Too small a buffer: the length is the whole text's, the text is cut
  // and NUL-terminated.
  char small[6];
  size_t length = 0;
  ASSERT_EQ(attnrt_chat_template_apply(chat, messages, 2, 0, small,
                                       sizeof small, &length, error,
                                       sizeof error),
            ATTNRT_OK);
  EXPECT_EQ(length, 24u);
  EXPECT_EQ(std::string(small), "user:");
  // No buffer at all is a length query.
  length = 0;
  ASSERT_EQ(attnrt_chat_template_apply(chat, messages, 2, 0, nullptr, 0,
                                       &length, error, sizeof error),
            ATTNRT_OK);
  EXPECT_EQ(length, 24u);
  std::string text(length + 1, '?');
  ASSERT_EQ(attnrt_chat_template_apply(chat, messages, 2, 0, &text[0],
                                       text.size(), &length, error,
                                       sizeof error),
            ATTNRT_OK);
  EXPECT_EQ(text, std::string("user:hello;assistant:hi;") + '\0');
  // No messages is a conversation too.
  ASSERT_EQ(attnrt_chat_template_apply(chat, nullptr, 0, 1, &text[0],
                                       text.size(), &length, error,
                                       sizeof error),
            ATTNRT_OK);
  EXPECT_EQ(length, 0u);
  attnrt_chat_template_free(chat);
}

TEST(ChatTemplateApi, BadArguments) {
  char error[256] = "";
  EXPECT_FALSE(
      attnrt_chat_template_parse(nullptr, "", "", error, sizeof error));
  EXPECT_STREQ(error, "attnrt_chat_template_parse: null source");
  EXPECT_FALSE(attnrt_chat_template_load(nullptr, error, sizeof error));
  EXPECT_FALSE(
      attnrt_chat_template_parse("{{ x | nope }}", "", "", nullptr, 0));
  attnrt_chat_template *chat =
      attnrt_chat_template_parse("{{ messages[0].content is none }}", nullptr,
                                 nullptr, error, sizeof error);
  ASSERT_TRUE(chat);
  size_t length = 0;
  attnrt_chat_message message = {"user", "x"};
  EXPECT_EQ(attnrt_chat_template_apply(chat, &message, -1, 0, nullptr, 0,
                                       &length, error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(attnrt_chat_template_apply(chat, &message, 1, 0, nullptr, 0,
                                       nullptr, error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  message.role = nullptr;
  EXPECT_EQ(attnrt_chat_template_apply(chat, &message, 1, 0, nullptr, 0,
                                       &length, error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_STREQ(error,
               "attnrt_chat_template_apply: messages[0] has a null role");
  // Content NULL is None (an assistant turn that only calls tools).
  message = {"assistant", nullptr};
  char text[16];
  ASSERT_EQ(attnrt_chat_template_apply(chat, &message, 1, 0, text, sizeof text,
                                       &length, error, sizeof error),
            ATTNRT_OK);
  EXPECT_STREQ(text, "True");
  message = {"user", "bad \xC3("};
  EXPECT_EQ(attnrt_chat_template_apply(chat, &message, 1, 0, text, sizeof text,
                                       &length, error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_STREQ(error, "messages[0].content is not valid UTF-8 (byte 4)");
  EXPECT_FALSE(attnrt_chat_template_apply(nullptr, &message, 1, 0, nullptr, 0,
                                          &length, error,
                                          sizeof error) == ATTNRT_OK);
  attnrt_chat_template_free(chat);
  attnrt_chat_template_free(nullptr);
}

/// attnrt_chat_template_apply_json into a string; the error on failure.
std::string applyJson(const attnrt_chat_template *chat, const char *messages,
                      const char *options) {
  char text[1024], error[256] = "";
  size_t length = 0;
  if (attnrt_chat_template_apply_json(chat, messages, options, text,
                                      sizeof text, &length, error,
                                      sizeof error) != ATTNRT_OK)
    return std::string("error: ") + error;
  EXPECT_LT(length, sizeof text);
  return std::string(text, length);
}

TEST(ChatTemplateApi, JsonMessagesToolsAndKwargs) {
  char error[256] = "";
  attnrt_chat_template *chat = attnrt_chat_template_parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content }}"
      "{% for c in m.tool_calls or [] %}[{{ c.function.name }} "
      "{{ c.function.arguments | tojson }}]{% endfor %}"
      "{% if m.reasoning_content %}({{ m.reasoning_content }}){% endif %}|"
      "{% endfor %}{% if tools %}{{ tools | tojson }}{% endif %}"
      "{{ add_generation_prompt }} {{ enable_thinking }} {{ documents }}",
      "<s>", "</s>", error, sizeof error);
  ASSERT_TRUE(chat) << error;
  // Keys keep the order written (json.loads does; tojson shows it), content
  // may be None or a list, tool calls carry objects or strings.
  EXPECT_EQ(
      applyJson(chat,
                R"([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": null, "reasoning_content": "hm",
                     "tool_calls": [{"type": "function", "function":
                       {"name": "f", "arguments": {"z": 1, "a": [true, 1.5]}}}]},
                    {"role": "tool", "content": "42"}])",
                R"({"add_generation_prompt": true, "enable_thinking": false,
                    "tools": [{"type": "function", "function": {"name": "f"}}]})"),
      "user:[{'type': 'text', 'text': 'hi'}]|assistant:None[f {\"z\": 1, "
      "\"a\": [true, 1.5]}](hm)|tool:42|[{\"type\": \"function\", "
      "\"function\": {\"name\": \"f\"}}]True False None");
  // No options: add_generation_prompt False, a kwarg not given is undefined.
  EXPECT_EQ(applyJson(chat, R"([{"role": "user", "content": "x"}])", nullptr),
            "user:x|False  None");
  EXPECT_EQ(applyJson(chat, "[]", ""), "False  None");

  // Errors name the field.
  EXPECT_EQ(applyJson(chat, R"([{"role": "user", "content": "x"}, {"role": 2}])",
                      nullptr),
            "error: messages[1].role: expected a string, got a number");
  EXPECT_EQ(applyJson(chat, R"([{"content": "x"}])", nullptr),
            "error: messages[0].role: missing");
  EXPECT_EQ(applyJson(chat, R"([{"role": "user", "content": 1}])", nullptr),
            "error: messages[0].content: expected a string, null or a list "
            "of parts, got a number");
  EXPECT_EQ(applyJson(chat, R"({"role": "user"})", nullptr),
            "error: messages: expected a list, got an object");
  EXPECT_EQ(applyJson(chat, R"(["user"])", nullptr),
            "error: messages[0]: expected an object, got a string");
  EXPECT_EQ(applyJson(chat,
                      R"([{"role": "assistant", "tool_calls": [{"function":
                         {"name": "f", "arguments": 3}}]}])",
                      nullptr),
            "error: messages[0].tool_calls[0].function.arguments: expected an "
            "object or a string, got a number");
  EXPECT_EQ(applyJson(chat, R"([{"role": "assistant", "tool_calls": {}}])",
                      nullptr),
            "error: messages[0].tool_calls: expected a list, got an object");
  EXPECT_EQ(applyJson(chat, "[", nullptr).rfind("error: messages: at byte 1", 0),
            0u);
  EXPECT_EQ(applyJson(chat, R"([{"role": "a", "role": "b"}])", nullptr),
            "error: messages: duplicate key 'role'");
  EXPECT_EQ(applyJson(chat, "[]", R"({"add_generation_prompt": 1})"),
            "error: options.add_generation_prompt: expected a boolean, got a "
            "number");
  EXPECT_EQ(applyJson(chat, "[]", R"({"tools": {"name": "f"}})"),
            "error: options.tools: expected a list or null, got an object");
  EXPECT_EQ(applyJson(chat, "[]", R"({"tools": ["f"]})"),
            "error: options.tools[0]: expected an object, got a string");
  EXPECT_EQ(applyJson(chat, "[]", "[]"),
            "error: options: expected an object, got a list");
  EXPECT_EQ(applyJson(chat, "[]", R"({"messages": []})"),
            "error: options.messages: the messages are the first argument");
  attnrt_chat_template *trim = attnrt_chat_template_parse(
      "{% for m in messages %}{{ m.content | trim }}|{% endfor %}"
      "{{ 'x' + messages[1].content }}",
      nullptr, nullptr, error, sizeof error);
  ASSERT_TRUE(trim) << error;
  // Where transformers.js differs (test/data/README.md), jinja2's: trim of
  // None and of a list renders str(); str + list is a TypeError.
  EXPECT_EQ(applyJson(trim,
                      R"([{"role": "a", "content": null},
                          {"role": "b", "content": [{"type": "text"}]}])",
                      nullptr),
            "error: chat template line 1: unsupported operand type(s) for +: "
            "'str' and 'list'");
  attnrt_chat_template_free(trim);
  trim = attnrt_chat_template_parse(
      "{% for m in messages %}{{ m.content | trim }}|{% endfor %}", nullptr,
      nullptr, error, sizeof error);
  EXPECT_EQ(applyJson(trim,
                      R"([{"role": "a", "content": null},
                          {"role": "b", "content": [{"type": "text"}]}])",
                      nullptr),
            "None|[{'type': 'text'}]|");
  attnrt_chat_template_free(trim);

  size_t length = 0;
  EXPECT_EQ(attnrt_chat_template_apply_json(chat, nullptr, nullptr, nullptr, 0,
                                            &length, error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  attnrt_chat_template_free(chat);
}

TEST(ChatTemplateApi, SharedBetweenThreads) {
  char error[256] = "";
  attnrt_chat_template *chat = attnrt_chat_template_parse(
      kLlama2Chat, "<s>", "</s>", error, sizeof error);
  ASSERT_TRUE(chat) << error;
  std::vector<std::thread> threads;
  std::vector<std::string> results(4);
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      attnrt_chat_message messages[] = {{"system", "S"}, {"user", "U"}};
      for (int k = 0; k < 200; ++k) {
        char text[128];
        size_t length = 0;
        char message[128];
        if (attnrt_chat_template_apply(chat, messages, 2, 1, text, sizeof text,
                                       &length, message,
                                       sizeof message) != ATTNRT_OK)
          return;
        results[t] = text;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::string &result : results)
    EXPECT_EQ(result, "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST]");
  attnrt_chat_template_free(chat);
}
