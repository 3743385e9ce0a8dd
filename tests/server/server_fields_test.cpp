// Every field the completion endpoints accept, each sent over HTTP to a
// server on the fake engine and checked to do what it says - reach the engine
// (the SequenceSpec its task opens, seen through a recording engine), shape
// the task (tier, length, stop strings) or the answer (stream, usage,
// logprobs, durable) - or to be refused with a 400 naming it: no field is
// read and then ignored. The fields are the ones completion_request.cpp reads
// and unsupported_fields.cpp refuses; both files are scanned for the names
// they read, so a field added there and not listed here fails this test.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "server_fixture.h"

namespace valet::testing {
namespace {

using nlohmann::json;

// The fake engine, keeping the spec of every sequence the scheduler opens.
class RecordingEngine : public FakeEngine {
 public:
  using FakeEngine::FakeEngine;
  Result<SequenceId> OpenSequence(const SequenceSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      specs_.push_back(spec);
    }
    return FakeEngine::OpenSequence(spec);
  }
  // The specs opened since the last call.
  std::vector<SequenceSpec> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(specs_, {});
  }

 private:
  std::mutex mu_;
  std::vector<SequenceSpec> specs_;
};

// What one request did, as its client and the engine saw it.
struct Observed {
  int status = 0;
  bool streamed = false;
  json body;  // the JSON answer; for a stream, the array of its chunks
  std::string text;
  std::string finish_reason;
  json usage;                       // null when the answer has none
  json logprobs;                    // the choice's logprobs; null when none
  std::vector<SequenceSpec> specs;  // the sequences the engine opened for it
  std::string tier;                 // its task's tier in /v1/tasks; "" when it made none
};

// j[path...], or null where a step is missing (a const json's [] may not miss).
json At(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return json();
    at = &(*at)[key];
  }
  return *at;
}

std::string StringAt(const json& j, const char* key) {
  const json v = At(j, {key});
  return v.is_string() ? v.get<std::string>() : std::string();
}

// A choice of an answer or a stream chunk, added to `o`.
void ReadChoice(const json& choice, Observed* o) {
  if (auto m = choice.find("message"); m != choice.end()) o->text += StringAt(*m, "content");
  if (auto d = choice.find("delta"); d != choice.end()) o->text += StringAt(*d, "content");
  o->text += StringAt(choice, "text");
  if (const std::string f = StringAt(choice, "finish_reason"); !f.empty()) o->finish_reason = f;
  if (auto l = choice.find("logprobs"); l != choice.end() && !l->is_null()) o->logprobs = *l;
}

enum Where { kChat = 1, kCompletions = 2, kBoth = 3 };

using Check = std::function<void(const Observed& base, const Observed& with)>;

// One field: the value sent, what the request without it already carries
// (`base`: a field may only matter beside another, as top_logprobs does
// beside logprobs), and what it must change.
struct Field {
  const char* name;
  int where;
  std::function<json(const Observed& base)> value;
  json base;
  Check check;
};

std::function<json(const Observed&)> Is(json v) {
  return [v = std::move(v)](const Observed&) { return v; };
}

// The field reaches the engine: the task's sequence samples with `want`.
template <typename T>
Check Sampling(T SamplingParams::*member, T want) {
  return [member, want](const Observed& base, const Observed& with) {
    ASSERT_EQ(with.status, 200) << with.body.dump();
    ASSERT_EQ(base.specs.size(), 1u);
    ASSERT_EQ(with.specs.size(), 1u);
    EXPECT_NE(base.specs[0].sampling.*member, want) << "the test's value is the default";
    EXPECT_EQ(with.specs[0].sampling.*member, want);
  };
}

