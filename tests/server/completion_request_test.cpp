#include "server/completion_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/sched/fake_engine.h"

namespace valet {
using namespace valet::testing;
namespace {

using nlohmann::json;

class CompletionRequestTest : public ::testing::Test {
 protected:
  ParsedCompletion Parse(Endpoint endpoint, const json& body, std::string_view header = "") {
    return ParseCompletionRequest(endpoint, body.dump(), header, defaults_);
  }
  CompletionRequest Ok(Endpoint endpoint, const json& body, std::string_view header = "") {
    ParsedCompletion p = Parse(endpoint, body, header);
    if (const ApiError* e = std::get_if<ApiError>(&p)) ADD_FAILURE() << e->message;
    return std::holds_alternative<CompletionRequest>(p) ? std::get<CompletionRequest>(p) : CompletionRequest{};
  }
  CompletionDefaults defaults_;
};

TEST_F(CompletionRequestTest, ChatFieldsMapOntoTheTask) {
  const json body = {{"model", "x"},
                     {"messages", {{{"role", "developer"}, {"content", "sys"}},
                                   {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "he"}},
                                                                   {{"type", "text"}, {"text", "llo"}}}}},
                                   {{"role", "assistant"}, {"content", nullptr}}}},
                     {"max_completion_tokens", 7},
                     {"max_tokens", 99},
                     {"stop", "END"},
                     {"temperature", 0.0},
                     {"top_p", 0.5},
                     {"top_k", 3},
                     {"min_p", 0.1},
                     {"seed", -1},
                     {"presence_penalty", 0.5},
                     {"frequency_penalty", -1.25},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}},
                     {"logit_bias", json::object()},
                     {"tools", json::array()},
                     {"response_format", {{"type", "text"}}},
                     {"n", 1},
                     {"user", "ignored"}};
  const CompletionRequest r = Ok(Endpoint::kChatCompletions, body);
  EXPECT_EQ(r.task.system_prompt, "sys");
  ASSERT_EQ(r.task.messages.size(), 2u);
  EXPECT_EQ(r.task.messages[0].content, "hello");
  EXPECT_EQ(r.task.messages[1].role, "assistant");
  EXPECT_EQ(r.task.max_tokens, 7);
  EXPECT_EQ(r.task.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.task.sampling.temperature, 0.0f);
  EXPECT_EQ(r.task.sampling.top_p, 0.5f);
  EXPECT_EQ(r.task.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(r.task.sampling.min_p, 0.1f);
  EXPECT_EQ(r.task.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(r.task.sampling.presence_penalty, 0.5f);
  EXPECT_EQ(r.task.sampling.frequency_penalty, -1.25f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.task.tier, Tier::kForegroundChat);
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(r.task.top_logprobs, -1);
}

// Without max_tokens the task runs until the context is full, as OpenAI's and
// llama-server's do, unless the operator set a default cap.
TEST_F(CompletionRequestTest, NoMaxTokensMeansTheRestOfTheContext) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, chat).task.max_tokens, 0);
  EXPECT_EQ(Ok(Endpoint::kCompletions, {{"prompt", "x"}}).task.max_tokens, 0);
  defaults_.chat_max_tokens = 256;
  defaults_.completion_max_tokens = 16;
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, chat).task.max_tokens, 256);
  EXPECT_EQ(Ok(Endpoint::kCompletions, {{"prompt", "x"}}).task.max_tokens, 16);
  EXPECT_EQ(Ok(Endpoint::kCompletions, {{"prompt", "x"}, {"max_tokens", 3}}).task.max_tokens, 3);
  EXPECT_TRUE(CheckCompletionDefaults(defaults_).ok());
  defaults_.completion_max_tokens = -1;
  EXPECT_EQ(CheckCompletionDefaults(defaults_).code(), StatusCode::kInvalidArgument);
}

