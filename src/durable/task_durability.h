// The narrow interface the scheduler keeps durable tasks through
// (docs/durable.md): their directory, opened once and checked
// (common/private_dir.h), its disk budget, a new task's journal, the KV
// checkpoints beside the journals, the scan recovery starts from, and
// acknowledgement. What a live task does with its journal (tokens kept while
// the disk refuses them, waiting parked) is the scheduler's; this class knows
// files, never tasks' states.
//
// Dependencies point one way: the scheduler includes this, and this includes
// only common/, sampling/ and the public task types (valet/task.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/private_dir.h"
#include "durable/journal_identity.h"
#include "durable/task_checkpoint.h"
#include "durable/task_journal.h"
#include "valet/status.h"
#include "valet/task.h"

namespace valet {

struct DurableOptions {
  // SchedulerOptions::durable_dir and model_fingerprint: both are needed for
  // durable tasks; an empty dir means none here.
  std::string dir;
  std::string model_fingerprint;
  // Journals and checkpoints together (SchedulerOptions::durable_disk_budget_bytes).
  size_t disk_budget_bytes = 0;
  // The tests' seams (SchedulerOptions::durable_write_hooks, valet/scheduler.h).
  std::function<void(int fd, std::span<const uint8_t> record)> before_journal_append;
  std::function<void()> before_checkpoint_rename;
};

class TaskDurability {
 public:
  // Opens options.dir (creating it) when it is set; `identity` is what every
  // journal and checkpoint is written and read with.
  TaskDurability(DurableOptions options, JournalIdentity identity);

  // OK, or why durable tasks are unavailable here (InvalidArgument when the
  // directory was refused).
  const Status& dir_status() const { return dir_status_; }
  bool has_dir() const { return !options_.dir.empty(); }
  const JournalIdentity& identity() const { return identity_; }

  // A new journal for a durable request (its key made up when empty), none
  // otherwise; refused when the directory is over its budget or its file
  // system cannot hold the records of `max_tokens` (the context's
  // `context_length` for 0) tokens. Any thread. Once it returns, a kill can
  // no longer lose the task.
  Result<std::optional<TaskJournal>> StartJournal(TaskRequest& request, int64_t context_length) const;
  // An unfinished journal found by Scan, opened to append to.
  Result<TaskJournal> ReopenJournal(const JournalContents& contents) const;
  // Every journal of this identity in the directory, and the ones skipped.
  Result<JournalScan> Scan() const;
  // Removes an ended task's checkpoint and journal (its key checked first).
  Status Ack(const std::string& durable_key) const;
  // A cancelled task is forgotten: its checkpoint, then its journal.
  Status Forget(TaskJournal& journal, std::string_view durable_key) const;
  Status RemoveCheckpoint(std::string_view durable_key) const;
  Status RemoveJournal(std::string_view durable_key) const;

  enum class CheckpointWrite { kWritten, kOverBudget, kFailed };
  // The task's KV checkpoint, replacing the last, if the budget holds it.
  CheckpointWrite WriteCheckpoint(std::string_view durable_key, std::span<const uint8_t> bytes, FileSync sync) const;
  // The task's checkpoint, when there is an intact one of this identity.
  Result<std::vector<uint8_t>> ReadCheckpoint(std::string_view durable_key, size_t max_bytes) const;

  // Replaces write(2) for journals' records (the seam a full disk is tested
  // through); before the first durable task.
  void set_journal_write_for_testing(JournalWriteFn write) { journal_write_ = std::move(write); }

 private:
  // Whether a durable request can be journaled here (its key made up when
  // empty, the directory under its disk budget).
  Status CheckDurable(TaskRequest& request) const;
  size_t DirBytes() const;
  TaskJournalOptions JournalOptions(JournalSync sync) const {
    return {sync, journal_write_, options_.before_journal_append};
  }

  DurableOptions options_;
  JournalIdentity identity_;
  // Null without a directory, or when it could not be opened (dir_status_ says why).
  std::shared_ptr<const PrivateDir> dir_;
  Status dir_status_;
  JournalWriteFn journal_write_;  // empty: write(2)
};

}  // namespace valet