Check TopLogprobs(int32_t want) {
  return [want](const Observed& base, const Observed& with) {
    ASSERT_EQ(with.status, 200) << with.body.dump();
    ASSERT_EQ(base.specs.size(), 1u);
    ASSERT_EQ(with.specs.size(), 1u);
    EXPECT_NE(base.specs[0].top_logprobs, want);
    EXPECT_EQ(with.specs[0].top_logprobs, want);
    EXPECT_FALSE(with.logprobs.is_null());
  };
}

Check Refused(const char* name) {
  return [name](const Observed&, const Observed& with) {
    EXPECT_EQ(with.status, 400) << with.body.dump();
    EXPECT_EQ(At(with.body, {"error", "param"}), std::string(name)) << with.body.dump();
    EXPECT_TRUE(with.specs.empty());
    EXPECT_EQ(with.tier, "") << "a refused request makes no task";
  };
}

Check Tier(const char* want) {
  return [want](const Observed& base, const Observed& with) {
    EXPECT_EQ(with.status, 200) << with.body.dump();
    EXPECT_NE(base.tier, want);
    EXPECT_EQ(with.tier, want);
  };
}

Check Length(int want) {
  return [want](const Observed& base, const Observed& with) {
    ASSERT_EQ(with.status, 200) << with.body.dump();
    EXPECT_NE(At(base.usage, {"completion_tokens"}), want);
    EXPECT_EQ(At(with.usage, {"completion_tokens"}), want);
    EXPECT_EQ(with.finish_reason, "length");
  };
}

// Another prompt, another answer: the fake engine's tokens hash the history.
void AnotherAnswer(const Observed& base, const Observed& with) {
  ASSERT_EQ(with.status, 200) << with.body.dump();
  EXPECT_NE(with.text, base.text);
}

// The field reaches the engine as the sequence's constraint, and the answer
// follows it (the fake engine picks the allowed token nearest its own).
Check Constrained(ConstraintKind kind, std::function<void(const std::string& text)> follows) {
  return [kind, follows](const Observed& base, const Observed& with) {
    ASSERT_EQ(with.status, 200) << with.body.dump();
    ASSERT_EQ(base.specs.size(), 1u);
    ASSERT_EQ(with.specs.size(), 1u);
    EXPECT_FALSE(base.specs[0].constraint.active());
    EXPECT_EQ(with.specs[0].constraint.kind, kind);
    follows(with.text);
  };
}

const json kTool = {{"type", "function"}, {"function", {{"name", "f"}}}};

