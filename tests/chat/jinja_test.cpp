// Unit tests of valet's Jinja subset on small templates.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace valet::chat {
namespace {

Result<std::string> RenderWith(std::string_view source, std::string_view variables_json,
                               const RenderLimits& limits = {}) {
  VALET_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::Parse(source, limits));
  ChatRenderInput input;
  input.messages = Json::array();
  VALET_ASSIGN_OR_RETURN(input.variables, ParseJson(variables_json));
  return t.Render(input);
}

std::string Render(std::string_view source, std::string_view variables_json = "{}") {
  Result<std::string> out = RenderWith(source, variables_json);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : "<error: " + out.status().message() + ">";
}

std::string ErrorOf(std::string_view source, std::string_view variables_json = "{}",
                    const RenderLimits& limits = {}) {
  Result<std::string> out = RenderWith(source, variables_json, limits);
  EXPECT_FALSE(out.ok()) << "rendered: " << (out.ok() ? *out : "");
  return out.ok() ? "" : out.status().message();
}

std::vector<Token::Kind> KindsOf(std::string_view source) {
  Result<std::vector<Token>> tokens = Lexer::Tokenize(source);
  EXPECT_TRUE(tokens.ok()) << tokens.status().ToString();
  std::vector<Token::Kind> kinds;
  if (tokens.ok()) {
    for (const Token& t : *tokens) kinds.push_back(t.kind);
  }
  return kinds;
}

TEST(JinjaLexer, SplitsTextTagsAndOperators) {
  using K = Token::Kind;
  EXPECT_EQ(KindsOf("hi {{ a.b[0] // 2 }}"),
            (std::vector<K>{K::kText, K::kOpenExpr, K::kName, K::kPunct, K::kName, K::kPunct, K::kInt, K::kPunct,
                            K::kPunct, K::kInt, K::kCloseExpr, K::kEnd}));
  EXPECT_EQ(KindsOf("{% set x = 'a\\'b' ~ 1.5 %}"),
            (std::vector<K>{K::kOpenStmt, K::kName, K::kName, K::kPunct, K::kString, K::kPunct, K::kFloat,
                            K::kCloseStmt, K::kEnd}));
  Result<std::vector<Token>> t = Lexer::Tokenize("{{ \"a\\n\\\"b\" }}\n{{ {'k': {'n': 1}} }}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[1].text, "a\n\"b");
  EXPECT_EQ((*t)[3].text, "\n");  // text between the tags
  EXPECT_EQ((*t)[3].line, 1);
  EXPECT_EQ((*t)[4].line, 2);
}

TEST(JinjaParser, PrecedenceFollowsJinja) {
  // Filters bind tighter than +, `not` looser than comparisons, `~` between + and *.
  Result<Body> body = Parser::Parse("{{ a + b | trim }}{{ not x == y }}{{ 1 + 2 ~ 3 * 4 }}");
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  ASSERT_EQ(body->size(), 3u);
  const Expr& plus = *(*body)[0].expr;
  EXPECT_EQ(plus.kind, Expr::Kind::kBinary);
  EXPECT_EQ(plus.name, "+");
  EXPECT_EQ(plus.args[1]->kind, Expr::Kind::kFilter);
  const Expr& negation = *(*body)[1].expr;
  EXPECT_EQ(negation.kind, Expr::Kind::kUnary);
  EXPECT_EQ(negation.args[0]->name, "==");
  const Expr& mixed = *(*body)[2].expr;  // 1 + (2 ~ (3 * 4))
  EXPECT_EQ(mixed.name, "+");
  EXPECT_EQ(mixed.args[1]->name, "~");
  EXPECT_EQ(mixed.args[1]->args[1]->name, "*");
}

