#include "bench/contention_report.h"

#include <algorithm>
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

double Led(const StatsMark& m, const size_t* tiers, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += m.led_s[tiers[i]];
  return sum;
}

int64_t BgBetween(const StatsMark& a, const StatsMark& b) { return Processed(b, kBgTiers, 2) - Processed(a, kBgTiers, 2); }
int64_t BgRidersBetween(const StatsMark& a, const StatsMark& b) {
  return b.riders[2] + b.riders[3] - a.riders[2] - a.riders[3];
}

std::string Fmt(const char* format, double v) {
  if (v < 0) return "–";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

struct ChatSamples {
  std::vector<double> tpot, e2e, wait, prompt;
};

void CollectTaskCounts(const ArmRun& run, int32_t first_turn, ArmSummary& s, ChatSamples& chat) {
  for (const TaskRecord& t : run.tasks) {
    ++s.submitted;
    TaskRow row;
    row.id = t.id;
    row.kind = t.kind;
    row.turn = t.turn < 0 ? t.turn : first_turn + t.turn;
    row.state = t.done ? t.result.state : TaskState::kQueued;
    const TaskMetrics& tm = t.result.metrics;
    row.submit_s = t.done ? tm.submit_time - run.start : -1.0;
    row.wait_ms = t.done && tm.start_time >= tm.submit_time ? (tm.start_time - tm.submit_time) * 1e3 : -1.0;
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
        if (m.ttft() >= 0) s.ttft_samples_ms.push_back(m.ttft() * 1e3);
        if (m.tpot() >= 0) chat.tpot.push_back(m.tpot() * 1e3);
        if (m.e2e() >= 0) chat.e2e.push_back(m.e2e() * 1e3);
        if (m.start_time >= m.submit_time && m.first_token_time >= m.start_time) {
          chat.wait.push_back((m.start_time - m.submit_time) * 1e3);
          chat.prompt.push_back((m.first_token_time - m.start_time) * 1e3);
        }
        if (t.turn == run.first_turn_after_resume) s.ttft_after_resume_ms = m.ttft() * 1e3;
        break;
      case TaskKind::kDoc: ++s.docs_completed; break;
      case TaskKind::kSummary: ++s.summaries_done; break;
      case TaskKind::kSuggestion: ++s.suggestions_done; break;
    }
  }
}

void Background(const ArmRun& run, ArmSummary& s) {
  s.window_s += run.window_end - run.start;
  s.bg_tokens += BgBetween(run.at_start, run.at_window_end);
  s.bg_rider_tokens += BgRidersBetween(run.at_start, run.at_window_end);
  s.fg_led_s += Led(run.at_window_end, kFgTiers, 2) - Led(run.at_start, kFgTiers, 2);
  s.bg_led_s += Led(run.at_window_end, kBgTiers, 2) - Led(run.at_start, kBgTiers, 2);
  if (!run.had_lifecycle || run.at_resume.time <= run.at_stop.time) return;
  const double away = run.at_resume.time - run.at_stop.time;
  const int64_t away_tokens = BgBetween(run.at_stop, run.at_resume);
  s.bg_tps_background = away_tokens / away;
  const double front = run.window_end - run.start - away;
  if (front > 0) s.bg_tps_resumed = (BgBetween(run.at_start, run.at_window_end) - away_tokens) / front;
}

void FinishBackground(const Calibration& calibration, ArmSummary& s) {
  s.bg_tokens_per_s = s.window_s > 0 ? s.bg_tokens / s.window_s : 0.0;
  s.free_s = std::max(0.0, s.window_s - s.fg_led_s);
  if (s.arm == Arm::kIdle || s.free_s <= 0 || calibration.solo_tokens_per_s <= 0) return;
  s.bg_free_rate_vs_solo = (s.bg_tokens - s.bg_rider_tokens) / s.free_s / calibration.solo_tokens_per_s;
}

void WritePercentiles(JsonWriter& w, const char* key, const Percentiles& p) {
  w.Key(key).BeginObject();
  w.Key("count").Int(p.count);
  w.Key("p99_is_max").Bool(p.count < kMinSamplesForP99);
  for (auto [name, v] : {std::pair{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}}) {
    w.Key(name);
    if (p.empty()) w.Null(); else w.Double(v);
  }
  w.EndObject();
}

void WriteInterval(JsonWriter& w, const char* key, const RatioInterval& ci) {
  w.Key(key);
  if (ci.lo < 0) {
    w.Null();
  } else {
    w.BeginArray().Double(ci.lo).Double(ci.hi).EndArray();
  }
}

// "1.06 [0.92, 1.23]", or the ratio alone without an interval.
std::string WithInterval(double ratio, const RatioInterval& ci) {
  std::string out = Fmt("%.2f", ratio);
  if (ci.lo >= 0) out += " [" + Fmt("%.2f", ci.lo) + ", " + Fmt("%.2f", ci.hi) + "]";
  return out;
}