const std::vector<Field>& AllFields() {
  static const std::vector<Field> fields = {
      {"messages", kChat, Is(json::array({{{"role", "user"}, {"content", "Goodbye"}}})), {}, AnotherAnswer},
      {"prompt", kCompletions, Is("Far away"), {}, AnotherAnswer},
      // The one field that changes nothing: one model is served, and every
      // answer names it, never the request's text (docs/server.md).
      {"model", kBoth, Is("some-other-model"), {},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 200) << with.body.dump();
         EXPECT_EQ(At(with.body, {"model"}), At(base.body, {"model"}));
         EXPECT_EQ(with.text, base.text);
       }},
      {"max_tokens", kBoth, Is(3), {}, Length(3)},
      {"max_completion_tokens", kBoth, Is(3), {}, Length(3)},
      // Its third character, as a stop string: the answer ends before it.
      {"stop", kBoth, [](const Observed& base) { return json(base.text.substr(2, 1)); }, {},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 200) << with.body.dump();
         EXPECT_EQ(with.finish_reason, "stop");
         EXPECT_EQ(with.text, base.text.substr(0, base.text.find(base.text.substr(2, 1))));
       }},
      {"temperature", kBoth, Is(0.25), {}, Sampling(&SamplingParams::temperature, 0.25f)},
      {"top_p", kBoth, Is(0.5), {}, Sampling(&SamplingParams::top_p, 0.5f)},
      {"top_k", kBoth, Is(3), {}, Sampling(&SamplingParams::top_k, 3)},
      {"min_p", kBoth, Is(0.25), {}, Sampling(&SamplingParams::min_p, 0.25f)},
      {"seed", kBoth, Is(7), {}, Sampling(&SamplingParams::seed, uint64_t{7})},
      {"presence_penalty", kBoth, Is(0.5), {}, Sampling(&SamplingParams::presence_penalty, 0.5f)},
      {"frequency_penalty", kBoth, Is(-1.0), {}, Sampling(&SamplingParams::frequency_penalty, -1.0f)},
      {"repeat_penalty", kBoth, Is(1.5), {}, Sampling(&SamplingParams::repeat_penalty, 1.5f)},
      {"repeat_last_n", kBoth, Is(16), {}, Sampling(&SamplingParams::repeat_last_n, 16)},
      {"logprobs", kChat, Is(true), {}, TopLogprobs(0)},
      {"logprobs", kCompletions, Is(2), {}, TopLogprobs(2)},
      {"top_logprobs", kChat, Is(3), {{"logprobs", true}}, TopLogprobs(3)},
      {"stream", kBoth, Is(true), {},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 200);
         EXPECT_FALSE(base.streamed);
         EXPECT_TRUE(with.streamed);
         EXPECT_EQ(with.text, base.text);
       }},
      {"stream_options", kBoth, Is({{"include_usage", true}}), {{"stream", true}},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 200);
         EXPECT_TRUE(base.usage.is_null());
         EXPECT_EQ(At(with.usage, {"completion_tokens"}), 8) << with.body.dump();
       }},
      {"tier", kBoth, Is("offline_indexing"), {}, Tier("offline_indexing")},
      {"priority", kBoth, Is(100), {}, Tier("offline_indexing")},
      {"durable", kBoth, Is(true), {},
       [](const Observed& base, const Observed& with) {
         EXPECT_EQ(base.status, 200);
         ASSERT_EQ(with.status, 202) << with.body.dump();
         EXPECT_EQ(At(with.body, {"object"}), "valet.task");
       }},
      {"durable_key", kBoth, Is("fields-key"), {{"durable", true}},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 202) << with.body.dump();
         EXPECT_NE(At(base.body, {"id"}), "fields-key");
         EXPECT_EQ(At(with.body, {"id"}), "fields-key");
       }},
      // Refused: ignoring them would answer another question
      // (unsupported_fields.h); their no-op values are accepted.
      {"n", kBoth, Is(2), {}, Refused("n")},
      {"best_of", kBoth, Is(2), {}, Refused("best_of")},
      {"logit_bias", kBoth, Is({{"5", 1}}), {}, Refused("logit_bias")},
      // Tools: shown to the model (the fake engine's ChatML gets them in a
      // system message), a required call generated under its constraint.
      {"tools", kChat, Is(json::array({kTool})), {},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 200) << with.body.dump();
         EXPECT_GT(At(with.usage, {"prompt_tokens"}), At(base.usage, {"prompt_tokens"}));
       }},
      {"tool_choice", kChat, Is("required"), {{"tools", json::array({kTool})}, {"max_tokens", 80}},
       [](const Observed& base, const Observed& with) {
         ASSERT_EQ(with.status, 200) << with.body.dump();
         EXPECT_EQ(with.finish_reason, "tool_calls");
         ASSERT_EQ(with.specs.size(), 1u);
         EXPECT_EQ(with.specs[0].constraint.kind, ConstraintKind::kToolCall);
         EXPECT_EQ(with.specs[0].constraint.text.find("text_allowed"), std::string::npos);
         // "auto": text, or calls from their marker on.
         EXPECT_EQ(base.specs[0].constraint.kind, ConstraintKind::kToolCall);
         EXPECT_NE(base.specs[0].constraint.text.find(R"("text_allowed":true)"), std::string::npos);
       }},
      {"parallel_tool_calls", kChat, Is(true),
       {{"tools", json::array({kTool})}, {"tool_choice", "required"}, {"max_tokens", 80}},
       [](const Observed&, const Observed& with) {
         ASSERT_EQ(with.status, 200) << with.body.dump();
         ASSERT_EQ(with.specs.size(), 1u);
         // ChatML's generic form holds one call either way (tool_use_test: Hermes's holds 8).
         EXPECT_NE(with.specs[0].constraint.text.find(R"("max_calls":1)"), std::string::npos);
       }},
      {"functions", kChat, Is(json::array({{{"name", "f"}}})), {}, Refused("functions")},
      {"function_call", kChat, Is({{"name", "f"}}), {}, Refused("function_call")},
      {"response_format", kBoth, Is({{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {
           {"type", "object"}, {"properties", {{"z", {{"const", 1}}}, {"a", {{"const", true}}}}},
           {"required", {"z", "a"}}, {"additionalProperties", false}}}}}}),
       {{"max_tokens", 40}},
       Constrained(ConstraintKind::kJsonSchema, [](const std::string& text) {
         // nlohmann::json sends the keys sorted; completion_request_test checks the order is the request's.
         EXPECT_EQ(text, R"({"a":true,"z":1})");
       })},
      {"grammar", kBoth, Is("root ::= \"yes\" | \"no\""), {{"max_tokens", 40}},
       Constrained(ConstraintKind::kGrammar,
                   [](const std::string& text) { EXPECT_TRUE(text == "yes" || text == "no") << text; })},
      {"audio", kChat, Is({{"voice", "alloy"}}), {}, Refused("audio")},
      {"modalities", kChat, Is(json::array({"text", "audio"})), {}, Refused("modalities")},
      {"prediction", kChat, Is({{"type", "content"}, {"content", "x"}}), {}, Refused("prediction")},
      {"web_search_options", kChat, Is({{"search_context_size", "low"}}), {}, Refused("web_search_options")},
      {"suffix", kCompletions, Is("}"), {}, Refused("suffix")},
      {"echo", kCompletions, Is(true), {}, Refused("echo")},
  };
  return fields;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The top-level fields a parser source reads or refuses, in the forms it
