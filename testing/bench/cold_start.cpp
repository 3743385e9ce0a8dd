#include "testing/bench/cold_start.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <future>

#include "common/json.h"
#include "common/private_files.h"
#include "sched/scheduler_core.h"
#include "testing/bench/contention_session.h"

namespace valet::testing {

namespace {

namespace fs = std::filesystem;

// A scratch directory removed when this goes, whatever returns early.
class Scratch {
 public:
  static Result<Scratch> Make(std::string_view prefix) {
    VALET_ASSIGN_OR_RETURN(std::string path, MakeScratchDirectory(prefix));
    return Scratch(std::move(path));
  }
  Scratch(Scratch&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  Scratch& operator=(Scratch&&) = delete;
  ~Scratch() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit Scratch(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

SchedulerOptions DurableOptions(const std::string& dir, RealEngine& engine, SchedulerOptions o = {}) {
  o.durable_dir = dir;
  o.model_fingerprint = engine.engine().fingerprint();
  o.clock = SteadySeconds;
  return o;
}

TaskRequest DurableDoc(const Workload& workload, const ScenarioConfig& config, int32_t i, int32_t min_tokens) {
  TaskRequest r;
  r.tier = Tier::kOfflineIndexing;
  r.system_prompt = workload.doc_instruction;
  r.prompt = workload.doc_texts[static_cast<size_t>(i) % workload.doc_texts.size()];
  // Room to stop part-way: the task must still be unfinished when dropped.
  r.max_tokens = std::max(config.doc_summary_tokens, 2 * min_tokens + 1);
  r.sampling.temperature = 0.8f;
  r.sampling.seed = config.seed * 1000 + 900 + static_cast<uint64_t>(i);
  r.durable = true;
  r.durable_key = "index-doc-" + std::to_string(i);
  return r;
}

// One task, run part-way by its own engine and scheduler, which then get
// ON_PAUSE and ON_STOP (the KV checkpoint is written) and are dropped
// without finishing it: what the low-memory killer leaves. Returns the
// checkpoints written.
Result<int64_t> LeaveUnfinished(const Workload& workload, const ScenarioConfig& config, const ColdStartOptions& o,
                                const std::string& root, int32_t i) {
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<RealEngine> engine, o.open_engine(root + "/snapshots"));
  SchedulerCore core(*engine, DurableOptions(root + "/tasks", *engine));
  int32_t generated = 0;
  TaskRequest r = DurableDoc(workload, config, i, o.durable_tokens);
  r.callbacks.on_token = [&generated](TaskId, int32_t, std::string_view) { ++generated; };
  VALET_RETURN_IF_ERROR(core.Submit(std::move(r)).status());
  while (generated < o.durable_tokens && core.RunOneStep()) {
  }
  if (generated < o.durable_tokens || !core.HasRunnableWork()) {
    return Internal("durable document " + std::to_string(i) + " ended before it could be left unfinished");
  }
  VALET_RETURN_IF_ERROR(core.OnLifecycleEvent(LifecycleEvent::kOnPause));
  VALET_RETURN_IF_ERROR(core.OnLifecycleEvent(LifecycleEvent::kOnStop));
  return core.recorder().Stats().durable_checkpoints;
}

// One start: new engine, scheduler, Recover(), one chat turn; `durable_from`
// (empty: none) is copied into a fresh durable directory first.
Result<ColdStartSample> OneStart(const Workload& workload, const ScenarioConfig& config, const ColdStartOptions& o,
                                 int32_t turn, const std::string& durable_from) {
  VALET_ASSIGN_OR_RETURN(Scratch dir, Scratch::Make("valet-cold-start-"));
  const std::string tasks = dir.path() + "/tasks";
  // Without journals to copy, the scheduler makes the directory (private) itself.
  std::error_code ec;
  if (!durable_from.empty()) fs::copy(durable_from, tasks, fs::copy_options::recursive, ec);
  if (ec) return IoError("cannot prepare " + tasks + ": " + ec.message());
  ColdStartSample sample;
  const double launch = SteadySeconds();
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<RealEngine> engine, o.open_engine(dir.path() + "/snapshots"));
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Create(*engine, DurableOptions(tasks, *engine, ArmOptions(Arm::kValet, config))));
  VALET_ASSIGN_OR_RETURN(RecoveryReport recovered, scheduler->Recover());
  sample.startup_ms = (SteadySeconds() - launch) * 1e3;
  for (const RecoveredTask& t : recovered.tasks) sample.recovered += t.state == TaskState::kQueued ? 1 : 0;
  std::promise<TaskResult> done;
  TaskRequest chat = ChatTurnRequest(workload, config, turn);
  chat.callbacks.on_done = [&done](TaskId, const TaskResult& r) { done.set_value(r); };
  VALET_RETURN_IF_ERROR(scheduler->Submit(std::move(chat)).status());
  const TaskResult result = done.get_future().get();
  if (result.state != TaskState::kDone) return Internal("cold-start chat: " + result.status.ToString());
  sample.ttft_ms = result.metrics.ttft() * 1e3;
  sample.launch_ttft_ms = (result.metrics.first_token_time - launch) * 1e3;
  sample.restored_tokens = scheduler->Stats().durable_restored_tokens;
  return sample;  // the recovered tasks are dropped unfinished with the scheduler
}

std::vector<double> Field(const std::vector<ColdStartSample>& samples, double ColdStartSample::*field) {
  std::vector<double> out;
  for (const ColdStartSample& s : samples) {
    if (s.*field >= 0) out.push_back(s.*field);
  }
  return out;
}

Json PercentilesJson(const Percentiles& p) {
  Json out{{"count", p.count}};
  for (auto [name, v] : {std::pair{"p50", p.p50}, {"p90", p.p90}, {"max", p.max}, {"mean", p.mean}}) {
    out[name] = p.empty() ? Json() : Json(v);
  }
  return out;
}

Json SamplesJson(const std::vector<ColdStartSample>& samples) {
  Json out = Json::array();
  for (const ColdStartSample& s : samples) {
    out.push_back(Json{{"startup_ms", s.startup_ms}, {"ttft_ms", s.ttft_ms}, {"launch_ttft_ms", s.launch_ttft_ms},
                       {"recovered", s.recovered}, {"restored_tokens", s.restored_tokens}});
  }
  return out;
}

Json Ratio(double ratio, const RatioInterval& ci) {
  return Json{{"p50_ratio", ratio < 0 ? Json() : Json(ratio)},
              {"ratio_ci", ci.lo < 0 ? Json() : Json::array({ci.lo, ci.hi})}};
}

std::string Ms(double v) {
  if (v < 0) return "–";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

std::string RatioText(double ratio, const RatioInterval& ci) {
  if (ratio < 0) return "–";
  char buf[96];
  if (ci.lo < 0) {
    std::snprintf(buf, sizeof(buf), "%.2f", ratio);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f [%.2f, %.2f]", ratio, ci.lo, ci.hi);
  }
  return buf;
}

}  // namespace

void SummarizeColdStart(ColdStartReport& r) {
  const std::vector<double> ttft_a = Field(r.empty, &ColdStartSample::ttft_ms);
  const std::vector<double> ttft_b = Field(r.recovered, &ColdStartSample::ttft_ms);
  const std::vector<double> launch_a = Field(r.empty, &ColdStartSample::launch_ttft_ms);
  const std::vector<double> launch_b = Field(r.recovered, &ColdStartSample::launch_ttft_ms);
  r.ttft_empty = ComputePercentiles(ttft_a);
  r.ttft_recovered = ComputePercentiles(ttft_b);
  r.launch_empty = ComputePercentiles(launch_a);
  r.launch_recovered = ComputePercentiles(launch_b);
  r.startup_empty = ComputePercentiles(Field(r.empty, &ColdStartSample::startup_ms));
  r.startup_recovered = ComputePercentiles(Field(r.recovered, &ColdStartSample::startup_ms));
  if (r.ttft_empty.p50 > 0 && !r.ttft_recovered.empty()) {
    r.ttft_ratio = r.ttft_recovered.p50 / r.ttft_empty.p50;
    r.ttft_ratio_ci = BootstrapRatio(ttft_b, ttft_a, 50, 0xc01d);
  }
  if (r.launch_empty.p50 > 0 && !r.launch_recovered.empty()) {
    r.launch_ratio = r.launch_recovered.p50 / r.launch_empty.p50;
    r.launch_ratio_ci = BootstrapRatio(launch_b, launch_a, 50, 0xc01d + 1);
  }
}

std::string ColdStartMarkdown(const ColdStartReport& r) {
  std::string md;
  char line[512];
  std::snprintf(line, sizeof(line),
                "Cold start, %d interleaved starts of each kind: (a) empty durable directory, (b) %d unfinished "
                "durable indexing tasks to recover (each dropped after %d tokens; %lld KV checkpoints written). "
                "Milliseconds; p50 is the median.\n\n",
                r.repetitions, r.durable_tasks, r.durable_tokens, static_cast<long long>(r.checkpoints_written));
  md += line;
  md += "| start | chat TTFT p50 | p90 | max | launch → first token p50 | start-up (open + Recover) p50 | tasks recovered | KV tokens restored p50 |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (bool b : {false, true}) {
    const std::vector<ColdStartSample>& samples = b ? r.recovered : r.empty;
    const Percentiles& ttft = b ? r.ttft_recovered : r.ttft_empty;
    std::vector<double> restored;
    int32_t recovered = 0;
    for (const ColdStartSample& s : samples) {
      restored.push_back(static_cast<double>(s.restored_tokens));
      recovered = std::max(recovered, s.recovered);
    }
    std::snprintf(line, sizeof(line), "| %s | %s | %s | %s | %s | %s | %d | %s |\n",
                  b ? "(b) recovered" : "(a) empty", Ms(ttft.p50).c_str(), Ms(ttft.p90).c_str(), Ms(ttft.max).c_str(),
                  Ms((b ? r.launch_recovered : r.launch_empty).p50).c_str(),
                  Ms((b ? r.startup_recovered : r.startup_empty).p50).c_str(), recovered,
                  Ms(ComputePercentiles(restored).p50).c_str());
    md += line;
  }
  md += "\n(b)/(a), p50 [bootstrap 95% CI]: chat TTFT " + RatioText(r.ttft_ratio, r.ttft_ratio_ci) +
        "; launch → first token " + RatioText(r.launch_ratio, r.launch_ratio_ci) + "\n";
  return md;
}

std::string ColdStartJson(const ColdStartReport& r) {
  return DumpJson(Json{
      {"config",
       {{"model", r.model},
        {"machine", r.machine},
        {"threads", r.threads},
        {"repetitions", r.repetitions},
        {"durable_tasks", r.durable_tasks},
        {"durable_tokens", r.durable_tokens},
        {"checkpoints_written", r.checkpoints_written}}},
      {"empty",
       {{"ttft_ms", PercentilesJson(r.ttft_empty)},
        {"launch_ttft_ms", PercentilesJson(r.launch_empty)},
        {"startup_ms", PercentilesJson(r.startup_empty)},
        {"samples", SamplesJson(r.empty)}}},
      {"recovered",
       {{"ttft_ms", PercentilesJson(r.ttft_recovered)},
        {"launch_ttft_ms", PercentilesJson(r.launch_recovered)},
        {"startup_ms", PercentilesJson(r.startup_recovered)},
        {"samples", SamplesJson(r.recovered)}}},
      {"ttft_ratio", Ratio(r.ttft_ratio, r.ttft_ratio_ci)},
      {"launch_ttft_ratio", Ratio(r.launch_ratio, r.launch_ratio_ci)}});
}

Result<ColdStartReport> RunColdStart(const Workload& workload, const ScenarioConfig& config,
                                     const ColdStartOptions& o) {
  if (!o.open_engine) return InvalidArgument("cold start needs open_engine");
  if (o.repetitions < 1 || o.durable_tasks < 0 || o.durable_tokens < 1) return InvalidArgument("bad cold-start options");
  ColdStartReport r;
  r.repetitions = o.repetitions;
  r.durable_tasks = o.durable_tasks;
  r.durable_tokens = o.durable_tokens;
  VALET_ASSIGN_OR_RETURN(Scratch prepared, Scratch::Make("valet-cold-prep-"));
  if (o.progress) o.progress("cold start: leaving " + std::to_string(o.durable_tasks) + " durable tasks unfinished ...");
  for (int32_t i = 0; i < o.durable_tasks; ++i) {
    VALET_ASSIGN_OR_RETURN(int64_t checkpoints, LeaveUnfinished(workload, config, o, prepared.path(), i));
    r.checkpoints_written += checkpoints;
  }
  const std::string durable = prepared.path() + "/tasks";
  const int32_t turns = static_cast<int32_t>(workload.turns.size());
  for (int32_t i = 0; i < o.repetitions; ++i) {
    if (o.progress) o.progress("cold start " + std::to_string(i + 1) + "/" + std::to_string(o.repetitions) + " ...");
    // Alternate which kind goes first, so neither always follows the other.
    for (bool b : i % 2 == 0 ? std::array{false, true} : std::array{true, false}) {
      VALET_ASSIGN_OR_RETURN(ColdStartSample s, OneStart(workload, config, o, i % turns, b ? durable : ""));
      (b ? r.recovered : r.empty).push_back(s);
    }
  }
  SummarizeColdStart(r);
  return r;
}

}  // namespace valet::testing
