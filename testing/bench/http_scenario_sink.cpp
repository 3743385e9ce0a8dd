#include "testing/bench/http_scenario_sink.h"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <cctype>
#include <string_view>
#include <utility>

#include "server/completion_request.h"

namespace valet::testing {

namespace {

using nlohmann::json;

constexpr time_t kConnectTimeoutS = 5;
// A request under load may wait behind a long prompt on a slow machine.
constexpr time_t kReadTimeoutS = 600;

// http[s]://HOST[:PORT][/], HOST a name or a bracketed IPv6 address.
bool WellFormedUrl(std::string_view url) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (url.starts_with(scheme)) {
      url.remove_prefix(scheme.size());
      break;
    }
    if (scheme == "https://") return false;
  }
  auto take = [&](auto allowed) {
    size_t n = 0;
    while (n < url.size() && allowed(url[n])) ++n;
    url.remove_prefix(n);
    return n;
  };
  if (url.starts_with('[')) {
    url.remove_prefix(1);
    if (take([](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; }) == 0 ||
        !url.starts_with(']')) {
      return false;
    }
    url.remove_prefix(1);
  } else if (take([](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; }) == 0) {
    return false;
  }
  if (url.starts_with(':')) {
    url.remove_prefix(1);
    const size_t digits = take([](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    if (digits == 0 || digits > 5) return false;
  }
  if (url.starts_with('/')) url.remove_prefix(1);
  return url.empty();
}

Status CheckUrl(const std::string& url) {
  if (!WellFormedUrl(url)) {
    return InvalidArgument("the URL must look like http://HOST:PORT (no path), got '" + url + "'");
  }
  return Status::Ok();
}

std::unique_ptr<httplib::Client> MakeClient(const LoadTarget& target) {
  std::string url = target.url;
  if (!url.empty() && url.back() == '/') url.pop_back();
  auto client = std::make_unique<httplib::Client>(url);
  client->set_connection_timeout(kConnectTimeoutS, 0);
  client->set_read_timeout(kReadTimeoutS, 0);
  return client;
}

std::string ErrorMessage(const std::string& body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    return e.dump();
  }
  return body.substr(0, 200);
}

int32_t IntOr(const json& object, const char* key, int32_t fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int32_t>() : fallback;
}

}  // namespace

const char* ApiFlavorName(ApiFlavor api) { return api == ApiFlavor::kOpenAi ? "openai" : "llamacpp"; }

Result<ApiFlavor> ApiFlavorFromName(const std::string& name) {
  if (name == "openai") return ApiFlavor::kOpenAi;
  if (name == "llamacpp") return ApiFlavor::kLlamaCpp;
  return InvalidArgument("unknown API '" + name + "' (openai, llamacpp)");
}

HttpTaskRequest BuildHttpRequest(const TaskRequest& task, const LoadTarget& target) {
  json body = {{"model", target.model},
               {"max_tokens", task.max_tokens},
               {"temperature", target.temperature.value_or(task.sampling.temperature)},
               {"top_k", task.sampling.top_k},
               {"top_p", task.sampling.top_p},
               {"min_p", task.sampling.min_p},
               {"seed", task.sampling.seed},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (target.api == ApiFlavor::kOpenAi) body["tier"] = TierApiName(task.tier);
  HttpTaskRequest out;
  if (task.messages.empty()) {
    out.path = "/v1/completions";
    body["prompt"] = task.system_prompt + task.prompt;
  } else {
    out.path = "/v1/chat/completions";
    json messages = json::array();
    if (!task.system_prompt.empty()) messages.push_back({{"role", "system"}, {"content", task.system_prompt}});
    for (const ChatMessage& m : task.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(messages);
  }
  out.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return out;
}

void SseCompletionReader::Feed(std::string_view bytes, double now) {
  // SSE lines may end in CRLF; without the CRs every event ends in "\n\n".
  for (char c : bytes) {
    if (c != '\r') pending_.push_back(c);
  }
  size_t end;
  while ((end = pending_.find("\n\n")) != std::string::npos) {
    const std::string event = pending_.substr(0, end);
    pending_.erase(0, end + 2);
    size_t pos = 0;
    while (pos < event.size()) {
      size_t eol = event.find('\n', pos);
      if (eol == std::string::npos) eol = event.size();
      std::string_view line(event.data() + pos, eol - pos);
      if (line.rfind("data:", 0) == 0) {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        Event(line, now);
      }
      pos = eol + 1;
    }
  }
}

void SseCompletionReader::Event(std::string_view data, double now) {
  if (data == "[DONE]") {
    saw_done_ = true;
    return;
  }
  const json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!chunk.is_object()) return;
  if (auto e = chunk.find("error"); e != chunk.end()) {
    error_ = e->is_object() && e->contains("message") ? (*e)["message"].dump() : e->dump();
    return;
  }
  if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) {
    prompt_tokens_ = IntOr(*u, "prompt_tokens", -1);
    completion_tokens_ = IntOr(*u, "completion_tokens", -1);
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object()) {
      cached_tokens_ = IntOr(*d, "cached_tokens", -1);
    }
  }
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return;
  const json& choice = (*choices)[0];
  const json* text = nullptr;
  if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
    if (auto c = delta->find("content"); c != delta->end()) text = &*c;
  } else if (auto t = choice.find("text"); t != choice.end()) {
    text = &*t;
  }
  if (text == nullptr || !text->is_string() || text->get_ref<const std::string&>().empty()) return;
  if (first_text_time_ < 0) first_text_time_ = now;
  last_text_time_ = now;
  ++text_chunks_;
  text_ += text->get_ref<const std::string&>();
}

