// `valet serve` as a user runs it: on a synthesized tiny model (real engine),
// on an ephemeral loopback port, answering HTTP until SIGTERM.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/cli_run.h"

namespace {

using nlohmann::json;

using valet::testing::CliRun;

// The caller's own VALET_API_KEY, if any, is left out: only `env` sets it.
CliRun Valet(const std::string& args, const std::string& env = "") {
  return valet::testing::RunValet(args, "-u VALET_API_KEY " + env);
}

// A `valet serve` child process; its first stdout line names the port.
class ServeProcess {
 public:
  // `env`: NAME=VALUE entries added to this process's environment.
  explicit ServeProcess(const std::string& model, const std::vector<std::string>& flags = {},
                        const std::vector<std::string>& env = {}) {
    std::vector<std::string> args = {VALET_BIN, "serve", "-m", model, "--port", "0", "-t", "1", "--kv-budget-mb", "16"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = env;
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string_view(*e).rfind("VALET_API_KEY=", 0) != 0) envp.push_back(*e);
    }
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      execve(VALET_BIN, argv.data(), envp.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
    char line[512] = {};
    if (out_ != nullptr && fgets(line, sizeof line, out_) != nullptr) first_line_ = line;
    const size_t colon = first_line_.rfind(':', first_line_.find(" (model"));
    if (colon != std::string::npos) port_ = std::atoi(first_line_.c_str() + colon + 1);
  }
  ~ServeProcess() {
    if (pid_ > 0 && exit_code_ < 0) Stop();
    if (out_ != nullptr) fclose(out_);
  }
  int Stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& first_line() const { return first_line_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::string first_line_;
  int port_ = -1;
  int exit_code_ = -1;
};

TEST(ServeCliTest, BadFlagsAreOneLineErrorsWithExitCode2) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"serve", "--model is required"},
           {"serve -m x.gguf --port 70000", "--port must be between"},
           {"serve -m x.gguf --kv-budget-mb 0", "--kv-budget-mb must be between"},
           {"serve -m x.gguf --api-key ''", "--api-key: the API key is empty"},
           {"serve -m /nonexistent/model.gguf", "model.gguf"}}) {
    const CliRun r = Valet(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
  }
}

// A synthesized tiny model in the temporary directory, removed afterwards.
class TinyModel {
 public:
  explicit TinyModel(const std::string& name)
      : path_((std::filesystem::temp_directory_path() / (name + "_" + std::to_string(getpid()) + ".gguf")).string()) {
    const CliRun r = Valet("synth-model --preset tiny -o " + path_);
    ok_ = r.exit_code == 0;
  }
  ~TinyModel() { std::filesystem::remove(path_); }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool ok_ = false;
};

TEST(ServeCliTest, ServesATinyModelUntilSigterm) {
  const TinyModel tiny("valet_serve_cli");
  ASSERT_TRUE(tiny.ok());
  const std::string& model = tiny.path();
  {
    ServeProcess serve(model);
    ASSERT_GT(serve.port(), 0) << serve.first_line();
    httplib::Client c("127.0.0.1", serve.port());
    c.set_read_timeout(120, 0);
    httplib::Result health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    const json models = json::parse(c.Get("/v1/models")->body);
    EXPECT_EQ(models["data"][0]["id"], std::filesystem::path(model).stem().string());

    const json chat = {{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})}, {"max_tokens", 6}};
    httplib::Result res = c.Post("/v1/chat/completions", chat.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = json::parse(res->body);
    EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 0);
    EXPECT_GE(body["usage"]["completion_tokens"].get<int>(), 1);
    EXPECT_LE(body["usage"]["completion_tokens"].get<int>(), 6);

    const json stream = {{"prompt", "Once upon"}, {"max_tokens", 4}, {"stream", true}};
    res = c.Post("/v1/completions", stream.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_NE(res->body.find("data: [DONE]\n\n"), std::string::npos) << res->body;
    EXPECT_EQ(serve.Stop(), 0);
  }
}