TEST_F(CompletionRequestTest, DefaultsDependOnTheEndpoint) {
  const CompletionRequest chat = Ok(Endpoint::kChatCompletions, {{"messages", {{{"role", "user"}, {"content", "x"}}}}});
  EXPECT_EQ(chat.task.max_tokens, defaults_.chat_max_tokens);
  EXPECT_EQ(chat.task.tier, Tier::kForegroundChat);
  EXPECT_TRUE(chat.task.system_prompt.empty());
  const CompletionRequest text = Ok(Endpoint::kCompletions, {{"prompt", "x"}});
  EXPECT_EQ(text.task.max_tokens, defaults_.completion_max_tokens);
  EXPECT_EQ(text.task.tier, Tier::kInlineSuggestion);
  EXPECT_EQ(text.task.prompt, "x");
  EXPECT_FALSE(text.stream);
}

TEST_F(CompletionRequestTest, OnlySystemMessageStaysAMessage) {
  const CompletionRequest r = Ok(Endpoint::kChatCompletions, {{"messages", {{{"role", "system"}, {"content", "s"}}}}});
  EXPECT_TRUE(r.task.system_prompt.empty());
  ASSERT_EQ(r.task.messages.size(), 1u);
  EXPECT_EQ(r.task.messages[0].role, "system");
}

TEST_F(CompletionRequestTest, TokenIdPromptsAreKeptExactly) {
  // Ids that no text tokenizes to (a lone BOS mid-prompt) must reach the task as given.
  const std::vector<int32_t> ids = {7, FakeEngine::kBos, 300, 0};
  for (const json& prompt : {json(ids), json::array({ids})}) {
    const CompletionRequest r = Ok(Endpoint::kCompletions, {{"prompt", prompt}});
    EXPECT_EQ(r.task.prompt_tokens, ids) << prompt.dump();
    EXPECT_TRUE(r.task.prompt.empty());
  }
}

TEST_F(CompletionRequestTest, TokenIdsOutsideTheVocabularyAre400) {
  defaults_.vocab_size = 301;
  EXPECT_EQ(Ok(Endpoint::kCompletions, {{"prompt", {300}}}).task.prompt_tokens, std::vector<int32_t>{300});
  for (const json& bad : {json{301}, json{-1}, json{1, 5000000000LL}, json{1.5}, json::array()}) {
    ParsedCompletion p = Parse(Endpoint::kCompletions, {{"prompt", bad}});
    ASSERT_TRUE(std::holds_alternative<ApiError>(p)) << bad.dump();
    EXPECT_EQ(std::get<ApiError>(p).param, "prompt") << bad.dump();
    EXPECT_EQ(std::get<ApiError>(p).http_status, 400);
  }
}

TEST_F(CompletionRequestTest, TierPrecedenceAndPriorityBands) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
  json b = chat;
  b["tier"] = "OFFLINE_INDEXING";
  b["priority"] = 0;
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, b, "inline_suggestion").task.tier, Tier::kOfflineIndexing);
  b.erase("tier");
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, b, "inline_suggestion").task.tier, Tier::kForegroundChat);
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, chat, "background_summary").task.tier, Tier::kBackgroundSummary);
  EXPECT_EQ(TierFromPriority(-5), Tier::kForegroundChat);
  EXPECT_EQ(TierFromPriority(0), Tier::kForegroundChat);
  EXPECT_EQ(TierFromPriority(1), Tier::kInlineSuggestion);
  EXPECT_EQ(TierFromPriority(9), Tier::kInlineSuggestion);
  EXPECT_EQ(TierFromPriority(10), Tier::kBackgroundSummary);
  EXPECT_EQ(TierFromPriority(99), Tier::kBackgroundSummary);
  EXPECT_EQ(TierFromPriority(100), Tier::kOfflineIndexing);
  for (int t = 0; t < kNumTiers; ++t) {
    EXPECT_EQ(TierFromName(TierApiName(static_cast<Tier>(t))), static_cast<Tier>(t));
  }
  EXPECT_FALSE(TierFromName("Foreground_Chat").has_value());
}