Result<std::unique_ptr<HttpScenarioSink>> HttpScenarioSink::Connect(const LoadTarget& target, CompletionQueue& done) {
  VALET_RETURN_IF_ERROR(CheckUrl(target.url));
  std::unique_ptr<httplib::Client> client = MakeClient(target);
  httplib::Result res = client->Get("/v1/models");
  if (!res) return IoError("cannot reach " + target.url + ": " + httplib::to_string(res.error()));
  if (res->status != 200) {
    return IoError(target.url + " answered GET /v1/models with HTTP " + std::to_string(res->status) + ": " +
                   ErrorMessage(res->body));
  }
  return std::unique_ptr<HttpScenarioSink>(new HttpScenarioSink(target, done));
}

HttpScenarioSink::~HttpScenarioSink() { Join(); }

Result<TaskId> HttpScenarioSink::Submit(TaskRequest request) {
  const TaskId id = next_id_++;
  std::lock_guard<std::mutex> lock(mu_);
  threads_.emplace_back([this, id, task = std::move(request)] { done_.Push(id, Run(task)); });
  return id;
}

Status HttpScenarioSink::Lifecycle(LifecycleEvent event) {
  return Unsupported(std::string("an HTTP load has no app lifecycle to send ") + LifecycleEventName(event) + " to");
}

Status HttpScenarioSink::TrimMemory(TrimLevel level) {
  return Unsupported(std::string("an HTTP load has no app to send onTrimMemory ") + TrimLevelName(level) + " to");
}

void HttpScenarioSink::Join() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

TaskResult HttpScenarioSink::Run(const TaskRequest& task) const {
  const HttpTaskRequest http = BuildHttpRequest(task, target_);
  std::unique_ptr<httplib::Client> client = MakeClient(target_);
  TaskResult r;
  r.metrics.tier = task.tier;
  SseCompletionReader reader;
  std::string raw;  // the body as received, for an error reply
  httplib::Request req;
  req.method = "POST";
  req.path = http.path;
  req.body = http.body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const double now = SteadySeconds();
    if (raw.size() < 4096) raw.append(data, std::min<size_t>(n, 4096));
    reader.Feed(std::string_view(data, n), now);
    return true;
  };
  r.metrics.submit_time = SteadySeconds();
  httplib::Result res = client->send(req);
  r.metrics.end_time = SteadySeconds();
  r.metrics.first_token_time = reader.first_text_time();
  r.metrics.last_token_time = reader.last_text_time();
  r.metrics.prompt_tokens = std::max(0, reader.prompt_tokens());
  r.metrics.cached_prompt_tokens = std::max(0, reader.cached_tokens());
  // Without a usage chunk, each text chunk counts as one token.
  r.metrics.generated_tokens = reader.completion_tokens() >= 0 ? reader.completion_tokens() : reader.text_chunks();
  r.text = reader.text();
  if (!res) {
    r.state = TaskState::kFailed;
    r.status = IoError(http.path + ": " + httplib::to_string(res.error()));
  } else if (res->status != 200) {
    r.state = TaskState::kFailed;
    r.status = IoError(http.path + ": HTTP " + std::to_string(res->status) + ": " + ErrorMessage(raw));
  } else if (!reader.error().empty() && reader.first_text_time() >= 0) {
    // llama-server streams a whole answer, then may reject it as its chat
    // format's output (a random model's answer ending inside a UTF-8
    // character): the answer and its timing stand; the complaint is kept.
    r.status = IoError(http.path + ": after the answer: " + reader.error());
  } else if (!reader.error().empty() || !reader.saw_done()) {
    r.state = TaskState::kFailed;
    r.status = IoError(http.path + ": " + (reader.error().empty() ? "the stream ended without [DONE]" : reader.error()));
  }
  return r;
}

Result<int32_t> HttpScenarioSink::CountTokens(const std::string& text) const {
  std::unique_ptr<httplib::Client> client = MakeClient(target_);
  const json body = {{"content", text}, {"add_special", false}};
  httplib::Result res = client->Post("/tokenize", body.dump(), "application/json");
  if (!res) return IoError("POST " + target_.url + "/tokenize: " + httplib::to_string(res.error()));
  if (res->status != 200) {
    return IoError("POST " + target_.url + "/tokenize answered HTTP " + std::to_string(res->status) +
                   " (the load's texts are sized in the server's tokens)");
  }
  const json reply = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || !reply.contains("tokens") || !reply["tokens"].is_array()) {
    return IoError("POST " + target_.url + "/tokenize: no \"tokens\" array in the reply");
  }
  return static_cast<int32_t>(reply["tokens"].size());
}

}  // namespace valet::testing
