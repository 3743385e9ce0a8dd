#include "sched/scheduler_state.h"

#include <chrono>
#include <utility>

namespace valet {
namespace {

double SteadySeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

DurableOptions DurableOptionsOf(const SchedulerOptions& options) {
  return {.dir = options.durable_dir,
          .model_fingerprint = options.model_fingerprint,
          .disk_budget_bytes = options.durable_disk_budget_bytes,
          .before_journal_append = options.durable_write_hooks.before_journal_append,
          .before_checkpoint_rename = options.durable_write_hooks.before_checkpoint_rename};
}

// The identity journals are written and read with; none without a directory.
JournalIdentity IdentityOf(const EngineInterface& engine, const SchedulerOptions& options) {
  if (options.durable_dir.empty()) return {};
  return SchedulerJournalIdentity(engine, options.model_fingerprint, options.parse_special_in_messages);
}

}  // namespace

SchedulerState::SchedulerState(EngineInterface& engine, SchedulerOptions options_in)
    : engine(engine),
      options(std::move(options_in)),
      clock(options.clock ? options.clock : std::function<double()>(SteadySeconds)),
      recorder(RecorderLimits{.finished_tasks = options.finished_task_records}),
      preparer(engine, {.literal_content = !options.parse_special_in_messages}),
      governor(options.budgets, options.initial_state, options.initial_power),
      preemption(options.park_policy),
      batch(options.batch_mode, options.fill_max_cost_fraction),
      budgets(engine.memory_budgets()),
      durable(DurableOptionsOf(options), IdentityOf(engine, options)),
      admission(engine, preparer, durable, recorder, clock) {}

}  // namespace valet
