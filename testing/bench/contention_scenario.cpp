// The scenario's workload generator and the two drivers that run an arm.
#include "testing/bench/contention_scenario.h"

#include <chrono>
#include <deque>
#include <thread>
#include <utility>

#include "sched/scheduler_core.h"
#include "testing/bench/contention_session.h"
#include "testing/sched/fake_engine.h"

namespace valet::testing {

namespace {

constexpr const char* kArmNames[] = {"idle", "fifo", "batch", "priority", "valet", "solo"};

// splitmix64: a small, well-mixed, seedable generator.
class WorkloadRng {
 public:
  explicit WorkloadRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  int32_t Jitter(int32_t center, int32_t spread) {
    if (spread <= 0) return center;
    return center - spread + static_cast<int32_t>(Next() % static_cast<uint64_t>(2 * spread + 1));
  }

 private:
  uint64_t state_;
};

std::string Word(WorkloadRng& rng) {
  static constexpr const char* kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "pe",
                                               "or", "an", "el", "is", "um", "the", "and", "for", "ing", "er"};
  std::string w;
  const int n = 1 + static_cast<int>(rng.Next() % 3);
  for (int i = 0; i < n; ++i) w += kSyllables[rng.Next() % (sizeof(kSyllables) / sizeof(kSyllables[0]))];
  return w;
}

std::string JoinWords(const std::vector<std::string>& words, size_t k) {
  std::string t;
  for (size_t i = 0; i < k; ++i) t += (i ? " " : "") + words[i];
  return t;
}

// Text of at least `tokens` tokens (and at most one word more).
Result<std::string> TextOfTokens(int32_t tokens, WorkloadRng& rng, const TokenCounter& count_tokens) {
  std::vector<std::string> words;
  auto reaches = [&](size_t k) -> Result<bool> {
    VALET_ASSIGN_OR_RETURN(int32_t n, count_tokens(JoinWords(words, k)));
    return n >= tokens;
  };
  for (bool enough = false; !enough;) {
    const size_t grow = std::max<size_t>(8, words.size());
    for (size_t i = 0; i < grow; ++i) words.push_back(Word(rng));
    VALET_ASSIGN_OR_RETURN(enough, reaches(words.size()));
  }
  size_t lo = 1, hi = words.size();  // smallest k that reaches `tokens`
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    VALET_ASSIGN_OR_RETURN(bool enough, reaches(mid));
    if (enough) hi = mid; else lo = mid + 1;
  }
  return JoinWords(words, lo);
}

void FlatBudgets(BudgetTable& table, int32_t chunk) {
  for (LifecycleState s : {LifecycleState::kCreated, LifecycleState::kStarted, LifecycleState::kResumed}) {
    for (int t = 0; t < kNumTiers; ++t) {
      TierBudget& b = table.at(s, static_cast<Tier>(t));
      b = TierBudget{};
      b.prefill_chunk = chunk;
    }
  }
}

}  // namespace

const char* ArmName(Arm arm) {
  const int i = static_cast<int>(arm);
  return i >= 0 && i <= kNumArms ? kArmNames[i] : "unknown";
}

Result<std::vector<Arm>> ParseArms(std::string_view list) {
  std::vector<Arm> arms;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string_view name = list.substr(pos, comma - pos);
    bool found = false;
    for (int i = 0; i < kNumArms; ++i) {
      if (name != kArmNames[i]) continue;
      const Arm arm = static_cast<Arm>(i);
      if (std::find(arms.begin(), arms.end(), arm) != arms.end()) return InvalidArgument("arm listed twice: " + std::string(name));
      arms.push_back(arm);
      found = true;
    }
    if (!found) return InvalidArgument("unknown arm '" + std::string(name) + "' (idle, fifo, batch, priority, valet)");
    pos = comma + 1;
  }
  return arms;
}

const char* TaskKindName(TaskKind kind) {
  switch (kind) {
    case TaskKind::kChat: return "chat";
    case TaskKind::kDoc: return "doc";
    case TaskKind::kSummary: return "summary";
    case TaskKind::kSuggestion: return "suggestion";
  }
  return "unknown";
}

