// Thousands of random event sequences (submits, cancels, lifecycle events,
// steps; under memory pressure also trim-memory requests and new budgets)
// against the core on the fake engine, checking the invariants:
// every task ends DONE unless the app cancelled it; every stream is exactly
// the task's output run alone (no token lost or duplicated); tier order holds
// at every step; state changes follow the lifecycle; errors are the right ones.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <set>

#include "sched_test_util.h"

namespace valet {
using namespace valet::testing;
namespace {

using testing::ExpectedAlone;
using testing::Harness;

struct Model {
  std::vector<int32_t> history;  // prompt as the engine sees it
  uint64_t seed = 0;
  int32_t max_tokens = 0;
  Tier tier = Tier::kForegroundChat;
  bool cancelled = false;
  bool finished = false;
};

bool AllowedTransition(TaskState from, TaskState to) {
  using S = TaskState;
  if (IsTerminal(from)) return false;
  if (to == S::kCancelled) return true;
  switch (from) {
    case S::kQueued: return to == S::kPrefilling;
    case S::kPrefilling: return to == S::kParked || to == S::kDecoding || to == S::kDone;
    case S::kParked: return to == S::kPrefilling || to == S::kDecoding;
    case S::kDecoding: return to == S::kParked || to == S::kDone;
    default: return false;
  }
}

std::string RandomText(std::mt19937_64& rng, int min_len, int max_len) {
  const int n = min_len + static_cast<int>(rng() % static_cast<uint64_t>(max_len - min_len + 1));
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + rng() % 26));
  return s;
}

// What the sequences exercised, so the test cannot pass vacuously.
struct Coverage {
  int64_t parks_by_kind[5] = {};
  int64_t batched_steps = 0;
  int64_t cancelled = 0;
  int64_t destroyed = 0;
  int64_t tasks = 0;
  int64_t refused = 0;  // too big for the pool even alone
  int64_t trims = 0;
  int64_t budget_changes = 0;
};
Coverage g_coverage;

// Memory pressure: a pool a few tasks fill, tasks up to its whole size, and
// the app trimming memory and changing budgets between steps.
struct Pressure {
  bool on = false;
  int32_t pool_tokens() const { return 64; }
};

// What the core must answer for a pool of `pool_tokens`: a task fits when
// its tokens plus the copy-on-write block fit (the fake's "block" is a token).
bool FitsAlone(const Model& m, int64_t pool_tokens) {
  return static_cast<int64_t>(m.history.size()) + m.max_tokens + 1 <= pool_tokens;
}