TEST_F(CompletionRequestTest, ErrorsNameTheParameter) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
  struct Case {
    const char* key;
    json value;
  };
  const Case cases[] = {{"top_k", -1},     {"top_k", 1.5},        {"top_p", 1.5},        {"min_p", "a"},
                        {"seed", "1"},     {"stop", ""},          {"stop", json::array({"a", ""})},
                        {"stop", json::array({"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13",
                                              "14", "15", "16", "17"})},
                        {"max_tokens", 0}, {"max_tokens", 3000000000LL}, {"model", 1}, {"n", 0}, {"n", "2"},
                        {"frequency_penalty", -3}, {"presence_penalty", 2.5}, {"presence_penalty", "1"}};
  for (const Case& c : cases) {
    json b = chat;
    b[c.key] = c.value;
    ParsedCompletion p = Parse(Endpoint::kChatCompletions, b);
    ASSERT_TRUE(std::holds_alternative<ApiError>(p)) << c.key << "=" << c.value.dump();
    EXPECT_EQ(std::get<ApiError>(p).param, c.key);
    EXPECT_EQ(std::get<ApiError>(p).http_status, 400);
  }
}

TEST_F(CompletionRequestTest, LogprobsFollowOpenAiPerEndpoint) {
  const json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
  json b = chat;
  b["logprobs"] = true;
  CompletionRequest r = Ok(Endpoint::kChatCompletions, b);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.task.top_logprobs, 0);
  b["top_logprobs"] = 20;
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, b).task.top_logprobs, 20);
  b["logprobs"] = false;
  b["top_logprobs"] = nullptr;
  r = Ok(Endpoint::kChatCompletions, b);
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(r.task.top_logprobs, -1);
  r = Ok(Endpoint::kCompletions, {{"prompt", "x"}, {"logprobs", 5}});
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.task.top_logprobs, 5);
  EXPECT_EQ(Ok(Endpoint::kCompletions, {{"prompt", "x"}, {"logprobs", 0}}).task.top_logprobs, 0);
  EXPECT_FALSE(Ok(Endpoint::kCompletions, {{"prompt", "x"}, {"logprobs", nullptr}}).logprobs);
  struct Case {
    Endpoint endpoint;
    json extra;
    const char* param;
  };
  const Case bad[] = {{Endpoint::kChatCompletions, {{"logprobs", 1}}, "logprobs"},
                      {Endpoint::kChatCompletions, {{"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
                      {Endpoint::kChatCompletions, {{"logprobs", true}, {"top_logprobs", -1}}, "top_logprobs"},
                      {Endpoint::kChatCompletions, {{"top_logprobs", 2}}, "top_logprobs"},
                      {Endpoint::kCompletions, {{"logprobs", 6}}, "logprobs"},
                      {Endpoint::kCompletions, {{"logprobs", true}}, "logprobs"}};
  for (const Case& c : bad) {
    json body = c.endpoint == Endpoint::kChatCompletions ? chat : json{{"prompt", "x"}};
    body.update(c.extra);
    ParsedCompletion p = Parse(c.endpoint, body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(p)) << body.dump();
    EXPECT_EQ(std::get<ApiError>(p).param, c.param) << body.dump();
    EXPECT_FALSE(std::get<ApiError>(p).code.empty());
  }
}

// Fields that would change what the answer means are refused by name; their
// no-op values are not.
TEST_F(CompletionRequestTest, FieldsValetCannotHonourAre400) {
  struct Case {
    Endpoint endpoint;
    const char* key;
    json value;
    const char* code;
  };
  const Case cases[] = {
      {Endpoint::kChatCompletions, "functions", json::array({{{"name", "f"}}}), "unsupported_parameter"},
      {Endpoint::kChatCompletions, "function_call", {{"name", "f"}}, "unsupported_value"},
      {Endpoint::kChatCompletions, "logit_bias", {{"5", 1}}, "unsupported_parameter"},
      {Endpoint::kChatCompletions, "n", 2, "unsupported_value"},
      {Endpoint::kChatCompletions, "audio", {{"voice", "alloy"}}, "unsupported_parameter"},
      {Endpoint::kChatCompletions, "modalities", json::array({"text", "audio"}), "unsupported_value"},
      {Endpoint::kChatCompletions, "prediction", {{"type", "content"}}, "unsupported_parameter"},
      {Endpoint::kCompletions, "logit_bias", {{"5", -100}}, "unsupported_parameter"},
      {Endpoint::kCompletions, "n", 3, "unsupported_value"},
      {Endpoint::kCompletions, "best_of", 2, "unsupported_value"},
      {Endpoint::kCompletions, "suffix", "}", "unsupported_parameter"},
      {Endpoint::kCompletions, "echo", true, "unsupported_value"},
  };
  for (const Case& c : cases) {
    const bool chat = c.endpoint == Endpoint::kChatCompletions;
    json body = chat ? json{{"messages", {{{"role", "user"}, {"content", "x"}}}}} : json{{"prompt", "x"}};
    body[c.key] = c.value;
    ParsedCompletion p = Parse(c.endpoint, body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(p)) << body.dump();
    const ApiError& e = std::get<ApiError>(p);
    EXPECT_EQ(e.http_status, 400);
    EXPECT_EQ(e.param, c.key);
    EXPECT_EQ(e.code, c.code) << body.dump();
  }
  const json harmless = {{"prompt", "x"}, {"best_of", 1}, {"echo", false}, {"suffix", nullptr}, {"n", 1},
                         {"logit_bias", nullptr}};
  EXPECT_EQ(Ok(Endpoint::kCompletions, harmless).task.prompt, "x");
  const json chat_harmless = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tool_choice", "none"},
                              {"functions", json::array()}, {"modalities", json::array({"text"})},
                              {"audio", nullptr}, {"store", true}, {"metadata", {{"k", "v"}}}};
  EXPECT_EQ(Ok(Endpoint::kChatCompletions, chat_harmless).task.messages.size(), 1u);
}

// Tools keep their parameters in the order the request lists them; tool
// messages and the assistant's calls are read; tool_choice picks how the
// answer may call them.
TEST_F(CompletionRequestTest, ToolsToolChoiceAndToolMessages) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"get_weather","description":"d",
      "parameters":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}},
      {"type":"function","function":{"name":"ping"}}])";
  auto parse = [&](const std::string& rest) {
    return ParseCompletionRequest(Endpoint::kChatCompletions, "{" + rest + "}", "", defaults_);
  };
  auto ok = [&](const std::string& rest) {
    ParsedCompletion p = parse(rest);
    if (const ApiError* e = std::get_if<ApiError>(&p)) ADD_FAILURE() << rest << ": " << e->message;
    return std::holds_alternative<CompletionRequest>(p) ? std::get<CompletionRequest>(p) : CompletionRequest{};
  };
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  CompletionRequest r = ok(user + "," + tools);
  ASSERT_EQ(r.task.tools.size(), 2u);
  EXPECT_EQ(r.task.tools[0].name, "get_weather");
  EXPECT_EQ(r.task.tools[0].description, "d");
  EXPECT_EQ(r.task.tools[0].parameters,
            R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})");
  EXPECT_EQ(r.task.tools[1].parameters, "");
  EXPECT_EQ(r.task.tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_FALSE(r.task.tool_choice.parallel);
  EXPECT_EQ(ok(user + "," + tools + R"(,"tool_choice":"required","parallel_tool_calls":false)").task.tool_choice.kind,
            ToolChoice::Kind::kRequired);
  EXPECT_TRUE(ok(user + "," + tools + R"(,"parallel_tool_calls":true)").task.tool_choice.parallel);
  r = ok(user + "," + tools + R"(,"tool_choice":{"type":"function","function":{"name":"ping"}})");
  EXPECT_EQ(r.task.tool_choice.kind, ToolChoice::Kind::kNamed);
  EXPECT_EQ(r.task.tool_choice.name, "ping");
  r = ok(user + "," + tools + R"(,"tool_choice":"none")");
  EXPECT_EQ(r.task.tool_choice.kind, ToolChoice::Kind::kNone);
  EXPECT_TRUE(r.task.tools.empty()) << "a model that may not call tools is not shown them";
  EXPECT_EQ(ok(user).task.tool_choice.kind, ToolChoice::Kind::kNone);

  r = ok(R"("messages":[{"role":"user","content":"Oslo?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"abc123XYZ","type":"function",
        "function":{"name":"get_weather","arguments":"{\"zeta\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"abc123XYZ","content":"-3"}])");
  ASSERT_EQ(r.task.messages.size(), 3u);
  ASSERT_EQ(r.task.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.task.messages[1].tool_calls[0], (ToolCall{"abc123XYZ", "get_weather", R"({"zeta":"Oslo"})"}));
  EXPECT_EQ(r.task.messages[1].content, "");
  EXPECT_EQ(r.task.messages[2].role, "tool");
  EXPECT_EQ(r.task.messages[2].tool_call_id, "abc123XYZ");
  EXPECT_EQ(r.task.messages[2].content, "-3");

  struct Bad {
    std::string rest;
    const char* param;
  };
  for (const Bad& b : {
           Bad{user + R"(,"tools":{})", "tools"},
           Bad{user + R"(,"tools":[{"type":"retrieval"}])", "tools[0]"},
           Bad{user + R"(,"tools":[{"type":"function","function":{}}])", "tools[0].function.name"},
           Bad{user + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}])",
               "tools[0].function.parameters"},
           Bad{user + R"(,"tool_choice":"required")", "tool_choice"},
           Bad{user + "," + tools + R"(,"tool_choice":"sometimes")", "tool_choice"},
           Bad{user + "," + tools + R"(,"tool_choice":{"type":"function","function":{"name":"nope"}})", "tool_choice"},
           Bad{user + "," + tools + R"(,"parallel_tool_calls":"yes")", "parallel_tool_calls"},
           Bad{user + "," + tools + R"(,"durable":true)", "tools"},
           Bad{R"("messages":[{"role":"tool","content":"x"}])", "messages[0].tool_call_id"},
           Bad{R"("messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}])",
               "messages[0].tool_calls[0].function.arguments"},
       }) {
    ParsedCompletion p = parse(b.rest);
    ASSERT_TRUE(std::holds_alternative<ApiError>(p)) << b.rest;
    EXPECT_EQ(std::get<ApiError>(p).param, b.param) << b.rest;
    EXPECT_EQ(std::get<ApiError>(p).http_status, 400);
  }
  std::string many = user + R"(,"tools":[)";
  for (size_t i = 0; i <= kMaxTools; ++i) many += std::string(i ? "," : "") + R"({"type":"function","function":{"name":"f"}})";
  ParsedCompletion p = parse(many + "]");
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  EXPECT_EQ(std::get<ApiError>(p).param, "tools");
}