// names them: ReadX(body, "f", ...), body.find("f"), a refusal rule
// {"f", <chat>, <completions>, ...}, and a loop over {"f", "g"}.
std::set<std::string> FieldsNamedIn(const std::string& path) {
  const std::string source = ReadFile(path);
  EXPECT_FALSE(source.empty()) << path;
  std::set<std::string> out;
  const std::regex direct(R"re((?:\(body, |body\.find\()"([a-z_]+)"|\{"([a-z_]+)", (?:true|false),)re");
  for (std::sregex_iterator it(source.begin(), source.end(), direct), end; it != end; ++it) {
    out.insert((*it)[1].matched ? (*it)[1].str() : (*it)[2].str());
  }
  const std::regex loop(R"re(for \(const char\* \w+ : \{([^}]*)\}\))re");
  const std::regex name(R"re("([a-z_]+)")re");
  for (std::sregex_iterator it(source.begin(), source.end(), loop), end; it != end; ++it) {
    const std::string list = (*it)[1].str();
    for (std::sregex_iterator n(list.begin(), list.end(), name); n != end; ++n) out.insert((*n)[1].str());
  }
  return out;
}

class ServerFieldsTest : public ServerFixture {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/valet-fields-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    durable_dir_ = pattern;  // so that "durable" runs
    StartServer();
  }
  void TearDown() override {
    ServerFixture::TearDown();
    std::error_code ignored;
    std::filesystem::remove_all(durable_dir_, ignored);
  }
  std::unique_ptr<FakeEngine> MakeEngine(const FakeEngineOptions& o) override {
    auto engine = std::make_unique<RecordingEngine>(o);
    recorder_ = engine.get();
    return engine;
  }

  static json BaseBody(Where endpoint) {
    json body = {{"max_tokens", 8}};
    if (endpoint == kChat) {
      body["messages"] = json::array({{{"role", "user"}, {"content", "Hello"}}});
    } else {
      body["prompt"] = "Once upon";
    }
    return body;
  }

  Observed Send(Where endpoint, const json& body) {
    const json before = Tasks();
    const json last_id = before.empty() ? json() : At(before.back(), {"id"});
    httplib::Result r = Post(endpoint == kChat ? "/v1/chat/completions" : "/v1/completions", body);
    Observed o;
    if (!r) {
      ADD_FAILURE() << "no answer to " << body.dump();
      return o;
    }
    o.status = r->status;
    o.streamed = r->get_header_value("Content-Type").starts_with("text/event-stream");
    if (o.streamed) {
      const SseEvents sse = ParseSse(r->body);
      EXPECT_TRUE(sse.done && sse.well_formed) << r->body;
      o.body = sse.chunks;
    } else {
      o.body = ParseJson(r->body);
    }
    for (const json& answer : o.streamed ? o.body : json::array({o.body})) {
      if (auto u = answer.find("usage"); u != answer.end() && !u->is_null()) o.usage = *u;
      if (auto c = answer.find("choices"); c != answer.end() && !c->empty()) ReadChoice((*c)[0], &o);
    }
    // A durable task runs after its 202: wait for it, so that its sequence is
    // this request's and no later one's.
    if (o.status == 202) WaitForResult(StringAt(o.body, "id"));
    o.specs = recorder_->Take();
    const json after = Tasks();
    if (!after.empty() && At(after.back(), {"id"}) != last_id) o.tier = StringAt(after.back(), "tier");
    return o;
  }

  void WaitForResult(const std::string& key) const {
    while (true) {
      httplib::Result r = Get("/v1/tasks/" + key + "/result");
      if (!r || r->status != 202) return;
      std::this_thread::yield();
    }
  }

  RecordingEngine* recorder_ = nullptr;
};

