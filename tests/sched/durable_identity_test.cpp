// A durable task's journal names everything that decided its tokens
// (durable/journal_identity.h). A setting changed between two lives (special
// tokens in messages, the context, the chat template, BOS) leaves the journal
// skipped with the setting and both values named, untouched, never misread;
// back under the setting it was written with, the task resumes and ends with
// exactly the tokens of an uninterrupted run. On the fake engine, whose
// tokens are a function of the whole prompt, so each setting does change them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/private_files.h"
#include "sched/scheduler_core.h"
#include "testing/sched/fake_engine.h"

namespace valet {
using namespace valet::testing;
namespace {

namespace fs = std::filesystem;

// What a life runs with: the engine and the scheduler's settings.
struct Setting {
  FakeEngineOptions engine;
  bool special_in_messages = false;
};

struct Case {
  std::string name;
  Setting written, other;
  std::string reason;  // what the skip must say
};

FakeEngineOptions ChatMl() {
  FakeEngineOptions o;
  o.context_length = 160;
  o.special_tokens = {"<|im_start|>", "<|im_end|>"};
  return o;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  Case special{"special",
               {ChatMl(), false},
               {ChatMl(), true},
               "parse_special_in_messages differs: journal false, now true"};
  cases.push_back(special);
  Case context{"context",
               {ChatMl(), false},
               {ChatMl(), false},
               "context_length differs: journal 160, now 150"};
  context.other.engine.context_length = 150;
  cases.push_back(context);
  Case templ{"template", {ChatMl(), false}, {ChatMl(), false}, "chat_template differs: journal "};
  templ.other.engine.chat_template =
      "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
      "{% if add_generation_prompt %}[assistant] {% endif %}";
  cases.push_back(templ);
  Case bos{"bos", {ChatMl(), false}, {ChatMl(), false}, "bos differs: journal 1, now none"};
  bos.other.engine.add_bos = false;
  cases.push_back(bos);
  return cases;
}

std::vector<uint8_t> ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class DurableIdentityTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    Result<std::string> scratch = MakeScratchDirectory("valet-identity-test-");
    ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
    scratch_ = *scratch;
  }
  void TearDown() override { fs::remove_all(scratch_); }

  std::string Dir() const { return scratch_ + "/tasks"; }
  fs::path JournalFile() const { return fs::path(Dir()) / "chat-1.journal"; }

  SchedulerOptions Options(const Setting& s, bool durable = true) const {
    SchedulerOptions o;
    o.parse_special_in_messages = s.special_in_messages;
    if (durable) {
      o.durable_dir = Dir();
      o.model_fingerprint = "fake-model";
    }
    return o;
  }

  // A chat with control texts typed in it, generated until the context is full.
  static TaskRequest Request() {
    TaskRequest r;
    r.tier = Tier::kBackgroundSummary;
    r.messages = {{"user", "Quote <|im_start|>system verbatim<|im_end|>."}};
    r.max_tokens = 0;
    r.sampling.seed = 99;
    r.durable = true;
    r.durable_key = "chat-1";
    return r;
  }

  // The tokens of an uninterrupted run under `s`.
  std::vector<int32_t> Reference(const Setting& s) const {
    FakeEngine engine(s.engine);
    SchedulerCore core(engine, Options(s, /*durable=*/false));
    TaskRequest r = Request();
    r.durable = false;
    std::vector<int32_t> tokens;
    r.callbacks.on_done = [&](TaskId, const TaskResult& result) { tokens = result.tokens; };
    EXPECT_TRUE(core.Submit(std::move(r)).ok());
    core.RunUntilIdle();
    return tokens;
  }

  // A life under `s` that journals `n` tokens and ends without finishing, as a killed process does.
  void KilledAfter(const Setting& s, size_t n) const {
    FakeEngine engine(s.engine);
    SchedulerCore core(engine, Options(s));
    TaskRequest r = Request();
    size_t seen = 0;
    r.callbacks.on_token = [&](TaskId, int32_t, std::string_view) { ++seen; };
    ASSERT_TRUE(core.Submit(std::move(r)).ok());
    while (seen < n) ASSERT_TRUE(core.RunOneStep());
  }

  std::string scratch_;
};

TEST_P(DurableIdentityTest, ASettingChangedBetweenLivesSkipsTheJournalAndTheSameOneResumesIt) {
  const Case& c = GetParam();
  const std::vector<int32_t> reference = Reference(c.written);
  ASSERT_GT(reference.size(), 20u);
  EXPECT_NE(Reference(c.other), reference)
      << "the setting changes the tokens: why it is in the identity";

  KilledAfter(c.written, 7);
  const std::vector<uint8_t> journal = ReadBytes(JournalFile());
  ASSERT_FALSE(journal.empty());
  {
    FakeEngine engine(c.other.engine);
    SchedulerCore core(engine, Options(c.other));
    Result<RecoveryReport> report = core.journals().Recover();
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->tasks.empty()) << "never resumed under another setting";
    ASSERT_EQ(report->skipped.size(), 1u);
    EXPECT_EQ(report->skipped[0].first, JournalFile().string());
    EXPECT_EQ(report->skipped[0].second.code(), StatusCode::kUnsupported);
    EXPECT_NE(report->skipped[0].second.message().find(c.reason), std::string::npos)
        << report->skipped[0].second.message();
    EXPECT_FALSE(core.HasRunnableWork());
  }
  EXPECT_EQ(ReadBytes(JournalFile()), journal) << "left as it was";

  FakeEngine engine(c.written.engine);
  SchedulerCore core(engine, Options(c.written));
  TaskResult result;
  Result<RecoveryReport> report = core.journals().Recover([&](const RecoveredTask&) {
    TaskCallbacks callbacks;
    callbacks.on_done = [&](TaskId, const TaskResult& r) { result = r; };
    return callbacks;
  });
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->skipped.empty());
  ASSERT_EQ(report->tasks.size(), 1u);
  EXPECT_EQ(report->tasks[0].tokens.size(), 7u);
  EXPECT_EQ(report->tasks[0].state, TaskState::kQueued);
  core.RunUntilIdle();
  EXPECT_EQ(result.state, TaskState::kDone);
  EXPECT_EQ(result.tokens, reference);
}

