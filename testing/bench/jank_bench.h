// valet bench-jank: does background inference make the app's UI miss
// frames? A simulated UI (a frame every 16.7 ms, each a fixed amount of CPU
// work on the UI thread and on its RenderThread, at the app's priority) runs
// while background indexing and summaries run, arm by arm:
//   idle   no background inference;
//   plain  background tiers at the app's priority on every core (what a
//          library without priorities does);
//   valet  the shipped budget table: background steps at nice 10 on the
//          efficiency cores.
// Midway a chat turn arrives; its time to first token is reported too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_lanes.h"
#include "testing/bench/latency_stats.h"
#include "valet/status.h"

namespace valet::testing {

struct JankOptions {
  std::string model_path;
  int n_threads = 0;      // 0: every core
  double seconds = 20.0;  // frames per arm, after a second of warm-up
  double frame_period_ms = 1000.0 / 60.0;
  double frame_work_ms = 10.0;  // CPU time each frame takes on each UI thread: a heavy frame
  int ui_threads = 2;           // the UI thread and its RenderThread, working at once
  double chat_at = 0.5;         // when the chat turn arrives, as a fraction of the run
  std::vector<std::string> arms = {"idle", "plain", "valet"};
  PriorityMode priority_mode = PriorityMode::kAuto;
  // The valet arm's budget table (the plain arm's is the same at the app's
  // priority on every core); empty: the shipped defaults.
  std::string budgets_path;
};

// One run of one arm.
struct JankSample {
  std::vector<double> frame_latencies_s;  // of the frames drawn
  int64_t vsyncs = 0;
  int64_t missed = 0;  // vsyncs at which a frame was due and none was ready
  int64_t bg_tokens = 0;
  double seconds = 0.0;
  double chat_ttft_ms = 0.0;
};

// Arms over several interleaved runs: frames pooled, tokens summed, the
// median chat TTFT.
struct JankArm {
  std::string name;
  int64_t frames = 0;            // vsyncs
  int64_t missed = 0;            // vsyncs that showed an old frame because the new one was late
  Percentiles frame_latency_ms;  // of the frames drawn, from their vsync to the end of their work
  double bg_tokens_per_s = 0.0;  // background tokens generated per second of frames
  double chat_ttft_ms = -1.0;
  int runs = 0;
  double missed_rate() const {
    return frames == 0 ? 0.0 : static_cast<double>(missed) / static_cast<double>(frames);
  }
};

// InvalidArgument for an unknown arm name.
Status CheckJankArms(const std::vector<std::string>& arms);
Result<JankSample> RunJankArm(const JankOptions& options, const std::string& arm);
JankArm SummarizeJankArm(const std::string& arm, const std::vector<JankSample>& runs);
std::string JankMarkdown(const std::vector<JankArm>& arms, const JankOptions& options);
std::string JankJson(const std::vector<JankArm>& arms, const JankOptions& options);

}  // namespace valet::testing
