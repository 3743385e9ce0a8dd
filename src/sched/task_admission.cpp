#include "sched/task_admission.h"

#include <utility>

namespace valet {

Result<TaskId> TaskAdmission::Admit(TaskRequest request, const AdmissionSteps& steps) const {
  AdmittedTask task;
  Result<PreparedTask> prepared = preparer_.Prepare(std::move(request));
  Result<int32_t> max_tokens =
      !prepared.ok() ? Result<int32_t>(prepared.status()) : steps.fit ? steps.fit(*prepared) : Result<int32_t>(0);
  // A durable task is checked and journaled before it is accepted: from then
  // on the app (or an HTTP client told 202) may rely on it surviving a kill.
  Result<std::optional<TaskJournal>> journal = max_tokens.ok()
                                                   ? durable_.StartJournal(prepared->request, engine_.context_length())
                                                   : Result<std::optional<TaskJournal>>(max_tokens.status());
  if (!journal.ok()) {
    recorder_.UpdateStats([](SchedulerStats& s) { ++s.rejected; });
    return journal.status();
  }
  task.prepared = std::move(prepared).value();
  task.journal = std::move(journal).value();
  task.max_tokens = *max_tokens;
  if (steps.before_register) steps.before_register(task.prepared.request);
  std::unique_lock<std::mutex> lock;
  if (steps.lock != nullptr) lock = std::unique_lock<std::mutex>(*steps.lock);
  if (steps.open) {
    if (Status open = steps.open(); !open.ok()) {
      if (task.journal) (void)task.journal->Remove().ok();  // never accepted
      return open;
    }
  }
  task.id = recorder_.Register(task.prepared.request.tier, steps.submitted ? *steps.submitted : clock_());
  const TaskId id = task.id;
  steps.accept(std::move(task));
  return id;
}

}  // namespace valet