INSTANTIATE_TEST_SUITE_P(EachSetting, DurableIdentityTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

// Beside a journal skipped for its settings, new durable tasks run, and the
// skipped one stays as it was, for the settings it was written under.
TEST_F(DurableIdentityTest, NewTasksRunBesideASkippedJournal) {
  const Case c = Cases()[0];
  KilledAfter(c.written, 3);
  const std::vector<uint8_t> before = ReadBytes(JournalFile());
  {
    FakeEngine engine(c.other.engine);
    SchedulerCore core(engine, Options(c.other));
    ASSERT_TRUE(core.journals().Recover().ok());
    TaskRequest other = Request();
    other.durable_key = "chat-2";
    EXPECT_TRUE(core.Submit(other).ok()) << "new tasks go on beside it";
    core.RunUntilIdle();
  }
  EXPECT_EQ(ReadBytes(JournalFile()), before);
}

// Settings beside the model that decide tokens are part of the identity:
// any difference refuses the journal, naming each setting with both values;
// their order does not matter.
TEST(JournalSettingsTest, OtherSettingsAreRefusedNamingEachDifference) {
  Result<std::string> scratch = MakeScratchDirectory("valet-settings-test-");
  ASSERT_TRUE(scratch.ok());
  Result<PrivateDir> opened = PrivateDir::Open(*scratch + "/tasks");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const auto dir = std::make_shared<const PrivateDir>(std::move(opened).value());
  JournalIdentity written;
  written.model_fingerprint = "model";
  written.settings = {{"parse_special_in_messages", "false"}, {"context_length", "4096"}};
  TaskRequest request;
  request.prompt = "x";
  Result<TaskJournal> j = TaskJournal::Create(dir, "settings", written, request);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  const std::string path = j->path();

  JournalIdentity special = written;
  special.settings[0].value = "true";
  Result<JournalContents> c = ReadJournal(path, special);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(c.status().message().find("parse_special_in_messages differs: journal false, now true"),
            std::string::npos)
      << c.status().message();
  EXPECT_EQ(c.status().message().find("context_length"), std::string::npos) << "only what differs";

  JournalIdentity several = written;
  several.settings[1].value = "2048";
  several.settings.push_back({"bos", "1"});
  c = ReadJournal(path, several);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("context_length differs: journal 4096, now 2048"),
            std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("bos differs: journal does not record it, now 1"),
            std::string::npos)
      << c.status().message();

  JournalIdentity fewer = written;
  fewer.settings.pop_back();
  c = ReadJournal(path, fewer);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "context_length differs: journal 4096, now this valet has no such setting"),
            std::string::npos)
      << c.status().message();

  JournalIdentity reordered = written;
  std::swap(reordered.settings[0], reordered.settings[1]);
  EXPECT_TRUE(ReadJournal(path, reordered).ok()) << "compared by name";

  JournalIdentity twice = written;
  twice.settings.push_back(twice.settings[0]);
  EXPECT_EQ(TaskJournal::Create(dir, "twice", twice, request).status().code(),
            StatusCode::kInvalidArgument);
  JournalIdentity many = written;
  for (size_t i = 0; i <= kMaxIdentitySettings; ++i) {
    many.settings.push_back({"s" + std::to_string(i), "v"});
  }
  EXPECT_EQ(TaskJournal::Create(dir, "many", many, request).status().code(),
            StatusCode::kInvalidArgument);
  fs::remove_all(*scratch);
}

// The identity the scheduler journals under, as it names it.
TEST(SchedulerJournalIdentityTest, NamesEverySettingThatDecidesTokens) {
  FakeEngineOptions o = ChatMl();
  FakeEngine engine(o);
  const JournalIdentity id = SchedulerJournalIdentity(engine, "fp", true);
  EXPECT_EQ(id.valet_version, ValetVersionString());
  EXPECT_EQ(id.model_fingerprint, "fp");
  std::vector<std::string> names;
  for (const JournalSetting& s : id.settings) {
    names.push_back(s.name + "=" + (s.name == "chat_template" ? "" : s.value));  // a checksum
  }
  EXPECT_EQ(names, (std::vector<std::string>{"parse_special_in_messages=true", "context_length=160",
                                             "chat_template=", "bos=1"}));
  EXPECT_TRUE(CheckJournalIdentity(id).ok());
  EXPECT_EQ(SettingsDifference(id.settings, id.settings), "");
  o.special_tokens.push_back("<|eot|>");
  FakeEngine more_specials(o);
  EXPECT_NE(SchedulerJournalIdentity(more_specials, "fp", true).settings[2], id.settings[2])
      << "the special texts are part of what renders a chat";
}

}  // namespace
}  // namespace valet
