// JSON Schema as grammars: each supported keyword accepts the instances the
// schema admits (as compact JSON, properties in schema order) and refuses the
// others; each unsupported keyword is refused by name with its path.
#include "constrain/json_schema_gbnf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "constraint_test_util.h"

namespace valet {
namespace {

using test::CompileSchema;
using test::ConstraintError;
using test::Matches;

struct Case {
  const char* schema;
  std::vector<const char*> valid;
  std::vector<const char*> invalid;
};

void Check(const Case& k, uint32_t max_ws = 0) {
  auto c = CompileSchema(k.schema, max_ws);
  ASSERT_NE(c, nullptr) << k.schema;
  for (const char* s : k.valid) EXPECT_TRUE(Matches(c, s)) << k.schema << " should accept " << s;
  for (const char* s : k.invalid) EXPECT_FALSE(Matches(c, s)) << k.schema << " should refuse " << s;
}

std::string SchemaError(const std::string& schema) {
  return ConstraintError({ConstraintKind::kJsonSchema, schema});
}

TEST(JsonSchemaGbnf, Primitives) {
  Check({R"({"type":"null"})", {"null"}, {"nul", "0", "\"null\""}});
  Check({R"({"type":"boolean"})", {"true", "false"}, {"1", "True"}});
  Check({R"({"type":"integer"})",
         {"0", "-7", "1234567890123456"},
         {"01", "-0", "1.5", "1e3", "12345678901234567"}});
  Check({R"({"type":"number"})",
         {"0", "-0.25", "3.14e-2", "10E+300"},
         {".5", "1.", "--1", "1e", "0x10"}});
  Check({R"({"type":"string"})",
         {R"("")", R"("a b")", R"("quote \" backslash \\ nl \n ctl \u001f")", "\"\xC3\xA9\""},
         {R"(")", "\"raw\nnewline\"", R"("\x")", R"("\/")"}});
  Check({R"({"type":["string","null"]})", {"null", R"("x")"}, {"1"}});
  Check({R"({})", {"1", R"({"a":[true,null]})", R"("s")"}, {"{", "nope"}});
  Check({"true", {"[]"}, {"]"}});
}

TEST(JsonSchemaGbnf, StringLengthsCountCharactersNotBytes) {
  Check({R"({"type":"string","minLength":2,"maxLength":3})",
         {R"("ab")", R"("abc")", "\"\xC3\xA9\xC3\xA9\"", R"("\n\t")"},
         {R"("a")", R"("abcd")", "\"\xC3\xA9\""}});
}

TEST(JsonSchemaGbnf, IntegerBounds) {
  Check({R"({"type":"integer","minimum":-12,"maximum":105})",
         {"-12", "-1", "0", "9", "10", "99", "100", "105"},
         {"-13", "-20", "106", "110", "1000", "-0"}});
  Check({R"({"type":"integer","exclusiveMinimum":0.5,"exclusiveMaximum":3})",
         {"1", "2"},
         {"0", "3"}});
  Check({R"({"type":"integer","minimum":1000})",
         {"1000", "99999", "1234567890"},
         {"999", "0", "-5"}});
  Check({R"({"type":"integer","maximum":-3})", {"-3", "-100"}, {"-2", "0", "5"}});
}

TEST(JsonSchemaGbnf, NumberBounds) {
  Check({R"({"type":"number","minimum":0,"maximum":1})",
         {"0", "0.5", "0.999", "1", "1.0", "1.000"},
         {"-0.5", "1.5", "1.01", "2", "-1"}});
  Check({R"({"type":"number","minimum":-2,"maximum":-1})",
         {"-2", "-2.00", "-1.5", "-1", "-1.0"},
         {"-2.5", "-0.5", "0", "-3"}});
}

TEST(JsonSchemaGbnf, ObjectsKeepSchemaOrderAndSkipOptionalProperties) {
  const Case k{R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
                  "c":{"type":"boolean"}},"required":["b"],"additionalProperties":false})",
               {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"b":"x","c":true})",
                R"({"a":1,"b":"x","c":false})"},
               {R"({})", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":"x",})", R"({,"b":"x"})",
                R"({"b":"x","d":1})"}};
  Check(k);
  Check({R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})",
         {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
         {R"({"b":2,"a":1})", R"({"a":1,})"}});
  Check({R"({"type":"object","additionalProperties":{"type":"integer"}})",
         {"{}", R"({"x":1,"y":-2})"},
         {R"({"x":"s"})"}});
  Check({R"({"type":"object","additionalProperties":false})", {"{}"}, {R"({"a":1})"}});
  Check({R"({"type":"object"})", {"{}", R"({"k":[1,{"z":null}]})"}, {"[]"}});
}

