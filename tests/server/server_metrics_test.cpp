#include "server/server_metrics.h"

#include <gtest/gtest.h>

#include <sstream>

namespace valet {
namespace {

// The value of the one line `series` in a Prometheus text body.
double Value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  ADD_FAILURE() << "no series " << series;
  return -1;
}

TaskResult Finished(Tier tier, double ttft, double tpot, int tokens) {
  TaskResult r;
  r.state = TaskState::kDone;
  r.metrics.tier = tier;
  r.metrics.submit_time = 10.0;
  r.metrics.first_token_time = 10.0 + ttft;
  r.metrics.generated_tokens = tokens;
  r.metrics.last_token_time = r.metrics.first_token_time + tpot * (tokens - 1);
  return r;
}

TEST(ServerMetricsTest, HistogramsAreCumulativePerTier) {
  ServerMetrics m;
  m.ObserveFinished(Finished(Tier::kForegroundChat, 0.03, 0.004, 5));
  m.ObserveFinished(Finished(Tier::kForegroundChat, 0.7, 0.03, 5));
  m.ObserveFinished(Finished(Tier::kOfflineIndexing, 100.0, 0.004, 1));
  TaskResult cancelled;
  cancelled.state = TaskState::kCancelled;
  m.ObserveFinished(cancelled);
  m.CountDisconnect();
  m.CountHttpError(429);
  m.CountHttpError(429);
  MetricsInputs in;
  in.lifecycle = LifecycleState::kStarted;
  in.unfinished_by_state[0][2] = 4;
  in.stats.parks_by_kind[1] = 3;
  in.stats.recomputed_by_cause = {5, 6, 7, 8};
  in.stats.generated_by_tier = {10, 0, 0, 30};
  in.stats.busy_seconds = 2.0;
  in.stats.memory.weights_file_backed_bytes = 1600;
  in.stats.memory.weights_anonymous_bytes = 7;
  in.stats.memory.pool_used_bytes = 64;
  in.stats.memory.scratch_bytes = 9;
  const std::string text = m.Render(in);
  const std::string chat = "tier=\"foreground_chat\"";
  EXPECT_EQ(Value(text, "valet_ttft_seconds_bucket{" + chat + ",le=\"0.025\"}"), 0);
  EXPECT_EQ(Value(text, "valet_ttft_seconds_bucket{" + chat + ",le=\"0.05\"}"), 1);
  EXPECT_EQ(Value(text, "valet_ttft_seconds_bucket{" + chat + ",le=\"1\"}"), 2);
  EXPECT_EQ(Value(text, "valet_ttft_seconds_bucket{" + chat + ",le=\"+Inf\"}"), 2);
  EXPECT_EQ(Value(text, "valet_ttft_seconds_count{" + chat + "}"), 2);
  EXPECT_NEAR(Value(text, "valet_ttft_seconds_sum{" + chat + "}"), 0.73, 1e-9);
  EXPECT_EQ(Value(text, "valet_ttft_seconds_bucket{tier=\"offline_indexing\",le=\"60\"}"), 0);
  EXPECT_EQ(Value(text, "valet_ttft_seconds_bucket{tier=\"offline_indexing\",le=\"+Inf\"}"), 1);
  EXPECT_EQ(Value(text, "valet_tpot_seconds_count{" + chat + "}"), 2);
  EXPECT_EQ(Value(text, "valet_tpot_seconds_count{tier=\"offline_indexing\"}"), 0);  // one token: no TPOT
  EXPECT_EQ(Value(text, "valet_tasks_finished_total{state=\"CANCELLED\"}"), 1);
  EXPECT_EQ(Value(text, "valet_client_disconnects_total"), 1);
  EXPECT_EQ(Value(text, "valet_http_errors_total{status=\"429\"}"), 2);
  EXPECT_EQ(Value(text, "valet_queue_depth{tier=\"background_summary\"}"), 4);
  EXPECT_EQ(Value(text, "valet_parks_total{kind=\"snapshot_ram\"}"), 3);
  EXPECT_EQ(Value(text, "valet_recomputed_tokens_total{cause=\"cut_step\"}"), 5);
  EXPECT_EQ(Value(text, "valet_recomputed_tokens_total{cause=\"snapshot_fallback\"}"), 8);
  EXPECT_EQ(Value(text, "valet_lifecycle_state{state=\"STARTED\"}"), 1);
  EXPECT_EQ(Value(text, "valet_lifecycle_state{state=\"RESUMED\"}"), 0);
  EXPECT_EQ(Value(text, "valet_tokens_per_second"), 20);
  EXPECT_EQ(Value(text, "valet_memory_bytes{part=\"weights_file_backed\"}"), 1600);
  EXPECT_EQ(Value(text, "valet_memory_bytes{part=\"weights_anonymous\"}"), 7);
  EXPECT_EQ(Value(text, "valet_memory_bytes{part=\"kv_pool_used\"}"), 64);
  EXPECT_EQ(Value(text, "valet_memory_bytes{part=\"scratch\"}"), 9);
  EXPECT_GT(Value(text, "valet_process_resident_bytes{kind=\"anon\"}"), 0);  // this test's own heap
  EXPECT_GE(Value(text, "valet_process_resident_bytes{kind=\"file\"}"), 0);
  // Every sample line belongs to a metric declared with # TYPE before it.
  std::istringstream lines(text);
  std::string line, typed;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) typed = line.substr(7, line.find(' ', 7) - 7);
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind(typed, 0), 0u) << line;
  }
}

}  // namespace
}  // namespace valet