TEST(JinjaWhitespace, DashesStripBesideTags) {
  EXPECT_EQ(Render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(Render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(Render("a \n{#- comment -#}\n b"), "ab");
}

TEST(JinjaWhitespace, BlockTagsTrimTheirLine) {
  // trim_blocks + lstrip_blocks, as Hugging Face renders chat templates.
  EXPECT_EQ(Render("{% if true %}\n    x\n    {% endif %}\ny"), "    x\ny");
  EXPECT_EQ(Render("  {{ 'kept' }}\n"), "  kept");  // expressions keep indent; one final newline goes
  EXPECT_EQ(Render("a {% if true %}b{% endif %}"), "a b");  // text before a tag on the same line stays
}

TEST(JinjaLoops, LoopVariables) {
  EXPECT_EQ(Render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ 'F' if loop.first }}{{ 'L' if loop.last }}/{{ loop.length }} {% endfor %}",
                   R"({"xs": ["a", "b"]})"),
            "102F/2 211L/2 ");
}

TEST(JinjaLoops, FilterElseUnpackBreak) {
  EXPECT_EQ(Render("{% for x in xs if x > 1 %}{{ x }}{% endfor %}", R"({"xs": [1, 2, 3]})"), "23");
  EXPECT_EQ(Render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(Render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"a": 1, "b": "x"}})"),
            "a=1;b=x;");
  EXPECT_EQ(Render("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "012");
}

TEST(JinjaScopes, LoopSetsStayInsideButNamespacesAreShared) {
  EXPECT_EQ(Render("{% set n = 0 %}{% for x in [1, 2] %}{% set n = n + x %}{% endfor %}{{ n }}"), "0");
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor %}"
                   "{{ ns.n }}"),
            "3");
  EXPECT_EQ(Render("{% set block %}a{{ 1 + 1 }}{% endset %}[{{ block }}]"), "[a2]");
}

TEST(JinjaMacros, DefaultsKeywordsAndRecursion) {
  EXPECT_EQ(Render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('a') }} {{ greet('b', punct='?') }}"),
            "Hi a! Hi b?");
  EXPECT_EQ(Render("{% macro count(n) %}{% if n > 0 %}{{ n }}{{ count(n - 1) }}{% endif %}{% endmacro %}"
                   "{{ count(3) }}"),
            "321");
}

TEST(JinjaExpressions, OperatorsAndLiterals) {
  EXPECT_EQ(Render("{{ 7 // 2 }} {{ 7 % 3 }} {{ -7 // 2 }} {{ 1 / 4 }} {{ 2 ** 3 }} {{ 'a' ~ 1 }} {{ 'ab' * 2 }}"),
            "3 1 -4 0.25 8 a1 abab");
  EXPECT_EQ(Render("{{ 'x' if none else 'y' }} {{ [1, 2] + [3] }} {{ {'k': 'v'}['k'] }}"), "y [1, 2, 3] v");
  EXPECT_EQ(Render("{{ 'b' in 'abc' }} {{ 2 not in [1, 3] }} {{ 'k' in {'k': 1} }}"), "true true true");
  EXPECT_EQ(Render("{{ (none or 'fallback') }} {{ 0 and 'x' }} {{ not [] }}"), "fallback 0 true");
  EXPECT_EQ(Render("{{ 'abcde'[1:3] }} {{ 'abc'[::-1] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1] }}"),
            "bc cba 3 é");
}

TEST(JinjaExpressions, IntegerArithmeticIsExactOrRefused) {
  // Python's ints are exact: powers past 2^53 too, and the floor rules hold at int64's ends.
  EXPECT_EQ(Render("{{ 3 ** 39 }} {{ (-2) ** 63 }} {{ 2 ** -1 }} {{ -9223372036854775807 - 1 }}"),
            "4052555153018976267 -9223372036854775808 0.5 -9223372036854775808");
  EXPECT_EQ(Render("{{ (-9223372036854775807 - 1) % -1 }} {{ 7 % -3 }} {{ -7 // -2 }}"), "0 -2 3");
  // Beyond int64 a template's arithmetic is an error, never a wrapped or undefined value.
  for (const char* overflow : {"{{ 2 ** 63 }}", "{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
                               "{{ 4294967296 * 4294967296 }}", "{{ (-9223372036854775807 - 1) // -1 }}",
                               "{{ -(-9223372036854775807 - 1) }}", "{{ 10 ** 10 ** 10 }}"}) {
    EXPECT_NE(ErrorOf(overflow).find("integer overflow"), std::string::npos) << overflow;
  }
}