std::vector<int32_t> ReturnTurns(int32_t turns, int32_t returns, int32_t block_turns, int32_t low_memory_turn) {
  std::vector<int32_t> eligible;
  for (int32_t t = 1; t < turns; ++t) {
    if ((block_turns <= 0 || t % block_turns != 0) && t != low_memory_turn) eligible.push_back(t);
  }
  const size_t n = std::min(eligible.size(), static_cast<size_t>(std::max(returns, 0)));
  std::vector<int32_t> picked;
  // i * E / n for i < n: distinct, ascending and evenly spaced.
  for (size_t i = 0; i < n; ++i) picked.push_back(eligible[i * eligible.size() / n]);
  return picked;
}

ScenarioConfig Resolve(ScenarioConfig config) {
  if (config.low_memory_turn < 0 && config.turns >= 4) config.low_memory_turn = config.turns * 3 / 4;
  if (config.low_memory_turn >= config.turns) config.low_memory_turn = -1;
  config.return_turns.clear();
  if (config.returns > 0) {
    config.lifecycle_after_turn = -1;  // the many returns replace the single excursion
    config.return_turns = ReturnTurns(config.turns, config.returns, config.block_turns, config.low_memory_turn);
    if (config.hide_trim_level < 0) config.hide_trim_level = static_cast<int32_t>(TrimLevel::kUiHidden);
    return config;
  }
  if (config.hide_trim_level < 0) config.hide_trim_level = 0;
  if (config.lifecycle_after_turn < 0 && config.turns >= 4) config.lifecycle_after_turn = config.turns / 2 - 1;
  if (config.lifecycle_after_turn >= config.turns - 1) config.lifecycle_after_turn = -1;
  return config;
}

Result<Workload> BuildWorkload(const ScenarioConfig& config, const EngineInterface& tokenizer) {
  return BuildWorkload(config, [&tokenizer](const std::string& text) -> Result<int32_t> {
    return static_cast<int32_t>(tokenizer.Tokenize(text, false).size());
  });
}

Result<Workload> BuildWorkload(const ScenarioConfig& config, const TokenCounter& count_tokens) {
  if (config.turns < 1) return InvalidArgument("turns must be >= 1");
  if (config.think_min_s < 0 || config.think_max_s < config.think_min_s) return InvalidArgument("bad think times");
  WorkloadRng rng(config.seed);
  Workload w;
  auto add_text = [&](int32_t tokens, std::vector<std::string>& to) -> Status {
    VALET_ASSIGN_OR_RETURN(std::string text, TextOfTokens(tokens, rng, count_tokens));
    to.push_back(std::move(text));
    return Status::Ok();
  };
  VALET_ASSIGN_OR_RETURN(w.system_prompt, TextOfTokens(config.system_tokens, rng, count_tokens));
  for (int32_t i = 0; i < config.turns; ++i) {
    VALET_RETURN_IF_ERROR(add_text(rng.Jitter(config.user_tokens, config.user_jitter), w.user_texts));
  }
  constexpr int kDocTexts = 6, kSideTexts = 4;
  for (int i = 0; i < kDocTexts; ++i) {
    VALET_RETURN_IF_ERROR(add_text(rng.Jitter(config.doc_tokens, config.doc_jitter), w.doc_texts));
  }
  for (int i = 0; i < kSideTexts; ++i) {
    VALET_RETURN_IF_ERROR(add_text(config.summary_prompt_tokens, w.summary_texts));
    VALET_RETURN_IF_ERROR(add_text(config.suggestion_prompt_tokens, w.suggestion_texts));
  }
  for (int32_t i = 0; i < config.turns; ++i) {
    TurnPlan plan;
    plan.think_s = rng.Uniform(config.think_min_s, config.think_max_s);
    plan.user_text = i;
    if (rng.Uniform(0, 1) < config.summary_chance) {
      SideEvent e;
      e.tier = Tier::kBackgroundSummary;
      e.fraction = rng.Uniform(0.05, 0.6);
      e.text = static_cast<int32_t>(rng.Next() % kSideTexts);
      plan.side.push_back(e);
    }
    if (rng.Uniform(0, 1) < config.suggestion_chance) {
      SideEvent e;
      e.tier = Tier::kInlineSuggestion;
      e.fraction = rng.Uniform(0.05, 0.9);
      e.text = static_cast<int32_t>(rng.Next() % kSideTexts);
      plan.side.push_back(e);
    }
    w.turns.push_back(std::move(plan));
  }
  if (config.doc_instruction_tokens > 0) {
    VALET_ASSIGN_OR_RETURN(w.doc_instruction, TextOfTokens(config.doc_instruction_tokens, rng, count_tokens));
  }
  return w;
}

