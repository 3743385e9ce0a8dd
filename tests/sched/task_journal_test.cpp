// The durable-task journal: every field comes back, a torn or damaged record
// costs only itself and what follows, a journal of another version or model
// is refused, a corrupt length allocates nothing, files stay private, and a
// task resumed from its journal draws the tokens it would have drawn.
#include "durable/task_journal.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "common/private_files.h"
#include "kv/checksum.h"
#include "sampling/sampler.h"
#include "testing/sched/durable_faults.h"

// ThreadSanitizer's runtime defines operator new itself: a second
// definition does not link, so there the allocation check is skipped.
#if defined(__SANITIZE_THREAD__)
#define VALET_COUNTS_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VALET_COUNTS_ALLOCATIONS 0
#endif
#endif
#ifndef VALET_COUNTS_ALLOCATIONS
#define VALET_COUNTS_ALLOCATIONS 1
#endif

// The largest single allocation since the last reset, to show a corrupt
// length is never trusted with memory.
namespace {
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

#if VALET_COUNTS_ALLOCATIONS
// Not inlined, so the compiler never sees free() meet an operator new's pointer.
[[gnu::noinline]] void* operator new(size_t n) {
  size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
  while (n > seen && !g_largest_allocation.compare_exchange_weak(seen, n)) {
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  std::abort();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, size_t) noexcept { std::free(p); }
#endif

namespace valet {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

mode_t Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::vector<uint8_t> ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const fs::path& p, std::span<const uint8_t> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A record as the format defines it, with a correct checksum over a payload
// that may lie.
std::vector<uint8_t> Record(uint8_t type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> r;
  PutU32(r, static_cast<uint32_t>(payload.size()));
  r.push_back(type);
  r.insert(r.end(), payload.begin(), payload.end());
  PutU64(r, Checksum64(r));
  return r;
}

// Every field set away from its default; content with U+0000 and multi-byte UTF-8.
TaskRequest FullRequest() {
  TaskRequest r;
  r.tier = Tier::kOfflineIndexing;
  r.system_prompt = "Tu es un assistant. \xE2\x9C\x93"s;
  r.messages = {
      {"user", "h\xC3\xA9llo\0w\xF0\x9F\x98\x80rld"s},
      {"assistant", "", {{"call_1", "get_weather", R"({"city":"Z\u00fcrich"})"}, {"", "f", "{}"}}},
      {"tool", "{\"temp\": -3}\0"s, {}, "call_1"},
      {"assistant", ""},
      {"user", "\0"s}};
  r.tools = {{"get_weather", "The weather.", R"({"type":"object","properties":{"city":{"type":"string"}}})"},
             {"f", "", ""}};
  r.tool_choice = {ToolChoice::Kind::kNamed, "f", true};
  r.prompt = "raw <|im_start|> prompt\0tail"s;
  r.prompt_tokens = {1, 0, 2147483647, 42};
  r.max_tokens = 0;
  r.sampling.temperature = 0.7f;
  r.sampling.top_k = 17;
  r.sampling.top_p = 0.9f;
  r.sampling.min_p = 0.01f;
  r.sampling.repeat_penalty = 1.1f;
  r.sampling.repeat_last_n = 33;
  r.sampling.presence_penalty = -0.0f;
  r.sampling.frequency_penalty = 1.5f;
  r.sampling.seed = 0xfedcba9876543210ULL;
  r.top_logprobs = 5;
  r.stop = {"\n\n", "", "stop\0here"s};
  r.constraint = {ConstraintKind::kJsonSchema, R"({"type":"object"})", 3};
  r.callbacks.on_token = [](TaskId, int32_t, std::string_view) {};
  return r;
}

void ExpectSameRequest(const TaskRequest& a, const TaskRequest& b) {
  EXPECT_EQ(a.tier, b.tier);
  EXPECT_EQ(a.system_prompt, b.system_prompt);
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t i = 0; i < a.messages.size(); ++i) EXPECT_TRUE(a.messages[i] == b.messages[i]) << "message " << i;
  EXPECT_TRUE(a.tools == b.tools);
  EXPECT_EQ(a.tool_choice, b.tool_choice);
  EXPECT_EQ(a.prompt, b.prompt);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.max_tokens, b.max_tokens);
  // Bit patterns, so -0.0 stays -0.0.
  const auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  EXPECT_EQ(bits(a.sampling.temperature), bits(b.sampling.temperature));
  EXPECT_EQ(a.sampling.top_k, b.sampling.top_k);
  EXPECT_EQ(bits(a.sampling.top_p), bits(b.sampling.top_p));
  EXPECT_EQ(bits(a.sampling.min_p), bits(b.sampling.min_p));
  EXPECT_EQ(bits(a.sampling.repeat_penalty), bits(b.sampling.repeat_penalty));
  EXPECT_EQ(a.sampling.repeat_last_n, b.sampling.repeat_last_n);
  EXPECT_EQ(bits(a.sampling.presence_penalty), bits(b.sampling.presence_penalty));
  EXPECT_EQ(bits(a.sampling.frequency_penalty), bits(b.sampling.frequency_penalty));
  EXPECT_EQ(a.sampling.seed, b.sampling.seed);
  EXPECT_EQ(a.top_logprobs, b.top_logprobs);
  EXPECT_EQ(a.stop, b.stop);
  EXPECT_EQ(a.constraint, b.constraint);
}

RngState FakeRng(uint64_t i) { return RngState{{i + 1, i * 3, ~i, 0x1234}}; }

// Under umask 0, where anything not made private on purpose comes out world-readable.
class TaskJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_umask_ = ::umask(0);
    Result<std::string> scratch = MakeScratchDirectory("valet-journal-test-");
    ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
    scratch_ = *scratch;
    dir_ = scratch_ / "snapshots" / "tasks";
    identity_.model_fingerprint = "gemma3-1b-q4_0:0123abcd";
    identity_.settings = {{"parse_special_in_messages", "false"}, {"context_length", "4096"}};
  }
  void TearDown() override {
    fs::remove_all(scratch_);
    ::umask(old_umask_);
  }

  // The journals' directory, opened (and made) once.
  std::shared_ptr<const PrivateDir> Dir() {
    if (!journals_) {
      Result<PrivateDir> dir = PrivateDir::Open(dir_.string());
      EXPECT_TRUE(dir.ok()) << dir.status().ToString();
      if (dir.ok()) journals_ = std::make_shared<const PrivateDir>(std::move(dir).value());
    }
    return journals_;
  }

  TaskJournal Create(std::string_view key, const TaskRequest& request = FullRequest(),
                     const TaskJournalOptions& options = {}) {
    Result<TaskJournal> j = TaskJournal::Create(Dir(), key, identity_, request, options);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return std::move(j).value();
  }

  // A journal of Submit, three Tokens records and Done; `ends` holds where
  // each record ends and `tokens` the tokens after each.
  struct Written {
    fs::path path;
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> ends;
    std::vector<std::vector<int32_t>> tokens;
  };
  Written WriteSample(std::string_view key) {
    Written w;
    TaskJournal j = Create(key);
    w.path = j.path();
    w.ends.push_back(j.size_bytes());
    w.tokens.push_back({});
    const std::vector<std::vector<int32_t>> steps = {{5}, {6, 7, 8}, {9}};
    for (size_t i = 0; i < steps.size(); ++i) {
      EXPECT_TRUE(j.AppendTokens(steps[i], FakeRng(i)).ok());
      w.ends.push_back(j.size_bytes());
      w.tokens.push_back(w.tokens.back());
      w.tokens.back().insert(w.tokens.back().end(), steps[i].begin(), steps[i].end());
    }
    EXPECT_TRUE(j.MarkDone({TaskState::kDone, StopReason::kEos, ""}).ok());
    w.ends.push_back(j.size_bytes());
    w.tokens.push_back(w.tokens.back());
    w.bytes = ReadBytes(w.path);
    EXPECT_EQ(w.bytes.size(), w.ends.back());
    return w;
  }

  fs::path scratch_;
  fs::path dir_;
  std::shared_ptr<const PrivateDir> journals_;
  JournalIdentity identity_;
  mode_t old_umask_ = 0;
};