void WriteOptional(JsonWriter& w, const char* key, double v) {
  w.Key(key);
  if (v < 0) w.Null(); else w.Double(v);
}

}  // namespace

Calibration CalibrationFrom(std::span<const ArmRun> solo_blocks) {
  Calibration c;
  for (const ArmRun& solo : solo_blocks) {
    c.seconds += solo.window_end - solo.start;
    c.tokens += BgBetween(solo.at_start, solo.at_window_end);
  }
  c.solo_tokens_per_s = c.seconds > 0 ? c.tokens / c.seconds : 0.0;
  return c;
}

ArmSummary Summarize(std::span<const ArmRun> blocks, const Calibration& calibration, const ArmSummary* idle) {
  ArmSummary s;
  if (blocks.empty()) return s;
  s.arm = blocks.front().arm;
  ChatSamples chat;
  std::vector<double> preempt;
  int32_t first_turn = 0;
  for (const ArmRun& run : blocks) {
    if (s.error.empty()) s.error = run.error;
    CollectTaskCounts(run, first_turn, s, chat);
    first_turn += static_cast<int32_t>(
        std::count_if(run.tasks.begin(), run.tasks.end(), [](const TaskRecord& t) { return t.kind == TaskKind::kChat; }));
    Background(run, s);
    preempt.insert(preempt.end(), run.stats.preemption_latencies.begin(), run.stats.preemption_latencies.end());
    s.tokens_recomputed += run.stats.tokens_recomputed;
    s.preemptions += run.stats.preemptions;
    for (size_t k = 0; k < s.parks_by_kind.size(); ++k) s.parks_by_kind[k] += run.stats.parks_by_kind[k];
    for (const TaskRecord& t : run.tasks) {
      for (const TimelineEvent& e : t.timeline) {
        const bool snapshot = e.park_kind == ParkKind::kSnapshotRam || e.park_kind == ParkKind::kSnapshotDisk;
        if (e.kind == TimelineKind::kParked && snapshot) s.snapshot_bytes += e.bytes;
      }
    }
    if (run.park_seconds >= 0) s.park_ms = std::max(0.0, s.park_ms) + run.park_seconds * 1e3;
    if (run.resume_seconds >= 0) s.resume_ms = std::max(0.0, s.resume_ms) + run.resume_seconds * 1e3;
  }
  s.ttft_ms = ComputePercentiles(s.ttft_samples_ms);
  s.tpot_ms = ComputePercentiles(std::move(chat.tpot));
  s.e2e_ms = ComputePercentiles(std::move(chat.e2e));
  s.wait_ms = ComputePercentiles(std::move(chat.wait));
  s.prompt_ms = ComputePercentiles(std::move(chat.prompt));
  s.preempt_ms = ComputePercentiles(std::move(preempt)).Scaled(1e3);
  if (idle != nullptr && idle->ttft_ms.p50 > 0 && !s.ttft_ms.empty()) {
    s.slowdown_p50 = s.ttft_ms.p50 / idle->ttft_ms.p50;
    s.slowdown_p99 = s.ttft_ms.p99 / idle->ttft_ms.p99;
    const uint64_t seed = 0x5eed + static_cast<uint64_t>(s.arm);
    s.slowdown_p50_ci = BootstrapRatio(s.ttft_samples_ms, idle->ttft_samples_ms, 50, seed);
    if (s.ttft_ms.count >= kMinSamplesForP99 && idle->ttft_ms.count >= kMinSamplesForP99) {
      s.slowdown_p99_ci = BootstrapRatio(s.ttft_samples_ms, idle->ttft_samples_ms, 99, seed);
    }
  }
  FinishBackground(calibration, s);
  return s;
}