// response_format and llama-server's grammar become the task's constraint;
// a schema keeps the order the request lists its properties in.
TEST_F(CompletionRequestTest, ResponseFormatBecomesTheConstraint) {
  const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
  auto parse = [&](const std::string& rest) {
    return ParseCompletionRequest(Endpoint::kChatCompletions, "{" + msgs + "," + rest + "}", "", defaults_);
  };
  auto constraint = [&](const std::string& rest) {
    ParsedCompletion p = parse(rest);
    if (const ApiError* e = std::get_if<ApiError>(&p)) ADD_FAILURE() << rest << ": " << e->message;
    return std::holds_alternative<CompletionRequest>(p) ? std::get<CompletionRequest>(p).task.constraint : Constraint{};
  };
  EXPECT_FALSE(constraint(R"("response_format":{"type":"text"})").active());
  EXPECT_EQ(constraint(R"("response_format":{"type":"json_object"})"), (Constraint{ConstraintKind::kJsonObject, ""}));
  EXPECT_EQ(constraint(R"("response_format":{"type":"json_schema","json_schema":{"name":"card","strict":true,
            "schema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}})"),
            (Constraint{ConstraintKind::kJsonSchema,
                        R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})"}));
  EXPECT_EQ(constraint(R"("response_format":{"type":"json_object","schema":{"type":"array"}})"),
            (Constraint{ConstraintKind::kJsonSchema, R"({"type":"array"})"}));
  EXPECT_EQ(constraint(R"("grammar":"root ::= \"a\"")"), (Constraint{ConstraintKind::kGrammar, R"(root ::= "a")"}));
  struct Bad {
    const char* rest;
    const char* param;
  };
  for (const Bad& b : {Bad{R"("response_format":"json")", "response_format"},
                       Bad{R"("response_format":{"type":"xml"})", "response_format.type"},
                       Bad{R"("response_format":{})", "response_format.type"},
                       Bad{R"("response_format":{"type":"json_schema"})", "response_format.json_schema"},
                       Bad{R"("response_format":{"type":"json_schema","json_schema":{"name":"n"}})",
                           "response_format.json_schema.schema"},
                       Bad{R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"strict":1}})",
                           "response_format.json_schema.strict"},
                       Bad{R"("grammar":7)", "grammar"},
                       Bad{R"("grammar":"root ::= \"a\"","response_format":{"type":"json_object"})", "grammar"}}) {
    ParsedCompletion p = parse(b.rest);
    ASSERT_TRUE(std::holds_alternative<ApiError>(p)) << b.rest;
    EXPECT_EQ(std::get<ApiError>(p).param, b.param) << b.rest;
    EXPECT_EQ(std::get<ApiError>(p).http_status, 400);
  }
}

