// Durable tasks over HTTP against the fake engine: "durable": true answered
// 202, /v1/tasks/{id} and its /result while held by the step gate and once
// done, DELETE, hostile ids, a restart over the same directory, and a disk
// that fills under a running task.
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "raw_http.h"
#include "server_fixture.h"

namespace valet::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json ChatBody(const std::string& user, int max_tokens, uint64_t seed) {
  return {{"model", "m"},
          {"messages", json::array({{{"role", "system"}, {"content", "You are terse."}},
                                    {{"role", "user"}, {"content", user}}})},
          {"max_tokens", max_tokens},
          {"seed", seed},
          {"temperature", 0.7}};
}

json CompletionBody(const std::string& prompt, int max_tokens, uint64_t seed) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"seed", seed}, {"stop", json::array({"q"})}};
}

json Durable(json body, const std::string& key = "") {
  body["durable"] = true;
  if (!key.empty()) body["durable_key"] = key;
  return body;
}

class ServerDurableTest : public ServerFixture {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/valet-durable-http-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    durable_dir_ = pattern;
  }
  void TearDown() override {
    ServerFixture::TearDown();
    std::error_code ignored;
    fs::remove_all(durable_dir_, ignored);
  }

  fs::path JournalOf(const std::string& key) const { return fs::path(durable_dir_) / "tasks" / (key + ".journal"); }

  httplib::Result Delete(const std::string& path) const { return Client().Delete(path.c_str()); }

  // POSTs a durable request and returns its id (asserting the 202's shape).
  std::string Submit(const std::string& path, const json& body) {
    httplib::Result r = Post(path, body);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 202) << r->body;
    const json j = ParseJson(r->body);
    EXPECT_EQ(j["object"], "valet.task");
    EXPECT_TRUE(j["state"].is_string());
    EXPECT_EQ(r->get_header_value("Location"), "/v1/tasks/" + j.value("id", std::string()));
    return j.value("id", std::string());
  }

  json TaskStatus(const std::string& id) const {
    httplib::Result r = Get("/v1/tasks/" + id);
    return r && r->status == 200 ? ParseJson(r->body) : json();
  }

  // Polls the task until `pred` holds for its status.
  template <typename Pred>
  json WaitStatus(const std::string& id, Pred pred) const {
    while (true) {
      json s = TaskStatus(id);
      if (!s.is_null() && pred(s)) return s;
      std::this_thread::yield();
    }
  }

  // Polls /result until it is no longer 202.
  httplib::Result WaitResult(const std::string& id) const {
    while (true) {
      httplib::Result r = Get("/v1/tasks/" + id + "/result");
      if (!r || r->status != 202) return r;
      std::this_thread::yield();
    }
  }

  // Stops server and scheduler while a step is held at the gate: the step is
  // let through only once the scheduler's abort flag is up, so it computes
  // nothing and the task stops where the gate held it.
  void StopMidTask() {
    gate_.WaitHeld();
    const std::atomic<bool>* abort = engine_->abort_flag();
    ASSERT_NE(abort, nullptr);
    std::thread stopper([this] {
      server_.reset();
      scheduler_.reset();
    });
    while (!abort->load()) std::this_thread::yield();
    gate_.Open();
    stopper.join();
    engine_.reset();
  }
};

void ExpectSameCompletion(const json& durable, const json& plain) {
  EXPECT_EQ(durable["object"], plain["object"]);
  EXPECT_EQ(durable["choices"][0]["finish_reason"], plain["choices"][0]["finish_reason"]);
  if (plain["object"] == "chat.completion") {
    EXPECT_EQ(durable["choices"][0]["message"], plain["choices"][0]["message"]);
  } else {
    EXPECT_EQ(durable["choices"][0]["text"], plain["choices"][0]["text"]);
  }
  for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"}) {
    EXPECT_EQ(durable["usage"][k], plain["usage"][k]) << k;
  }
}