std::string ReportMarkdown(const ContentionReport& r) {
  std::string md;
  char line[640];
  std::snprintf(line, sizeof(line),
                "Foreground chat (%d turns per arm, interleaved in blocks of %d), milliseconds; p99 needs %lld "
                "samples, with fewer the p99 columns hold the maximum:\n\n",
                r.config.turns, r.config.block_turns, static_cast<long long>(kMinSamplesForP99));
  md += line;
  md += "| arm | TTFT p50 | p90 | p99 | max | ×idle p50 [95% CI] | ×idle p99 [95% CI] | wait p50 | prompt p50 | TPOT p50 | p99 | E2E p50 | p99 | preempt p50 | p99 |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    const bool p99 = a.ttft_ms.count >= kMinSamplesForP99;
    const std::string ci = WithInterval(a.slowdown_p50, a.slowdown_p50_ci);
    const std::string ci99 = WithInterval(a.slowdown_p99, a.slowdown_p99_ci);
    std::snprintf(line, sizeof(line), "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                  ArmName(a.arm), Fmt("%.0f", a.ttft_ms.p50).c_str(), Fmt("%.0f", a.ttft_ms.p90).c_str(),
                  p99 ? Fmt("%.0f", a.ttft_ms.p99).c_str() : "(max)", Fmt("%.0f", a.ttft_ms.max).c_str(), ci.c_str(),
                  ci99.c_str(), Fmt("%.1f", a.wait_ms.p50).c_str(),
                  Fmt("%.1f", a.prompt_ms.p50).c_str(), Fmt("%.1f", a.tpot_ms.p50).c_str(),
                  Fmt("%.1f", a.tpot_ms.p99).c_str(), Fmt("%.0f", a.e2e_ms.p50).c_str(),
                  Fmt("%.0f", a.e2e_ms.p99).c_str(), Fmt("%.1f", a.preempt_ms.p50).c_str(),
                  Fmt("%.1f", a.preempt_ms.p99).c_str());
    md += line;
  }
  std::snprintf(line, sizeof(line),
                "\nBackground (indexer solo rate %.1f tok/s, measured alone in every block: %.1f s in all; \"free-time "
                "rate\" is background tokens per second of the time no foreground step ran, over that solo rate):\n\n",
                r.calibration.solo_tokens_per_s, r.calibration.seconds);
  md += line;
  md += "| arm | bg tok/s | free-time rate ×solo | rider tok | docs | summaries | suggestions | cancelled | failed | output mismatches | recomputed | parks res/ram/disk/part/full | snapshot MB | save / restore ms | bg tok/s RESUMED | bg tok/s CREATED | TTFT after ON_RESUME |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n";
  for (const ArmSummary& a : r.arms) {
    std::snprintf(line, sizeof(line),
                  "| %s | %.1f | %s | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld/%lld/%lld/%lld/%lld | %.1f | %s / %s | %s | %s | %s |\n",
                  ArmName(a.arm), a.bg_tokens_per_s, Fmt("%.2f", a.bg_free_rate_vs_solo).c_str(),
                  static_cast<long long>(a.bg_rider_tokens), static_cast<long long>(a.docs_completed),
                  static_cast<long long>(a.summaries_done), static_cast<long long>(a.suggestions_done),
                  static_cast<long long>(a.cancelled), static_cast<long long>(a.failed),
                  static_cast<long long>(a.output_mismatches), static_cast<long long>(a.tokens_recomputed),
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
    WritePercentiles(w, "wait_ms", a.wait_ms);
    WritePercentiles(w, "prompt_ms", a.prompt_ms);
    WriteOptional(w, "slowdown_p50", a.slowdown_p50);
    WriteOptional(w, "slowdown_p99", a.slowdown_p99);
    WriteInterval(w, "ratio_ci", a.slowdown_p50_ci);
    WriteInterval(w, "ratio_ci_p99", a.slowdown_p99_ci);
    w.Key("bg_tokens_per_s").Double(a.bg_tokens_per_s);
    w.Key("bg_tokens").Int(a.bg_tokens);
    w.Key("bg_rider_tokens").Int(a.bg_rider_tokens);
    WriteOptional(w, "bg_free_rate_vs_solo", a.bg_free_rate_vs_solo);
    w.Key("window_s").Double(a.window_s);
    w.Key("fg_led_s").Double(a.fg_led_s);
    w.Key("free_s").Double(a.free_s);
    w.Key("bg_led_s").Double(a.bg_led_s);
    w.Key("output_mismatches").Int(a.output_mismatches);
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
      WriteOptional(w, "wait_ms", t.wait_ms);
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
  w.Key("seed").Int(static_cast<int64_t>(c.seed)).Key("turns").Int(c.turns).Key("block_turns").Int(c.block_turns);
  w.Key("system_tokens").Int(c.system_tokens).Key("user_tokens").Int(c.user_tokens);
  w.Key("answer_tokens").Int(c.answer_tokens).Key("doc_tokens").Int(c.doc_tokens);
  w.Key("doc_instruction_tokens").Int(c.doc_instruction_tokens);
  w.Key("indexers").Int(c.indexers);
  w.Key("doc_summary_tokens").Int(c.doc_summary_tokens).Key("summary_prompt_tokens").Int(c.summary_prompt_tokens);
  w.Key("summary_tokens").Int(c.summary_tokens).Key("suggestion_prompt_tokens").Int(c.suggestion_prompt_tokens);
  w.Key("suggestion_tokens").Int(c.suggestion_tokens);
  w.Key("think_s").BeginArray().Double(c.think_min_s).Double(c.think_max_s).EndArray();
  w.Key("lifecycle_after_turn").Int(c.lifecycle_after_turn).Key("background_s").Double(c.background_s);
  w.Key("low_memory_turn").Int(c.low_memory_turn);
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