TEST(ApiErrorTest, StatusMapping) {
  EXPECT_EQ(ErrorFromStatus(InvalidArgument("x")).http_status, 400);
  EXPECT_EQ(ErrorFromStatus(OutOfRange("x")).code, "context_length_exceeded");
  EXPECT_EQ(ErrorFromStatus(ResourceExhausted("x")).http_status, 400);
  EXPECT_EQ(ErrorFromStatus(ResourceExhausted("x")).code, "context_length_exceeded");
  EXPECT_EQ(ErrorFromStatus(Internal("x")).http_status, 500);
  EXPECT_EQ(ErrorFromStatus(Unsupported("x")).http_status, 400);
  EXPECT_EQ(ErrorFromStatus(Unsupported("x")).code, "unsupported_value");
  const json body = json::parse(BadRequest("bad \xff", "p", "invalid_value").ToJson());
  EXPECT_EQ(body["error"]["param"], "p");
  EXPECT_EQ(body["error"]["code"], "invalid_value");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
}

// Clients switch on `code`: no reply may carry a null one, whatever built it.
TEST(ApiErrorTest, EveryErrorHasACode) {
  for (const Status& s : {InvalidArgument("x"), OutOfRange("x"), ResourceExhausted("x"), Internal("x"),
                          IoError("x"), NotFound("x"), Aborted("x")}) {
    EXPECT_FALSE(ErrorFromStatus(s).code.empty()) << s.message();
  }
  for (int status : {400, 401, 403, 404, 405, 409, 413, 414, 429, 431, 500, 503}) {
    ApiError e;
    e.http_status = status;
    e.message = "m";
    const json body = json::parse(e.ToJson());
    ASSERT_TRUE(body["error"]["code"].is_string()) << status;
    EXPECT_FALSE(body["error"]["code"].get<std::string>().empty()) << status;
  }
  ApiError named;
  named.code = "queue_full";
  EXPECT_EQ(json::parse(named.ToJson())["error"]["code"], "queue_full");
  EXPECT_EQ(DefaultCode(405), "method_not_allowed");
  EXPECT_EQ(DefaultCode(503), "internal_error");
}

}  // namespace
}  // namespace valet