TEST_F(ServerDurableTest, AnswersAtOnceThenShowsProgressThenTheOrdinaryCompletion) {
  StartServer();
  struct Case {
    const char* path;
    json body;
  };
  const Case cases[] = {{"/v1/chat/completions", ChatBody("Hello there", 12, 5)},
                        {"/v1/completions", CompletionBody("Once upon", 40, 3)}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const json plain = ParseJson(Post(c.path, c.body)->body);
    ASSERT_TRUE(plain.contains("choices")) << plain.dump();
    gate_.Close();
    const std::string id = Submit(c.path, Durable(c.body));
    ASSERT_EQ(id.rfind("task-", 0), 0u) << id;
    // Held before its first step: running, nothing generated, no result yet.
    gate_.WaitHeld();
    json status = TaskStatus(id);
    EXPECT_EQ(status["id"], id);
    EXPECT_EQ(status["object"], "valet.task");
    EXPECT_TRUE(status["finish_reason"].is_null());
    EXPECT_EQ(status["tokens"], json::array());
    httplib::Result pending = Get("/v1/tasks/" + id + "/result");
    ASSERT_TRUE(pending);
    EXPECT_EQ(pending->status, 202);
    EXPECT_EQ(ParseJson(pending->body)["id"], id);
    // Three steps, three tokens; the fourth is held, so it stays at three.
    gate_.Allow(3);
    status = WaitStatus(id, [](const json& s) { return s["tokens"].size() == 3; });
    EXPECT_EQ(status["state"], "DECODING");
    EXPECT_EQ(status["completion_tokens"], 3);
    const std::string whole = c.body.contains("messages") ? plain["choices"][0]["message"]["content"]
                                                          : plain["choices"][0]["text"];
    ASSERT_GE(whole.size(), 5u) << "the seed's text must outlast the checks below";
    EXPECT_EQ(status["text"], whole.substr(0, 3));
    EXPECT_EQ(Get("/v1/tasks/" + id + "/result")->status, 202);
    gate_.Open();
    httplib::Result done = WaitResult(id);
    ASSERT_TRUE(done);
    ASSERT_EQ(done->status, 200) << done->body;
    ExpectSameCompletion(ParseJson(done->body), plain);
    status = TaskStatus(id);
    EXPECT_EQ(status["state"], "DONE");
    EXPECT_EQ(status["text"], whole);
    EXPECT_EQ(status["finish_reason"], plain["choices"][0]["finish_reason"]);
    EXPECT_TRUE(fs::exists(JournalOf(id)));
  }
  // The listing still lists every task, durable ones too.
  EXPECT_EQ(Tasks().size(), 4u);
}

