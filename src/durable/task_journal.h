// The durable-task journal (issue 22; design in docs/durable.md): one
// append-only file per durable task with its request, every generated token
// with the sampler's RNG state after it, and how the task ended, so that after
// the process is killed (Android's low-memory killer) the task is found again
// with its output so far and resumed token-identically.
//
// File "<dir>/<task key>.journal", 0600 in a private directory
// (common/private_dir.h), little-endian:
//   header:  "VALETJNL" u32 format_version u32 n  [n bytes: str valet_version,
//            str model_fingerprint, str task_key, u32 count and per setting
//            str name, str value]  u64 Checksum64(all before)
//   records: u32 length u8 type [length bytes of payload] u64 Checksum64(length,
//            type and payload): one Submit (the request) first, then Tokens
//            records, then at most one Done.
// A reader keeps the longest run of intact records: a torn record (the file
// ends inside it) or a damaged one (checksum, length, layout) ends the scan and
// everything from there on is dropped and reported, never misread. A journal
// from another format version, valet version, model or settings (the
// identity, durable/journal_identity.h) is refused as a whole.
//
// What a call guarantees once it has returned OK (the fsync order):
//  - TaskJournal::Create: header and Submit are on the storage device under the
//    final name: they are written to "<path>.tmp" (O_EXCL | O_NOFOLLOW), the
//    file is fsynced, renamed into place and the directory fsynced, all
//    relative to the directory's descriptor. After any
//    crash the journal is therefore whole or absent, never a bare header.
//  - AppendTokens: the record is in the kernel's page cache, which a killed
//    process cannot lose; with JournalSync::kEveryRecord it is also fdatasynced
//    and survives a power loss or kernel crash. With kOnDemand that holds once
//    Sync() returns, for every record appended before it.
//  - MarkDone: always fdatasynced (with everything before it), whatever the
//    policy: a finished result is what the app comes back for.
//  - RemoveJournal (the app's acknowledgement, or a cancel): the file is gone
//    and the directory fsynced.
// Records are only ever appended in order, so whatever a crash keeps, the
// intact prefix is a state the task really passed through.
//
// A TaskJournal is used from one thread at a time (the inference thread).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/private_dir.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "durable/journal_identity.h"
#include "valet/sampling.h"
#include "valet/task.h"
#include "valet/status.h"

namespace valet {

// 2: the header names the settings that decide tokens (journal_identity.h).
// 3: the submit record carries the output constraint (valet/constraint.h).
// 5: and the tool choice (valet/task.h).
// An older journal is refused: what it was written under is unknown, or it
// has no room for what decides the tokens now.
inline constexpr uint32_t kJournalFormatVersion = 5;
// No record is longer: a corrupt length can never ask for more memory than
// this, and a request that would need more is refused at Create.
inline constexpr uint32_t kMaxJournalRecordBytes = 16u << 20;

enum class JournalSync {
  kEveryRecord,  // fdatasync after every record: survives power loss record by record
  kOnDemand,     // only Sync() and MarkDone fdatasync: survives a process kill, cheaper per token
};

// write(2) for a journal's records: a test substitutes one that fails as a
// full or failing disk does (-1 with errno set), the seam durable tasks'
// disk-full handling is tested through.
using JournalWriteFn = std::function<ssize_t(int fd, const void* data, size_t size)>;

struct TaskJournalOptions {
  // Not an aggregate, so callers may name the policy alone.
  TaskJournalOptions(JournalSync sync = JournalSync::kEveryRecord, JournalWriteFn write = {},
                     std::function<void(int fd, std::span<const uint8_t> record)> before_append = {})
      : sync(sync), write(std::move(write)), before_append(std::move(before_append)) {}
  JournalSync sync;
  JournalWriteFn write;  // empty: write(2)
  // DurableWriteHooks::before_journal_append (valet/scheduler.h): the kill soak's seam.
  std::function<void(int fd, std::span<const uint8_t> record)> before_append;
};

// The most bytes the records of `tokens` more tokens and the end take (one
// token a record, as SchedulerCore appends them): what a new journal must
// find free on its file system.
uint64_t JournalBytesToFinish(int64_t tokens);

// How a task ended (the Done record). The generated-token count is the
// journal's own.
struct JournalEnd {
  TaskState state = TaskState::kDone;  // kDone, kCancelled or kFailed
  StopReason stop_reason = StopReason::kNone;
  std::string error;  // the failure's message, for kFailed
};

// How a scan of the records ended.
enum class JournalTail {
  kClean,    // at the end of the file
  kTorn,     // inside a record the file ends in: a write the process did not finish
  kCorrupt,  // at a record that is damaged (checksum, length, layout)
};

// Everything a journal says about its task, up to the last intact record.
struct JournalContents {
  std::string path;
  std::string task_key;
  TaskRequest request;          // as submitted; callbacks empty
  std::vector<int32_t> tokens;  // generated so far, oldest first
  // The sampler's RNG after the last token (the seed's initial state before
  // the first): the next token continues from here.
  RngState rng;
  std::optional<JournalEnd> end;  // set once the task finished
  uint64_t good_bytes = 0;        // header and intact records; a reopened journal continues here
  uint64_t dropped_bytes = 0;     // after them
  JournalTail tail = JournalTail::kClean;
  std::string tail_problem;  // why the scan stopped early, unless kClean