TEST_F(TaskJournalTest, EveryFieldRoundTrips) {
  const TaskRequest request = FullRequest();
  TaskJournal j = Create("task-1", request);
  Result<JournalContents> fresh = ReadJournal(j.path(), identity_);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->task_key, "task-1");
  EXPECT_EQ(fresh->path, JournalPath(dir_.string(), "task-1"));
  ExpectSameRequest(fresh->request, request);
  EXPECT_FALSE(fresh->request.callbacks.on_token) << "callbacks are never journaled";
  EXPECT_TRUE(fresh->tokens.empty());
  EXPECT_EQ(fresh->rng, Rng(request.sampling.seed).state()) << "before any token: the seed's state";
  EXPECT_FALSE(fresh->finished());

  const std::vector<int32_t> step = {7, 0, 123456};
  ASSERT_TRUE(j.AppendTokens(std::span<const int32_t>(step).first(1), FakeRng(1)).ok());
  ASSERT_TRUE(j.AppendTokens(std::span<const int32_t>(step).subspan(1), FakeRng(2)).ok());
  ASSERT_TRUE(j.AppendTokens({}, FakeRng(99)).ok()) << "nothing to record";
  EXPECT_EQ(j.tokens(), 3);
  Result<JournalContents> running = ReadJournal(j.path(), identity_);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->tokens, step);
  EXPECT_EQ(running->rng, FakeRng(2));
  EXPECT_FALSE(running->finished());

  ASSERT_TRUE(j.MarkDone({TaskState::kFailed, StopReason::kStopString, "engine \0error"s}).ok());
  EXPECT_TRUE(j.finished());
  Result<JournalContents> done = ReadJournal(j.path(), identity_);
  ASSERT_TRUE(done.ok());
  ExpectSameRequest(done->request, request);
  EXPECT_EQ(done->tokens, step);
  ASSERT_TRUE(done->finished());
  EXPECT_EQ(done->end->state, TaskState::kFailed);
  EXPECT_EQ(done->end->stop_reason, StopReason::kStopString);
  EXPECT_EQ(done->end->error, "engine \0error"s);
  EXPECT_EQ(done->tail, JournalTail::kClean);
  EXPECT_EQ(done->dropped_bytes, 0u);
  EXPECT_EQ(done->good_bytes, fs::file_size(j.path()));
}

