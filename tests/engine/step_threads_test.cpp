// The real engine runs each step at the priority and on the cores the
// scheduler asked for (read back from the threads that computed it, with a
// fake sysfs that makes two of this machine's cores a little and a big one),
// in both ways of lowering a priority, and computes the same logits wherever
// a step runs.
#include <gtest/gtest.h>

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/real_engine.h"
#include "support/fake_phone.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

#if defined(__linux__)

namespace fs = std::filesystem;

class StepThreadsTest : public ::testing::TestWithParam<PriorityMode> {
 protected:
  void SetUp() override {
    phone_ = MakeFakePhone();
    if (phone_.little < 0) GTEST_SKIP() << "one core: nothing to confine steps to";
    if (GetParam() == PriorityMode::kSwitch && !ThreadLanes::CanRestorePriority()) {
      GTEST_SKIP()
          << "this process may not go back to its priority (no CAP_SYS_NICE, RLIMIT_NICE 0)";
    }
    dir_ = fs::temp_directory_path() / ("valet-step-threads-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    SynthModelOptions m;
    m.type = GgmlType::kQ8_0;
    ASSERT_TRUE(WriteSyntheticModel(m, (dir_ / "tiny.gguf").string()).ok());
    RealEngineOptions o;
    o.engine.model_path = (dir_ / "tiny.gguf").string();
    o.engine.n_threads = 2;
    o.engine.n_ctx = 128;
    o.engine.kv_capacity_bytes = 4u << 20;
    o.engine.priority_mode = GetParam();
    o.engine.sysfs_root = phone_.sysfs->root();
    o.calibrate = false;
    o.keep_logits = true;
    Result<std::unique_ptr<RealEngine>> e = RealEngine::Open(o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
  }
  void TearDown() override {
    engine_.reset();
    fs::remove_all(dir_);
  }

  // A greedy sequence fed `prompt` in one step at `threads`; its logits.
  std::vector<float> Prefill(const StepThreads& threads, const std::vector<int32_t>& prompt) {
    SequenceSpec spec;
    spec.sampling.temperature = 0.0f;
    Result<SequenceId> seq = engine_->OpenSequence(spec);
    EXPECT_TRUE(seq.ok());
    EXPECT_TRUE(engine_->SetThreads(threads).ok());
    StepItem item;
    item.seq = *seq;
    item.tokens = prompt;
    item.sample = true;
    Result<StepResult> r = engine_->Step(std::span<const StepItem>(&item, 1));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    const std::span<const float> logits = engine_->last_logits(*seq);
    return std::vector<float>(logits.begin(), logits.end());
  }

  FakePhone phone_;
  fs::path dir_;
  std::unique_ptr<RealEngine> engine_;
};

TEST_P(StepThreadsTest, BackgroundStepsYieldAndKeepToTheLittleCores) {
  const int self = ThreadPool::CurrentTid();
  const int app_nice = NiceOf(self);
  ASSERT_LT(app_nice, kBackgroundNice);
  const std::vector<int32_t> prompt = {1, 17, 42, 99, 7, 250, 31, 64};

  const std::vector<float> fg = Prefill(StepThreads{0, 0, CoreClass::kPerformance}, prompt);
  std::vector<int> tids = engine_->lanes().last_step_tids();
  ASSERT_FALSE(tids.empty());
  EXPECT_EQ(tids.front(), self);
  for (int tid : tids) {
    EXPECT_EQ(NiceOf(tid), app_nice);
    EXPECT_EQ(CoresOf(tid), phone_.big);
  }

  const std::vector<float> bg =
      Prefill(StepThreads{0, kBackgroundNice, CoreClass::kEfficiency, SchedPolicy::kIdle}, prompt);
  tids = engine_->lanes().last_step_tids();
  ASSERT_EQ(tids.size(), 1u);  // one little core: one thread
  EXPECT_EQ(tids.front() == self, GetParam() == PriorityMode::kSwitch);
  EXPECT_EQ(NiceOf(tids.front()), kBackgroundNice);
  EXPECT_EQ(sched_getscheduler(tids.front()), SCHED_IDLE);
  EXPECT_EQ(CoresOf(tids.front()), std::vector<int>{phone_.little});
  ASSERT_FALSE(fg.empty());
  EXPECT_EQ(fg, bg);  // bit for bit, on whichever thread and lane

  Prefill(StepThreads{0, 0, CoreClass::kAll}, prompt);
  EXPECT_EQ(NiceOf(self), app_nice);
  EXPECT_EQ(sched_getscheduler(self), SCHED_OTHER);
  EXPECT_EQ(CoresOf(self), phone_.allowed);
}

INSTANTIATE_TEST_SUITE_P(Modes, StepThreadsTest,
                         ::testing::Values(PriorityMode::kSwitch, PriorityMode::kPoolPerPriority),
                         [](const ::testing::TestParamInfo<PriorityMode>& info) {
                           return info.param == PriorityMode::kSwitch
                                      ? std::string("Switch")
                                      : std::string("PoolPerPriority");
                         });

#endif  // __linux__

}  // namespace
}  // namespace valet
