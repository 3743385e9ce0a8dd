// valet bench-resume: what it costs to bring a parked sequence back, by park
// kind, for a system prompt of S tokens and D dynamic tokens: full re-prefill,
// partial re-prefill (the S prefix stays cached), RAM and disk snapshot
// restore; plus the snapshot codecs' ratio and speed.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli_args.h"
#include "commands.h"
#include "median.h"
#include "common/json.h"
#include "common/private_files.h"
#include "engine/real_engine.h"
#include "testing/model/synthetic_model.h"

namespace valet::cli {
using namespace valet::testing;
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr FlagSpec kFlags[] = {
    {"--model", "-m", true, "GGUF model file (default: the synthetic tiny Q8_0 model, written to a temp dir)"},
    {"--threads", "-t", true, "compute threads (default: all cores)"},
    {"--reps", "-r", true, "measured runs per cell; the median is reported (default 3)"},
    {"--dir", nullptr, true, "snapshot directory (default: a temp dir)"},
    {"--ram-budget-mb", nullptr, true, "snapshot RAM tier budget (default 256)"},
    {"--kv-budget-mb", nullptr, true, "KV pool budget (default 256)"},
    {"--json", nullptr, false, "print one JSON object"},
};

constexpr int32_t kSizes[][2] = {{128, 128}, {128, 512}, {128, 1024}, {512, 128}, {512, 512}, {512, 1024}};
constexpr int32_t kChunk = 512;

struct Row {
  int32_t s = 0, d = 0;
  double full_ms = 0, partial_ms = 0, ram_ms = 0, disk_ms = 0;
  size_t snapshot_bytes = 0, kv_bytes = 0;
};

struct CodecRow {
  Compression codec;
  double ratio = 0, compress_mb_s = 0, decompress_mb_s = 0;
};

std::vector<int32_t> RandomTokens(int32_t n, uint32_t seed, int32_t n_vocab) {
  std::vector<int32_t> t(n);
  for (int32_t& v : t) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<int32_t>((seed >> 8) % static_cast<uint32_t>(n_vocab - 3)) + 3;
  }
  return t;
}

Status Feed(RealEngine& e, SequenceId id, std::span<const int32_t> tokens) {
  for (size_t i = 0; i < tokens.size(); i += kChunk) {
    StepItem item{id, tokens.subspan(i, std::min<size_t>(kChunk, tokens.size() - i)), 0, false};
    VALET_RETURN_IF_ERROR(e.Step({&item, 1}).status());
  }
  return Status::Ok();
}

Status Recompute(RealEngine& e, SequenceId id) {
  for (;;) {
    VALET_ASSIGN_OR_RETURN(SequenceInfo info, e.Info(id));
    if (info.pending_recompute == 0) return Status::Ok();
    StepItem item{id, {}, std::min(info.pending_recompute, kChunk), false};
    VALET_RETURN_IF_ERROR(e.Step({&item, 1}).status());
  }
}