TaskRequest WarmUpRequest(const Workload& workload) {
  TaskRequest r;
  r.tier = Tier::kForegroundChat;
  r.system_prompt = workload.system_prompt;
  r.messages = {{"user", "hi"}};
  r.max_tokens = 1;
  return r;
}

TaskRequest ChatTurnRequest(const Workload& workload, const ScenarioConfig& config, int32_t turn) {
  const TurnPlan& plan = workload.turns[static_cast<size_t>(turn)];
  TaskRequest r;
  r.tier = Tier::kForegroundChat;
  r.system_prompt = workload.system_prompt;
  r.messages = {{"user", workload.user_texts[static_cast<size_t>(plan.user_text)]}};
  r.max_tokens = config.answer_tokens;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = config.seed * 1000 + static_cast<uint64_t>(turn);
  return r;
}

SchedulerOptions ArmOptions(Arm arm, const ScenarioConfig& config) {
  SchedulerOptions o;
  switch (arm) {
    case Arm::kIdle:
    case Arm::kValet:
      o.queue_policy = QueuePolicy::kValet;
      o.batch_mode = arm == Arm::kValet && config.valet_fill ? BatchMode::kFill : BatchMode::kStrict;
      // The shipped budgets, unless an experiment overrides the chunk of the
      // tiers an arriving chat may have to wait behind.
      if (config.valet_bg_chunk <= 0) break;
      for (LifecycleState s : {LifecycleState::kResumed, LifecycleState::kStarted}) {
        for (Tier t : {Tier::kInlineSuggestion, Tier::kBackgroundSummary, Tier::kOfflineIndexing}) {
          o.budgets.at(s, t).prefill_chunk = config.valet_bg_chunk;
        }
      }
      break;
    case Arm::kFifo:
    case Arm::kSolo:
      o.queue_policy = QueuePolicy::kFifo;
      FlatBudgets(o.budgets, config.baseline_chunk);
      break;
    case Arm::kPriority:
      o.queue_policy = QueuePolicy::kPriorityNoPreempt;
      FlatBudgets(o.budgets, config.baseline_chunk);
      break;
    case Arm::kBatch:
      o.queue_policy = QueuePolicy::kBatchAll;
      FlatBudgets(o.budgets, config.batch_chunk);
      break;
  }
  return o;
}

Workload SliceTurns(const Workload& workload, size_t first, size_t count) {
  Workload s = workload;
  s.turns.assign(workload.turns.begin() + static_cast<ptrdiff_t>(first),
                 workload.turns.begin() + static_cast<ptrdiff_t>(first + count));
  return s;
}

StatsMark MarkFrom(const SchedulerStats& stats, double time) {
  StatsMark m;
  m.time = time;
  for (size_t t = 0; t < kNumTiers; ++t) {
    m.processed[t] = stats.prefill_by_tier[t] + stats.generated_by_tier[t];
    m.led_s[t] = stats.led_seconds_by_tier[t];
    m.riders[t] = stats.rider_tokens_by_tier[t];
  }
  return m;
}

namespace {

class SchedulerSink : public ScenarioSink {
 public:
  SchedulerSink(Scheduler& scheduler, CompletionQueue& done, double slow_listener_s)
      : scheduler_(scheduler), done_(done), slow_listener_s_(slow_listener_s) {}
  Result<TaskId> Submit(TaskRequest request) override {
    CompletionQueue* done = &done_;
    request.callbacks.on_done = [done](TaskId id, const TaskResult& r) { done->Push(id, r); };
    if (slow_listener_s_ > 0 && request.tier >= Tier::kBackgroundSummary) {
      const auto delay = std::chrono::duration<double>(slow_listener_s_);
      // The app's slow consumer: the scene under test, not a synchronisation.
      request.callbacks.on_token = [delay](TaskId, int32_t, std::string_view) { std::this_thread::sleep_for(delay); };
    }
    return scheduler_.Submit(std::move(request));
  }
  Status Lifecycle(LifecycleEvent event) override { return scheduler_.OnLifecycleEvent(event); }
  Status TrimMemory(TrimLevel level) override { return scheduler_.OnTrimMemory(static_cast<int>(level)); }
  SchedulerStats Stats() const override { return scheduler_.Stats(); }