void RunSequence(uint64_t seed, const Pressure& pressure) {
  std::mt19937_64 rng(seed);
  FakeEngineOptions eo;
  eo.max_step_tokens = 64;
  eo.pool_capacity_bytes = (rng() % 2 == 0 ? 4096 : 200) * eo.kv_bytes_per_token;
  if (pressure.on) eo.pool_capacity_bytes = static_cast<size_t>(pressure.pool_tokens() + rng() % 64) * eo.kv_bytes_per_token;
  int64_t pool_tokens = static_cast<int64_t>(eo.pool_capacity_bytes / eo.kv_bytes_per_token);
  eo.eos_one_in = rng() % 2 == 0 ? 0 : 16;
  SchedulerOptions so;
  so.park_policy = static_cast<ParkPolicy>(rng() % 6);
  so.batch_mode = rng() % 2 == 0 ? BatchMode::kStrict : BatchMode::kFill;
  const LifecycleState starts[] = {LifecycleState::kResumed, LifecycleState::kStarted, LifecycleState::kCreated};
  so.initial_state = starts[rng() % 3];
  if (rng() % 2 == 0) {
    so.budgets.at(LifecycleState::kStarted, static_cast<Tier>(rng() % kNumTiers)).state_cap_tokens =
        static_cast<int64_t>(rng() % 30);
  }
  Harness h(eo, so);
  std::map<TaskId, Model> models;
  LifecycleState state = so.initial_state;
  LifecycleHistory history = LifecycleHistory::kNoEventYet;
  const std::string systems[] = {"system prompt one", "another system prompt"};
  const int events = 20 + static_cast<int>(rng() % 40);
  for (int e = 0; e < events; ++e) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 4) {
      Model m;
      m.tier = static_cast<Tier>(rng() % kNumTiers);
      m.seed = rng();
      m.max_tokens = 1 + static_cast<int32_t>(rng() % (pressure.on ? 60 : 20));
      const std::string prompt = RandomText(rng, 1, pressure.on ? 60 : 30);
      TaskRequest r = h.Request(m.tier, prompt, m.max_tokens, m.seed);
      if (rng() % 4 == 0) {
        r.system_prompt = systems[rng() % 2];
        m.history = h.engine.Tokenize(r.system_prompt + "\n\n", true);
        const std::vector<int32_t> own = h.engine.Tokenize(prompt, false);
        m.history.insert(m.history.end(), own.begin(), own.end());
      } else {
        m.history = h.engine.Tokenize(prompt, true);
      }
      if (rng() % 20 == 0) {
        r.max_tokens = -1;
        ASSERT_EQ(h.core.Submit(std::move(r)).status().code(), StatusCode::kInvalidArgument);
        continue;
      }
      Result<TaskId> id = h.core.Submit(std::move(r));
      if (!FitsAlone(m, pool_tokens)) {
        ASSERT_EQ(id.status().code(), StatusCode::kResourceExhausted) << "seed " << seed;
        ++g_coverage.refused;
        continue;
      }
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      models[*id] = m;
    } else if (kind < 5) {
      const TaskId id = static_cast<TaskId>(rng() % (models.size() + 3));
      auto it = models.find(id);
      const bool finished = it != models.end() && h.out[id].done_calls > 0;
      const Status s = h.core.Cancel(id);
      if (it == models.end()) {
        ASSERT_EQ(s.code(), StatusCode::kNotFound);
      } else if (finished) {
        ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
      } else {
        ASSERT_TRUE(s.ok());
        it->second.cancelled = true;
      }
    } else if (kind < 6) {
      const LifecycleEvent ev = static_cast<LifecycleEvent>(rng() % 6);
      Result<LifecycleState> next = NextLifecycleState(state, ev, history);
      ASSERT_EQ(h.core.OnLifecycleEvent(ev).ok(), next.ok());
      if (next.ok()) state = *next;
      if (next.ok()) history = LifecycleHistory::kEventsSeen;
      if (next.ok() && state == LifecycleState::kDestroyed) ++g_coverage.destroyed;
      ASSERT_EQ(h.core.lifecycle_state(), state);
    } else if (pressure.on && kind < 7) {
      if (rng() % 3 != 0) {
        const int levels[] = {5, 10, 15, 20, 40, 60, 80, 7, 100};
        ASSERT_TRUE(h.core.memory().OnTrimMemory(*TrimLevelFromInt(levels[rng() % 9])).ok());
        ++g_coverage.trims;
        continue;
      }
      int64_t largest = 0;
      for (const auto& [id, m] : models) {
        if (h.out[id].done_calls == 0) largest = std::max<int64_t>(largest, static_cast<int64_t>(m.history.size()) + m.max_tokens);
      }
      const int64_t tokens = pressure.pool_tokens() + static_cast<int64_t>(rng() % 96);
      MemoryBudgets b;
      b.pool_bytes = static_cast<size_t>(tokens) * eo.kv_bytes_per_token;
      b.snapshot_ram_bytes = static_cast<size_t>(rng() % 64) * eo.kv_bytes_per_token;
      const Status st = h.core.memory().SetMemoryBudgets(b);
      ASSERT_EQ(st.ok(), largest == 0 || largest + 1 <= tokens) << st.ToString() << " seed " << seed;
      if (st.ok()) {
        pool_tokens = tokens;
        ++g_coverage.budget_changes;
      }
    } else {
      const int steps = 1 + static_cast<int>(rng() % 6);
      for (int s = 0; s < steps; ++s) {
        int best = kNumTiers;
        for (const auto& [id, m] : models) {
          if (h.out[id].done_calls == 0 && h.core.governor().MayRun(m.tier)) best = std::min(best, static_cast<int>(m.tier));
        }
        const size_t before = h.core.recorder().Steps().size();
        const bool ran = h.core.RunOneStep();
        const std::vector<StepTrace> trace = h.core.recorder().Steps();
        ASSERT_EQ(ran, best < kNumTiers);
        if (ran) {
          ASSERT_EQ(trace.size(), before + 1);
          ASSERT_EQ(static_cast<int>(trace.back().items.front().tier), best) << "seed " << seed;
        }
      }
    }
  }
  // Bring the app back to the front; everything left must finish.
  const LifecycleEvent path[] = {LifecycleEvent::kOnCreate, LifecycleEvent::kOnStart, LifecycleEvent::kOnResume};
  for (LifecycleEvent ev : path) {
    if (NextLifecycleState(state, ev).ok()) {
      ASSERT_TRUE(h.core.OnLifecycleEvent(ev).ok());
      state = *NextLifecycleState(state, ev);
    }
  }
  ASSERT_EQ(state, LifecycleState::kResumed);
  h.core.RunUntilIdle();
  EXPECT_EQ(h.core.live_tasks(), 0u);
  EXPECT_EQ(h.engine.open_sequences(), 0u);
  const SchedulerStats stats = h.core.recorder().Stats();
  EXPECT_EQ(stats.failed, 0) << "seed " << seed;
  for (int k = 0; k < 5; ++k) g_coverage.parks_by_kind[k] += stats.parks_by_kind[static_cast<size_t>(k)];
  g_coverage.batched_steps += stats.batched_steps;
  g_coverage.cancelled += stats.cancelled;
  g_coverage.tasks += static_cast<int64_t>(models.size());
  for (const auto& [id, m] : models) {
    const testing::Collected& c = h.out[id];
    ASSERT_EQ(c.done_calls, 1) << "seed " << seed << " task " << id;
    const std::vector<int32_t> alone = ExpectedAlone(h.engine, m.history, m.seed, m.max_tokens);
    EXPECT_EQ(c.tokens, c.result->tokens);
    if (m.cancelled) {
      EXPECT_EQ(c.result->state, TaskState::kCancelled);
      ASSERT_LE(c.tokens.size(), alone.size());
      EXPECT_TRUE(std::equal(c.tokens.begin(), c.tokens.end(), alone.begin())) << "seed " << seed;
    } else {
      EXPECT_EQ(c.result->state, TaskState::kDone) << "seed " << seed << " task " << id;
      EXPECT_EQ(c.tokens, alone) << "seed " << seed << " task " << id;
    }
    TaskState prev = TaskState::kQueued;
    for (TaskState s : c.states) {
      EXPECT_TRUE(AllowedTransition(prev, s)) << TaskStateName(prev) << " -> " << TaskStateName(s) << " seed " << seed;
      prev = s;
    }
  }
}