TEST_F(ServerDurableTest, DeleteCancelsARunningTaskAndForgetsIt) {
  StartServer();
  gate_.Close();
  const std::string id = Submit("/v1/chat/completions", Durable(ChatBody("Cancel me", 30, 1), "job-1"));
  ASSERT_EQ(id, "job-1");
  gate_.WaitHeld();
  EXPECT_TRUE(fs::exists(JournalOf(id)));
  httplib::Result del = Delete("/v1/tasks/job-1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(ParseJson(del->body)["deleted"], true);
  EXPECT_EQ(Get("/v1/tasks/job-1")->status, 404);
  EXPECT_EQ(Get("/v1/tasks/job-1/result")->status, 404);
  EXPECT_EQ(Delete("/v1/tasks/job-1")->status, 404);
  gate_.Open();
  scheduler_->WaitIdle();
  EXPECT_FALSE(fs::exists(JournalOf(id)));
  // The key is free again.
  EXPECT_EQ(Post("/v1/chat/completions", Durable(ChatBody("Again", 2, 1), "job-1"))->status, 202);
}

TEST_F(ServerDurableTest, DeleteAcknowledgesAnEndedTask) {
  StartServer();
  const std::string id = Submit("/v1/completions", Durable(CompletionBody("Finish me", 5, 2), "done-1"));
  ASSERT_EQ(WaitResult(id)->status, 200);
  ASSERT_TRUE(fs::exists(JournalOf(id)));
  httplib::Result del = Delete("/v1/tasks/" + id);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_FALSE(fs::exists(JournalOf(id)));
  EXPECT_EQ(Get("/v1/tasks/" + id)->status, 404);
  EXPECT_EQ(Get("/v1/tasks/" + id + "/result")->status, 404);
}

TEST_F(ServerDurableTest, RefusesWhatItCannotHonour) {
  StartServer();
  json streamed = Durable(ChatBody("x", 3, 1));
  streamed["stream"] = true;
  httplib::Result r = Post("/v1/chat/completions", streamed);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(ParseJson(r->body)["error"]["param"], "stream");
  EXPECT_EQ(ParseJson(r->body)["error"]["code"], "durable_stream");
  for (const char* key : {"../evil", ".hidden", "a/b", ""}) {
    json bad = Durable(ChatBody("x", 3, 1));
    bad["durable_key"] = key;
    r = Post("/v1/chat/completions", bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << key;
    EXPECT_EQ(ParseJson(r->body)["error"]["param"], "durable_key") << key;
  }
  ASSERT_EQ(Post("/v1/chat/completions", Durable(ChatBody("x", 3, 1), "twice"))->status, 202);
  r = Post("/v1/chat/completions", Durable(ChatBody("x", 3, 1), "twice"));
  EXPECT_EQ(r->status, 409) << r->body;
  EXPECT_EQ(ParseJson(r->body)["error"]["code"], "task_exists");
  // Nothing was written outside the journal directory.
  for (const fs::directory_entry& e : fs::directory_iterator(durable_dir_)) EXPECT_EQ(e.path().filename(), "tasks");
}

TEST_F(ServerDurableTest, UnknownAndHostileIds) {
  StartServer();
  const std::string id = Submit("/v1/completions", Durable(CompletionBody("Known", 4, 2), "known-1"));
  ASSERT_EQ(WaitResult(id)->status, 200);
  for (const std::string path : {"/v1/tasks/nope", "/v1/tasks/nope/result"}) {
    httplib::Result r = Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(ParseJson(r->body)["error"]["code"], "task_not_found") << path;
  }
  EXPECT_EQ(Delete("/v1/tasks/nope")->status, 404);
  // Escapes of ordinary characters name the same task.
  EXPECT_EQ(Get("/v1/tasks/known%2D1")->status, 200);
  const std::string huge(10 * 1024, 'a');
  const struct {
    std::string target;
    int status;
  } hostile[] = {
      {"/v1/tasks/../x", 404},          {"/v1/tasks/..%2Fx", 400},
      {"/v1/tasks/%2E%2E%2Fx", 400},    {"/v1/tasks/%2e%2e", 400},
      {"/v1/tasks/%zz", 400},           {"/v1/tasks/abc%", 400},
      {"/v1/tasks/%00known-1", 400},    {"/v1/tasks/" + huge, 400},
      {"/v1/tasks/" + huge + "/result", 400}, {"/v1/tasks/known-1/../../etc", 404},
      {"/v1/tasks/known-1/other", 404}, {"/v1/tasks/", 404},
  };
  for (const auto& h : hostile) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.Send("GET " + h.target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    std::optional<RawResponse> r = c.ReadResponse();
    ASSERT_TRUE(r) << h.target.substr(0, 60);
    EXPECT_EQ(r->status, h.status) << h.target.substr(0, 60);
    EXPECT_TRUE(ParseJson(r->body)["error"].is_object()) << r->body;
  }
  httplib::Result r = Post("/v1/tasks/known-1", json::object());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, DELETE");
  EXPECT_EQ(Delete("/v1/tasks/known-1/result")->status, 405);
  // Still there, still served.
  EXPECT_EQ(Get("/v1/tasks/known-1/result")->status, 200);
  EXPECT_EQ(Get("/v1/tasks")->status, 200);
}

TEST_F(ServerDurableTest, ARestartedServerRecoversAndFinishesTheTasks) {
  StartServer();
  const json body = ChatBody("Survive a restart", 24, 11);
  const json ended_body = CompletionBody("Ended before", 6, 4);
  const std::string ended = Submit("/v1/completions", Durable(ended_body, "ended-1"));
  httplib::Result before = WaitResult(ended);
  ASSERT_EQ(before->status, 200);
  gate_.Close();
  const std::string id = Submit("/v1/chat/completions", Durable(body, "survivor"));
  // Five steps, the first ones computing the shared system prompt and the
  // prompt: a few tokens, then the gate holds the task.
  gate_.Allow(5);
  const size_t generated = WaitStatus(id, [](const json& s) { return s["tokens"].size() >= 3; })["tokens"].size();
  StopMidTask();

  StartServer();
  const std::vector<std::string> log = LogLines();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("ended-1: ended (DONE"), std::string::npos) << log[0];
  // The status may trail the journal by the step in flight when it was read,
  // never lead it: every token a client saw comes back.
  std::smatch resumed;
  ASSERT_TRUE(std::regex_search(log[1], resumed, std::regex("survivor: resumed after ([0-9]+) tokens"))) << log[1];
  EXPECT_GE(std::stoul(resumed[1]), generated) << log[1];
  httplib::Result done = WaitResult(id);
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, 200) << done->body;
  ExpectSameCompletion(ParseJson(done->body), ParseJson(Post("/v1/chat/completions", body)->body));
  httplib::Result again = Get("/v1/tasks/" + ended + "/result");
  ASSERT_EQ(again->status, 200) << again->body;
  ExpectSameCompletion(ParseJson(again->body), ParseJson(before->body));
  ExpectSameCompletion(ParseJson(again->body), ParseJson(Post("/v1/completions", ended_body)->body));
  EXPECT_EQ(Delete("/v1/tasks/" + id)->status, 200);
  EXPECT_EQ(Delete("/v1/tasks/" + ended)->status, 200);
  EXPECT_TRUE(fs::is_empty(fs::path(durable_dir_) / "tasks"));
}

