#include "common/json_value.h"

#include <gtest/gtest.h>

#include <string>

namespace valet {
namespace {

TEST(JsonLiteTest, ParsesNestedDocument) {
  Result<JsonValue> doc = ParseJson(
      R"( {"a": [1, -2.5e3, 0.125, true, false, null], "b": {"c": "x"}, "d": [], "e": {}} )");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_TRUE(doc->is_object());
  EXPECT_EQ(doc->keys(), (std::vector<std::string>{"a", "b", "d", "e"}));
  const JsonValue& a = *doc->Find("a");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].AsNumber(), 1.0);
  EXPECT_EQ(a[1].AsNumber(), -2500.0);
  EXPECT_EQ(a[2].AsNumber(), 0.125);
  EXPECT_TRUE(a[3].AsBool());
  EXPECT_FALSE(a[4].AsBool());
  EXPECT_TRUE(a[5].is_null());
  EXPECT_EQ(doc->Find("b")->Find("c")->AsString(), "x");
  EXPECT_TRUE(doc->Find("d")->is_array());
  EXPECT_EQ(doc->Find("d")->size(), 0u);
  EXPECT_TRUE(doc->Find("e")->is_object());
  EXPECT_EQ(doc->Find("missing"), nullptr);
  EXPECT_EQ(a.Find("a"), nullptr);
}

TEST(JsonLiteTest, DecodesStringEscapes) {
  Result<JsonValue> doc = ParseJson(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20AC \ud83d\ude00")");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->AsString(), "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST(JsonLiteTest, KeepsRawUtf8) {
  Result<JsonValue> doc = ParseJson("\"\xE2\x96\x81x\"");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->AsString(), "\xE2\x96\x81x");
}

TEST(JsonLiteTest, NumbersRoundTripExactly) {
  Result<JsonValue> doc = ParseJson("[0.1, 1e-320, -0, 123456789012345678, 3.4028234663852886e38]");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)[0].AsNumber(), 0.1);
  EXPECT_EQ((*doc)[1].AsNumber(), 1e-320);
  EXPECT_EQ((*doc)[2].AsNumber(), 0.0);
  EXPECT_EQ((*doc)[3].AsNumber(), 123456789012345678.0);
  EXPECT_EQ((*doc)[4].AsNumber(), 3.4028234663852886e38);
}

TEST(JsonLiteTest, RejectsMalformedInput) {
  const char* bad[] = {"",         "[1,]",    "{\"a\" 1}", "[1 2]",       "01",          "1.",
                       ".5",       "+1",      "-",         "1e",          "tru",         "nul",
                       "\"abc",    "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "[1] 2",
                       "{\"a\":}", "{1:2}",   "\"a\nb\"",  "1e999",       "[[[["};
  for (const char* text : bad) {
    Result<JsonValue> doc = ParseJson(text);
    ASSERT_FALSE(doc.ok()) << text;
    EXPECT_EQ(doc.status().code(), StatusCode::kCorrupt) << text;
  }
}

TEST(JsonLiteTest, BoundsNesting) {
  std::string deep(kMaxJsonDepth + 10, '[');
  deep += std::string(kMaxJsonDepth + 10, ']');
  EXPECT_FALSE(ParseJson(deep).ok());
  std::string fine(50, '[');
  fine += std::string(50, ']');
  EXPECT_TRUE(ParseJson(fine).ok());
}

TEST(JsonLiteTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadJsonFile("/nonexistent/file.json").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace valet