// The list is the parsers' whole list - every field they read or refuse is
// in it, and every field in it is one they name, so the scan keeps finding
// them - and each field in it does what it says.
TEST_F(ServerFieldsTest, EveryAcceptedFieldHasItsEffectOrIsRefused) {
  std::set<std::string> named = FieldsNamedIn(VALET_SERVER_SOURCE_DIR "/completion_request.cpp");
  named.merge(FieldsNamedIn(VALET_SERVER_SOURCE_DIR "/unsupported_fields.cpp"));
  named.merge(FieldsNamedIn(VALET_SERVER_SOURCE_DIR "/response_format.cpp"));
  named.merge(FieldsNamedIn(VALET_SERVER_SOURCE_DIR "/tool_request.cpp"));
  std::set<std::string> listed;
  for (const Field& f : AllFields()) listed.insert(f.name);
  for (const std::string& f : named) EXPECT_TRUE(listed.count(f)) << f << " is read but not in AllFields()";
  for (const std::string& f : listed) EXPECT_TRUE(named.count(f)) << f << " is listed but the parser never names it";

  for (const Field& field : AllFields()) {
    for (Where endpoint : {kChat, kCompletions}) {
      if ((field.where & endpoint) == 0) continue;
      SCOPED_TRACE(std::string(field.name) + (endpoint == kChat ? " (chat)" : " (completions)"));
      json body = BaseBody(endpoint);
      if (!field.base.is_null()) body.update(field.base);
      const Observed base = Send(endpoint, body);
      ASSERT_TRUE(base.status == 200 || base.status == 202) << base.body.dump();
      body[field.name] = field.value(base);
      field.check(base, Send(endpoint, body));
      if (std::string_view(field.name) == "durable_key") {  // the key, free again for the other endpoint
        httplib::Result deleted = Client().Delete("/v1/tasks/fields-key");
        ASSERT_TRUE(deleted && deleted->status == 200);
      }
    }
  }
}

}  // namespace
}  // namespace valet::testing