// A restart with --special-in-messages flipped would tokenize the journaled
// chat otherwise: the task is skipped (one log line naming the setting), not
// served, its journal untouched; the next start with the setting it was
// written under finishes it with the uninterrupted text.
TEST_F(ServerDurableTest, ARestartUnderOtherSettingsSkipsTheTaskUntilTheyAreBack) {
  FakeEngineOptions chatml;
  chatml.special_tokens = {"<|im_start|>", "<|im_end|>"};
  StartServer({}, chatml);
  const json body = ChatBody("Keep <|im_start|> as typed", 24, 12);
  gate_.Close();
  const std::string id = Submit("/v1/chat/completions", Durable(body, "typed"));
  gate_.Allow(5);
  WaitStatus(id, [](const json& s) { return s["tokens"].size() >= 3; });
  StopMidTask();
  const uintmax_t journal_bytes = fs::file_size(JournalOf(id));

  special_in_messages_ = true;
  StartServer({}, chatml);
  std::vector<std::string> log = LogLines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("skipped " + JournalOf(id).string()), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("parse_special_in_messages differs: journal false, now true"), std::string::npos) << log[0];
  EXPECT_EQ(Get("/v1/tasks/" + id)->status, 404);
  EXPECT_EQ(fs::file_size(JournalOf(id)), journal_bytes);
  server_.reset();
  scheduler_.reset();
  engine_.reset();

  special_in_messages_ = false;
  log_.clear();
  StartServer({}, chatml);
  log = LogLines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("typed: resumed after"), std::string::npos) << log[0];
  httplib::Result done = WaitResult(id);
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, 200) << done->body;
  ExpectSameCompletion(ParseJson(done->body), ParseJson(Post("/v1/chat/completions", body)->body));
  EXPECT_EQ(Delete("/v1/tasks/" + id)->status, 200);
}

