#include "testing/bench/jank_bench.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "common/json.h"
#include "engine/real_engine.h"
#include "valet/scheduler.h"

namespace valet::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kArmNames[] = {"idle", "plain", "valet"};
constexpr double kWarmupSeconds = 1.0;
constexpr int kTasksPerBackgroundTier = 2;

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// A frame's work: this much CPU time of the calling thread, however long the
// OS keeps it waiting for a core.
void BurnCpu(double seconds) {
  const double until = ThreadCpuSeconds() + seconds;
  volatile double sink = 1.0;
  while (ThreadCpuSeconds() < until) {
    for (int i = 0; i < 2000; ++i) sink = sink * 1.0000001 + 1e-9;
  }
}

// A frame's work on every UI thread at once (the UI thread and its
// RenderThread): the helpers burn their share when Draw starts a frame, and
// Draw returns when all have finished.
class FrameCrew {
 public:
  FrameCrew(int helpers, double work_s) : work_s_(work_s) {
    for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { Helper(); });
  }
  ~FrameCrew() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Draw() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++frame_;
      pending_ = static_cast<int>(threads_.size());
    }
    cv_.notify_all();
    BurnCpu(work_s_);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void Helper() {
    int64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || frame_ != seen; });
      if (stop_) return;
      seen = frame_;
      lock.unlock();
      BurnCpu(work_s_);
      lock.lock();
      if (--pending_ == 0) cv_.notify_all();
    }
  }

  const double work_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t frame_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The UI, as Android's Choreographer drives it: at each vsync (every period
// from `start` until `end`) a frame starts, does its work, and is shown at
// the first vsync after it ends. A frame that misses the next vsync leaves
// the display showing the old one at every vsync it overruns (missed frames),
// and the next frame starts at the vsync it was shown at (frames are dropped,
// never queued). Vsync waits are sleeps, as a real UI thread's are.
struct Frames {
  std::vector<double> latencies_s;  // from a frame's vsync to its work's end
  int64_t vsyncs = 0;
  int64_t missed = 0;
};

Frames RunFrames(const JankOptions& options, Clock::time_point start, Clock::time_point end) {
  const double period_s = options.frame_period_ms / 1e3;
  FrameCrew crew(options.ui_threads - 1, options.frame_work_ms / 1e3);
  Frames f;
  const auto vsync = [&](int64_t k) { return start + Seconds(static_cast<double>(k) * period_s); };
  for (int64_t k = 0; vsync(k + 1) <= end;) {
    std::this_thread::sleep_until(vsync(k));
    crew.Draw();
    const double done = std::chrono::duration<double>(Clock::now() - start).count();
    f.latencies_s.push_back(done - static_cast<double>(k) * period_s);
    const int64_t shown = std::max(k + 1, static_cast<int64_t>(std::ceil(done / period_s)));
    f.missed += shown - (k + 1);
    f.vsyncs += shown - k;
    k = shown;
  }
  return f;
}

// Texts for the background tasks: long enough that prefill and decode both
// run (up to a quarter of the context), different per task so no two share KV.
std::string Document(const EngineInterface& engine, int64_t n) {
  const size_t limit = static_cast<size_t>(engine.context_length() / 4);
  std::string doc = "Index note " + std::to_string(n) + ".";
  for (int i = 0; i < 64; ++i) {
    const std::string longer =
        doc + " Item " + std::to_string(n * 31 + i) + " moved to room " + std::to_string(i) + ".";
    if (engine.Tokenize(longer, true).size() > limit) break;
    doc = longer;
  }
  return doc;
}