// GET `path` until it is no longer 202 (a durable task still running).
httplib::Result WaitNot202(httplib::Client& c, const std::string& path) {
  while (true) {
    httplib::Result r = c.Get(path.c_str());
    if (!r || r->status != 202) return r;
    std::this_thread::yield();
  }
}

// --snapshot-dir turns durable tasks on: the result is the ordinary
// completion, and a second server over the same directory still has it,
// rebuilt from the journal (usage's prompt tokens counted again).
TEST(ServeCliTest, DurableTaskResultOutlivesTheServer) {
  const TinyModel tiny("valet_serve_durable");
  ASSERT_TRUE(tiny.ok());
  char pattern[] = "/tmp/valet-serve-durable-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const json chat = {{"messages", json::array({{{"role", "system"}, {"content", "Be brief."}},
                                               {{"role", "user"}, {"content", "Hello"}}})},
                     {"max_tokens", 8}, {"temperature", 0.8}, {"seed", 7}};
  json durable = chat;
  durable["durable"] = true;
  json plain, first;
  std::string id;
  {
    ServeProcess serve(tiny.path(), {"--snapshot-dir", dir});
    ASSERT_GT(serve.port(), 0) << serve.first_line();
    httplib::Client c("127.0.0.1", serve.port());
    c.set_read_timeout(120, 0);
    httplib::Result accepted = c.Post("/v1/chat/completions", durable.dump(), "application/json");
    ASSERT_TRUE(accepted);
    ASSERT_EQ(accepted->status, 202) << accepted->body;
    id = json::parse(accepted->body)["id"];
    httplib::Result done = WaitNot202(c, "/v1/tasks/" + id + "/result");
    ASSERT_TRUE(done);
    ASSERT_EQ(done->status, 200) << done->body;
    first = json::parse(done->body);
    plain = json::parse(c.Post("/v1/chat/completions", chat.dump(), "application/json")->body);
    EXPECT_EQ(serve.Stop(), 0);
  }
  EXPECT_EQ(first["choices"][0]["message"], plain["choices"][0]["message"]);
  EXPECT_EQ(first["usage"]["prompt_tokens"], plain["usage"]["prompt_tokens"]);
  EXPECT_EQ(first["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
  {
    ServeProcess serve(tiny.path(), {"--snapshot-dir", dir});
    ASSERT_GT(serve.port(), 0) << serve.first_line();
    httplib::Client c("127.0.0.1", serve.port());
    c.set_read_timeout(120, 0);
    httplib::Result again = c.Get(("/v1/tasks/" + id + "/result").c_str());
    ASSERT_TRUE(again);
    ASSERT_EQ(again->status, 200) << again->body;
    const json j = json::parse(again->body);
    EXPECT_EQ(j["choices"][0], first["choices"][0]);
    EXPECT_EQ(j["usage"]["prompt_tokens"], first["usage"]["prompt_tokens"]);
    EXPECT_EQ(j["usage"]["completion_tokens"], first["usage"]["completion_tokens"]);
    EXPECT_EQ(c.Delete(("/v1/tasks/" + id).c_str())->status, 200);
    EXPECT_EQ(c.Get(("/v1/tasks/" + id).c_str())->status, 404);
    EXPECT_EQ(serve.Stop(), 0);
  }
  EXPECT_TRUE(std::filesystem::is_empty(std::filesystem::path(dir) / "tasks"));
  std::filesystem::remove_all(dir);
}

// The usage of a one-message chat.
int ChatPromptTokens(int port, const std::string& content) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  const json chat = {{"messages", json::array({{{"role", "user"}, {"content", content}}})}, {"max_tokens", 1}};
  httplib::Result res = c.Post("/v1/chat/completions", chat.dump(), "application/json");
  if (!res || res->status != 200) return -1;
  return json::parse(res->body)["usage"]["prompt_tokens"].get<int>();
}