// The journals' directory is checked by the server too: a link planted in
// its place fails ApiServer::Create, naming it.
TEST_F(ServerDurableTest, APlantedLinkForTheJournalsFailsTheServer) {
  const fs::path open_to_all = fs::path(durable_dir_) / "public";
  fs::create_directory(open_to_all);
  fs::permissions(open_to_all, fs::perms::all);
  fs::create_directory_symlink(open_to_all, fs::path(durable_dir_) / "tasks");
  FakeEngine engine;
  Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(engine, {});
  ASSERT_TRUE(scheduler.ok());
  ServerOptions options;
  options.durable.dir = durable_dir_ + "/tasks";
  options.durable.model_fingerprint = "fake-engine";
  Result<std::unique_ptr<ApiServer>> server = ApiServer::Create(**scheduler, engine, options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().message(), "durable tasks' directory: " + options.durable.dir + " is a symbolic link");
  EXPECT_TRUE(fs::is_empty(open_to_all));
}

// The journals on a real 64 KiB tmpfs (root only) that a file fills under a
// running task: a task the disk cannot hold is refused with 507 up front;
// the running one parks ("journal_io" in its status and in /result's 202s),
// stays parked across a restart on the still full disk, and once the file
// is gone a poll of /result is the retry that finishes it with the
// uninterrupted run's completion.
TEST_F(ServerDurableTest, AFullDiskParksTheTaskUntilPollingFindsRoomAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  if (::mount("tmpfs", durable_dir_.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{durable_dir_};
  StartServer();
  httplib::Result refused = Post("/v1/completions", Durable(CompletionBody("Most of the context", 4000, 3)));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 507) << refused->body;
  EXPECT_EQ(ParseJson(refused->body)["error"]["code"], "durable_budget_exhausted");
  EXPECT_NE(refused->body.find("not enough free space"), std::string::npos) << refused->body;

  // Long enough that its records outgrow the page its journal ends in.
  const json body = {{"prompt", "Fill the disk"}, {"max_tokens", 300}, {"seed", 5}, {"temperature", 0.9}};
  gate_.Close();
  const std::string id = Submit("/v1/completions", Durable(body, "filled"));
  gate_.Allow(5);
  WaitStatus(id, [](const json& s) { return s["tokens"].size() >= 3; });
  const std::string filler = durable_dir_ + "/filler";
  {
    std::ofstream out(filler, std::ios::binary);
    const std::string block(4096, 'x');
    while (out.write(block.data(), block.size())) {
    }
  }
  gate_.Open();
  auto parked = [](const json& s) { return s["state"] == "PARKED" && s.value("reason", "") == "journal_io"; };
  const json waiting = WaitStatus(id, parked);
  EXPECT_LT(waiting["tokens"].size(), 300u);
  httplib::Result pending = Get("/v1/tasks/" + id + "/result");
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->status, 202);
  EXPECT_EQ(ParseJson(pending->body)["reason"], "journal_io") << pending->body;
  // The retry that poll made found no room: still waiting. (Its token list
  // may still grow by what was generated before the park: tokens reach the
  // server through delivery, behind the state.)
  EXPECT_TRUE(parked(TaskStatus(id)));

  server_.reset();
  scheduler_.reset();
  engine_.reset();
  StartServer();
  const std::vector<std::string> log = LogLines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("filled: resumed after"), std::string::npos) << log[0];
  WaitStatus(id, parked);
  EXPECT_EQ(Get("/v1/tasks/" + id + "/result")->status, 202);

  ASSERT_TRUE(fs::remove(filler));
  httplib::Result done = WaitResult(id);
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, 200) << done->body;
  ExpectSameCompletion(ParseJson(done->body), ParseJson(Post("/v1/completions", body)->body));
  EXPECT_EQ(Delete("/v1/tasks/" + id)->status, 200);
  server_.reset();
}

// A server that cannot journal refuses durable requests.
class ServerWithoutJournalsTest : public ServerFixture {};

TEST_F(ServerWithoutJournalsTest, RefusesDurableRequests) {
  StartServer();
  httplib::Result r = Post("/v1/chat/completions", Durable(ChatBody("x", 3, 1)));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(ParseJson(r->body)["error"]["code"], "durable_unavailable");
  EXPECT_EQ(Get("/v1/tasks/anything")->status, 404);
}

}  // namespace
}  // namespace valet::testing