TEST(JsonSchemaGbnf, Arrays) {
  Check({R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
         {"[1]", "[1,2,3]"},
         {"[]", "[1,2,3,4]", "[1,]", R"(["a"])"}});
  Check({R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})",
         {"[]", R"(["a"])", R"(["a",1])"},
         {R"(["a",1,2])", "[1]"}});
  Check(
      {R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"minItems":2})",
       {R"(["a",true])", R"(["a",true,false])"},
       {R"(["a"])", R"(["a",1])"}});
  Check({R"({"type":"array"})", {"[]", R"([1,"a",{}])"}, {"[,]"}});
}

TEST(JsonSchemaGbnf, EnumConstAndCombinators) {
  Check({R"({"enum":["red","green",3,null,{"k":[1]}]})",
         {R"("red")", R"("green")", "3", "null", R"({"k":[1]})"},
         {R"("blue")", "4", R"({"k":[2]})"}});
  Check({R"({"type":"string","enum":["a",1]})", {R"("a")"}, {"1"}});
  Check({R"({"type":["integer","null"],"enum":[2,2.5,"s",null]})", {"2", "null"}, {"2.5", R"("s")"}});
  EXPECT_NE(SchemaError(R"({"type":"string","const":5})").find("no value of 'enum' or 'const'"), std::string::npos);
  Check({R"({"const":"fixed \"q\""})", {R"("fixed \"q\"")"}, {R"("fixed")"}});
  Check({R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})",
         {"5", R"("x")"},
         {R"("xy")", "true"}});
  Check({R"({"oneOf":[{"type":"integer"},{"type":"boolean"}]})", {"5", "true"}, {"null"}});
  Check({R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},
                        "required":["kind"],"additionalProperties":false},
                       {"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"],
                        "additionalProperties":false}]})",
         {R"({"kind":"a","x":1})", R"({"kind":"b"})"},
         {R"({"kind":"c"})", R"({"kind":"b","x":1})"}});
  Check({R"({"allOf":[{"type":"integer","minimum":3}]})", {"3"}, {"2"}});
}

// Property names become rule names: none may capture the grammar's own rules.
TEST(JsonSchemaGbnf, PropertyNamesCannotCaptureSharedRules) {
  Check({R"({"type":"object","properties":{"root":{"type":"integer"},"date":{"type":"string","format":"date"},
            "json_value":{"type":"boolean"},"ws":{"type":"null"},"time":{"type":"string","format":"time"}},
            "required":["root","date","json_value","ws","time"],"additionalProperties":false})",
         {R"({"root":1,"date":"2024-02-29","json_value":true,"ws":null,"time":"10:00:00Z"})"},
         {R"({"root":1,"date":"2023-02-29","json_value":true,"ws":null,"time":"10:00:00Z"})"}},
        2);
}

TEST(JsonSchemaGbnf, RecursiveRefs) {
  const Case tree{R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                    "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],
                    "additionalProperties":false}},"$ref":"#/$defs/node"})",
                  {R"({"v":1})", R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"},
                  {R"({"v":1,"kids":[{}]})", R"({"kids":[]})"}};
  Check(tree);
  Check({R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})",
         {"[]", "[1,[2,[]],3]"},
         {"[1,[\"a\"]]"}});
  Check({R"({"definitions":{"a~b/c":{"type":"boolean"}},"$ref":"#/definitions/a~0b~1c"})",
         {"true"},
         {"1"}});
}

TEST(JsonSchemaGbnf, Formats) {
  Check({R"({"type":"string","format":"date"})",
         {R"("2024-02-29")", R"("2023-12-31")", R"("2000-02-29")", R"("2023-04-30")"},
         {R"("2023-02-29")", R"("1900-02-29")", R"("2023-04-31")", R"("2023-13-01")",
          R"("2023-00-10")", R"("2023-1-01")"}});
  Check({R"({"type":"string","format":"date-time"})",
         {R"("2024-01-05T23:59:59Z")", R"("2024-01-05T00:00:00.123+05:30")"},
         {R"("2024-01-05T24:00:00Z")", R"("2024-01-05T12:00:00")", R"("2024-01-05 12:00:00Z")"}});
  Check({R"({"type":"string","format":"time"})", {R"("08:30:00Z")"}, {R"("8:30:00Z")"}});
  Check({R"({"type":"string","format":"uuid"})",
         {R"("123e4567-e89b-12d3-a456-426614174000")"},
         {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400")"}});
  Check({R"({"type":"string","format":"email"})",
         {R"("a.b+c@example.co.uk")", R"("x@y.z")"},
         {R"("a@b")", R"(".a@b.c")", R"("a..b@c.d")", R"("a@-b.c")", R"("ab.c")"}});
}