// Keeps kTasksPerBackgroundTier tasks of each background tier in flight: each
// one's on_done submits its successor until Stop. The documents are written
// before the frames start, so that the harness's own work does not compete
// with the UI threads.
class BackgroundLoad {
 public:
  BackgroundLoad(Scheduler& scheduler, const EngineInterface& engine) : scheduler_(scheduler) {
    for (int64_t i = 0; i < kDocuments; ++i) documents_.push_back(Document(engine, i));
  }
  Status Start() {
    for (int i = 0; i < kTasksPerBackgroundTier; ++i) {
      VALET_RETURN_IF_ERROR(Submit(Tier::kOfflineIndexing));
      VALET_RETURN_IF_ERROR(Submit(Tier::kBackgroundSummary));
    }
    return Status::Ok();
  }
  void Stop() { stop_.store(true); }

 private:
  Status Submit(Tier tier) {
    if (stop_.load()) return Status::Ok();
    TaskRequest r;
    r.tier = tier;
    r.prompt = documents_[static_cast<size_t>(next_.fetch_add(1) % kDocuments)];
    r.max_tokens = tier == Tier::kOfflineIndexing ? 48 : 96;
    r.sampling.temperature = 0.0f;
    // A successor is refused only once the scheduler stops.
    r.callbacks.on_done = [this, tier](TaskId, const TaskResult&) { (void)Submit(tier).ok(); };
    return scheduler_.Submit(std::move(r)).status();
  }

  static constexpr int64_t kDocuments = 16;
  Scheduler& scheduler_;
  std::vector<std::string> documents_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> next_{0};
};

int64_t BackgroundGenerated(const Scheduler& s) {
  const SchedulerStats stats = s.Stats();
  return stats.generated_by_tier[static_cast<size_t>(Tier::kBackgroundSummary)] +
         stats.generated_by_tier[static_cast<size_t>(Tier::kOfflineIndexing)];
}

Result<SchedulerOptions> ArmSchedulerOptions(const JankOptions& options, const std::string& arm) {
  SchedulerOptions o;
  if (!options.budgets_path.empty()) {
    VALET_ASSIGN_OR_RETURN(o.budgets, LoadBudgetTable(options.budgets_path));
  }
  if (arm != "plain") return o;
  for (auto& state : o.budgets.budgets) {
    for (TierBudget& b : state) {
      b.nice = 0;
      b.policy = SchedPolicy::kNormal;
      b.cores = CoreClass::kAll;
    }
  }
  return o;
}

// Submits a chat turn and waits for its first token; milliseconds.
Result<double> ChatTurn(Scheduler& scheduler) {
  TaskRequest r;
  r.tier = Tier::kForegroundChat;
  r.messages = {
      {"user",
       "Where did the meeting about the quarterly numbers move to, and when does it start?"}};
  r.max_tokens = 16;
  auto first = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::atomic<bool>>(false);
  r.callbacks.on_token = [first, once](TaskId, int32_t, std::string_view) {
    if (!once->exchange(true)) first->set_value();
  };
  r.callbacks.on_done = [first, once](TaskId, const TaskResult&) {
    if (!once->exchange(true)) first->set_value();
  };
  const auto t0 = Clock::now();
  VALET_RETURN_IF_ERROR(scheduler.Submit(std::move(r)).status());
  first->get_future().wait();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

Status CheckJankArms(const std::vector<std::string>& arms) {
  for (const std::string& arm : arms) {
    if (std::find(std::begin(kArmNames), std::end(kArmNames), arm) == std::end(kArmNames)) {
      return InvalidArgument("unknown arm " + arm + " (arms: idle, plain, valet)");
    }
  }
  return Status::Ok();
}

Result<JankSample> RunJankArm(const JankOptions& options, const std::string& arm) {
  VALET_RETURN_IF_ERROR(CheckJankArms({arm}));
  RealEngineOptions eo;
  eo.engine.model_path = options.model_path;
  if (options.n_threads > 0) eo.engine.n_threads = options.n_threads;
  eo.engine.priority_mode = options.priority_mode;
  eo.store.warn = [](std::string_view) {};
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<RealEngine> engine, RealEngine::Open(eo));
  VALET_ASSIGN_OR_RETURN(SchedulerOptions so, ArmSchedulerOptions(options, arm));
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler,
                         Scheduler::Create(*engine, std::move(so)));
  BackgroundLoad load(*scheduler, *engine);
  if (arm != "idle") VALET_RETURN_IF_ERROR(load.Start());

  const auto start = Clock::now() + Seconds(kWarmupSeconds);
  const auto end = start + Seconds(options.seconds);
  Frames frames;
  std::thread ui([&] { frames = RunFrames(options, start, end); });
  std::this_thread::sleep_until(start);
  const int64_t bg0 = BackgroundGenerated(*scheduler);
  std::this_thread::sleep_until(start + Seconds(options.chat_at * options.seconds));
  Result<double> ttft = ChatTurn(*scheduler);
  ui.join();
  const int64_t bg1 = BackgroundGenerated(*scheduler);
  load.Stop();
  VALET_RETURN_IF_ERROR(scheduler->Stop("bench-jank: arm over"));
  VALET_RETURN_IF_ERROR(ttft.status());

  return JankSample{std::move(frames.latencies_s),
                    frames.vsyncs,
                    frames.missed,
                    bg1 - bg0,
                    options.seconds,
                    *ttft};
}