TEST(JinjaExpressions, UndefinedIsLenientLikeJinja) {
  EXPECT_EQ(Render("[{{ missing }}][{{ missing.attr }}]{{ missing is defined }}{{ missing is undefined }}"),
            "[][]falsetrue");
  EXPECT_EQ(Render("{% if missing %}x{% else %}y{% endif %}{{ missing | default('d') }}"), "yd");
  EXPECT_NE(ErrorOf("{{ 'a' + missing }}").find("cannot apply '+'"), std::string::npos);
}

TEST(JinjaFilters, StringFiltersAndMethods) {
  EXPECT_EQ(Render("{{ '  a b  ' | trim }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|{{ 'hello world' | title }}"
                   "|{{ 'hELLO' | capitalize }}|{{ 'aXbX' | replace('X', '-') }}|{{ 'héllo' | length }}"),
            "a b|AB|ab|Hello World|Hello|a-b-|5");
  EXPECT_EQ(Render("{{ '\\n x \\n'.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') | join('+') }}"
                   "|{{ ' a  b '.split() | length }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}"),
            "x|a|a+b++c|2|true|true");
  EXPECT_EQ(Render("{{ 'a\\nb' | indent(2) }}|{{ 'a\\n\\nb' | indent(2, first=true) }}"), "a\n  b|  a\n\n  b");
}

TEST(JinjaFilters, CollectionFilters) {
  const char* vars = R"({"ms": [{"role": "user", "n": 2}, {"role": "bot", "n": 1}, {"role": "user", "n": 3}]})";
  EXPECT_EQ(Render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='n') | list }}", vars), "[2, 3]");
  EXPECT_EQ(Render("{{ ms | rejectattr('role', 'equalto', 'user') | length }}", vars), "1");
  EXPECT_EQ(Render("{{ ms | map(attribute='n') | max }} {{ (ms | first).n }} {{ (ms | last).role }}", vars),
            "3 2 user");
  EXPECT_EQ(Render("{{ ['a', 'b'] | map('upper') | join(', ') }}"), "A, B");
  EXPECT_EQ(Render("{% for k, v in {'b': 1, 'A': 2} | dictsort %}{{ k }}{{ v }}{% endfor %}"), "A2b1");
  EXPECT_EQ(Render("{{ '42' | int + 1 }} {{ 3 | string ~ 'x' }} {{ [3, 1, 2] | sort | list }}"), "43 3x [1, 2, 3]");
}

TEST(JinjaFilters, ToJsonMatchesTheReferenceSpacing) {
  const char* vars = R"({"v": {"a": [1, 2.5, "x\"y\n"], "b": {"c": null, "d": true}, "u": "é"}})";
  EXPECT_EQ(Render("{{ v | tojson }}", vars), R"({"a": [1, 2.5, "x\"y\n"], "b": {"c": null, "d": true}, "u": "é"})");
  EXPECT_EQ(Render("{{ v.b | tojson(indent=2) }}", vars), "{\n  \"c\": null,\n  \"d\": true\n}");
  EXPECT_EQ(Render("{{ v.u | tojson(ensure_ascii=true) }}", vars), "\"\\u00e9\"");
}

TEST(JinjaTests, TypeTests) {
  EXPECT_EQ(Render("{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 1 is number }}"
                   "{{ none is none }}{{ false is false }}{{ true is true }}{{ [] is sequence }}{{ 1 is not string }}"),
            "truetruetruetruetruetruetruetruetrue");
}

