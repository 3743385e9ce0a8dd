// Durable tasks' files: the directory and its budget, journals, checkpoints
// (docs/durable.md).
#include "durable/task_durability.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

namespace valet {
namespace {

// Bytes an unprivileged writer may still add to the file system holding
// `dir`; nullopt when it cannot be told.
std::optional<uint64_t> FreeBytes(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

// Unique across restarts without coordination: 64 random bits.
std::string NewDurableKey() {
  std::random_device device;
  const uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device();
  char key[24];
  std::snprintf(key, sizeof(key), "task-%016llx", static_cast<unsigned long long>(bits));
  return key;
}

}  // namespace

TaskDurability::TaskDurability(DurableOptions options, JournalIdentity identity)
    : options_(std::move(options)), identity_(std::move(identity)) {
  if (options_.dir.empty()) return;
  Result<PrivateDir> dir = PrivateDir::Open(options_.dir);
  if (!dir.ok()) {
    dir_status_ = Status(dir.status().code(), "durable tasks' directory: " + dir.status().message());
    return;
  }
  dir_ = std::make_shared<const PrivateDir>(std::move(dir).value());
}

Status TaskDurability::CheckDurable(TaskRequest& request) const {
  if (!request.durable) return Status::Ok();
  if (options_.dir.empty() || options_.model_fingerprint.empty()) {
    return InvalidArgument("a durable task needs the scheduler's durable_dir and model_fingerprint");
  }
  if (!dir_) return dir_status_;
  if (request.durable_key.empty()) request.durable_key = NewDurableKey();
  VALET_RETURN_IF_ERROR(CheckTaskKey(request.durable_key));
  const size_t used = DirBytes();
  if (used >= options_.disk_budget_bytes) {
    return ResourceExhausted("the durable tasks' directory holds " + std::to_string(used) + " bytes of its budget of " +
                             std::to_string(options_.disk_budget_bytes) +
                             ": acknowledge finished tasks (Ack) to make room");
  }
  return Status::Ok();
}

size_t TaskDurability::DirBytes() const {
  if (!dir_) return 0;
  Result<std::vector<std::string>> names = dir_->List(kMaxJournalDirEntries);
  // A directory that cannot be listed (or holds absurdly many files) takes no more.
  if (!names.ok()) return options_.disk_budget_bytes;
  size_t bytes = 0;
  for (const std::string& name : *names) {
    Result<struct stat> st = dir_->Stat(name);
    if (st.ok() && S_ISREG(st->st_mode)) bytes += static_cast<size_t>(st->st_size);
  }
  return bytes;
}

Result<std::optional<TaskJournal>> TaskDurability::StartJournal(TaskRequest& request, int64_t context_length) const {
  VALET_RETURN_IF_ERROR(CheckDurable(request));
  if (!request.durable) return std::optional<TaskJournal>();
  // Tokens only need to survive a killed process, which the page cache
  // ensures; MarkDone and lifecycle stops sync to the device.
  Result<TaskJournal> journal =
      TaskJournal::Create(dir_, request.durable_key, identity_, request, JournalOptions(JournalSync::kOnDemand));
  // A disk that cannot hold the task's every token would park it midway:
  // refused now instead, while the app can still choose.
  const int64_t tokens = request.max_tokens > 0 ? request.max_tokens : context_length;
  const uint64_t need = JournalBytesToFinish(tokens);
  const std::optional<uint64_t> free_bytes = FreeBytes(options_.dir);
  if (free_bytes && *free_bytes < need) {
    if (journal.ok()) (void)journal->Remove().ok();
    return ResourceExhausted("not enough free space for the journal of a durable task in " + options_.dir + ": " +
                             std::to_string(*free_bytes) + " bytes free, up to " + std::to_string(need) +
                             " needed for " + std::to_string(tokens) + " tokens");
  }
  if (!journal.ok()) return journal.status();
  return std::optional<TaskJournal>(std::move(journal).value());
}

Result<TaskJournal> TaskDurability::ReopenJournal(const JournalContents& contents) const {
  return TaskJournal::Reopen(dir_, contents, JournalOptions(JournalSync::kEveryRecord));
}

Result<JournalScan> TaskDurability::Scan() const {
  if (options_.dir.empty() || options_.model_fingerprint.empty()) {
    return InvalidArgument("recovering durable tasks needs the scheduler's durable_dir and model_fingerprint");
  }
  if (!dir_) return dir_status_;
  return ListJournals(*dir_, identity_);
}

Status TaskDurability::Ack(const std::string& durable_key) const {
  VALET_RETURN_IF_ERROR(CheckTaskKey(durable_key));
  if (!dir_) return dir_status_;
  VALET_RETURN_IF_ERROR(valet::RemoveCheckpoint(*dir_, durable_key));
  return valet::RemoveJournal(*dir_, durable_key);
}

Status TaskDurability::Forget(TaskJournal& journal, std::string_view durable_key) const {
  VALET_RETURN_IF_ERROR(RemoveCheckpoint(durable_key));
  return journal.Remove();
}

Status TaskDurability::RemoveCheckpoint(std::string_view durable_key) const {
  if (!dir_) return dir_status_;
  return valet::RemoveCheckpoint(*dir_, durable_key);
}

Status TaskDurability::RemoveJournal(std::string_view durable_key) const {
  if (!dir_) return dir_status_;
  return valet::RemoveJournal(*dir_, durable_key);
}

TaskDurability::CheckpointWrite TaskDurability::WriteCheckpoint(std::string_view durable_key,
                                                                std::span<const uint8_t> bytes, FileSync sync) const {
  if (!dir_) return CheckpointWrite::kFailed;
  Result<struct stat> old = dir_->Stat(CheckpointFileName(durable_key));
  const size_t total = DirBytes();
  const size_t used = total - std::min(total, old.ok() ? static_cast<size_t>(old->st_size) : size_t{0});
  if (used + bytes.size() > options_.disk_budget_bytes) return CheckpointWrite::kOverBudget;
  if (!valet::WriteCheckpoint(*dir_, durable_key, identity_, bytes, sync, options_.before_checkpoint_rename).ok()) {
    return CheckpointWrite::kFailed;
  }
  return CheckpointWrite::kWritten;
}

Result<std::vector<uint8_t>> TaskDurability::ReadCheckpoint(std::string_view durable_key, size_t max_bytes) const {
  if (!dir_) return dir_status_;
  return valet::ReadCheckpoint(*dir_, durable_key, identity_, max_bytes);
}

}  // namespace valet
