#include "bench/contention_report.h"

#include <cstdio>

#include "common/json_writer.h"

namespace valet {

namespace {

constexpr size_t kFgTiers[] = {0, 1};
constexpr size_t kBgTiers[] = {2, 3};

int64_t Processed(const StatsMark& m, const size_t* tiers, size_t n) {
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += m.processed[tiers[i]];
  return sum;
}

double Busy(const StatsMark& m, const size_t* tiers, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += m.busy_s[tiers[i]];
  return sum;
}

int64_t BgBetween(const StatsMark& a, const StatsMark& b) { return Processed(b, kBgTiers, 2) - Processed(a, kBgTiers, 2); }

std::string Fmt(const char* format, double v) {
  if (v < 0) return "–";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

void CollectTaskCounts(const ArmRun& run, ArmSummary& s, std::vector<double>& ttft, std::vector<double>& tpot,
                       std::vector<double>& e2e) {
  for (const TaskRecord& t : run.tasks) {
    ++s.submitted;
    TaskRow row;
    row.id = t.id;
    row.kind = t.kind;
    row.turn = t.turn;
    row.state = t.done ? t.result.state : TaskState::kQueued;
    const TaskMetrics& tm = t.result.metrics;
    row.submit_s = t.done ? tm.submit_time - run.start : -1.0;
    row.ttft_ms = tm.ttft() >= 0 ? tm.ttft() * 1e3 : -1.0;
    row.e2e_ms = tm.e2e() >= 0 ? tm.e2e() * 1e3 : -1.0;
    row.prompt_tokens = tm.prompt_tokens;
    row.generated_tokens = tm.generated_tokens;
    row.parks = tm.parks;
    row.tokens_recomputed = tm.tokens_recomputed;
    s.tasks.push_back(row);
    if (!t.done) {
      ++s.unfinished;
      continue;
    }
    const TaskState state = t.result.state;
    if (state == TaskState::kCancelled) ++s.cancelled;
    if (state == TaskState::kFailed) ++s.failed;
    if (state != TaskState::kDone) continue;
    ++s.done;
    const TaskMetrics& m = t.result.metrics;
    switch (t.kind) {
      case TaskKind::kChat:
        ++s.chat_turns;
        if (m.ttft() >= 0) ttft.push_back(m.ttft() * 1e3);
        if (m.tpot() >= 0) tpot.push_back(m.tpot() * 1e3);
        if (m.e2e() >= 0) e2e.push_back(m.e2e() * 1e3);
        if (t.turn == run.first_turn_after_resume) s.ttft_after_resume_ms = m.ttft() * 1e3;
        break;
      case TaskKind::kDoc: ++s.docs_completed; break;
      case TaskKind::kSummary: ++s.summaries_done; break;
      case TaskKind::kSuggestion: ++s.suggestions_done; break;
    }
  }
}

void Background(const ArmRun& run, const Calibration& calibration, ArmSummary& s) {
  s.window_s = run.window_end - run.start;
  s.bg_tokens = BgBetween(run.at_start, run.at_window_end);
  s.bg_tokens_per_s = s.window_s > 0 ? s.bg_tokens / s.window_s : 0.0;
  s.fg_busy_s = Busy(run.at_window_end, kFgTiers, 2) - Busy(run.at_start, kFgTiers, 2);
  s.bg_allowed_tokens = calibration.solo_tokens_per_s * std::max(0.0, s.window_s - s.fg_busy_s);
  if (s.bg_allowed_tokens > 0 && run.arm != Arm::kIdle) s.bg_efficiency = s.bg_tokens / s.bg_allowed_tokens;
  if (!run.had_lifecycle || run.at_resume.time <= run.at_stop.time) return;
  const double away = run.at_resume.time - run.at_stop.time;
  const int64_t away_tokens = BgBetween(run.at_stop, run.at_resume);
  s.bg_tps_background = away_tokens / away;
  const double front = s.window_s - away;
  if (front > 0) s.bg_tps_resumed = (s.bg_tokens - away_tokens) / front;
}

void WritePercentiles(JsonWriter& w, const char* key, const Percentiles& p) {
  w.Key(key).BeginObject();
  w.Key("count").Int(p.count);
  for (auto [name, v] : {std::pair{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}}) {
    w.Key(name);
    if (p.empty()) w.Null(); else w.Double(v);
  }
  w.EndObject();
}

void WriteOptional(JsonWriter& w, const char* key, double v) {
  w.Key(key);
  if (v < 0) w.Null(); else w.Double(v);
}

}  // namespace

Calibration CalibrationFrom(const ArmRun& solo) {
  Calibration c;
  c.seconds = solo.window_end - solo.start;
  c.tokens = BgBetween(solo.at_start, solo.at_window_end);
  c.solo_tokens_per_s = c.seconds > 0 ? c.tokens / c.seconds : 0.0;
  return c;
}

ArmSummary Summarize(const ArmRun& run, const Calibration& calibration, const ArmSummary* idle) {
  ArmSummary s;
  s.arm = run.arm;
  s.error = run.error;
  std::vector<double> ttft, tpot, e2e;
  CollectTaskCounts(run, s, ttft, tpot, e2e);
  s.ttft_ms = ComputePercentiles(std::move(ttft));
  s.tpot_ms = ComputePercentiles(std::move(tpot));
  s.e2e_ms = ComputePercentiles(std::move(e2e));
  s.preempt_ms = ComputePercentiles(run.stats.preemption_latencies).Scaled(1e3);
  if (idle != nullptr && idle->ttft_ms.p50 > 0 && !s.ttft_ms.empty()) {
    s.slowdown_p50 = s.ttft_ms.p50 / idle->ttft_ms.p50;
    s.slowdown_p99 = s.ttft_ms.p99 / idle->ttft_ms.p99;
  }
  Background(run, calibration, s);
  s.tokens_recomputed = run.stats.tokens_recomputed;
  s.preemptions = run.stats.preemptions;
  s.parks_by_kind = {run.stats.parks_by_kind[0], run.stats.parks_by_kind[1], run.stats.parks_by_kind[2],
                     run.stats.parks_by_kind[3], run.stats.parks_by_kind[4]};
  for (const TaskRecord& t : run.tasks) {
    for (const TimelineEvent& e : t.timeline) {
      const bool snapshot = e.park_kind == ParkKind::kSnapshotRam || e.park_kind == ParkKind::kSnapshotDisk;
      if (e.kind == TimelineKind::kParked && snapshot) s.snapshot_bytes += e.bytes;
    }
  }
  if (run.park_seconds >= 0) s.park_ms = run.park_seconds * 1e3;
  if (run.resume_seconds >= 0) s.resume_ms = run.resume_seconds * 1e3;
  return s;
}

std::string ReportMarkdown(const ContentionReport& r) {
  std::string md;
  char line[512];
  md += "Foreground chat (" + std::to_string(r.config.turns) + " turns per arm), milliseconds:\n\n";
  md += "| arm | TTFT p50 | p90 | p99 | max | ×idle p50 | ×idle p99 | TPOT p50 | p99 | E2E p50 | p99 | preempt p50 | p99 |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    std::snprintf(line, sizeof(line), "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                  ArmName(a.arm), Fmt("%.0f", a.ttft_ms.p50).c_str(), Fmt("%.0f", a.ttft_ms.p90).c_str(),
                  Fmt("%.0f", a.ttft_ms.p99).c_str(), Fmt("%.0f", a.ttft_ms.max).c_str(),
                  Fmt("%.2f", a.slowdown_p50).c_str(), Fmt("%.2f", a.slowdown_p99).c_str(),
                  Fmt("%.1f", a.tpot_ms.p50).c_str(), Fmt("%.1f", a.tpot_ms.p99).c_str(),
                  Fmt("%.0f", a.e2e_ms.p50).c_str(), Fmt("%.0f", a.e2e_ms.p99).c_str(),
                  Fmt("%.1f", a.preempt_ms.p50).c_str(), Fmt("%.1f", a.preempt_ms.p99).c_str());
    md += line;
  }
  std::snprintf(line, sizeof(line),
                "\nBackground (indexer solo rate %.1f tok/s from a %.1f s calibration run):\n\n", r.calibration.solo_tokens_per_s,
                r.calibration.seconds);
  md += line;
  md += "| arm | bg tok/s | % of allowed | docs | summaries | suggestions | cancelled | failed | recomputed | parks res/ram/disk/part/full | snapshot MB | save / restore ms | bg tok/s RESUMED | bg tok/s CREATED | TTFT after ON_RESUME |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    std::snprintf(line, sizeof(line),
                  "| %s | %.1f | %s | %lld | %lld | %lld | %lld | %lld | %lld | %lld/%lld/%lld/%lld/%lld | %.1f | %s / %s | %s | %s | %s |\n",
                  ArmName(a.arm), a.bg_tokens_per_s, Fmt("%.0f%%", a.bg_efficiency * 100).c_str(),
                  static_cast<long long>(a.docs_completed), static_cast<long long>(a.summaries_done),
                  static_cast<long long>(a.suggestions_done), static_cast<long long>(a.cancelled),
                  static_cast<long long>(a.failed), static_cast<long long>(a.tokens_recomputed),
                  static_cast<long long>(a.parks_by_kind[0]), static_cast<long long>(a.parks_by_kind[1]),
                  static_cast<long long>(a.parks_by_kind[2]), static_cast<long long>(a.parks_by_kind[3]),
                  static_cast<long long>(a.parks_by_kind[4]), a.snapshot_bytes / 1048576.0,
                  Fmt("%.1f", a.park_ms).c_str(), Fmt("%.1f", a.resume_ms).c_str(), Fmt("%.1f", a.bg_tps_resumed).c_str(),
                  Fmt("%.1f", a.bg_tps_background).c_str(), Fmt("%.0f ms", a.ttft_after_resume_ms).c_str());
    md += line;
  }
  for (const ArmSummary& a : r.arms) {
    if (!a.error.empty()) md += "\n**" + std::string(ArmName(a.arm)) + " error:** " + a.error + "\n";
  }
  return md;
}