TEST_F(TaskJournalTest, FilesArePrivateUnderUmaskZero) {
  TaskJournal j = Create("k", FullRequest(), {JournalSync::kOnDemand});
  ASSERT_TRUE(j.AppendTokens(std::vector<int32_t>{1}, FakeRng(0)).ok());
  ASSERT_TRUE(j.Sync().ok());
  EXPECT_EQ(Mode(j.path()), 0600u);
  EXPECT_EQ(Mode(dir_), 0700u);
  EXPECT_EQ(Mode(dir_.parent_path()), 0700u);
  EXPECT_FALSE(fs::exists(j.path() + ".tmp"));
}

TEST_F(TaskJournalTest, ATornTailAtEveryByteKeepsThePreviousState) {
  const Written w = WriteSample("t");
  // Shortened in place, longest first: rewriting the file each time costs a flush per length.
  const fs::path cut = dir_ / "cut.journal";
  WriteBytes(cut, w.bytes);
  for (size_t len = w.bytes.size() + 1; len-- > 0;) {
    SCOPED_TRACE("length " + std::to_string(len));
    fs::resize_file(cut, len);
    Result<JournalContents> c = ReadJournal(cut.string(), identity_);
    if (len < w.ends[0]) {
      // Create never leaves a journal without its whole Submit: this is damage.
      ASSERT_FALSE(c.ok());
      EXPECT_EQ(c.status().code(), StatusCode::kCorrupt) << c.status().ToString();
      continue;
    }
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    size_t k = 0;
    while (k + 1 < w.ends.size() && w.ends[k + 1] <= len) ++k;
    EXPECT_EQ(c->tokens, w.tokens[k]);
    EXPECT_EQ(c->finished(), k + 1 == w.ends.size());
    EXPECT_EQ(c->rng, k == 0 ? Rng(FullRequest().sampling.seed).state()
                             : FakeRng(std::min<size_t>(k, 3) - 1));
    EXPECT_EQ(c->good_bytes, w.ends[k]);
    EXPECT_EQ(c->dropped_bytes, len - w.ends[k]);
    EXPECT_EQ(c->tail, len == w.ends[k] ? JournalTail::kClean : JournalTail::kTorn)
        << c->tail_problem;
  }
}

TEST_F(TaskJournalTest, AFlippedBitStopsAtTheLastGoodRecord) {
  const Written w = WriteSample("f");
  // Patched in place, one byte at a time, and restored.
  const fs::path bad = dir_ / "bad.journal";
  WriteBytes(bad, w.bytes);
  std::fstream patch(bad, std::ios::in | std::ios::out | std::ios::binary);
  const auto put = [&](size_t at, uint8_t value) {
    patch.seekp(static_cast<std::streamoff>(at));
    patch.put(static_cast<char>(value));
    patch.flush();
  };
  for (size_t byte = 0; byte < w.bytes.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      SCOPED_TRACE("byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      put(byte, w.bytes[byte] ^ static_cast<uint8_t>(1u << bit));
      Result<JournalContents> c = ReadJournal(bad.string(), identity_);
      put(byte, w.bytes[byte]);
      if (byte < w.ends[0]) {
        ASSERT_FALSE(c.ok()) << "header and Submit are all or nothing";
        continue;
      }
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      size_t k = 0;  // records before the damaged one
      while (w.ends[k + 1] <= byte) ++k;
      EXPECT_EQ(c->tokens, w.tokens[k]);
      EXPECT_EQ(c->good_bytes, w.ends[k]);
      EXPECT_EQ(c->dropped_bytes, w.bytes.size() - w.ends[k]);
      EXPECT_NE(c->tail, JournalTail::kClean);
      EXPECT_FALSE(c->tail_problem.empty());
    }
  }
}