TEST(SchedulerRandom, InvariantsHoldOverThousandsOfEventSequences) {
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    RunSequence(seed, Pressure{});
    if (::testing::Test::HasFailure()) break;
  }
  for (int k = 0; k < 5; ++k) EXPECT_GT(g_coverage.parks_by_kind[k], 0) << "park kind " << k;
  EXPECT_GT(g_coverage.batched_steps, 0);
  EXPECT_GT(g_coverage.cancelled, 0);
  EXPECT_GT(g_coverage.destroyed, 0);
  std::cout << "random sequences: " << g_coverage.tasks << " tasks, parks by kind";
  for (int64_t n : g_coverage.parks_by_kind) std::cout << " " << n;
  std::cout << ", batched steps " << g_coverage.batched_steps << ", cancelled " << g_coverage.cancelled
            << ", destroys " << g_coverage.destroyed << "\n";
}

TEST(SchedulerRandom, UnderMemoryPressureNoTaskFailsOrLosesATokenAndTheOversizedAreRefused) {
  g_coverage = Coverage{};
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    RunSequence(seed, Pressure{true});
    if (::testing::Test::HasFailure()) break;
  }
  for (int k = 0; k < 5; ++k) EXPECT_GT(g_coverage.parks_by_kind[k], 0) << "park kind " << k;
  EXPECT_GT(g_coverage.refused, 0);
  EXPECT_GT(g_coverage.trims, 0);
  EXPECT_GT(g_coverage.budget_changes, 0);
  EXPECT_GT(g_coverage.cancelled, 0);
  std::cout << "under pressure: " << g_coverage.tasks << " tasks, " << g_coverage.refused << " refused, "
            << g_coverage.trims << " trims, " << g_coverage.budget_changes << " budget changes, parks by kind";
  for (int64_t n : g_coverage.parks_by_kind) std::cout << " " << n;
  std::cout << "\n";
}

}  // namespace
}  // namespace valet