  bool finished() const { return end.has_value(); }
};

// "<task_key>.journal", and "<dir>/" before it. Task keys are 1..128 of
// [A-Za-z0-9_.-], not starting with '.', so a key never names a path outside
// its directory.
std::string JournalFileName(std::string_view task_key);
std::string JournalPath(const std::string& dir, std::string_view task_key);
// InvalidArgument unless `key` is such a key.
Status CheckTaskKey(std::string_view key);

// Reads a journal written for `expected`. Corrupt when it is no journal or its
// header or Submit record is damaged; Unsupported, naming both sides, when it
// comes from another format version, valet version or model, or names other
// settings (each difference: "parse_special_in_messages differs: journal
// false, now true"). A damaged or torn later record is no error: the contents
// stop before it (tail, dropped_bytes). The first form reads task_key's
// journal in `dir`; the second any path (never through a final link).
Result<JournalContents> ReadJournal(const PrivateDir& dir, std::string_view task_key,
                                    const JournalIdentity& expected);
Result<JournalContents> ReadJournal(const std::string& path, const JournalIdentity& expected);

struct SkippedJournalFile {
  std::string path;
  Status why;
};

struct JournalScan {
  std::vector<JournalContents>
      journals;  // unfinished and finished-but-unacknowledged, by file name
  std::vector<SkippedJournalFile> skipped;  // everything else in the directory, and why
};

// Most files ListJournals looks at: more is no directory of this valet's.
inline constexpr size_t kMaxJournalDirEntries = size_t{1} << 20;

// Every journal in `dir` (as ReadJournal). Files that are no readable journal
// of `expected` (other versions, models or settings, garbage, links, leftovers
// of an interrupted Create) are listed in `skipped`, never fatal; they are
// left where they are for the caller to judge.
Result<JournalScan> ListJournals(const PrivateDir& dir, const JournalIdentity& expected);

// Forgets a task (acknowledged, or cancelled): unlinks its journal and syncs
// the directory. NotFound when there is none.
Status RemoveJournal(const PrivateDir& dir, std::string_view task_key);

// The sampler state in which a resumed task draws its next token: `fed` is
// every token its sequence was fed before the first generated one (shared
// prefix and prompt), which with the generated tokens makes the
// repetition-penalty window; the presence and frequency penalties count the
// generated tokens; the RNG is the journal's. This equals the uninterrupted
// sampler's state after it had been fed the last generated token.
SamplerState ResumedSamplerState(const JournalContents& contents, std::span<const int32_t> fed);

// The writer of one task's journal. Move-only; closing does not sync.
class TaskJournal {
 public:
  // Journals a new task in `dir`: writes header and Submit (see the file
  // comment for what is durable on return). InvalidArgument for a bad key, an
  // existing journal of the same key, an identity CheckJournalIdentity
  // refuses or a request too large for one record.
  static Result<TaskJournal> Create(std::shared_ptr<const PrivateDir> dir, std::string_view task_key,
                                    const JournalIdentity& identity, const TaskRequest& request,
                                    const TaskJournalOptions& options = {});

  // Continues a journal after a restart, from what ReadJournal or ListJournals
  // just read of it in `dir`: a torn or damaged tail is cut off first (and the
  // cut synced), so new records follow the intact ones. Corrupt when the file
  // changed since it was read.
  static Result<TaskJournal> Reopen(std::shared_ptr<const PrivateDir> dir, const JournalContents& contents,
                                    const TaskJournalOptions& options = {});

  TaskJournal(TaskJournal&& other) noexcept;
  TaskJournal& operator=(TaskJournal&& other) noexcept;
  TaskJournal(const TaskJournal&) = delete;
  TaskJournal& operator=(const TaskJournal&) = delete;
  ~TaskJournal();

  // Records newly generated tokens (one per call or a whole step's) and the
  // RNG state after the last of them (Sampler::state().rng). Empty: nothing
  // to record. InvalidArgument after MarkDone, for negative ids or an
  // all-zero RNG state. A failed write is cut back off the file, so the
  // journal stays readable; if even that fails the writer refuses all further
  // records. A failed sync is reported, but the record stays written (and
  // counted): a kill cannot lose it, a power loss might.
  [[nodiscard]] Status AppendTokens(std::span<const int32_t> tokens, const RngState& rng_after);

  // Records how the task ended and syncs. InvalidArgument for a state that
  // is not terminal or a second call.
  [[nodiscard]] Status MarkDone(const JournalEnd& end);

  // Makes every record appended so far durable (for JournalSync::kOnDemand).
  [[nodiscard]] Status Sync();

  // Forgets the task (RemoveJournal); the writer takes no more records.
  [[nodiscard]] Status Remove();

  const std::string& path() const { return path_; }
  int64_t tokens() const { return tokens_; }
  bool finished() const { return finished_; }
  uint64_t size_bytes() const { return size_; }

 private:
  TaskJournal(std::shared_ptr<const PrivateDir> dir, std::string key, int fd,
              const TaskJournalOptions& options, uint64_t size, int64_t tokens, bool finished);
  // Writes one record (no sync); a failed write is cut back off.
  Status Append(uint8_t type, std::span<const uint8_t> payload);
  void Close();

  std::shared_ptr<const PrivateDir> dir_;
  std::string key_;
  std::string path_;  // for messages
  int fd_ = -1;
  TaskJournalOptions options_;
  uint64_t size_ = 0;  // bytes of intact records: where the next one starts
  int64_t tokens_ = 0;
  bool finished_ = false;
  bool unsynced_ = false;
  bool broken_ = false;  // a failed write could not be cut back off
};

}  // namespace valet