TEST_F(TaskJournalTest, ReopeningCutsTheDamagedTailSoNewRecordsFollowGoodOnes) {
  const Written w = WriteSample("r");
  // Torn in the middle of the third Tokens record.
  WriteBytes(w.path, std::span<const uint8_t>(w.bytes).first((w.ends[2] + w.ends[3]) / 2));
  Result<JournalContents> torn = ReadJournal(w.path.string(), identity_);
  ASSERT_TRUE(torn.ok());
  ASSERT_EQ(torn->tail, JournalTail::kTorn);
  Result<TaskJournal> j = TaskJournal::Reopen(Dir(), *torn);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(fs::file_size(w.path), w.ends[2]);
  EXPECT_EQ(j->tokens(), 4);
  ASSERT_TRUE(j->AppendTokens(std::vector<int32_t>{10, 11}, FakeRng(7)).ok());
  ASSERT_TRUE(j->MarkDone({TaskState::kDone, StopReason::kMaxTokens, ""}).ok());
  Result<JournalContents> after = ReadJournal(w.path.string(), identity_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->tokens, (std::vector<int32_t>{5, 6, 7, 8, 10, 11}));
  EXPECT_EQ(after->rng, FakeRng(7));
  EXPECT_EQ(after->tail, JournalTail::kClean);
  ASSERT_TRUE(after->finished());
  EXPECT_EQ(after->end->stop_reason, StopReason::kMaxTokens);

  // Damage in the middle drops the intact records after it too.
  std::vector<uint8_t> bytes = w.bytes;
  bytes[w.ends[1] + 6] ^= 0x10;
  WriteBytes(w.path, bytes);
  Result<JournalContents> corrupt = ReadJournal(w.path.string(), identity_);
  ASSERT_TRUE(corrupt.ok());
  EXPECT_EQ(corrupt->tail, JournalTail::kCorrupt);
  EXPECT_EQ(corrupt->tokens, (std::vector<int32_t>{5}));
  Result<TaskJournal> again = TaskJournal::Reopen(Dir(), *corrupt);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->AppendTokens(std::vector<int32_t>{6}, FakeRng(1)).ok());
  Result<JournalContents> resumed = ReadJournal(w.path.string(), identity_);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(resumed->tail, JournalTail::kClean);

  // What was read no longer describes the file: refuse rather than cut good records.
  Result<TaskJournal> stale = TaskJournal::Reopen(Dir(), *corrupt);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ReadJournal(w.path.string(), identity_)->tokens, (std::vector<int32_t>{5, 6}));
}