TEST(ServeCliTest, SpecialTextsInMessagesAreTextUnlessTheFlagSaysOtherwise) {
  const TinyModel tiny("valet_serve_special");
  ASSERT_TRUE(tiny.ok());
  // "<s>" is the tiny vocabulary's BOS: one token parsed, several as text.
  ServeProcess literal(tiny.path());
  ServeProcess parsing(tiny.path(), {"--special-in-messages"});
  ASSERT_GT(literal.port(), 0) << literal.first_line();
  ASSERT_GT(parsing.port(), 0) << parsing.first_line();
  const int as_text = ChatPromptTokens(literal.port(), "a<s>b<s>c");
  const int as_bos = ChatPromptTokens(parsing.port(), "a<s>b<s>c");
  ASSERT_GT(as_bos, 0);
  EXPECT_GT(as_text, as_bos + 2);
  EXPECT_EQ(ChatPromptTokens(literal.port(), "hello"), ChatPromptTokens(parsing.port(), "hello"));
  EXPECT_EQ(literal.Stop(), 0);
  EXPECT_EQ(parsing.Stop(), 0);
}

// Real templates and vocabularies (../shared): Qwen 2's writes calls in
// <tool_call> tags, Llama 3's as a bare object with "parameters", the tiny
// model's ChatML gets the tools from valet. A required call's arguments follow
// the schema, streamed or not; the call and its result go back in a later turn.
TEST(ServeCliTest, EachFamilyAnswersARequiredToolCallUnderItsSchema) {
  const json tool = {{"type", "function"},
                     {"function",
                      {{"name", "get_weather"},
                       {"parameters",
                        {{"type", "object"},
                         {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}},
                                         {"days", {{"type", "integer"}, {"minimum", 1}, {"maximum", 7}}}}},
                         {"required", {"city", "days"}},
                         {"additionalProperties", false}}}}}};
  const TinyModel tiny("valet_serve_tools");
  ASSERT_TRUE(tiny.ok());
  for (const std::string& model : {std::string(VALET_SHARED_DIR) + "/models/qwen2-q4_0.gguf",
                                   std::string(VALET_SHARED_DIR) + "/models/llama3-bpe-q4_k_m.gguf", tiny.path()}) {
    SCOPED_TRACE(model);
    ASSERT_TRUE(std::filesystem::exists(model)) << "../shared beside the checkout";
    ServeProcess serve(model, {"--ctx-size", "2048"});
    ASSERT_GT(serve.port(), 0) << serve.first_line();
    httplib::Client c("127.0.0.1", serve.port());
    c.set_read_timeout(120, 0);
    json request = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo for 3 days?"}}})},
                    {"tools", json::array({tool})},
                    {"tool_choice", "required"},
                    {"max_tokens", 120},
                    {"temperature", 1.0},
                    {"seed", 11}};
    httplib::Result res = c.Post("/v1/chat/completions", request.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json answer = json::parse(res->body);
    ASSERT_EQ(answer["choices"][0]["finish_reason"], "tool_calls") << res->body;
    const json call = answer["choices"][0]["message"]["tool_calls"][0];
    EXPECT_EQ(call["function"]["name"], "get_weather");
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    ASSERT_TRUE(args["city"].is_string()) << args.dump();
    EXPECT_LE(args["city"].get<std::string>().size(), 12u * 4) << "12 characters of at most 4 bytes";
    ASSERT_TRUE(args["days"].is_number_integer()) << args.dump();
    EXPECT_GE(args["days"].get<int>(), 1);
    EXPECT_LE(args["days"].get<int>(), 7);
    EXPECT_EQ(args.size(), 2u);

    request["stream"] = true;
    res = c.Post("/v1/chat/completions", request.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_NE(res->body.find(R"("tool_calls":[{"function":{"arguments":)" + json(call["function"]["arguments"]).dump()),
              std::string::npos)
        << "the same call, whole in one delta: " << res->body;

    request.erase("stream");
    request["tool_choice"] = "none";
    request["max_tokens"] = 4;
    request["messages"].push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
    request["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", R"({"temp": -3})"}});
    res = c.Post("/v1/chat/completions", request.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(serve.Stop(), 0);
  }
}