 private:
  Scheduler& scheduler_;
  CompletionQueue& done_;
  double slow_listener_s_;
};

class CoreSink : public ScenarioSink {
 public:
  explicit CoreSink(SchedulerCore& core) : core_(core) {}
  Result<TaskId> Submit(TaskRequest request) override {
    request.callbacks.on_done = [this](TaskId id, const TaskResult& r) { done.emplace_back(id, r); };
    return core_.Submit(std::move(request));
  }
  Status Lifecycle(LifecycleEvent event) override { return core_.OnLifecycleEvent(event); }
  Status TrimMemory(TrimLevel level) override { return core_.memory().OnTrimMemory(level); }
  SchedulerStats Stats() const override { return core_.recorder().Stats(); }

  std::deque<std::pair<TaskId, TaskResult>> done;

 private:
  SchedulerCore& core_;
};

template <typename TimelineFn>
void Finalize(ArmRun& run, const SchedulerStats& stats, TimelineFn timeline) {
  run.stats = stats;
  run.end = run.window_end;
  for (TaskRecord& t : run.tasks) {
    if (Result<std::vector<TimelineEvent>> events = timeline(t.id); events.ok()) t.timeline = std::move(*events);
    if (t.done) run.end = std::max(run.end, t.result.metrics.end_time);
  }
}

}  // namespace

Result<ArmRun> RunArmRealTime(EngineInterface& engine, const Workload& workload, const ScenarioConfig& config,
                              Arm arm, const EngineProbe& probe) {
  SchedulerOptions options = ArmOptions(arm, config);
  options.clock = SteadySeconds;
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Create(engine, std::move(options)));
  const double park0 = probe.park_seconds ? probe.park_seconds() : -1.0;
  const double resume0 = probe.resume_seconds ? probe.resume_seconds() : -1.0;
  if (arm != Arm::kSolo) {
    VALET_RETURN_IF_ERROR(scheduler->Submit(WarmUpRequest(workload)).status());
    scheduler->WaitIdle();
  }
  CompletionQueue done;
  SchedulerSink sink(*scheduler, done, config.slow_listener_s);
  ContentionSession session(workload, config, arm, sink);
  DriveRealTime(session, done);
  scheduler->WaitIdle();
  ArmRun run = std::move(session.run());
  Finalize(run, scheduler->Stats(), [&](TaskId id) { return scheduler->Timeline(id); });
  if (probe.park_seconds) run.park_seconds = probe.park_seconds() - park0;
  if (probe.resume_seconds) run.resume_seconds = probe.resume_seconds() - resume0;
  return run;
}

Result<ArmRun> RunArmVirtual(FakeEngine& engine, const Workload& workload, const ScenarioConfig& config, Arm arm) {
  SchedulerOptions options = ArmOptions(arm, config);
  options.clock = engine.ClockFunction();
  SchedulerCore core(engine, std::move(options));
  if (arm != Arm::kSolo) {
    VALET_RETURN_IF_ERROR(core.Submit(WarmUpRequest(workload)).status());
    core.RunUntilIdle();
  }
  CoreSink sink(core);
  ContentionSession session(workload, config, arm, sink);
  session.Start(engine.clock().Now());
  constexpr int64_t kMaxSteps = 50'000'000;
  for (int64_t steps = 0; steps < kMaxSteps; ++steps) {
    while (!sink.done.empty()) {
      auto [id, result] = std::move(sink.done.front());
      sink.done.pop_front();
      session.OnDone(id, result, engine.clock().Now());
    }
    session.OnTime(engine.clock().Now());
    if (session.Finished()) break;
    if (core.RunOneStep() || !sink.done.empty()) continue;
    const double wake = session.NextWake();
    if (wake == ContentionSession::kNever) return Internal("contention scenario stuck: nothing runs and nothing is due");
    engine.clock().Set(std::max(wake, engine.clock().Now()));
  }
  if (!session.Finished()) return Internal("contention scenario did not finish");
  ArmRun run = std::move(session.run());
  Finalize(run, core.recorder().Stats(), [&](TaskId id) { return core.recorder().Timeline(id); });
  return run;
}

}  // namespace valet::testing
