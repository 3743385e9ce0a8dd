// TaskJournaling: durable tasks as they run, recovery after the process
// ended, acknowledgement (docs/durable.md). The files themselves are
// durable/'s (TaskDurability).
#include "sched/task_journaling.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "sched/memory_keeper.h"
#include "sched/task_book.h"

namespace valet {

void TaskJournaling::JournalToken(Task& task, int32_t token, const std::array<uint64_t, 4>& rng) {
  if (!task.journal) return;
  task.unjournaled.push_back(token);
  task.unjournaled_rng.words = rng;
  if (!FlushJournal(task).ok()) return WaitForJournal(task);
  // The disk takes writes again: whatever waited for it may go on.
  TryJournalsAgain();
}

Status TaskJournaling::FlushJournal(Task& task) {
  TaskJournal& journal = *task.journal;
  if (!task.unjournaled.empty()) {
    VALET_RETURN_IF_ERROR(journal.AppendTokens(task.unjournaled, task.unjournaled_rng));
    task.unjournaled.clear();
  }
  if (!task.unjournaled_end) return Status::Ok();
  const Task::End& end = *task.unjournaled_end;
  // A Done record written but not synced is finished already: only the sync is left.
  if (journal.finished()) return journal.Sync();
  return journal.MarkDone({end.state, end.reason, end.status.message()});
}

bool TaskJournaling::JournalEnd(Task& task, TaskState state, const Status& status, StopReason reason) {
  if (!task.journal) return true;
  if (state == TaskState::kCancelled) {
    // The app's cancel forgets the task, whatever the disk says; a journal
    // that cannot be removed is counted (recovery would resume it).
    if (!s_.durable.Forget(*task.journal, task.durable_key).ok()) s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.journal_errors; });
    task.journal.reset();
    return true;
  }
  task.unjournaled_end = Task::End{state, status, reason};
  if (!FlushJournal(task).ok()) return false;
  // Its KV is not needed any more, and its end is on the device.
  if (!s_.durable.RemoveCheckpoint(task.durable_key).ok()) {
    s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.journal_errors; });
  }
  task.journal.reset();
  task.unjournaled_end.reset();
  return true;
}

void TaskJournaling::WaitForJournal(Task& task) {
  const bool newly = s_.journal_waiting.insert(task.id).second;
  s_.recorder.UpdateStats([&](SchedulerStats& s) {
    ++s.journal_errors;
    if (newly) ++s.journal_waits;
  });
  s_.queue.Erase(task.id);
  s_.held.erase(task.id);
  s_.behind.erase(task.id);
  // Only its end waits: its KV is not needed any more.
  if (task.unjournaled_end && task.seq_open) {
    (void)engine_.CloseSequence(task.seq).ok();
    task.seq_open = false;
    task.active = false;
  }
  if (task.active) return;  // parked before the next step (HoldReason)
  s_.recorder.SetParkCause(task.id, ParkCause::kJournalIo);
  book_.SetState(task, TaskState::kParked);
}

void TaskJournaling::RetryJournals() {
  TryJournalsAgain();
  book_.Deliver();
}

void TaskJournaling::TryJournalsAgain() {
  if (s_.journal_waiting.empty() || retrying_journals_) return;
  retrying_journals_ = true;
  std::vector<TaskId> ids(s_.journal_waiting.begin(), s_.journal_waiting.end());
  std::sort(ids.begin(), ids.end());
  for (TaskId id : ids) {
    Task* task = book_.Find(id);
    if (task == nullptr || !FlushJournal(*task).ok()) continue;
    s_.journal_waiting.erase(id);
    if (task->unjournaled_end) {
      const Task::End end = *task->unjournaled_end;
      book_.Finish(*task, end.state, end.status, end.reason);  // its end is written now
    } else if (s_.governor.MayRun(task->tier)) {
      s_.queue.Push(id, book_.KeyFor(*task));
    } else {
      s_.held.insert(id);
    }
  }
  retrying_journals_ = false;
}

void TaskJournaling::Checkpoint(Task& task, FileSync sync) {
  if (!task.journal || !task.seq_open) return;
  Result<SequenceInfo> info = engine_.Info(task.seq);
  if (!info.ok() || info->n_tokens <= task.checkpoint_tokens) return;
  Result<std::vector<uint8_t>> bytes = engine_.ExportSequence(task.seq);
  if (!bytes.ok()) return;  // no KV to export (parked without it) or an engine without checkpoints
  const TaskDurability::CheckpointWrite written = s_.durable.WriteCheckpoint(task.durable_key, *bytes, sync);
  if (written == TaskDurability::CheckpointWrite::kOverBudget) return;  // recovery recomputes instead
  if (written == TaskDurability::CheckpointWrite::kFailed) {
    s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.journal_errors; });
    return;
  }
  task.checkpoint_tokens = info->n_tokens;
  s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.durable_checkpoints; });
}

void TaskJournaling::CheckpointAll(FileSync sync) {
  for (auto& [id, task] : s_.tasks) Checkpoint(*task, sync);
}