// A scratch directory for key files, removed afterwards.
class KeyDir {
 public:
  KeyDir() {
    char pattern[] = "/tmp/valet-serve-key-XXXXXX";
    if (mkdtemp(pattern) != nullptr) path_ = pattern;
  }
  ~KeyDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // `content` in the file `name`, with `mode`.
  std::string File(const std::string& name, const std::string& content, mode_t mode) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    chmod(p.c_str(), mode);
    return p;
  }
  std::string Link(const std::string& name, const std::string& target) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_symlink(target, p);
    return p;
  }

 private:
  std::string path_;
};

// A missing model is the first thing after the flags to fail: a key source
// that got that far was accepted.
constexpr const char* kNoModel = "serve -m /nonexistent/model.gguf ";

TEST(ServeCliTest, AKeyFileGroupOrOthersMayReadIsRefusedNamingThePath) {
  const KeyDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string open = dir.File("open.key", "k\n", 0644);
  const std::string open_link = dir.Link("open-link.key", open);
  const std::string empty = dir.File("empty.key", "\n", 0600);
  const std::string good = dir.File("good.key", "s3cret\n", 0600);
  const std::string good_link = dir.Link("good-link.key", good);
  for (const auto& [args, needles] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"--api-key-file " + open, {open, "mode 0644", "chmod 600"}},
           {"--api-key-file " + open_link, {open_link, "a symlink to a file with mode 0644"}},
           {"--api-key-file " + empty, {empty, "the API key is empty"}},
           {"--api-key-file " + dir.path() + "/missing.key", {"missing.key", "cannot open"}},
           {"--api-key-file " + good + " --api-key k", {"--api-key-file and --api-key", "one way only"}}}) {
    const CliRun r = Valet(kNoModel + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    for (const std::string& needle : needles) EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
    EXPECT_EQ(r.out.find("model.gguf"), std::string::npos) << "refused before the model: " << r.out;
  }
  for (const std::string& path : {good, good_link}) {
    const CliRun r = Valet(kNoModel + std::string("--api-key-file ") + path);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("/nonexistent/model.gguf"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("key"), std::string::npos) << r.out;
  }
}