TEST_F(TaskJournalTest, AnotherModelVersionOrFormatIsRefusedByName) {
  TaskJournal j = Create("id");
  const std::string path = j.path();

  JournalIdentity other_model = identity_;
  other_model.model_fingerprint = "llama-3.2-1b:ffff";
  Result<JournalContents> c = ReadJournal(path, other_model);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(c.status().message().find("gemma3-1b-q4_0:0123abcd"), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("llama-3.2-1b:ffff"), std::string::npos);

  JournalIdentity other_version = identity_;
  other_version.valet_version = "9.9.9";
  c = ReadJournal(path, other_version);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(c.status().message().find("valet 9.9.9"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find(std::string("valet ") + ValetVersionString()),
            std::string::npos);
  EXPECT_STRNE(ValetVersionString(), "unversioned") << "CMake passes the project version";

  const std::vector<uint8_t> good = ReadBytes(path);
  std::vector<uint8_t> bytes = good;
  bytes[8] = 2;  // format version 2: before constraints were journaled
  WriteBytes(path, bytes);
  c = ReadJournal(path, identity_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(c.status().message().find("format version 2"), std::string::npos)
      << c.status().message();

  bytes = good;
  bytes[0] = 'X';
  WriteBytes(path, bytes);
  c = ReadJournal(path, identity_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(c.status().message().find("not a valet task journal"), std::string::npos);

  bytes = good;
  bytes[20] ^= 1;  // inside the identity strings
  WriteBytes(path, bytes);
  c = ReadJournal(path, identity_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(c.status().message().find("checksum"), std::string::npos) << c.status().message();

  EXPECT_EQ(ReadJournal((dir_ / "absent.journal").string(), identity_).status().code(),
            StatusCode::kNotFound);
}

// A journal of format 1 (before the header named any settings) cannot show
// what it was written under: skipped with that reason, and left in place.
TEST_F(TaskJournalTest, AFormatOneJournalIsSkippedAsUnverifiable) {
  const Written w = WriteSample("v2");
  const uint32_t n = w.bytes[12] | w.bytes[13] << 8 | w.bytes[14] << 16 | w.bytes[15] << 24;
  const std::vector<uint8_t> records(w.bytes.begin() + 16 + n + 8, w.bytes.end());
  // The version 1 header: valet version, model and task key, nothing more.
  std::vector<uint8_t> identity;
  for (const std::string& field : {identity_.valet_version, identity_.model_fingerprint, std::string("old")}) {
    PutU32(identity, static_cast<uint32_t>(field.size()));
    identity.insert(identity.end(), field.begin(), field.end());
  }
  std::vector<uint8_t> v1 = {'V', 'A', 'L', 'E', 'T', 'J', 'N', 'L'};
  PutU32(v1, 1);
  PutU32(v1, static_cast<uint32_t>(identity.size()));
  v1.insert(v1.end(), identity.begin(), identity.end());
  PutU64(v1, Checksum64(v1));
  v1.insert(v1.end(), records.begin(), records.end());
  WriteBytes(dir_ / "old.journal", v1);

  Result<JournalScan> scan = ListJournals(*Dir(), identity_);
  ASSERT_TRUE(scan.ok());
  ASSERT_EQ(scan->journals.size(), 1u);
  EXPECT_EQ(scan->journals[0].task_key, "v2");
  ASSERT_EQ(scan->skipped.size(), 1u);
  EXPECT_EQ(fs::path(scan->skipped[0].path).filename(), "old.journal");
  EXPECT_EQ(scan->skipped[0].why.code(), StatusCode::kUnsupported);
  EXPECT_NE(scan->skipped[0].why.message().find("format version 1"), std::string::npos)
      << scan->skipped[0].why.message();
  EXPECT_NE(scan->skipped[0].why.message().find("cannot be known"), std::string::npos)
      << scan->skipped[0].why.message();
  EXPECT_EQ(ReadBytes(dir_ / "old.journal"), v1) << "left as it was";
}

TEST_F(TaskJournalTest, CorruptLengthsAllocateNothing) {
  if (!VALET_COUNTS_ALLOCATIONS) GTEST_SKIP() << "ThreadSanitizer's runtime owns operator new";
  TaskJournal j = Create("len");
  ASSERT_TRUE(j.AppendTokens(std::vector<int32_t>{1, 2}, FakeRng(0)).ok());
  const std::vector<uint8_t> good = ReadBytes(j.path());
  const size_t header_end = 16 + (good[12] | good[13] << 8 | good[14] << 16 | good[15] << 24) + 8;
  const auto read = [&](const std::vector<uint8_t>& bytes) {
    WriteBytes(j.path(), bytes);
    g_largest_allocation = 0;
    Result<JournalContents> c = ReadJournal(j.path(), identity_);
    EXPECT_LT(g_largest_allocation.load(), size_t{1} << 20) << "a length was trusted";
    return c;
  };

  // A length over the record limit, and one under it the file cannot back.
  for (uint32_t length : {0xffffffffu, kMaxJournalRecordBytes + 1, kMaxJournalRecordBytes - 1}) {
    std::vector<uint8_t> bytes = good;
    PutU32(bytes, length);
    bytes.push_back(2);
    bytes.resize(bytes.size() + 100, 0xab);
    Result<JournalContents> c = read(bytes);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->tokens, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(c->good_bytes, good.size());
    EXPECT_EQ(c->tail,
              length > kMaxJournalRecordBytes ? JournalTail::kCorrupt : JournalTail::kTorn);
  }

  // Counts inside intact (checksummed) records: a Tokens record claiming a
  // billion tokens, a Submit whose first string claims 4 GiB.
  std::vector<uint8_t> tokens_payload;
  PutU64(tokens_payload, 2);
  PutU32(tokens_payload, 0x3fffffff);
  tokens_payload.resize(tokens_payload.size() + 36, 1);
  std::vector<uint8_t> bytes = good;
  const std::vector<uint8_t> lying_tokens = Record(2, tokens_payload);
  bytes.insert(bytes.end(), lying_tokens.begin(), lying_tokens.end());
  Result<JournalContents> c = read(bytes);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tail, JournalTail::kCorrupt);
  EXPECT_EQ(c->tokens, (std::vector<int32_t>{1, 2}));

  std::vector<uint8_t> submit_payload;
  PutU32(submit_payload, 0);           // tier
  PutU32(submit_payload, 0xfffffff0);  // system_prompt's length
  submit_payload.resize(64, 'x');
  bytes.assign(good.begin(), good.begin() + static_cast<ptrdiff_t>(header_end));
  const std::vector<uint8_t> lying_submit = Record(1, submit_payload);
  bytes.insert(bytes.end(), lying_submit.begin(), lying_submit.end());
  c = read(bytes);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(c.status().message().find("Submit"), std::string::npos) << c.status().message();

  // A header claiming a huge identity.
  bytes = good;
  bytes[15] = 0x7f;
  c = read(bytes);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
}

TEST_F(TaskJournalTest, ListingReportsEveryJournalAndSkipsTheRest) {
  Result<PrivateDir> none = PrivateDir::Open((scratch_ / "none").string());
  ASSERT_TRUE(none.ok());
  Result<JournalScan> empty = ListJournals(*none, identity_);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->journals.empty() && empty->skipped.empty()) << "nothing to recover";

  TaskJournal running = Create("a-running");
  ASSERT_TRUE(running.AppendTokens(std::vector<int32_t>{3}, FakeRng(0)).ok());
  TaskJournal finished = Create("b-finished");
  ASSERT_TRUE(finished.MarkDone({TaskState::kCancelled, StopReason::kNone, ""}).ok());
  TaskJournal torn = Create("c-torn");
  ASSERT_TRUE(torn.AppendTokens(std::vector<int32_t>{4, 5}, FakeRng(0)).ok());
  fs::resize_file(torn.path(), torn.size_bytes() - 3);
  JournalIdentity other = identity_;
  other.model_fingerprint = "another model";
  ASSERT_TRUE(TaskJournal::Create(Dir(), "d-other-model", other, FullRequest()).ok());
  JournalIdentity other_settings = identity_;
  other_settings.settings[1].value = "8192";
  ASSERT_TRUE(TaskJournal::Create(Dir(), "j-other-settings", other_settings, FullRequest()).ok());
  const std::vector<uint8_t> garbage = {'h', 'e', 'l', 'l', 'o'};
  WriteBytes(dir_ / "e-garbage.journal", garbage);
  WriteBytes(dir_ / "f-empty.journal", {});
  WriteBytes(dir_ / "g.journal.tmp", garbage);
  fs::create_symlink(running.path(), dir_ / "h-link.journal");
  fs::copy_file(running.path(), dir_ / "i-renamed.journal");

  Result<JournalScan> scan = ListJournals(*Dir(), identity_);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  ASSERT_EQ(scan->journals.size(), 3u);
  EXPECT_EQ(scan->journals[0].task_key, "a-running");
  EXPECT_EQ(scan->journals[0].tokens, (std::vector<int32_t>{3}));
  EXPECT_FALSE(scan->journals[0].finished());
  EXPECT_EQ(scan->journals[1].task_key, "b-finished");
  ASSERT_TRUE(scan->journals[1].finished());
  EXPECT_EQ(scan->journals[1].end->state, TaskState::kCancelled);
  EXPECT_EQ(scan->journals[2].task_key, "c-torn");
  EXPECT_TRUE(scan->journals[2].tokens.empty());
  EXPECT_EQ(scan->journals[2].tail, JournalTail::kTorn);

  std::vector<std::string> skipped;
  for (const SkippedJournalFile& s : scan->skipped) {
    EXPECT_FALSE(s.why.ok());
    EXPECT_FALSE(s.why.message().empty());
    skipped.push_back(fs::path(s.path).filename().string() + " " + StatusCodeName(s.why.code()));
  }
  EXPECT_EQ(skipped.size(), 7u);
  const auto skipped_as = [&](const std::string& name, StatusCode code) {
    return std::find(skipped.begin(), skipped.end(), name + " " + StatusCodeName(code)) !=
           skipped.end();
  };
  EXPECT_TRUE(skipped_as("d-other-model.journal", StatusCode::kUnsupported));
  EXPECT_TRUE(skipped_as("e-garbage.journal", StatusCode::kCorrupt));
  EXPECT_TRUE(skipped_as("f-empty.journal", StatusCode::kCorrupt));
  EXPECT_TRUE(skipped_as("g.journal.tmp", StatusCode::kInvalidArgument));
  EXPECT_TRUE(skipped_as("h-link.journal", StatusCode::kIo));
  EXPECT_TRUE(skipped_as("i-renamed.journal", StatusCode::kCorrupt));
  EXPECT_TRUE(skipped_as("j-other-settings.journal", StatusCode::kUnsupported));
}

TEST_F(TaskJournalTest, MisuseIsRefused) {
  const TaskRequest r = FullRequest();
  for (std::string key : {""s, "../x"s, ".hidden"s, "a/b"s, std::string(129, 'k'), "sp ace"s}) {
    EXPECT_EQ(TaskJournal::Create(Dir(), key, identity_, r).status().code(),
              StatusCode::kInvalidArgument)
        << key;
  }
  TaskJournal j = Create("once");
  EXPECT_EQ(TaskJournal::Create(Dir(), "once", identity_, r).status().code(),
            StatusCode::kInvalidArgument)
      << "an existing journal is never replaced";
  EXPECT_EQ(TaskJournal::Create(Dir(), "nofp", JournalIdentity{}, r).status().code(),
            StatusCode::kInvalidArgument);
  TaskRequest huge = r;
  huge.prompt.assign(kMaxJournalRecordBytes, 'x');
  EXPECT_EQ(TaskJournal::Create(Dir(), "huge", identity_, huge).status().code(),
            StatusCode::kInvalidArgument);

  EXPECT_FALSE(j.AppendTokens(std::vector<int32_t>{-1}, FakeRng(0)).ok());
  EXPECT_FALSE(j.AppendTokens(std::vector<int32_t>{1}, RngState{}).ok());
  EXPECT_FALSE(j.MarkDone({TaskState::kDecoding, StopReason::kNone, ""}).ok());
  EXPECT_EQ(j.tokens(), 0);
  ASSERT_TRUE(j.MarkDone({}).ok());
  EXPECT_FALSE(j.MarkDone({}).ok());
  EXPECT_FALSE(j.AppendTokens(std::vector<int32_t>{1}, FakeRng(0)).ok());
  Result<JournalContents> c = ReadJournal(j.path(), identity_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tail, JournalTail::kClean) << "refused calls wrote nothing";

  ASSERT_TRUE(RemoveJournal(*Dir(), "once").ok());
  EXPECT_FALSE(fs::exists(j.path()));
  EXPECT_EQ(RemoveJournal(*Dir(), "once").code(), StatusCode::kNotFound);
  EXPECT_EQ(RemoveJournal(*Dir(), "../once").code(), StatusCode::kInvalidArgument);
}

// A file size limit makes the kernel accept only part of a record, as a full
// disk would: the part is cut off again, and the journal carries on.
TEST_F(TaskJournalTest, AFailedAppendLeavesNoPartialRecord) {
  TaskJournal j = Create("full", FullRequest(), {JournalSync::kOnDemand});
  ASSERT_TRUE(j.AppendTokens(std::vector<int32_t>{1}, FakeRng(0)).ok());
  const uint64_t good = j.size_bytes();
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old_limit;
  limit.rlim_cur = good + 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const Status full = j.AppendTokens(std::vector<int32_t>{2, 3, 4}, FakeRng(1));
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(full.code(), StatusCode::kIo) << full.ToString();
  EXPECT_EQ(fs::file_size(j.path()), good) << "the partial record was cut off";
  EXPECT_EQ(j.tokens(), 1);
  ASSERT_TRUE(j.AppendTokens(std::vector<int32_t>{2, 3, 4}, FakeRng(1)).ok());
  Result<JournalContents> c = ReadJournal(j.path(), identity_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tokens, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(c->tail, JournalTail::kClean);
}

TEST(DurableFaults, ParseOnlyTheDocumentedForms) {
  testing::FaultPlan plan;
  ASSERT_TRUE(testing::AddFault("journal-append:3:17", plan).ok());
  EXPECT_EQ(plan.journal_append, 3);
  EXPECT_EQ(plan.after_bytes, 17u);
  EXPECT_EQ(plan.checkpoint_rename, 0);
  // Either alone, or both: neither form needs the other.
  testing::FaultPlan rename_only;
  ASSERT_TRUE(testing::AddFault("checkpoint-rename:2", rename_only).ok());
  EXPECT_EQ(rename_only.checkpoint_rename, 2);
  EXPECT_EQ(rename_only.journal_append, 0);
  EXPECT_TRUE(testing::KillHooks(rename_only).before_checkpoint_rename);
  EXPECT_FALSE(testing::KillHooks(rename_only).before_journal_append);
  ASSERT_TRUE(testing::AddFault("checkpoint-rename:5", plan).ok());
  EXPECT_EQ(plan.journal_append, 3);
  EXPECT_EQ(plan.checkpoint_rename, 5);
  for (const char* bad : {"", "journal-append:3", "journal-append:-1:2", "journal-append:1:2x",
                          "snapshot:1:2", "journal-append::4", "journal-append:1:99999999999",
                          "checkpoint-rename:", "checkpoint-rename:-1", "checkpoint-rename:1:2"}) {
    testing::FaultPlan unchanged;
    EXPECT_EQ(testing::AddFault(bad, unchanged).code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(unchanged.journal_append, 0) << bad;
    EXPECT_EQ(unchanged.checkpoint_rename, 0) << bad;
  }
}

// The soak's switch: the process dies between two bytes of a record, and the
// journal it leaves reads as the state before that record.
TEST_F(TaskJournalTest, AKillInsideAnAppendLeavesTheLastGoodRecord) {
  // The default ("fast") death test style forks: the child shares this journal's open file.
  const std::vector<int32_t> step = {11, 12, 13};
  uint64_t record_bytes = 0;
  {
    TaskJournal probe = Create("probe");
    const uint64_t before = probe.size_bytes();
    ASSERT_TRUE(probe.AppendTokens(step, FakeRng(5)).ok());
    record_bytes = probe.size_bytes() - before;
  }
  for (uint32_t cut : {0u, 1u, 4u, 5u, 30u, static_cast<uint32_t>(record_bytes - 1),
                       static_cast<uint32_t>(record_bytes)}) {
    SCOPED_TRACE("cut after " + std::to_string(cut) + " of " + std::to_string(record_bytes));
    const std::string key = "kill-" + std::to_string(cut);
    // The journal's hook calls whatever the child arms; nothing before that.
    std::function<void(int, std::span<const uint8_t>)> armed;
    TaskJournal j = Create(key, FullRequest(),
                           {JournalSync::kEveryRecord, {}, [&armed](int fd, std::span<const uint8_t> record) {
                              if (armed) armed(fd, record);
                            }});
    ASSERT_TRUE(j.AppendTokens(std::vector<int32_t>{1, 2}, FakeRng(1)).ok());
    const uint64_t good = j.size_bytes();
    EXPECT_EXIT(
        {
          armed = testing::KillHooks({.journal_append = 2, .after_bytes = cut}).before_journal_append;
          (void)j.AppendTokens(std::vector<int32_t>{3}, FakeRng(2));  // the first append survives
          (void)j.AppendTokens(step, FakeRng(5));
          std::_Exit(0);  // not reached
        },
        ::testing::KilledBySignal(SIGKILL), "");
    // The child's first append reached the file too: it is the last good record.
    Result<JournalContents> c = ReadJournal(j.path(), identity_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const uint64_t after_first = good + (record_bytes - 8);  // two tokens fewer than `step`
    if (cut == record_bytes) {
      EXPECT_EQ(c->tokens, (std::vector<int32_t>{1, 2, 3, 11, 12, 13}));
      EXPECT_EQ(c->tail, JournalTail::kClean);
    } else {
      EXPECT_EQ(c->tokens, (std::vector<int32_t>{1, 2, 3}));
      EXPECT_EQ(c->good_bytes, after_first);
      EXPECT_EQ(c->dropped_bytes, cut);
      EXPECT_EQ(c->tail, cut == 0 ? JournalTail::kClean : JournalTail::kTorn);
    }
    EXPECT_EQ(ReadJournal(j.path(), identity_)->rng, cut == record_bytes ? FakeRng(5) : FakeRng(2));
  }
}

// Logits that change with the position, so a resumed sampler that forgot
// anything would drift.
std::vector<float> Logits(int step, int32_t n_vocab) {
  std::vector<float> l(static_cast<size_t>(n_vocab));
  for (int32_t v = 0; v < n_vocab; ++v) {
    l[static_cast<size_t>(v)] =
        2.0f * static_cast<float>(std::sin(0.37 * step + 1.3 * v)) + (v % 7 == 0 ? 1.0f : 0.0f);
  }
  return l;
}

TEST_F(TaskJournalTest, ATaskResumedFromItsJournalDrawsTheSameTokens) {
  TaskRequest r;
  r.prompt_tokens = {1, 2, 3, 4, 5, 6};
  r.sampling.temperature = 1.1f;
  r.sampling.top_k = 0;
  r.sampling.min_p = 0.0f;
  r.sampling.repeat_penalty = 1.4f;
  r.sampling.repeat_last_n = 8;
  r.sampling.presence_penalty = 0.6f;
  r.sampling.frequency_penalty = 0.4f;
  r.sampling.seed = 77;
  constexpr int32_t kVocab = 40;
  constexpr int kTokens = 48, kKilledAt = 29;

  // Uninterrupted, as the engine drives it: each token is fed (Accept) before the next is drawn.
  Result<Sampler> whole = Sampler::Create(r.sampling, kVocab);
  ASSERT_TRUE(whole.ok());
  for (int32_t t : r.prompt_tokens) whole->Accept(t);
  TaskJournal j = Create("resume", r, {JournalSync::kOnDemand});
  std::vector<int32_t> expected;
  SamplerState at_kill;
  for (int i = 0; i < kTokens; ++i) {
    const int32_t t = whole->Sample(Logits(i, kVocab));
    expected.push_back(t);
    if (i < kKilledAt) {
      ASSERT_TRUE(j.AppendTokens(std::vector<int32_t>{t}, whole->state().rng).ok());
    }
    whole->Accept(t);
    if (i + 1 == kKilledAt) at_kill = whole->state();
  }

  Result<JournalContents> c = ReadJournal(j.path(), identity_);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->tokens.size(), static_cast<size_t>(kKilledAt));
  const SamplerState state = ResumedSamplerState(*c, c->request.prompt_tokens);
  EXPECT_EQ(state, at_kill);
  Result<Sampler> resumed = Sampler::Create(c->request.sampling, kVocab);
  ASSERT_TRUE(resumed.ok());
  resumed->set_state(state);
  std::vector<int32_t> tokens = c->tokens;
  for (int i = kKilledAt; i < kTokens; ++i) {
    const int32_t t = resumed->Sample(Logits(i, kVocab));
    tokens.push_back(t);
    resumed->Accept(t);
  }
  EXPECT_EQ(tokens, expected);
}

}  // namespace
}  // namespace valet