std::string ReportJson(const ContentionReport& r) {
  JsonWriter w;
  w.BeginObject().Key("arms").BeginObject();
  for (const ArmSummary& a : r.arms) {
    w.Key(ArmName(a.arm)).BeginObject();
    WritePercentiles(w, "ttft_ms", a.ttft_ms);
    WritePercentiles(w, "tpot_ms", a.tpot_ms);
    WritePercentiles(w, "e2e_ms", a.e2e_ms);
    WritePercentiles(w, "preempt_latency_ms", a.preempt_ms);
    WriteOptional(w, "slowdown_p50", a.slowdown_p50);
    WriteOptional(w, "slowdown_p99", a.slowdown_p99);
    w.Key("bg_tokens_per_s").Double(a.bg_tokens_per_s);
    w.Key("bg_tokens").Int(a.bg_tokens);
    w.Key("bg_allowed_tokens").Double(a.bg_allowed_tokens);
    WriteOptional(w, "bg_efficiency", a.bg_efficiency);
    w.Key("window_s").Double(a.window_s);
    w.Key("fg_busy_s").Double(a.fg_busy_s);
    w.Key("docs_completed").Int(a.docs_completed);
    w.Key("summaries_completed").Int(a.summaries_done);
    w.Key("suggestions_completed").Int(a.suggestions_done);
    w.Key("chat_turns").Int(a.chat_turns);
    w.Key("tasks_submitted").Int(a.submitted);
    w.Key("tasks_done").Int(a.done);
    w.Key("tasks_cancelled").Int(a.cancelled);
    w.Key("tasks_failed").Int(a.failed);
    w.Key("tasks_unfinished").Int(a.unfinished);
    w.Key("tokens_recomputed").Int(a.tokens_recomputed);
    w.Key("preemptions").Int(a.preemptions);
    w.Key("parks").BeginObject();
    for (int k = 0; k < 5; ++k) w.Key(ParkKindName(static_cast<ParkKind>(k))).Int(a.parks_by_kind[static_cast<size_t>(k)]);
    w.EndObject();
    w.Key("snapshot_bytes").Int(static_cast<int64_t>(a.snapshot_bytes));
    WriteOptional(w, "save_ms", a.park_ms);
    WriteOptional(w, "restore_ms", a.resume_ms);
    w.Key("lifecycle").BeginObject();
    WriteOptional(w, "bg_tokens_per_s_resumed", a.bg_tps_resumed);
    WriteOptional(w, "bg_tokens_per_s_background", a.bg_tps_background);
    WriteOptional(w, "ttft_after_resume_ms", a.ttft_after_resume_ms);
    w.EndObject();
    if (!a.error.empty()) w.Key("error").String(a.error);
    w.Key("tasks").BeginArray();
    for (const TaskRow& t : a.tasks) {
      w.BeginObject().Key("id").Int(t.id).Key("kind").String(TaskKindName(t.kind)).Key("turn").Int(t.turn);
      w.Key("state").String(TaskStateName(t.state)).Key("submit_s").Double(t.submit_s);
      WriteOptional(w, "ttft_ms", t.ttft_ms);
      WriteOptional(w, "e2e_ms", t.e2e_ms);
      w.Key("prompt_tokens").Int(t.prompt_tokens).Key("generated_tokens").Int(t.generated_tokens);
      w.Key("parks").Int(t.parks).Key("tokens_recomputed").Int(t.tokens_recomputed).EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  const ScenarioConfig& c = r.config;
  w.Key("config").BeginObject();
  w.Key("model").String(r.model).Key("machine").String(r.machine).Key("threads").Int(r.threads);
  w.Key("kv_pool_bytes").Int(static_cast<int64_t>(r.kv_pool_bytes));
  w.Key("seed").Int(static_cast<int64_t>(c.seed)).Key("turns").Int(c.turns);
  w.Key("system_tokens").Int(c.system_tokens).Key("user_tokens").Int(c.user_tokens);
  w.Key("answer_tokens").Int(c.answer_tokens).Key("doc_tokens").Int(c.doc_tokens);
  w.Key("doc_summary_tokens").Int(c.doc_summary_tokens).Key("summary_prompt_tokens").Int(c.summary_prompt_tokens);
  w.Key("summary_tokens").Int(c.summary_tokens).Key("suggestion_prompt_tokens").Int(c.suggestion_prompt_tokens);
  w.Key("suggestion_tokens").Int(c.suggestion_tokens);
  w.Key("think_s").BeginArray().Double(c.think_min_s).Double(c.think_max_s).EndArray();
  w.Key("lifecycle_after_turn").Int(c.lifecycle_after_turn).Key("background_s").Double(c.background_s);
  w.Key("valet_bg_chunk").Int(c.valet_bg_chunk).Key("baseline_chunk").Int(c.baseline_chunk);
  w.Key("batch_chunk").Int(c.batch_chunk).Key("valet_fill").Bool(c.valet_fill);
  w.EndObject();
  w.Key("calibration").BeginObject();
  w.Key("solo_tokens_per_s").Double(r.calibration.solo_tokens_per_s);
  w.Key("tokens").Int(r.calibration.tokens).Key("seconds").Double(r.calibration.seconds);
  w.EndObject();
  w.EndObject();
  return w.str();
}

std::string SeedComparison(const ContentionReport& r) {
  std::string out;
  char line[256];
  for (const ArmSummary& a : r.arms) {
    const char* seed = "";
    switch (a.arm) {
      case Arm::kIdle: seed = "seed (phone): 140 ms"; break;
      case Arm::kFifo: seed = "seed (phone): 1,420 ms (10.1x)"; break;
      case Arm::kValet: seed = "seed (phone): 161 ms (1.15x)"; break;
      case Arm::kBatch:
      case Arm::kPriority:
      case Arm::kSolo: seed = "seed: not measured"; break;
    }
    std::snprintf(line, sizeof(line), "  %-9s %-32s valet (here): TTFT p50 %s ms (%sx idle), p99 %s ms (%sx)\n",
                  ArmName(a.arm), seed, Fmt("%.0f", a.ttft_ms.p50).c_str(), Fmt("%.2f", a.slowdown_p50).c_str(),
                  Fmt("%.0f", a.ttft_ms.p99).c_str(), Fmt("%.2f", a.slowdown_p99).c_str());
    out += line;
  }
  return out;
}

}  // namespace valet