TEST(ServeCliTest, TheKeyComesFromOneSourceAndTheCommandLineOneWarns) {
  const KeyDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string file = dir.File("k.key", "k\n", 0600);
  CliRun r = Valet(kNoModel + std::string("--api-key-file ") + file, "VALET_API_KEY=k");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--api-key-file and VALET_API_KEY (environment): give it one way only"), std::string::npos)
      << r.out;
  r = Valet(kNoModel + std::string("--api-key k"), "VALET_API_KEY=k");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("one way only"), std::string::npos) << r.out;
  r = Valet(kNoModel, "VALET_API_KEY=");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("VALET_API_KEY is set but empty"), std::string::npos) << r.out;

  r = Valet(kNoModel, "VALET_API_KEY=k");
  EXPECT_NE(r.out.find("/nonexistent/model.gguf"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  r = Valet(kNoModel + std::string("--api-key k"));
  EXPECT_NE(r.out.find("warning: --api-key puts the key on the command line, where other local users can read it"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("/nonexistent/model.gguf"), std::string::npos) << r.out;
}

// Each way in guards the API with its key, and none leaves the key in the
// process's arguments.
TEST(ServeCliTest, TheKeyFromAFileTheEnvironmentOrTheFlagGuardsTheApi) {
  const TinyModel tiny("valet_serve_key");
  ASSERT_TRUE(tiny.ok());
  const KeyDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string file = dir.File("serve.key", "from-file\n", 0600);
  struct Case {
    std::vector<std::string> flags, env;
    std::string key;
  };
  for (const Case& k : {Case{{"--api-key-file", file}, {}, "from-file"}, Case{{}, {"VALET_API_KEY=from-env"}, "from-env"},
                        Case{{"--api-key", "from-flag"}, {}, "from-flag"}}) {
    ServeProcess serve(tiny.path(), k.flags, k.env);
    ASSERT_GT(serve.port(), 0) << serve.first_line();
    httplib::Client c("127.0.0.1", serve.port());
    c.set_read_timeout(120, 0);
    EXPECT_EQ(c.Get("/v1/models")->status, 401) << k.key;
    EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer " + k.key}})->status, 200) << k.key;
    EXPECT_EQ(c.Get("/health")->status, 200);
    std::ifstream cmdline("/proc/" + std::to_string(serve.pid()) + "/cmdline", std::ios::binary);
    const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    EXPECT_NE(args.find("serve"), std::string::npos);
    EXPECT_EQ(args.find(k.key), std::string::npos) << k.key;
    EXPECT_EQ(serve.Stop(), 0);
  }
}

// The tiny model's context (512) holds neither bench-contention's documents
// nor many turns: small documents, few turns, no think time.
constexpr const char* kSmallLoad = " --turns 2 --block 1 --think-min 0 --think-max 0.02 --doc-tokens 160";

TEST(BenchServeCliTest, EveryTurnCompletesAgainstValetServeAndTheJsonHasTheKeys) {
  const TinyModel tiny("valet_bench_serve_cli");
  ASSERT_TRUE(tiny.ok());
  ServeProcess serve(tiny.path());
  ASSERT_GT(serve.port(), 0) << serve.first_line();
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port());

  const CliRun r = Valet("bench-serve --url " + url + " --json" + kSmallLoad);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // stderr's progress lines come first; the JSON is the rest.
  const json report = json::parse(r.out.substr(r.out.find('{')), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out;
  for (const char* key : {"url", "api", "seed", "turns", "load_average", "shapes", "arms", "ttft_p50_ratio"}) {
    EXPECT_TRUE(report.contains(key)) << key;
  }
  for (const char* arm : {"idle", "under_indexing"}) {
    const json& a = report["arms"][arm];
    EXPECT_EQ(a["planned"], 2) << arm;
    EXPECT_EQ(a["completed"], 2) << arm;
    EXPECT_EQ(a["failed"], 0) << arm;
    for (const char* metric : {"ttft_ms", "tpot_ms", "e2el_ms"}) {
      EXPECT_EQ(a[metric]["count"], 2) << arm << " " << metric;
      for (const char* p : {"mean", "p50", "p90", "max"}) EXPECT_TRUE(a[metric].contains(p)) << arm << metric << p;
      EXPECT_FALSE(a[metric].contains("p99")) << "two samples have no p99";
    }
    EXPECT_GT(a["total_output_tokens"].get<int>(), 0) << arm;
  }
  EXPECT_EQ(report["arms"]["idle"]["indexer_docs_completed"], 0);
  EXPECT_GE(report["arms"]["under_indexing"]["indexer_docs_completed"].get<int>(), 1);

  // llama-server's flavour (no tier fields) against the same server: the text report.
  const CliRun text = Valet("bench-serve --url " + url + " --api llamacpp --temperature 0" + kSmallLoad);
  EXPECT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("Serving Benchmark Result"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Successful requests:                     2 of 2"), std::string::npos) << text.out;
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(BenchServeCliTest, BadUrlsAndFlagsAreClearErrors) {
  for (const auto& [args, code, needle] : std::vector<std::tuple<std::string, int, std::string>>{
           {"bench-serve", 2, "--url is required"},
           {"bench-serve --url localhost:8080/v1", 2, "http://HOST:PORT"},
           {"bench-serve --url ftp://127.0.0.1:1", 2, "http://HOST:PORT"},
           {"bench-serve --url http://127.0.0.1:1 --api vllm", 2, "unknown API 'vllm'"},
           {"bench-serve --url http://127.0.0.1:1 --temperature 3", 2, "--temperature must be between"},
           {"bench-serve --url http://127.0.0.1:1", 1, "cannot reach http://127.0.0.1:1"}}) {
    const CliRun r = Valet(args);
    EXPECT_EQ(r.exit_code, code) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
  }
}

}  // namespace