void TaskJournaling::RestoreCheckpoint(Task& task) {
  task.restore_checkpoint = false;
  Result<std::vector<uint8_t>> bytes = s_.durable.ReadCheckpoint(task.durable_key, engine_.MaxExportBytes());
  if (!bytes.ok()) return;  // none, or damaged: the tokens are fed instead
  std::vector<int32_t> expected = task.spec.shared_prefix;
  expected.insert(expected.end(), task.prompt.begin(), task.prompt.end());
  Result<int32_t> n = engine_.ImportSequence(task.seq, *bytes, expected);
  if (!n.ok()) return;
  task.prompt_pos = *n - static_cast<int32_t>(task.spec.shared_prefix.size());
  task.checkpoint_tokens = *n;
  s_.recorder.UpdateStats([&](SchedulerStats& s) { s.durable_restored_tokens += *n; });
}

void TaskJournaling::SyncJournals() {
  for (auto& [id, task] : s_.tasks) {
    if (task->journal && !task->journal->Sync().ok()) {
      s_.recorder.UpdateStats([](SchedulerStats& s) { ++s.journal_errors; });
    }
  }
}

void TaskJournaling::DetachJournals() {
  SyncJournals();
  for (auto& [id, task] : s_.tasks) task->journal.reset();
}

bool TaskJournaling::Replay(Task& task, const std::vector<int32_t>& tokens) {
  for (int32_t token : tokens) {
    task.tokens.push_back(token);
    const StopDecision decision = task.stop->Feed(token, engine_.TokenPiece(token));
    task.text += decision.text;
    if (decision.stopped()) {
      // Killed between its last token and the record of its end.
      book_.Finish(task, TaskState::kDone, Status::Ok(), decision.reason);
      return false;
    }
  }
  return true;
}

Result<RecoveryReport> TaskJournaling::Recover(const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for) {
  VALET_ASSIGN_OR_RETURN(JournalScan scan, s_.durable.Scan());
  RecoveryReport report;
  for (SkippedJournalFile& skipped : scan.skipped) report.skipped.emplace_back(skipped.path, skipped.why);
  for (JournalContents& c : scan.journals) {
    RecoveredTask r;
    r.durable_key = c.task_key;
    r.tier = c.request.tier;
    r.tokens = c.tokens;
    const bool live = std::any_of(s_.tasks.begin(), s_.tasks.end(),
                                  [&](const auto& t) { return t.second->durable_key == c.task_key; });
    if (live) continue;  // recovered already
    if (c.finished()) {
      r.state = c.end->state;
      r.stop_reason = c.end->stop_reason;
      r.error = c.end->error;
      report.tasks.push_back(std::move(r));
      continue;
    }
    ResumeJournaled(c, callbacks_for, r);
    report.tasks.push_back(std::move(r));
  }
  book_.Deliver();
  return report;
}

void TaskJournaling::ResumeJournaled(JournalContents& c,
                                    const std::function<TaskCallbacks(const RecoveredTask&)>& callbacks_for,
                                    RecoveredTask& r) {
  // Registered first, so the callbacks know the task by the id it runs under.
  r.id = s_.recorder.Register(c.request.tier, s_.Now());
  TaskRequest request = c.request;
  request.durable = true;
  request.durable_key = c.task_key;
  if (callbacks_for) request.callbacks = callbacks_for(r);
  const TaskCallbacks callbacks = request.callbacks;
  Result<PreparedTask> prepared = s_.preparer.Prepare(std::move(request));
  Result<int32_t> max_tokens = prepared.ok() ? memory_.FitPool(*prepared) : Result<int32_t>(prepared.status());
  Result<TaskJournal> journal = max_tokens.ok()
                                    ? s_.durable.ReopenJournal(c)
                                    : Result<TaskJournal>(max_tokens.status());
  if (!journal.ok()) {
    // Kept for the app to see and acknowledge (a model that changed its context, say).
    (void)book_.FailRegistered(r.id, callbacks, journal.status(), c.task_key);  // no cancel can precede recovery
    r.state = TaskState::kFailed;
    r.error = journal.status().ToString();
    return;
  }
  // The tokens it had generated are fed again as prompt; the sampler goes on
  // from the state the journal kept after the last of them.
  if (!c.tokens.empty()) {
    prepared->spec.resume_generated = c.tokens;
    prepared->spec.resume_rng = c.rng.words;
    prepared->prompt.insert(prepared->prompt.end(), c.tokens.begin(), c.tokens.end());
  }
  book_.Enqueue(r.id, std::move(prepared).value(), *max_tokens, std::move(journal).value());
  Task& task = *book_.Find(r.id);
  task.restore_checkpoint = true;
  if (!Replay(task, c.tokens)) r.state = TaskState::kDone;
}

Status TaskJournaling::Ack(const std::string& durable_key) {
  if (!s_.durable.has_dir()) return InvalidArgument("the scheduler has no durable_dir");
  for (const auto& [id, task] : s_.tasks) {
    if (task->durable_key == durable_key) {
      return InvalidArgument("durable task '" + durable_key + "' is still running (task " + std::to_string(id) + ")");
    }
  }
  return s_.durable.Ack(durable_key);
}

}  // namespace valet