// Milliseconds from Resume to a fully computed sequence, after parking as `kind`.
Result<double> TimeResume(RealEngine& e, SequenceId id, ParkKind kind, size_t* park_bytes) {
  VALET_ASSIGN_OR_RETURN(ParkReport park, e.Park(id, kind));
  if (park.kind != kind) return Internal(std::string("could not park as ") + ParkKindName(kind));
  *park_bytes = park.bytes;
  const auto t0 = Clock::now();
  VALET_ASSIGN_OR_RETURN(ResumeReport resume, e.Resume(id));
  if (resume.fell_back) return Internal("a snapshot fell back to recompute");
  VALET_RETURN_IF_ERROR(Recompute(e, id));
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Result<Row> MeasureRow(RealEngine& e, int32_t s, int32_t d, int64_t reps) {
  const int32_t n_vocab = e.engine().model().config().n_vocab;
  const std::vector<int32_t> system = RandomTokens(s, 1, n_vocab), dynamic = RandomTokens(d, 2, n_vocab);
  SamplingParams greedy;
  greedy.temperature = 0;
  VALET_ASSIGN_OR_RETURN(SequenceId id, e.OpenSequence({system, greedy}));
  VALET_RETURN_IF_ERROR(Recompute(e, id));
  VALET_RETURN_IF_ERROR(Feed(e, id, dynamic));
  Row row{s, d};
  std::vector<double> full, partial, ram, disk;
  size_t bytes = 0;
  for (int64_t r = 0; r <= reps; ++r) {  // run 0 warms up
    VALET_ASSIGN_OR_RETURN(double f, TimeResume(e, id, ParkKind::kFull, &bytes));
    VALET_ASSIGN_OR_RETURN(double p, TimeResume(e, id, ParkKind::kPartial, &row.kv_bytes));
    VALET_ASSIGN_OR_RETURN(double m, TimeResume(e, id, ParkKind::kSnapshotRam, &row.snapshot_bytes));
    VALET_ASSIGN_OR_RETURN(double k, TimeResume(e, id, ParkKind::kSnapshotDisk, &bytes));
    if (r == 0) continue;
    full.push_back(f);
    partial.push_back(p);
    ram.push_back(m);
    disk.push_back(k);
  }
  row.full_ms = Median(full);
  row.partial_ms = Median(partial);
  row.ram_ms = Median(ram);
  row.disk_ms = Median(disk);
  VALET_RETURN_IF_ERROR(e.CloseSequence(id));
  return row;
}

// Ratio and speed of each codec on a real snapshot (the largest row's).
Result<std::vector<CodecRow>> MeasureCodecs(RealEngine& e, int32_t s, int32_t d) {
  const int32_t n_vocab = e.engine().model().config().n_vocab;
  VALET_ASSIGN_OR_RETURN(SequenceId id, e.OpenSequence({RandomTokens(s, 1, n_vocab), {}}));
  VALET_RETURN_IF_ERROR(Recompute(e, id));
  VALET_RETURN_IF_ERROR(Feed(e, id, RandomTokens(d, 2, n_vocab)));
  VALET_RETURN_IF_ERROR(e.Park(id, ParkKind::kSnapshotRam).status());
  VALET_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, e.snapshot_store().Get(static_cast<uint64_t>(id)));
  VALET_RETURN_IF_ERROR(e.Resume(id).status());
  VALET_RETURN_IF_ERROR(e.CloseSequence(id));
  std::vector<CodecRow> rows;
  for (Compression c : {Compression::kNone, Compression::kLz4, Compression::kZstd}) {
    SnapshotStoreOptions o;
    o.ram_budget_bytes = blob.size() * 2 + 4096;
    o.compression = c;
    VALET_ASSIGN_OR_RETURN(std::unique_ptr<SnapshotStore> store, SnapshotStore::Create(o));
    for (int i = 0; i < 3; ++i) {
      VALET_RETURN_IF_ERROR(store->Put(1, blob, SnapshotTier::kRam).status());
      VALET_RETURN_IF_ERROR(store->Get(1).status());
    }
    const SnapshotStoreStats& st = store->stats();
    const double mb = 3.0 * blob.size() / 1e6;
    rows.push_back({c, static_cast<double>(st.raw_bytes) / st.stored_bytes, mb / st.compress_seconds,
                    mb / st.decompress_seconds});
  }
  return rows;
}

Result<std::string> DefaultModel(const fs::path& dir) {
  SynthModelOptions o;
  o.preset = SynthPreset::kTiny;
  o.type = GgmlType::kQ8_0;
  const std::string path = (dir / "synth-tiny-q8_0.gguf").string();
  VALET_RETURN_IF_ERROR(WriteSyntheticModel(o, path));
  return path;
}

