// common/json.h: the bounded entry points over nlohmann-json.
#include "common/json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace valet {
namespace {

TEST(JsonTest, ParsesNestedDocumentKeepingMemberOrder) {
  Result<Json> doc = ParseJson(R"( {"z": [1, -2.5e3, 0.125, true, false, null], "b": {"c": "x"}, "a": [], "e": {}} )");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc->items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "b", "a", "e"}));
  const Json& z = doc->at("z");
  ASSERT_EQ(z.size(), 6u);
  EXPECT_EQ(z[0].get<int64_t>(), 1);
  EXPECT_EQ(z[1].get<double>(), -2500.0);
  EXPECT_EQ(z[2].get<double>(), 0.125);
  EXPECT_TRUE(z[3].get<bool>());
  EXPECT_TRUE(z[5].is_null());
  ASSERT_NE(FindMember(*doc, "b"), nullptr);
  EXPECT_EQ(FindMember(*FindMember(*doc, "b"), "c")->get<std::string>(), "x");
  EXPECT_EQ(FindMember(*doc, "missing"), nullptr);
  EXPECT_EQ(FindMember(z, "z"), nullptr);  // not an object
}

TEST(JsonTest, DecodesStringEscapesAndKeepsRawUtf8) {
  Result<Json> doc = ParseJson(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20AC \ud83d\ude00 )" "\xE2\x96\x81x\"");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->get<std::string>(),
            "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE2\x96\x81x");
}

TEST(JsonTest, NumbersRoundTripExactly) {
  Result<Json> doc = ParseJson("[0.1, 1e-320, -0, 123456789012345678, 3.4028234663852886e38]");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)[0].get<double>(), 0.1);
  EXPECT_EQ((*doc)[1].get<double>(), 1e-320);
  EXPECT_EQ((*doc)[2].get<double>(), 0.0);
  EXPECT_EQ((*doc)[3].get<int64_t>(), 123456789012345678);
  EXPECT_EQ((*doc)[4].get<double>(), 3.4028234663852886e38);
  EXPECT_EQ(DumpJson(*doc), "[0.1,1e-320,0,123456789012345678,3.4028234663852886e+38]");
}

TEST(JsonTest, RejectsMalformedInputNamingTheByte) {
  const char* bad[] = {"",         "[1,]",    "{\"a\" 1}", "[1 2]",       "01",          "1.",
                       ".5",       "+1",      "-",         "1e",          "tru",         "nul",
                       "\"abc",    "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "[1] 2",
                       "{\"a\":}", "{1:2}",   "\"a\nb\"",  "[[[["};
  for (const char* text : bad) {
    Result<Json> doc = ParseJson(text);
    ASSERT_FALSE(doc.ok()) << text;
    EXPECT_EQ(doc.status().code(), StatusCode::kCorrupt) << text;
    EXPECT_NE(doc.status().message().find("at byte"), std::string::npos) << text;
  }
}

TEST(JsonTest, NestingIsBoundedBeforeAnyDocumentIsBuilt) {
  auto nested = [](size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(ParseJson(nested(kMaxJsonDepth)).ok());
  Result<Json> deep = ParseJson(nested(kMaxJsonDepth + 1));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("deeper than 64"), std::string::npos) << deep.status().message();
  // Deep enough to overflow a stack if anything recursed over it.
  const JsonCheck check = CheckJson(std::string(2'000'000, '['));
  EXPECT_FALSE(check.ok);
  EXPECT_TRUE(check.too_deep);
  EXPECT_TRUE(CheckJson(nested(8), 8).ok);
  EXPECT_TRUE(CheckJson(nested(9), 8).too_deep);
  EXPECT_FALSE(CheckJson("[1,]").too_deep);
}

TEST(JsonTest, DumpNeverThrowsOnBytesThatAreNotUtf8) {
  const Json doc{{"text", std::string("ok \xFF \xC3")}};
  EXPECT_EQ(DumpJson(doc), "{\"text\":\"ok \xEF\xBF\xBD \xEF\xBF\xBD\"}");
  EXPECT_EQ(DumpJson(Json::array({1, 2}), 1), "[\n 1,\n 2\n]");
}

TEST(JsonTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadJsonFile("/nonexistent/file.json").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace valet
