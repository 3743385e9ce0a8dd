// The step: pick the lead (head of the (tier, ticket) heap whose tier is
// under its state cap), let the batch policy add riders, park every other
// running task (the preemption controller picks how), resume/open the lead,
// run one engine step (a prefill/recompute chunk or a decode token), deliver
// tokens, finish tasks, and rotate the lead when its turn is over; and
// QueuePolicy::kBatchAll's step. Part of SchedulerCore
// (sched/scheduler_state.h); inference thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "sched/scheduler_state.h"

namespace valet {

class MemoryKeeper;
class TaskBook;
class TaskJournaling;

class StepRunner {
 public:
  StepRunner(SchedulerState& state, TaskBook& book, MemoryKeeper& memory, TaskJournaling& journals)
      : s_(state), engine_(state.engine), governor_(state.governor), book_(book), memory_(memory), journals_(journals) {}
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  void set_arrival_signals(ArrivalSignals signals) { arrivals_ = signals; }
  // Runs one engine step; false when nothing is runnable (idle).
  bool RunOneStep();

 private:
  struct StepPlan {
    std::vector<Task*> tasks;  // parallel to items
    std::vector<StepItem> items;
    std::vector<StepItemKind> kinds;
  };

  Task* PickLead();
  std::vector<Task*> PlanRiders(const Task& lead);
  void DisplaceOthers(const Task& lead, const std::vector<Task*>& riders);
  // Whether the lead can run: kNoRoom leaves it waiting (queued or parked)
  // until the app or finishing work changes the memory picture.
  enum class Activation { kReady, kFinished, kNoRoom };
  // `keep`: tasks that must not be evicted to make room.
  Activation Activate(Task& task, const std::vector<const Task*>& keep);
  Activation OpenSequence(Task& task, const std::vector<const Task*>& keep);
  Activation ResumeTask(Task& task, const std::vector<const Task*>& keep);
  void ApplyThreads(Tier tier);
  // Lends the engine `flag` for one step. The flag belongs to this scheduler;
  // the engine may outlive it.
  struct ScopedAbortFlag {
    ScopedAbortFlag(EngineInterface& engine, const std::atomic<bool>* flag) : engine(engine) {
      engine.SetAbortFlag(flag);
    }
    ~ScopedAbortFlag() { engine.SetAbortFlag(nullptr); }
    ScopedAbortFlag(const ScopedAbortFlag&) = delete;
    ScopedAbortFlag& operator=(const ScopedAbortFlag&) = delete;
    EngineInterface& engine;
  };
  Result<StepResult> RunStep(Task& lead, std::vector<Task*>& riders, StepPlan& plan);
  void OnStepError(const StepPlan& plan, const Status& status);
  void BuildItems(Task& lead, const std::vector<Task*>& riders, StepPlan& plan) const;
  // The task's next item: a recompute or prompt chunk of at most `limit`
  // tokens (a short rest rides along up to `cap`), or its pending decode token.
  StepItem NextItem(Task& task, int32_t limit, int32_t cap, StepItemKind* kind) const;
  void AddItem(Task& task, const StepItem& item, StepItemKind kind, StepPlan& plan) const;

  // QueuePolicy::kBatchAll.
  bool RunBatchAllStep();
  std::vector<Task*> AdmitBatchMembers();
  void BuildBatchAllItems(const std::vector<Task*>& members, StepPlan& plan) const;
  Result<StepResult> RunBatchAll(std::vector<Task*>& members, StepPlan& plan);
  void ApplyStep(StepPlan& plan, StepResult& result);
  void OnToken(Task& task, StepOutput& output, double now);
  // Names the tokens, queues on_logprobs and keeps them for the result.
  void DeliverLogprobs(Task& task, TokenLogprobs logprobs);
  // Prompt tokens count toward the tier's budgets at prompt_token_weight.
  void ChargePrompt(Task& task, int32_t tokens);
  void EndTurnIfDue(Task& lead);

  SchedulerState& s_;
  EngineInterface& engine_;
  Governor& governor_;
  TaskBook& book_;
  MemoryKeeper& memory_;
  TaskJournaling& journals_;
  ArrivalSignals arrivals_;
  StepThreads applied_threads_{-1, 0, CoreClass::kAll};  // none yet
};

}  // namespace valet
