// Client bodies nested far too deep are refused before any document exists,
// by every endpoint that parses a body: 200,000 levels once overflowed the
// server's stack through recursive copies.
#include "server/client_json.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "server/completion_request.h"
#include "server/status_requests.h"

namespace valet {
namespace {

using nlohmann::json;

constexpr int kHostileDepth = 200'000;

std::string NestedArrays(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

std::string NestedObjects(int depth) {
  std::string s;
  s.reserve(static_cast<size_t>(depth) * 6);
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s.append(static_cast<size_t>(depth), '}');
  return s;
}

template <typename T>
void ExpectTooDeep(const std::variant<T, ApiError>& parsed, const std::string& what) {
  ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << what;
  const ApiError& e = std::get<ApiError>(parsed);
  EXPECT_EQ(e.http_status, 400) << what;
  EXPECT_EQ(e.code, "invalid_json") << what;
  EXPECT_NE(e.message.find("deeper than 64"), std::string::npos) << e.message;
}

TEST(ClientJsonTest, SixtyFourLevelsPassAndSixtyFiveDoNot) {
  for (const std::string& body : {NestedArrays(64), NestedObjects(64)}) {
    std::variant<json, ApiError> ok = ParseClientJson(body);
    ASSERT_TRUE(std::holds_alternative<json>(ok)) << std::get<ApiError>(ok).message;
  }
  ExpectTooDeep(ParseClientJson(NestedArrays(65)), "65 arrays");
  ExpectTooDeep(ParseClientJson(NestedObjects(65)), "65 objects");
}

TEST(ClientJsonTest, HostileDepthIsRefusedWithoutADocument) {
  ExpectTooDeep(ParseClientJson(NestedArrays(kHostileDepth)), "arrays");
  ExpectTooDeep(ParseClientJson(NestedObjects(kHostileDepth)), "objects");
  // Never closed: refused at the 65th level, before the missing end matters.
  ExpectTooDeep(ParseClientJson(std::string(kHostileDepth, '[')), "unclosed");
}

TEST(ClientJsonTest, MalformedBodiesAreInvalidJson) {
  for (const char* body : {"", "{", "[1,]", "{\"a\" 1}", "nul", "\"\xff\"", "{} {}", "1 2"}) {
    std::variant<json, ApiError> parsed = ParseClientJson(body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << body;
    EXPECT_EQ(std::get<ApiError>(parsed).code, "invalid_json") << body;
    EXPECT_NE(std::get<ApiError>(parsed).message.find("not valid JSON"), std::string::npos);
  }
}

// Every body-parsing endpoint, with the hostile value where its own field goes.
TEST(ClientJsonTest, EveryEndpointRefusesHostileNesting) {
  const CompletionDefaults defaults;
  for (const std::string& deep : {NestedArrays(kHostileDepth), NestedObjects(kHostileDepth)}) {
    ExpectTooDeep(ParseCompletionRequest(Endpoint::kCompletions, "{\"prompt\": " + deep + "}", "", defaults),
                  "completions prompt");
    ExpectTooDeep(ParseCompletionRequest(Endpoint::kCompletions, deep, "", defaults), "completions body");
    ExpectTooDeep(ParseCompletionRequest(Endpoint::kChatCompletions,
                                         "{\"messages\": [{\"role\": \"user\", \"content\": " + deep + "}]}", "",
                                         defaults),
                  "chat content");
    ExpectTooDeep(ParseCompletionRequest(Endpoint::kChatCompletions, "{\"stop\": " + deep + "}", "", defaults),
                  "chat stop");
    ExpectTooDeep(ParseLifecycleRequest("{\"event\": " + deep + "}"), "lifecycle");
    ExpectTooDeep(ParseTokenizeRequest("{\"content\": " + deep + "}"), "tokenize");
  }
}

TEST(StatusRequestsTest, LifecycleAndTokenizeBodies) {
  std::variant<LifecycleEvent, ApiError> event = ParseLifecycleRequest(R"({"event": "on_stop"})");
  ASSERT_TRUE(std::holds_alternative<LifecycleEvent>(event));
  EXPECT_EQ(std::get<LifecycleEvent>(event), LifecycleEvent::kOnStop);
  for (const char* bad : {R"({"event": 3})", R"({"event": "ON_NAP"})", "[]", "{"}) {
    std::variant<LifecycleEvent, ApiError> e = ParseLifecycleRequest(bad);
    ASSERT_TRUE(std::holds_alternative<ApiError>(e)) << bad;
    EXPECT_FALSE(std::get<ApiError>(e).code.empty());
  }
  std::variant<TokenizeRequest, ApiError> t = ParseTokenizeRequest(R"({"content": "hi", "add_special": true})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(t));
  EXPECT_EQ(std::get<TokenizeRequest>(t).content, "hi");
  EXPECT_TRUE(std::get<TokenizeRequest>(t).add_special);
  EXPECT_FALSE(std::get<TokenizeRequest>(ParseTokenizeRequest(R"({"content": ""})")).add_special);
  for (const char* bad : {R"({"content": 1})", R"({"content": "x", "add_special": 1})", "{}", "\"x\""}) {
    std::variant<TokenizeRequest, ApiError> e = ParseTokenizeRequest(bad);
    ASSERT_TRUE(std::holds_alternative<ApiError>(e)) << bad;
    EXPECT_EQ(std::get<ApiError>(e).code, "invalid_type") << bad;
  }
}

}  // namespace
}  // namespace valet
