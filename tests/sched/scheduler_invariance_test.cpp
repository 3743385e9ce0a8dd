// Batch-invariant numerics end to end, on the real engine: seeded,
// temperature-sampled tasks produce the same tokens alone and under random
// contention — whatever shares their steps (fill riders, the batch-all
// policy), however their prompts are chunked (random prefill chunks per
// tier), with whatever thread count a tier runs at, and however they are
// parked (every park kind, and the cost model's own choice) and resumed.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <unistd.h>

#include "engine/real_engine.h"
#include "sched/scheduler_core.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

struct Plan {
  TaskRequest request;
  int32_t arrive_after_steps = 0;  // steps run before this task is submitted
};

const char* const kWords[] = {" the", " little", " dog", " ran", " home", " and", " she", " was", " happy",
                              " to", " see", " a", " big", " red", " ball", " in", " park", " sun"};

std::string Words(std::mt19937& rng, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kWords[rng() % std::size(kWords)];
  return s;
}

// Six tasks of random tiers and lengths; half share a system prompt (its KV
// is computed once, in whichever task's step shape comes first).
std::vector<Plan> MakePlans(uint32_t seed) {
  std::mt19937 rng(seed);
  const std::string system = "Once upon a time" + Words(rng, 6) + ".";
  std::vector<Plan> plans;
  for (int i = 0; i < 6; ++i) {
    Plan p;
    p.request.tier = static_cast<Tier>(rng() % kNumTiers);
    if (rng() % 2 == 0) p.request.system_prompt = system;
    p.request.prompt = Words(rng, 3 + static_cast<int>(rng() % 24));
    p.request.max_tokens = 6 + static_cast<int32_t>(rng() % 8);
    p.request.sampling.temperature = 0.9f;
    p.request.sampling.seed = seed * 100 + static_cast<uint64_t>(i);
    p.arrive_after_steps = i == 0 ? 0 : static_cast<int32_t>(rng() % 6);
    plans.push_back(std::move(p));
  }
  return plans;
}

struct Outcome {
  std::map<TaskId, std::vector<int32_t>> tokens;
  std::map<TaskId, TaskState> state;
  std::array<int64_t, 5> parks{};
};

// Submits the plans in order, each after its steps; runs to the end.
Outcome RunPlans(EngineInterface& engine, const SchedulerOptions& options, const std::vector<Plan>& plans,
             std::vector<TaskId>* ids) {
  Outcome run;
  SchedulerCore core(engine, options);
  for (const Plan& p : plans) {
    for (int32_t s = 0; s < p.arrive_after_steps; ++s) core.RunOneStep();
    TaskRequest r = p.request;
    r.callbacks.on_token = [&run](TaskId id, int32_t token, std::string_view) { run.tokens[id].push_back(token); };
    r.callbacks.on_done = [&run](TaskId id, const TaskResult& res) { run.state[id] = res.state; };
    Result<TaskId> id = core.Submit(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ids->push_back(id.ok() ? *id : 0);
  }
  core.RunUntilIdle();
  const SchedulerStats stats = core.recorder().Stats();
  for (size_t k = 0; k < run.parks.size(); ++k) run.parks[k] = stats.parks_by_kind[k];
  return run;
}

class InvarianceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = std::string(VALET_SHARED_DIR) + "/models/" + GetParam();
    if (!fs::exists(model_)) GTEST_SKIP() << "needs " << model_ << " (../shared)";
    dir_ = ::testing::TempDir() + "/valet_invariance_" + std::to_string(::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<RealEngine> Open(size_t pool_bytes) {
    RealEngineOptions o;
    o.engine.model_path = model_;
    o.engine.n_threads = 2;
    o.engine.kv_capacity_bytes = pool_bytes;
    o.store.disk_dir = dir_;
    o.calibrate = false;
    Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(o);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(*engine) : nullptr;
  }

  std::string model_, dir_;
};

// Random chunking, threads and batching for one contended run.
SchedulerOptions RandomOptions(std::mt19937& rng, ParkPolicy park) {
  SchedulerOptions o;
  o.park_policy = park;
  o.queue_policy = rng() % 3 == 0 ? QueuePolicy::kBatchAll : QueuePolicy::kValet;
  o.batch_mode = BatchMode::kFill;
  o.fill_max_cost_fraction = 10.0;  // riders always join: steps are shared as often as possible
  for (LifecycleState state : {LifecycleState::kCreated, LifecycleState::kStarted, LifecycleState::kResumed}) {
    for (int t = 0; t < kNumTiers; ++t) {
      TierBudget& b = o.budgets.at(state, static_cast<Tier>(t));
      b.prefill_chunk = 1 + static_cast<int32_t>(rng() % 24);
      b.threads = 1 + static_cast<int32_t>(rng() % 2);
      b.turn_tokens = 2 + static_cast<int32_t>(rng() % 6);  // equal tiers take turns: more parks
    }
  }
  return o;
}

TEST_P(InvarianceTest, SampledTokensAloneEqualTokensUnderContention) {
  std::unique_ptr<RealEngine> engine = Open(4u << 20);
  ASSERT_NE(engine, nullptr);
  std::array<int64_t, 5> parks{};
  int64_t tasks = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {  // each park policy once
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::vector<Plan> plans = MakePlans(seed);
    // Alone: one task at a time, in a scheduler of its own, default options.
    std::vector<std::vector<int32_t>> alone;
    for (const Plan& p : plans) {
      std::vector<TaskId> ids;
      Plan solo = p;
      solo.arrive_after_steps = 0;
      Outcome r = RunPlans(*engine, {}, {solo}, &ids);
      ASSERT_EQ(r.state[ids[0]], TaskState::kDone);
      alone.push_back(r.tokens[ids[0]]);
    }
    constexpr ParkPolicy kPolicies[] = {ParkPolicy::kAuto, ParkPolicy::kForceResident, ParkPolicy::kForceSnapshotRam,
                                        ParkPolicy::kForceSnapshotDisk, ParkPolicy::kForcePartial,
                                        ParkPolicy::kForceFull};
    std::mt19937 rng(seed);
    const ParkPolicy park = kPolicies[(seed - 1) % std::size(kPolicies)];
    std::vector<TaskId> ids;
    Outcome r = RunPlans(*engine, RandomOptions(rng, park), plans, &ids);
    for (size_t i = 0; i < plans.size(); ++i) {
      EXPECT_EQ(r.state[ids[i]], TaskState::kDone) << "task " << i;
      EXPECT_EQ(r.tokens[ids[i]], alone[i]) << "task " << i << " (" << TierName(plans[i].request.tier) << ")";
    }
    for (size_t k = 0; k < parks.size(); ++k) parks[k] += r.parks[k];
    tasks += static_cast<int64_t>(plans.size());
  }
  // The comparison only means something if the contended runs really parked
  // every way.
  for (size_t k = 0; k < parks.size(); ++k) {
    EXPECT_GT(parks[k], 0) << "no park of kind " << ParkKindName(static_cast<ParkKind>(k));
  }
  std::printf("%lld tasks; parks by kind %lld %lld %lld %lld %lld\n", static_cast<long long>(tasks),
              static_cast<long long>(parks[0]), static_cast<long long>(parks[1]), static_cast<long long>(parks[2]),
              static_cast<long long>(parks[3]), static_cast<long long>(parks[4]));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, InvarianceTest,
                         ::testing::Values("stories260K.gguf", "synth-tiny-q4_k_m.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace valet