TEST(JsonSchemaGbnf, PatternSearchesUnlessAnchored) {
  Check({R"({"type":"string","pattern":"^[A-Z]{3}-\\d{2}$"})",
         {R"("ABC-12")"},
         {R"("ABC-123")", R"("xABC-12")"}});
  Check({R"({"type":"string","pattern":"ab+"})",
         {R"("ab")", R"("xxabbby")", R"("\"ab\n")"},
         {R"("a")", R"("b")"}});
  Check({R"({"type":"string","pattern":"^[^a]$"})",
         {R"("b")", R"("\"")", R"("\\")", R"("\u0001")", R"("\n")"},
         {R"("a")", R"("bb")", "\"\n\""}});
}

TEST(JsonSchemaGbnf, WhitespaceIsCompactByDefaultAndBoundedOtherwise) {
  const char* schema =
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},
                          "required":["a"]})";
  Check({schema, {R"({"a":[1,2]})"}, {R"({ "a":[1,2]})", R"({"a": [1,2]})"}});
  Check(
      {schema, {R"({"a":[1,2]})", "{ \"a\" :\n [ 1 , 2 ]\t}", "{\"a\":  [1]}"}, {"{\"a\":   [1]}"}},
      2);
}

TEST(JsonSchemaGbnf, UnsupportedKeywordsAreRefusedByNameAndPath) {
  struct Refusal {
    const char* schema;
    const char* error;
  };
  for (const Refusal& r : std::initializer_list<Refusal>{
           {R"({"type":"integer","multipleOf":3})", "keyword 'multipleOf' is not supported at #"},
           {R"({"type":"object","properties":{"x":{"type":"array","uniqueItems":true}}})",
            "'uniqueItems' is not supported at #/properties/x"},
           {R"({"not":{"type":"string"}})", "'not'"},
           {R"({"type":"object","minProperties":1})", "'minProperties'"},
           {R"({"if":{},"then":{}})", "'if'"},
           {R"({"type":"string","format":"uri"})", "format 'uri' is not supported"},
           {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",
            "'oneOf' whose branches may match"},
           {R"({"allOf":[{"type":"integer"},{"minimum":1}]})", "'allOf' with more than one"},
           {R"({"$ref":"http://example.com/s.json"})", "another document"},
           {R"({"$ref":"#/$defs/missing"})", "'$ref' to nothing"},
           {R"({"$ref":"#/$defs/a","type":"string","$defs":{"a":{}}})", "'type' beside '$ref'"},
           {R"({"type":"number","minimum":0.5})", "'minimum' with a fraction on a number"},
           {R"({"type":"number","exclusiveMaximum":3})", "'exclusiveMaximum' on a number"},
           {R"({"type":"string","maxLength":100000})", "'maxLength' above 5000"},
           {R"({"type":"integer","minimum":5,"maximum":4})", "no integer lies within the bounds"},
           {R"({"type":"object","properties":{"a":{}},"required":["b"]})", "required property 'b'"},
           {R"({"type":"string","pattern":"(a"})", "'pattern': regex: unclosed '('"},
           {R"({"type":"wat"})", "unknown type 'wat'"},
           {R"(false)", "admits nothing"},
           {R"({"type":"object")", "json schema:"}}) {
    const std::string e = SchemaError(r.schema);
    EXPECT_NE(e.find(r.error), std::string::npos) << r.schema << " -> " << e;
  }
}

TEST(JsonSchemaGbnf, SizeAndNestingAreBoundedBeforeTheWalk) {
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  for (int i = 0; i < 40; ++i) deep += "}";
  EXPECT_NE(SchemaError(deep).find("json schema:"), std::string::npos);
  std::string wide = R"({"anyOf":[)";
  for (int i = 0; i < 3000; ++i)
    wide += std::string(i ? "," : "") + R"({"const":)" + std::to_string(i) + "}";
  wide += "]}";
  EXPECT_NE(SchemaError(wide).find("max_subschemas"), std::string::npos);
  JsonSchemaOptions small;
  small.max_schema_bytes = 16;
  EXPECT_FALSE(JsonSchemaToGbnf(R"({"type":"string","maxLength":3})", small).ok());
}

TEST(JsonSchemaGbnf, JsonObjectAcceptsAnyObject) {
  auto c = test::CompileConstraint({ConstraintKind::kJsonObject, ""});
  for (const char* s : {"{}", R"({"a":{"b":[1,2.5,"x",null,true]}})"})
    EXPECT_TRUE(Matches(c, s)) << s;
  for (const char* s : {"[]", "1", R"({"a"})", "{} "}) EXPECT_FALSE(Matches(c, s)) << s;
}

}  // namespace
}  // namespace valet