TEST(JinjaErrors, RaiseExceptionGivesTheMessageExactly) {
  EXPECT_EQ(ErrorOf("before{{ raise_exception('Roles must alternate') }}"), "Roles must alternate");
}

TEST(JinjaErrors, ParseErrorsNameTheProblemAndLine) {
  auto parse_error = [](std::string_view src) {
    Result<ChatTemplate> t = ChatTemplate::Parse(src);
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.status().message();
  };
  EXPECT_NE(parse_error("{% if x %}never closed").find("expected {% endif %}"), std::string::npos);
  EXPECT_NE(parse_error("line1\n{{ x | no_such_filter }}").find("line 2: unknown filter 'no_such_filter'"),
            std::string::npos);
  EXPECT_NE(parse_error("{{ x is no_such_test }}").find("unknown test"), std::string::npos);
  EXPECT_NE(parse_error("{{ x ").find("never closed"), std::string::npos);
  EXPECT_NE(parse_error("{% endfor %}").find("unexpected {% endfor %}"), std::string::npos);
  EXPECT_NE(parse_error("{% frobnicate %}").find("unknown tag 'frobnicate'"), std::string::npos);
  EXPECT_NE(parse_error("{{ 'unterminated }}").find("string literal is never closed"), std::string::npos);
  EXPECT_NE(parse_error("{# open comment").find("comment"), std::string::npos);
  EXPECT_NE(parse_error("{{ " + std::string(5000, '(') + " }}").find("nested too deeply"), std::string::npos);
  std::string nested_blocks;
  for (int i = 0; i < 5000; ++i) nested_blocks += "{% if true %}";
  EXPECT_NE(parse_error(nested_blocks).find("nested too deeply"), std::string::npos);
}

TEST(JinjaErrors, RunawayTemplatesStopWithAnError) {
  EXPECT_NE(ErrorOf("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("nested deeper"), std::string::npos);
  EXPECT_NE(ErrorOf("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                    "{% endfor %}")
                .find("limit"),
            std::string::npos);
  RenderLimits small;
  small.max_steps = 10'000;
  EXPECT_NE(ErrorOf("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", "{}", small)
                .find("steps"),
            std::string::npos);
  small.max_output_bytes = 100;
  EXPECT_NE(ErrorOf("{% for i in range(50) %}0123456789{% endfor %}", "{}", small).find("exceeds 100 bytes"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{{ undefined_function() }}").find("'undefined_function' is undefined"), std::string::npos);
}

TEST(JinjaErrors, SelfContainingAndExplodingValuesStayBounded) {
  const std::string cycle = "{% set ns = namespace() %}{% set ns.me = ns %}";
  EXPECT_NE(ErrorOf(cycle + "{{ ns | tojson }}").find("contain itself"), std::string::npos);
  EXPECT_NE(Render(cycle + "{{ ns }}").find("{...}"), std::string::npos);
  EXPECT_EQ(Render(cycle + "{{ ns == ns }}"), "true");
  // Each round doubles the printed size while the value stays small (shared halves).
  const std::string dag = "{% set ns = namespace(a=['x']) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}"
                          "{% endfor %}";
  EXPECT_NE(ErrorOf(dag + "{{ ns.a | tojson }}").find("exceeds"), std::string::npos);
  EXPECT_NE(ErrorOf(dag + "{{ ns.a }}").find("exceeds"), std::string::npos);
}

TEST(ChatMl, BuiltinRendersMessagesAndGenerationPrompt) {
  Result<ChatTemplate> t = ChatTemplate::Builtin(kChatMlName);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ChatRenderInput input;
  Result<Json> messages = ParseJson(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  ASSERT_TRUE(messages.ok());
  input.messages = *messages;
  input.add_generation_prompt = true;
  Result<std::string> out = t->Render(input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_FALSE(ChatTemplate::Builtin("no-such-template").ok());
}

}  // namespace
}  // namespace valet::chat
