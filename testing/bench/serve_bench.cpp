#include "testing/bench/serve_bench.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

namespace valet::testing {

namespace {

using nlohmann::json;

constexpr size_t kMaxErrors = 5;
constexpr const char* kArmNames[] = {"idle", "under_indexing"};
// The session runs chat and indexer for any arm other than idle and solo;
// what differs between baselines is the scheduler, which here is the server's.
constexpr Arm kSessionArms[] = {Arm::kIdle, Arm::kPriority};

// Caches the shared system prompt before anything is measured. A failure is
// only reported: the turns that follow show whether the server works (a
// random model's one-token answer can be a lone UTF-8 byte, which
// llama-server rejects after processing the prompt).
void WarmUp(HttpScenarioSink& sink, CompletionQueue& done, const Workload& workload, const ProgressFn& progress) {
  Result<TaskId> id = sink.Submit(WarmUpRequest(workload));
  if (!id.ok()) return progress("warm-up not sent: " + id.status().message());
  std::deque<std::pair<TaskId, TaskResult>> results;
  while (results.empty()) results = done.WaitUntil(ContentionSession::kNever);
  sink.Join();
  const TaskResult& r = results.front().second;
  if (!r.status.ok()) progress("warm-up: " + r.status.message());
}

struct Samples {
  std::vector<double> ttft, tpot, e2e;
};

void AddChat(const TaskRecord& t, ServeArmStats& s, Samples& samples) {
  const TaskMetrics& m = t.result.metrics;
  if (!t.done || t.result.state != TaskState::kDone || m.first_token_time < 0) {
    ++s.failed;
    if (s.errors.size() < kMaxErrors) {
      s.errors.push_back(t.done ? t.result.status.ToString() : "turn " + std::to_string(t.turn) + " never finished");
    }
    return;
  }
  ++s.completed;
  if (!t.result.status.ok()) {
    ++s.late_errors;
    if (s.errors.size() < kMaxErrors) s.errors.push_back(t.result.status.ToString());
  }
  s.input_tokens += m.prompt_tokens;
  s.cached_tokens += m.cached_prompt_tokens;
  s.output_tokens += m.generated_tokens;
  samples.ttft.push_back(m.ttft() * 1e3);
  samples.e2e.push_back(m.e2e() * 1e3);
  // vLLM's TPOT: the time after the first token over the tokens after it.
  if (m.generated_tokens > 1) samples.tpot.push_back((m.e2e() - m.ttft()) * 1e3 / (m.generated_tokens - 1));
}

void AddBlock(const ArmRun& run, ServeArmStats& s, Samples& samples) {
  double end = run.window_end;
  for (const TaskRecord& t : run.tasks) {
    if (t.done) end = std::max(end, t.result.metrics.end_time);
    if (t.kind == TaskKind::kChat) {
      AddChat(t, s, samples);
    } else if (t.kind == TaskKind::kDoc && t.done && t.result.state == TaskState::kDone) {
      ++s.docs_completed;
      s.indexer_tokens += t.result.metrics.prompt_tokens + t.result.metrics.generated_tokens;
    }
  }
  s.duration_s += end - run.start;
}

std::string Line(const std::string& label, const std::string& value) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-40s %s\n", (label + ":").c_str(), value.c_str());
  return buf;
}

std::string Num(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A section title centred in a rule of 50 characters, as vLLM prints them.
std::string Rule(const std::string& title, char fill) {
  const size_t width = 50;
  if (title.empty()) return std::string(width, fill) + "\n";
  const size_t left = (width - title.size()) / 2;
  return std::string(left, fill) + title + std::string(width - left - title.size(), fill) + "\n";
}

std::string LatencySection(const char* title, const char* metric, const Percentiles& p) {
  std::string out = Rule(title, '-');
  if (p.empty()) return out + Line(std::string("Mean ") + metric + " (ms)", "n/a");
  out += Line(std::string("Mean ") + metric + " (ms)", Num(p.mean));
  out += Line(std::string("Median ") + metric + " (ms)", Num(p.p50));
  out += Line(std::string("P90 ") + metric + " (ms)", Num(p.p90));
  if (p.count >= kMinSamplesForP99) out += Line(std::string("P99 ") + metric + " (ms)", Num(p.p99));
  out += Line(std::string("Max ") + metric + " (ms)", Num(p.max));
  return out;
}

json LatencyJson(const Percentiles& p) {
  if (p.empty()) return json::object();
  json j = {{"count", p.count}, {"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"max", p.max}};
  if (p.count >= kMinSamplesForP99) j["p99"] = p.p99;
  return j;
}

double PerSecond(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0.0; }

}  // namespace

ScenarioConfig ServeLoadConfig(const ServeBenchOptions& options) {
  ScenarioConfig c;
  c.seed = options.seed;
  c.turns = options.turns;
  c.think_min_s = options.think_min_s;
  c.think_max_s = options.think_max_s;
  c.doc_tokens = options.doc_tokens;
  c.doc_jitter = options.doc_tokens / 12;
  c.indexers = options.indexers;
  c.doc_instruction_tokens = 0;  // documents as measured against llama-server: one prompt each
  c.summary_chance = 0.0;
  c.suggestion_chance = 0.0;
  c.lifecycle_after_turn = -1;  // not Resolve()d: -1 stays "never"
  return c;
}

bool ServeBenchReport::all_completed() const {
  for (const ServeArmStats& a : arms) {
    if (a.failed != 0 || a.completed != a.planned) return false;
  }
  return !arms.empty();
}

Result<ServeBenchReport> RunServeBench(const ServeBenchOptions& options, const ProgressFn& progress) {
  if (options.turns < 1 || options.block_turns < 1) return InvalidArgument("turns and block size must be at least 1");
  if (options.doc_tokens < 1) return InvalidArgument("documents need at least one token");
  if (options.indexers < 1) return InvalidArgument("at least one indexer document must be in flight");
  ServeBenchReport report;
  report.options = options;
  report.config = ServeLoadConfig(options);
  CompletionQueue done;
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<HttpScenarioSink> sink, HttpScenarioSink::Connect(options.target, done));
  progress("sizing the load's texts in the server's tokens (POST /tokenize) ...");
  VALET_ASSIGN_OR_RETURN(Workload workload, BuildWorkload(report.config, [&sink](const std::string& text) {
                           return sink->CountTokens(text);
                         }));
  WarmUp(*sink, done, workload, progress);
  report.arms.resize(2);
  Samples samples[2];
  const size_t turns = workload.turns.size(), block = static_cast<size_t>(options.block_turns);
  for (size_t first = 0; first < turns; first += block) {
    const Workload slice = SliceTurns(workload, first, std::min(block, turns - first));
    for (size_t a = 0; a < 2; ++a) {
      progress(std::string("turns ") + std::to_string(first + 1) + "-" + std::to_string(first + slice.turns.size()) +
               " " + kArmNames[a] + " ...");
      ContentionSession session(slice, report.config, kSessionArms[a], *sink);
      DriveRealTime(session, done);
      sink->Join();
      report.arms[a].planned += static_cast<int32_t>(slice.turns.size());
      AddBlock(session.run(), report.arms[a], samples[a]);
    }
  }
  for (size_t a = 0; a < 2; ++a) {
    ServeArmStats& s = report.arms[a];
    s.name = kArmNames[a];
    s.ttft_ms = ComputePercentiles(samples[a].ttft);
    s.tpot_ms = ComputePercentiles(samples[a].tpot);
    s.e2e_ms = ComputePercentiles(samples[a].e2e);
  }
  const Percentiles& idle = report.arms[0].ttft_ms;
  const Percentiles& loaded = report.arms[1].ttft_ms;
  if (!idle.empty() && !loaded.empty() && idle.p50 > 0) report.ttft_p50_ratio = loaded.p50 / idle.p50;
  return report;
}

std::string ServeReportText(const ServeBenchReport& report) {
  std::string out;
  for (const ServeArmStats& s : report.arms) {
    out += Rule(" Serving Benchmark Result ", '=');
    out += Line("Arm", s.name);
    out += Line("Successful requests", std::to_string(s.completed) + " of " + std::to_string(s.planned));
    out += Line("Failed requests", std::to_string(s.failed));
    out += Line("Server errors after the answer", std::to_string(s.late_errors));
    out += Line("Benchmark duration (s)", Num(s.duration_s));
    out += Line("Total input tokens", std::to_string(s.input_tokens));
    out += Line("Cached input tokens", std::to_string(s.cached_tokens));
    out += Line("Total generated tokens", std::to_string(s.output_tokens));
    out += Line("Request throughput (req/s)", Num(PerSecond(s.completed, s.duration_s)));
    out += Line("Output token throughput (tok/s)", Num(PerSecond(static_cast<double>(s.output_tokens), s.duration_s)));
    if (s.name != "idle") out += Line("Indexer documents in flight", std::to_string(report.config.indexers));
    out += Line("Indexer documents completed", std::to_string(s.docs_completed));
    out += Line("Indexer token throughput (tok/s)",
                Num(PerSecond(static_cast<double>(s.indexer_tokens), s.duration_s)));
    out += LatencySection("Time to First Token", "TTFT", s.ttft_ms);
    out += LatencySection("Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
    out += LatencySection("End-to-end Latency", "E2EL", s.e2e_ms);
    for (const std::string& e : s.errors) out += "error: " + e + "\n";
  }
  out += Rule("", '=');
  if (report.ttft_p50_ratio > 0) {
    out += Line("Median TTFT under indexing / idle", Num(report.ttft_p50_ratio) + "x");
  }
  return out;
}

std::string ServeReportJson(const ServeBenchReport& report) {
  const ServeBenchOptions& o = report.options;
  json arms = json::object();
  for (const ServeArmStats& s : report.arms) {
    arms[s.name] = {{"completed", s.completed},
                    {"planned", s.planned},
                    {"failed", s.failed},
                    {"errors_after_answer", s.late_errors},
                    {"errors", s.errors},
                    {"duration_s", s.duration_s},
                    {"total_input_tokens", s.input_tokens},
                    {"cached_input_tokens", s.cached_tokens},
                    {"total_output_tokens", s.output_tokens},
                    {"request_throughput", PerSecond(s.completed, s.duration_s)},
                    {"output_throughput", PerSecond(static_cast<double>(s.output_tokens), s.duration_s)},
                    {"indexer_docs_completed", s.docs_completed},
                    {"indexer_tokens", s.indexer_tokens},
                    {"indexer_throughput", PerSecond(static_cast<double>(s.indexer_tokens), s.duration_s)},
                    {"ttft_ms", LatencyJson(s.ttft_ms)},
                    {"tpot_ms", LatencyJson(s.tpot_ms)},
                    {"e2el_ms", LatencyJson(s.e2e_ms)}};
  }
  const ScenarioConfig& c = report.config;
  json j = {{"url", o.target.url},
            {"api", ApiFlavorName(o.target.api)},
            {"model", o.target.model},
            {"seed", o.seed},
            {"turns", o.turns},
            {"block_turns", o.block_turns},
            {"load_average", report.load_average},
            {"shapes",
             {{"system_tokens", c.system_tokens},
              {"user_tokens", c.user_tokens},
              {"answer_tokens", c.answer_tokens},
              {"doc_tokens", c.doc_tokens},
              {"doc_summary_tokens", c.doc_summary_tokens},
              {"indexers", c.indexers},
              {"think_min_s", c.think_min_s},
              {"think_max_s", c.think_max_s}}},
            {"arms", std::move(arms)},
            {"ttft_p50_ratio", report.ttft_p50_ratio > 0 ? json(report.ttft_p50_ratio) : json(nullptr)}};
  return j.dump(2) + "\n";
}

}  // namespace valet::testing