JankArm SummarizeJankArm(const std::string& arm, const std::vector<JankSample>& runs) {
  JankArm out;
  out.name = arm;
  out.runs = static_cast<int>(runs.size());
  std::vector<double> latencies, ttfts;
  int64_t tokens = 0;
  out.frames = out.missed = 0;
  double seconds = 0.0;
  for (const JankSample& r : runs) {
    latencies.insert(latencies.end(), r.frame_latencies_s.begin(), r.frame_latencies_s.end());
    ttfts.push_back(r.chat_ttft_ms);
    tokens += r.bg_tokens;
    out.frames += r.vsyncs;
    out.missed += r.missed;
    seconds += r.seconds;
  }
  out.frame_latency_ms = ComputePercentiles(std::move(latencies)).Scaled(1e3);
  out.bg_tokens_per_s = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  out.chat_ttft_ms = ComputePercentiles(std::move(ttfts)).p50;
  return out;
}

std::string JankMarkdown(const std::vector<JankArm>& arms, const JankOptions& options) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line),
                "a frame every %.1f ms, %.1f ms of CPU on each of %d UI threads, %d x %.0f s per "
                "arm, interleaved\n\n",
                options.frame_period_ms, options.frame_work_ms, options.ui_threads,
                arms.empty() ? 0 : arms[0].runs, options.seconds);
  out += line;
  out += "| arm | vsyncs | missed | frame p50 | frame p99 | background tok/s | chat TTFT |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const JankArm& a : arms) {
    std::snprintf(line, sizeof(line),
                  "| %s | %lld | %.2f%% | %.1f ms | %.1f ms | %.1f | %.0f ms |\n", a.name.c_str(),
                  static_cast<long long>(a.frames), 100.0 * a.missed_rate(), a.frame_latency_ms.p50,
                  a.frame_latency_ms.p99, a.bg_tokens_per_s, a.chat_ttft_ms);
    out += line;
  }
  return out;
}

std::string JankJson(const std::vector<JankArm>& arms, const JankOptions& options) {
  Json by_arm = Json::object();
  for (const JankArm& a : arms) {
    const Percentiles& p = a.frame_latency_ms;
    by_arm[a.name] = Json{
        {"runs", a.runs},
        {"vsyncs", a.frames},
        {"missed_frames", a.missed},
        {"missed_frame_rate", a.missed_rate()},
        {"frame_latency_ms", Json{{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}}},
        {"bg_tokens_per_s", a.bg_tokens_per_s},
        {"chat_ttft_ms", a.chat_ttft_ms}};
  }
  Json root{{"frame_period_ms", options.frame_period_ms},
            {"frame_work_ms", options.frame_work_ms},
            {"ui_threads", options.ui_threads},
            {"seconds_per_arm", options.seconds},
            {"threads", options.n_threads},
            {"arms", by_arm}};
  return root.dump(2) + "\n";
}

}  // namespace valet::testing