void Print(const std::vector<Row>& rows, const std::vector<CodecRow>& codecs, RealEngine& e, bool json,
           const std::string& model, int threads) {
  const EngineMemory m = e.memory();
  if (json) {
    Json rows_json = Json::array();
    for (const Row& r : rows) {
      rows_json.push_back(Json{{"S", r.s}, {"D", r.d}, {"full_ms", r.full_ms}, {"partial_ms", r.partial_ms},
                               {"ram_restore_ms", r.ram_ms}, {"disk_restore_ms", r.disk_ms},
                               {"snapshot_bytes", r.snapshot_bytes}, {"partial_saving", 1.0 - r.partial_ms / r.full_ms},
                               {"predicted_saving", static_cast<double>(r.s) / (r.s + r.d)}});
    }
    Json codecs_json = Json::array();
    for (const CodecRow& c : codecs) {
      codecs_json.push_back(Json{{"codec", CompressionName(c.codec)}, {"ratio", c.ratio},
                                 {"compress_mb_s", c.compress_mb_s}, {"decompress_mb_s", c.decompress_mb_s}});
    }
    const Json out{{"model", model},
                   {"threads", threads},
                   {"kv_pool_budget_bytes", m.pool_capacity_bytes},
                   {"snapshot_ram_budget_bytes", e.snapshot_store().options().ram_budget_bytes},
                   {"rows", std::move(rows_json)},
                   {"compression", std::move(codecs_json)}};
    std::printf("%s\n", DumpJson(out).c_str());
    return;
  }
  std::printf("model %s | %d threads | KV pool %.0f MiB | snapshot RAM tier %.0f MiB\n", model.c_str(), threads,
              m.pool_capacity_bytes / 1048576.0,
              e.snapshot_store().options().ram_budget_bytes / 1048576.0);
  std::printf("%5s %5s %10s %11s %9s %10s %10s %14s %10s\n", "S", "D", "full ms", "partial ms", "ram ms", "disk ms",
              "snap KiB", "partial saving", "S/(S+D)");
  for (const Row& r : rows) {
    std::printf("%5d %5d %10.2f %11.2f %9.3f %10.3f %10.1f %13.0f%% %9.0f%%\n", r.s, r.d, r.full_ms, r.partial_ms,
                r.ram_ms, r.disk_ms, r.snapshot_bytes / 1024.0, 100.0 * (1.0 - r.partial_ms / r.full_ms),
                100.0 * r.s / (r.s + r.d));
  }
  std::printf("\n%-6s %8s %14s %16s\n", "codec", "ratio", "compress MB/s", "decompress MB/s");
  for (const CodecRow& c : codecs) {
    std::printf("%-6s %8.3f %14.0f %16.0f\n", CompressionName(c.codec), c.ratio, c.compress_mb_s, c.decompress_mb_s);
  }
}

}  // namespace

int RunBenchResume(std::span<char* const> argv) {
  Args args;
  if (auto code = ParseCommandLine("bench-resume", "[-m MODEL] [flags]", kFlags, argv, &args)) return *code;
  Result<int64_t> threads = args.Int("--threads", ThreadPool::DefaultThreadCount(), 1, 256);
  Result<int64_t> reps = args.Int("--reps", 3, 1, 1000);
  Result<int64_t> ram_mb = args.Int("--ram-budget-mb", 256, 1, 1 << 20);
  Result<int64_t> kv_mb = args.Int("--kv-budget-mb", 256, 1, 1 << 20);
  for (const Status* s : {&threads.status(), &reps.status(), &ram_mb.status(), &kv_mb.status()}) {
    if (!s->ok()) return Fail("bench-resume", *s);
  }
  Result<std::string> scratch = MakeScratchDirectory("valet-bench-resume-");
  if (!scratch.ok()) return Fail("bench-resume", scratch.status());
  const fs::path tmp = *scratch;
  std::error_code ec;
  Result<std::string> model = args.Has("--model") ? args.String("--model", std::nullopt) : DefaultModel(tmp);
  Result<std::string> dir = args.String("--dir", (tmp / "snapshots").string());
  if (!model.ok()) return Fail("bench-resume", model.status());
  if (!dir.ok()) return Fail("bench-resume", dir.status());

  RealEngineOptions o;
  o.engine.model_path = *model;
  o.engine.n_threads = static_cast<int>(*threads);
  o.engine.n_ctx = 512 + 1024 + 16;
  o.engine.max_batch_tokens = kChunk;
  o.engine.kv_capacity_bytes = static_cast<size_t>(*kv_mb) << 20;
  o.store.ram_budget_bytes = static_cast<size_t>(*ram_mb) << 20;
  o.store.disk_dir = *dir;
  Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(o);
  if (!engine.ok()) return Fail("bench-resume", engine.status());
  std::vector<Row> rows;
  for (const auto& sd : kSizes) {
    Result<Row> row = MeasureRow(**engine, sd[0], sd[1], *reps);
    if (!row.ok()) return Fail("bench-resume", row.status());
    rows.push_back(*row);
  }
  Result<std::vector<CodecRow>> codecs = MeasureCodecs(**engine, 512, 1024);
  if (!codecs.ok()) return Fail("bench-resume", codecs.status());
  Print(rows, *codecs, **engine, args.Has("--json"), *model, o.engine.n_threads);
  engine->reset();
  fs::remove_all(tmp, ec);
  return 0;
}

}  // namespace valet::cli
