// Shared helpers for the scheduler tests: a fake engine + core harness that
// records every callback, and the fake engine's output for a prompt run alone
// (derived from FakeEngine::SampleAfter, independently of the scheduler).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sched/scheduler_core.h"
#include "testing/sched/fake_engine.h"
#include "valet/scheduler.h"

namespace valet::testing {

struct Collected {
  std::vector<int32_t> tokens;  // from on_token, in order
  std::string text;
  std::vector<TaskState> states;
  std::optional<TaskResult> result;
  int done_calls = 0;
};

// The tokens a task gets when it runs alone on the fake engine.
inline std::vector<int32_t> ExpectedAlone(const FakeEngine& engine, std::vector<int32_t> history, uint64_t seed,
                                          int32_t max_tokens) {
  std::vector<int32_t> out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const int32_t t = engine.SampleAfter(history, seed);
    out.push_back(t);
    if (t == engine.eos_token()) break;
    history.push_back(t);
  }
  return out;
}

// Raw prompt without a system prompt: BOS + bytes.
inline std::vector<int32_t> ExpectedAlone(const FakeEngine& engine, const std::string& prompt, uint64_t seed,
                                          int32_t max_tokens) {
  return ExpectedAlone(engine, engine.Tokenize(prompt, true), seed, max_tokens);
}

class Harness {
 public:
  explicit Harness(FakeEngineOptions engine_options = {}, SchedulerOptions options = {})
      : engine(engine_options), core(engine, WithClock(std::move(options))) {}

  TaskRequest Request(Tier tier, std::string prompt, int32_t max_tokens, uint64_t seed = 7) {
    TaskRequest r;
    r.tier = tier;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.sampling.seed = seed;
    Attach(r);
    return r;
  }

  void Attach(TaskRequest& r) {
    r.callbacks.on_token = [this](TaskId id, int32_t token, std::string_view text) {
      out[id].tokens.push_back(token);
      out[id].text += text;
    };
    r.callbacks.on_state = [this](TaskId id, TaskState s) { out[id].states.push_back(s); };
    r.callbacks.on_done = [this](TaskId id, const TaskResult& result) {
      out[id].result = result;
      ++out[id].done_calls;
    };
  }

  TaskId Submit(Tier tier, const std::string& prompt, int32_t max_tokens, uint64_t seed = 7) {
    Result<TaskId> id = core.Submit(Request(tier, prompt, max_tokens, seed));
    return id.ok() ? *id : -1;
  }

  // The lead (first item) of every step so far.
  std::vector<TaskId> Leads() const {
    std::vector<TaskId> leads;
    for (const StepTrace& s : core.recorder().Steps()) leads.push_back(s.items.front().task);
    return leads;
  }

  FakeEngine engine;
  SchedulerCore core;
  std::map<TaskId, Collected> out;

 private:
  SchedulerOptions WithClock(SchedulerOptions options) {
    options.clock = engine.ClockFunction();
    return options;
  }
};

}  // namespace valet::testing
