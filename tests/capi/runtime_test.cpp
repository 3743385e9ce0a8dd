// valet::Runtime (valet/runtime.h), the C++ API's load: synchronous and on
// valet's own thread, with its stages in order, a cancel midway, a missing
// model and bad options through the future, and a weights cache made by one
// load and mapped by the next.
#include "valet/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <mutex>
#include <vector>

namespace valet {
namespace {

namespace fs = std::filesystem;

// Quantized: its load packs row groups, so there is a packing stage to see.
const std::string kModel = std::string(VALET_SHARED_DIR) + "/models/synth-tiny-q4_0.gguf";

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kModel)) GTEST_SKIP() << kModel << " not found";
  }

  static RuntimeOptions Options() {
    RuntimeOptions o;
    o.model_path = kModel;
    o.n_threads = 1;
    o.kv_capacity_bytes = 4u << 20;
    return o;
  }
};

// Stages as reported: one entry per report.
struct StageLog {
  std::mutex mu;
  std::vector<LoadStage> stages;
  uint64_t packed = 0;
  uint64_t pack_total = 0;

  LoadProgress Progress() {
    return [this](LoadStage stage, uint64_t done, uint64_t total) {
      std::lock_guard<std::mutex> lock(mu);
      stages.push_back(stage);
      if (stage == LoadStage::kPack) {
        packed = done;
        pack_total = total;
      }
    };
  }
};

int32_t Generate(Runtime& runtime) {
  TaskRequest r;
  r.tier = Tier::kForegroundChat;
  r.prompt = "Once upon a time";
  r.max_tokens = 4;
  r.sampling.temperature = 0.0f;
  std::promise<TaskResult> result;
  r.callbacks.on_done = [&result](TaskId, const TaskResult& done) { result.set_value(done); };
  EXPECT_TRUE(runtime.scheduler().Submit(std::move(r)).ok());
  const TaskResult done = result.get_future().get();
  EXPECT_EQ(done.state, TaskState::kDone);
  return static_cast<int32_t>(done.tokens.size());
}

TEST_F(RuntimeTest, AnAsyncLoadReportsItsStagesInOrderAndHandsOverAWorkingScheduler) {
  StageLog log;
  std::future<Result<std::unique_ptr<Runtime>>> loading = Runtime::CreateAsync(Options(), log.Progress());
  Result<std::unique_ptr<Runtime>> runtime = loading.get();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  ASSERT_FALSE(log.stages.empty());
  EXPECT_EQ(log.stages.front(), LoadStage::kMap);
  EXPECT_EQ(log.stages.back(), LoadStage::kPrepare);
  EXPECT_TRUE(std::is_sorted(log.stages.begin(), log.stages.end()));
  EXPECT_GE(std::count(log.stages.begin(), log.stages.end(), LoadStage::kPack), 2);
  EXPECT_EQ(std::count(log.stages.begin(), log.stages.end(), LoadStage::kWriteCache), 0);  // no cache asked for
  EXPECT_GT(log.pack_total, 0u);
  EXPECT_EQ(log.packed, log.pack_total);
  const WeightsStats weights = (*runtime)->weights();
  EXPECT_GT(weights.matrices_packed, 0);
  EXPECT_EQ(weights.matrices_mapped, 0);
  EXPECT_GT(weights.anonymous_bytes, 0u);
  EXPECT_EQ(Generate(**runtime), 4);
}

TEST_F(RuntimeTest, ACancelAtTheFirstPackingReportEndsTheLoadAborted) {
  LoadCancel cancel;
  std::vector<LoadStage> stages;
  auto progress = [&](LoadStage stage, uint64_t, uint64_t) {
    stages.push_back(stage);  // only the loading thread writes; read after get()
    if (stage == LoadStage::kPack) cancel.Cancel();
  };
  Result<std::unique_ptr<Runtime>> runtime = Runtime::CreateAsync(Options(), progress, cancel).get();
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kAborted);
  EXPECT_NE(runtime.status().message().find("cancelled"), std::string::npos);
  EXPECT_EQ(std::count(stages.begin(), stages.end(), LoadStage::kPrepare), 0);
}

TEST_F(RuntimeTest, ACancelBeforeTheLoadEndsItAborted) {
  LoadCancel cancel;
  cancel.Cancel();
  Result<std::unique_ptr<Runtime>> runtime = Runtime::Create(Options(), {}, cancel);
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kAborted);
}

TEST_F(RuntimeTest, BadOptionsAndAMissingModelArriveThroughTheFuture) {
  RuntimeOptions missing = Options();
  missing.model_path += ".absent";
  Result<std::unique_ptr<Runtime>> r = Runtime::CreateAsync(missing).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(missing.model_path), std::string::npos);

  RuntimeOptions none = Options();
  none.model_path.clear();
  EXPECT_EQ(Runtime::CreateAsync(none).get().status().code(), StatusCode::kInvalidArgument);
  RuntimeOptions offset = Options();
  offset.model_offset = 4096;  // only with model_fd
  EXPECT_EQ(Runtime::Create(offset).status().code(), StatusCode::kInvalidArgument);
  RuntimeOptions closed = Options();
  closed.model_fd = 1 << 20;  // not open
  EXPECT_EQ(Runtime::CreateAsync(closed).get().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RuntimeTest, TheWeightsCacheUnderTheSnapshotDirIsMadeOnceAndMappedAfter) {
  const fs::path dir = fs::temp_directory_path() / ("valet-runtime-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RuntimeOptions o = Options();
  o.snapshot_dir = dir.string();
  {
    Result<std::unique_ptr<Runtime>> first = Runtime::Create(o);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_GT((*first)->weights().matrices_mapped, 0);  // written, then mapped
    EXPECT_EQ((*first)->weights().anonymous_bytes, 0u);
  }
  StageLog log;
  Result<std::unique_ptr<Runtime>> second = Runtime::CreateAsync(o, log.Progress()).get();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->weights().matrices_packed, 0);
  EXPECT_GT((*second)->weights().matrices_mapped, 0);
  EXPECT_EQ(std::count(log.stages.begin(), log.stages.end(), LoadStage::kPack), 0);
  EXPECT_EQ(Generate(**second), 4);
  second->reset();

  o.weights_cache = "";  // none, although a snapshot directory is set
  Result<std::unique_ptr<Runtime>> uncached = Runtime::Create(o);
  ASSERT_TRUE(uncached.ok()) << uncached.status().ToString();
  EXPECT_EQ((*uncached)->weights().matrices_mapped, 0);
  uncached->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace valet
