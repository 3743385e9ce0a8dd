// The one way a task enters the scheduler, for SchedulerCore::Submit (on the
// inference thread, or a test's) and the threaded Scheduler::Submit (on the
// app's thread): the request is prepared (rendered, tokenized, checked), the
// scheduler may check it further (the core: does the KV pool hold it), a
// durable task's journal is created (from then on a kill cannot lose it),
// and the task is registered under an id and handed on.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "durable/task_durability.h"
#include "engine/engine_interface.h"
#include "sched/recorder.h"
#include "sched/task_preparer.h"
#include "valet/status.h"
#include "valet/task.h"

namespace valet {

// A task that passed admission, as it is handed on.
struct AdmittedTask {
  TaskId id = 0;
  PreparedTask prepared;
  std::optional<TaskJournal> journal;  // a durable task's
  int32_t max_tokens = 0;              // from AdmissionSteps::fit; 0 without one
};

// What a caller adds to admission.
struct AdmissionSteps {
  // After preparation, before the journal: the task's max_tokens, or why it
  // cannot run. Empty: checked later (the threaded scheduler's inference
  // thread does, in SchedulerCore::Admit).
  std::function<Result<int32_t>(const PreparedTask&)> fit;
  // Held while `open` is asked, the task registered and `accept` called:
  // registering under the inbox lock keeps id order equal to arrival order.
  std::mutex* lock = nullptr;
  // Whether tasks are taken now (a stopped scheduler's are not); a refusal
  // removes the journal and is returned, uncounted. Empty: always.
  std::function<Status()> open;
  // The submission's time for the task's metrics; none: when registered.
  std::optional<double> submitted;
  // Before registering, outside the lock: the threaded scheduler wraps the
  // callbacks for its delivery threads.
  std::function<void(TaskRequest&)> before_register;
  // Takes the registered task (AdmittedTask::id set).
  std::function<void(AdmittedTask)> accept;
};

class TaskAdmission {
 public:
  TaskAdmission(const EngineInterface& engine, const TaskPreparer& preparer, const TaskDurability& durable,
                Recorder& recorder, std::function<double()> clock)
      : engine_(engine), preparer_(preparer), durable_(durable), recorder_(recorder), clock_(std::move(clock)) {}

  // Prepares, checks, journals and registers `request`, then hands it to
  // steps.accept. An error before registering leaves no trace but the
  // rejected counter (SchedulerStats::rejected).
  Result<TaskId> Admit(TaskRequest request, const AdmissionSteps& steps) const;

 private:
  const EngineInterface& engine_;  // its context bounds a max_tokens 0 task's journal
  const TaskPreparer& preparer_;
  const TaskDurability& durable_;
  Recorder& recorder_;
  std::function<double()> clock_;
};

}  // namespace valet
