// Parking and resuming through the real engine: snapshots continue
// bit-exactly, partial/full re-prefills continue with the same tokens, and
// damaged snapshots fall back to recomputation. The models are ../shared's,
// and synthesized Gemma 2 and 3 files (windowed layers: the 61-token
// conversation runs well past their 16-token window).
#include "engine/real_engine.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

namespace fs = std::filesystem;

constexpr int32_t kChunk = 16;
constexpr int32_t kDecode = 10;
// Largest q8_0-vs-f16 KV logit difference, as a fraction of the step's largest
// |logit|, over 41 teacher-forced outputs: measured 0.0247 (synth-tiny Q8_0),
// 0.0212 (synth-tiny Q4_0), 0.0196 (phi3 Q4_0), 0.0104 (qwen3 Q4_K_M); 2x headroom.
constexpr double kQ8LogitTolerance = 0.05;

std::string ModelPath(const std::string& name) { return std::string(VALET_SHARED_DIR) + "/models/" + name; }

std::vector<int32_t> Tokens(int32_t n, int32_t seed, int32_t n_vocab) {
  std::vector<int32_t> t(n);
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (int32_t& v : t) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab - 3)) + 3;
  }
  return t;
}

struct Trace {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<std::vector<float>> logits;
  int64_t cut_tokens_dropped = 0;  // ParkAccounting's at the end
  int32_t cut_tokens_kept = -1;     // of a stopped step, once parked and resumed
};

struct Pause {
  int event = -1;  // park before this event (0: right after the prefix was shared)
  ParkKind kind = ParkKind::kResident;
  bool corrupt = false;  // damage the snapshot while parked
  int32_t cut_layer = -1;  // first stop this event's step before this layer (-1: no)
};

class RealEngineTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("valet-engine-test-" + std::to_string(getpid()));
    const std::string name = GetParam();
    if (const size_t dash = name.find("-tiny-"); name.starts_with("gemma")) {
      fs::create_directories(dir_);
      path_ = (dir_ / name).string();
      SynthModelOptions o;
      o.arch = name.substr(0, dash);
      o.type = *ParseSynthType(name.substr(dash + 6, name.size() - dash - 6 - 5));
      ASSERT_TRUE(WriteSyntheticModel(o, path_).ok());
      return;
    }
    path_ = ModelPath(name);
    if (!fs::exists(path_)) GTEST_SKIP() << path_ << " is absent (shared test models not installed)";
  }

  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<RealEngine> Open() {
    RealEngineOptions o;
    o.engine.model_path = path_;
    o.engine.n_threads = 1;
    o.engine.n_ctx = 256;
    o.engine.max_batch_tokens = 64;
    o.engine.kv_capacity_bytes = 8u << 20;
    o.engine.kv_type = kv_type_;
    o.store.ram_budget_bytes = 4u << 20;
    o.store.disk_dir = dir_.string();
    o.store.compression = Compression::kZstd;
    o.store.warn = [this](std::string_view w) { warnings_.emplace_back(w); };
    o.calibrate = false;
    o.keep_logits = true;
    Result<std::unique_ptr<RealEngine>> e = RealEngine::Open(o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }

  // Brings a sequence's pending recompute up to date in chunks of `chunk`.
  static void Recompute(RealEngine& e, SequenceId id, int32_t chunk) {
    for (;;) {
      const int32_t pending = e.Info(id)->pending_recompute;
      if (pending == 0) return;
      StepItem item{id, {}, std::min(pending, chunk), false};
      ASSERT_TRUE(e.Step({&item, 1}).ok());
    }
  }

  // Other work while a sequence is parked, so restored blocks land elsewhere.
  static void Interfere(RealEngine& e, int32_t n_vocab) {
    SequenceId other = *e.OpenSequence({});
    std::vector<int32_t> t = Tokens(40, 99, n_vocab);
    StepItem item{other, t, 0, true};
    ASSERT_TRUE(e.Step({&item, 1}).ok());
    ASSERT_TRUE(e.CloseSequence(other).ok());
  }

  // System prompt P (21 tokens: ends mid-block) cached by a first sequence,
  // then a sequence sharing it: a 40-token prompt in chunks, then decoding.
  Trace Run(const SamplingParams& sampling, const Pause& pause) {
    std::unique_ptr<RealEngine> e = Open();
    if (!e) return {};
    const int32_t n_vocab = e->engine().model().config().n_vocab;
    const std::vector<int32_t> system = Tokens(21, 1, n_vocab), prompt = Tokens(40, 2, n_vocab);
    SequenceSpec spec{system, sampling};
    SequenceId warm = *e->OpenSequence(spec);
    spec.constraint = constraint_;
    EXPECT_EQ(e->Info(warm)->pending_recompute, 21);
    Recompute(*e, warm, kChunk);
    SequenceId id = *e->OpenSequence(spec);
    SequenceInfo info = *e->Info(id);
    EXPECT_EQ(info.n_shared, 21);
    EXPECT_EQ(info.pending_recompute, 0);
    EXPECT_TRUE(e->CloseSequence(warm).ok());

    Trace trace;
    const int n_prompt_events = (40 + kChunk - 1) / kChunk;
    for (int event = 0; event < n_prompt_events + kDecode; ++event) {
      StepItem item{id, {}, 0, false};
      if (event < n_prompt_events) {
        const int32_t begin = event * kChunk, n = std::min(kChunk, 40 - begin);
        item.tokens = std::span<const int32_t>(prompt).subspan(begin, n);
        item.sample = begin + n == 40;
      } else {
        item.tokens = {&trace.tokens.back(), 1};
        item.sample = true;
      }
      if (event == pause.event) {
        if (pause.cut_layer >= 0) StopStep(*e, item, pause.cut_layer);
        ParkAndResume(*e, id, pause, n_vocab);
        trace.cut_tokens_kept = e->Info(id)->cut_tokens;
      }
      Result<StepResult> r = e->Step({&item, 1});
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) return trace;
      if (item.sample) {
        trace.tokens.push_back(r->outputs.at(0).token);
        trace.text += e->TokenPiece(trace.tokens.back());
        std::span<const float> l = e->last_logits(id);
        trace.logits.emplace_back(l.begin(), l.end());
      }
    }
    trace.cut_tokens_dropped = e->accounting().cut_tokens_dropped;
    return trace;
  }

  // Runs the item's step stopped before `layer`: it keeps what it computed
  // (nothing before the first layer).
  static void StopStep(RealEngine& e, const StepItem& item, int32_t layer) {
    e.engine().context().set_cut_for_testing(layer);
    EXPECT_EQ(e.Step({&item, 1}).status().code(), StatusCode::kAborted);
    EXPECT_EQ(e.Info(item.seq)->cut_tokens, layer == 0 ? 0 : static_cast<int32_t>(item.tokens.size()));
  }

  void ParkAndResume(RealEngine& e, SequenceId id, const Pause& pause, int32_t n_vocab) {
    const SequenceInfo before = *e.Info(id);
    Result<ParkReport> park = e.Park(id, pause.kind);
    ASSERT_TRUE(park.ok()) << park.status().ToString();
    EXPECT_EQ(park->kind, pause.kind);
    if (pause.corrupt) {
      if (pause.kind == ParkKind::kSnapshotRam) {
        std::span<uint8_t> frame = e.snapshot_store().RamFrameForTesting(static_cast<uint64_t>(id));
        ASSERT_FALSE(frame.empty());
        frame[frame.size() - 5] ^= 0x40;
      } else {
        fs::remove(e.snapshot_store().DiskPath(static_cast<uint64_t>(id)));
      }
    }
    Interfere(e, n_vocab);
    Result<ResumeReport> resume = e.Resume(id);
    ASSERT_TRUE(resume.ok()) << resume.status().ToString();
    EXPECT_EQ(resume->fell_back, pause.corrupt);
    const bool snapshot = pause.kind == ParkKind::kSnapshotRam || pause.kind == ParkKind::kSnapshotDisk;
    if (snapshot && !pause.corrupt) {
      EXPECT_EQ(resume->tokens_to_recompute, 0);
      EXPECT_EQ(e.Info(id)->n_cached, before.n_cached);
    }
    if (pause.kind == ParkKind::kPartial) {
      EXPECT_EQ(resume->tokens_to_recompute, before.n_cached - 21) << "only the own tokens are recomputed";
    }
    if (pause.kind == ParkKind::kFull) {
      EXPECT_EQ(resume->tokens_to_recompute, before.n_tokens);
    }
    Recompute(e, id, 7);  // other chunk shapes than the original prefill
    EXPECT_EQ(e.Info(id)->n_cached, before.n_cached);
  }

  std::string path_;
  KvType kv_type_ = KvType::kF16;
  Constraint constraint_;  // the measured sequence's
  fs::path dir_;
  std::vector<std::string> warnings_;
};

SamplingParams Sampled() {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.1f;
  p.seed = 1234;
  return p;
}

SamplingParams Greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

// Events: 0..2 are prompt chunks (0 is right after the prefix was shared,
// 1 and 2 fall inside the chunked prefill), 3.. are decode steps.
constexpr int kPausePoints[] = {0, 1, 2, 3, 7};

TEST_P(RealEngineTest, SnapshotsResumeBitExactly) {
  const Trace ref = Run(Sampled(), {});
  ASSERT_EQ(ref.tokens.size(), 1u + kDecode);
  for (ParkKind kind : {ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk, ParkKind::kResident}) {
    for (int at : kPausePoints) {
      const Trace t = Run(Sampled(), {at, kind, false});
      ASSERT_EQ(t.tokens, ref.tokens) << ParkKindName(kind) << " at event " << at;
      for (size_t i = 0; i < ref.logits.size(); ++i) {
        ASSERT_EQ(t.logits[i], ref.logits[i]) << ParkKindName(kind) << " at event " << at << ", output " << i;
      }
    }
  }
}

void ExpectSameContinuation(const Trace& t, const Trace& ref, const std::string& what);

// A step stopped between layers, then parked, other work run, and resumed:
// kept resident or in a snapshot, it goes on from where it stopped and drops
// nothing; an eviction drops its progress (counted) and the step runs again
// from the first layer. Either way the continuation is the one never
// stopped: bit for bit where the KV comes back whole, within recompute's
// rounding otherwise.
TEST_P(RealEngineTest, AStoppedStepGoesOnAfterEveryParkKind) {
  const Trace ref = Run(Greedy(), {});
  ASSERT_EQ(ref.tokens.size(), 1u + kDecode);
  const int32_t n_layer = Open()->engine().model().config().n_layer;
  for (ParkKind kind : {ParkKind::kResident, ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk, ParkKind::kPartial,
                        ParkKind::kFull}) {
    for (int32_t layer : {0, 1, n_layer - 1}) {
      for (int at : {1, 3}) {  // a prompt chunk of 16 tokens, the first decode step
        const std::string what = std::string(ParkKindName(kind)) + ", stopped before layer " + std::to_string(layer) +
                                 " at event " + std::to_string(at);
        const Trace t = Run(Greedy(), {at, kind, false, layer});
        const int64_t chunk = at < 3 ? kChunk : 1;
        const bool evicted = kind == ParkKind::kPartial || kind == ParkKind::kFull;
        EXPECT_EQ(t.cut_tokens_dropped, evicted && layer > 0 ? chunk : 0) << what;
        EXPECT_EQ(t.cut_tokens_kept, evicted || layer == 0 ? 0 : chunk) << what;
        if (evicted) {
          ExpectSameContinuation(t, ref, what);
          continue;
        }
        ASSERT_EQ(t.tokens, ref.tokens) << what;
        for (size_t i = 0; i < ref.logits.size(); ++i) ASSERT_EQ(t.logits[i], ref.logits[i]) << what << ", output " << i;
      }
    }
  }
  // A damaged snapshot gives neither the KV nor the stopped step back.
  const Trace damaged = Run(Greedy(), {1, ParkKind::kSnapshotRam, true, 1});
  EXPECT_EQ(damaged.cut_tokens_dropped, kChunk);
  EXPECT_EQ(damaged.cut_tokens_kept, 0);
  ExpectSameContinuation(damaged, ref, "damaged snapshot");
}

void ExpectSameContinuation(const Trace& t, const Trace& ref, const std::string& what) {
  ASSERT_EQ(t.tokens, ref.tokens) << what;
  for (size_t i = 0; i < ref.logits.size(); ++i) {
    float scale = 1.0f;
    for (float v : ref.logits[i]) scale = std::max(scale, std::fabs(v));
    for (size_t j = 0; j < ref.logits[i].size(); ++j) {
      ASSERT_NEAR(t.logits[i][j], ref.logits[i][j], 1e-3f * scale) << what << ", output " << i << " logit " << j;
    }
  }
}

// The pool takes the chat's cached system prompt back for other work; the
// next sequence with that prompt copies the spilled blocks back instead of
// recomputing them, and continues with bit-identical logits.
TEST_P(RealEngineTest, AReclaimedSystemPromptComesBackFromItsSpillBitExactly) {
  std::unique_ptr<RealEngine> e = Open();
  ASSERT_TRUE(e);
  const int32_t n_vocab = e->engine().model().config().n_vocab;
  const std::vector<int32_t> system = Tokens(21, 1, n_vocab), prompt = Tokens(9, 2, n_vocab);
  auto turn = [&](int32_t* recomputed) {
    SequenceId id = *e->OpenSequence({system, Greedy()});
    *recomputed = e->Info(id)->pending_recompute;
    Recompute(*e, id, kChunk);
    StepItem item{id, prompt, 0, true};
    EXPECT_TRUE(e->Step({&item, 1}).ok());
    std::span<const float> l = e->last_logits(id);
    std::vector<float> logits(l.begin(), l.end());
    EXPECT_TRUE(e->CloseSequence(id).ok());
    return logits;
  };
  int32_t recomputed = 0;
  const std::vector<float> ref = turn(&recomputed);
  ASSERT_EQ(recomputed, 21);

  const MemoryBudgets roomy = e->memory_budgets();
  ASSERT_TRUE(e->SetMemoryBudgets({e->KvBytesFor(64), roomy.snapshot_ram_bytes}).ok());
  SequenceId other = *e->OpenSequence({});
  const std::vector<int32_t> t = Tokens(8, 7, n_vocab);
  for (int i = 0; i < 16 && e->prefix_cache().spills() == 0; ++i) {
    StepItem item{other, t, 0, false};
    ASSERT_TRUE(e->Step({&item, 1}).ok()) << "the prefix goes before the pool is full";
  }
  ASSERT_GT(e->prefix_cache().spills(), 0);
  ASSERT_TRUE(e->CloseSequence(other).ok());
  ASSERT_TRUE(e->SetMemoryBudgets(roomy).ok());

  const std::vector<float> again = turn(&recomputed);
  EXPECT_EQ(recomputed, 0) << "copied back, not recomputed";
  EXPECT_GT(e->prefix_cache().restores(), 0);
  ASSERT_EQ(again, ref);
}

TEST_P(RealEngineTest, EvictionRecomputesTheSameContinuation) {
  const Trace ref = Run(Greedy(), {});
  for (ParkKind kind : {ParkKind::kPartial, ParkKind::kFull}) {
    for (int at : kPausePoints) {
      ExpectSameContinuation(Run(Greedy(), {at, kind, false}), ref,
                             std::string(ParkKindName(kind)) + " at event " + std::to_string(at));
    }
  }
}

TEST_P(RealEngineTest, DamagedOrMissingSnapshotsFallBackToRecompute) {
  const Trace ref = Run(Greedy(), {});
  for (ParkKind kind : {ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk}) {
    warnings_.clear();
    ExpectSameContinuation(Run(Greedy(), {5, kind, true}), ref, ParkKindName(kind));
    EXPECT_FALSE(warnings_.empty()) << "the fallback is logged";
  }
}

// A constrained sequence's matcher is part of it: parked any way and resumed,
// it samples the same tokens, all of them ones the constraint allows.
TEST_P(RealEngineTest, ConstrainedSequencesResumeToTheSameTokens) {
  // Long enough not to end within the trace's steps (sampling past the end is an error).
  constraint_ = {ConstraintKind::kRegex, R"(\{"a":[0-9]{1,3},"b":"[a-z ]{80,120}"\})"};
  for (const SamplingParams& sampling : {Sampled(), Greedy()}) {
    const Trace ref = Run(sampling, {});
    ASSERT_FALSE(ref.tokens.empty());
    EXPECT_TRUE(ref.text.starts_with(R"({"a":)") || std::string(R"({"a":)").starts_with(ref.text)) << ref.text;
    // Recomputed KV may differ in the last bits, so evictions are compared greedily.
    const bool exact = sampling.temperature > 0;
    for (ParkKind kind : {ParkKind::kResident, ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk, ParkKind::kPartial,
                          ParkKind::kFull}) {
      if (exact == (kind == ParkKind::kPartial || kind == ParkKind::kFull)) continue;
      for (int at : {0, 3, 5}) {
        EXPECT_EQ(Run(sampling, {at, kind, false}).tokens, ref.tokens) << ParkKindName(kind) << " at event " << at;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, RealEngineTest,
                         ::testing::Values("synth-tiny-f32.gguf", "synth-tiny-q8_0.gguf", "synth-tiny-q4_0.gguf",
                                           "synth-tiny-q4_k_m.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(11, n.size() - 16);  // "synth-tiny-" ... ".gguf"
                           for (char& c : n) c = c == '_' ? 'x' : c;
                           return n;
                         });

// Synthesized here ("ARCH-tiny-TYPE.gguf").
INSTANTIATE_TEST_SUITE_P(Gemma, RealEngineTest,
                         ::testing::Values("gemma3-tiny-f32.gguf", "gemma3-tiny-q4_0.gguf", "gemma2-tiny-f32.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(0, n.size() - 5);  // ".gguf"
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : 'x';
                           return n;
                         });

class RealEngineMiscTest : public RealEngineTest {};

TEST_P(RealEngineMiscTest, AccountingCostsAndAdvice) {
  std::unique_ptr<RealEngine> e = Open();
  ASSERT_TRUE(e);
  const int32_t n_vocab = e->engine().model().config().n_vocab;
  const std::vector<int32_t> system = Tokens(32, 1, n_vocab), prompt = Tokens(20, 3, n_vocab);
  SequenceId a = *e->OpenSequence({system, Greedy()});
  Recompute(*e, a, 64);
  StepItem item{a, prompt, 0, true};
  ASSERT_TRUE(e->Step({&item, 1}).ok());
  const EngineCosts c = e->costs();
  EXPECT_GT(c.prefill_seconds_per_token, 0.0) << "learned from the steps";

  Result<ParkAdviceInput> in = e->AdviceInput(a, 0);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->own_tokens, 20);
  EXPECT_EQ(in->all_tokens, 52);
  EXPECT_EQ(e->AdvisePark(a, 0), ParkKind::kResident);
  EXPECT_NE(e->AdvisePark(a, e->memory().pool_capacity_bytes), ParkKind::kResident);
  EXPECT_EQ(in->disk_free_bytes, SIZE_MAX) << "a disk tier without a budget";
  EXPECT_EQ(e->AdviseTrimPark(a), ParkKind::kSnapshotDisk);

  ASSERT_EQ(e->Park(a, ParkKind::kSnapshotRam)->kind, ParkKind::kSnapshotRam);
  EXPECT_GT(e->memory().snapshot_ram_bytes, 0u);
  EXPECT_EQ(e->Info(a)->n_cached, 32) << "the shared prefix stays referenced";
  ASSERT_TRUE(e->Resume(a).ok());
  ASSERT_EQ(e->Park(a, ParkKind::kPartial)->tokens_dropped, 20);
  ASSERT_EQ(e->Resume(a)->tokens_to_recompute, 20);
  Recompute(*e, a, 64);
  const ParkAccounting& acc = e->accounting();
  EXPECT_EQ(acc.parks[static_cast<int>(ParkKind::kSnapshotRam)], 1);
  EXPECT_EQ(acc.parks[static_cast<int>(ParkKind::kPartial)], 1);
  EXPECT_EQ(acc.tokens_recomputed, 32 + 20);
  EXPECT_EQ(acc.tokens_dropped, 20);
  EXPECT_GT(acc.bytes_restored, 0u);
  EXPECT_EQ(e->memory().snapshot_ram_bytes, 0u);

  EXPECT_TRUE(e->SetThreads(StepThreads{1, 0, CoreClass::kAll}).ok());
  EXPECT_FALSE(e->SetThreads(StepThreads{-1, 0, CoreClass::kAll}).ok());
  EXPECT_FALSE(e->SetThreads(StepThreads{1, kMaxStepNice + 1, CoreClass::kAll}).ok());
  EXPECT_TRUE(e->CloseSequence(a).ok());
  EXPECT_EQ(e->Info(a).status().code(), StatusCode::kNotFound);
}

TEST_P(RealEngineMiscTest, StepErrorsChangeNothing) {
  std::unique_ptr<RealEngine> e = Open();
  ASSERT_TRUE(e);
  SequenceId a = *e->OpenSequence({});
  const std::vector<int32_t> t = {5, 6, 7};
  StepItem twice[2] = {{a, t, 0, false}, {a, t, 0, false}};
  EXPECT_FALSE(e->Step(twice).ok());
  StepItem both{a, t, 2, false};
  EXPECT_FALSE(e->Step({&both, 1}).ok());
  ASSERT_TRUE(e->Park(a, ParkKind::kResident).ok());
  StepItem parked{a, t, 0, false};
  EXPECT_FALSE(e->Step({&parked, 1}).ok());
  EXPECT_EQ(e->Info(a)->n_tokens, 0);
}

// Log-probabilities describe the model, not the sampler: log_softmax of the
// raw logits, whatever temperature, filters and penalties the draw used.
TEST_P(RealEngineMiscTest, LogprobsAreTheRawDistribution) {
  std::unique_ptr<RealEngine> e = Open();
  ASSERT_TRUE(e);
  const int32_t n_vocab = e->engine().model().config().n_vocab;
  SamplingParams narrow;
  narrow.temperature = 0.3f;
  narrow.top_k = 2;
  narrow.presence_penalty = 1.5f;
  SequenceSpec spec;
  spec.sampling = narrow;
  spec.top_logprobs = 4;
  SequenceId a = *e->OpenSequence(spec);
  SequenceId plain = *e->OpenSequence({});
  std::vector<int32_t> next = Tokens(12, 5, n_vocab);
  for (int step = 0; step < 3; ++step) {
    StepItem items[2] = {{a, next, 0, true}, {plain, next, 0, true}};
    Result<StepResult> r = e->Step(items);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->outputs.size(), 2u);
    EXPECT_FALSE(r->outputs[1].logprobs.has_value()) << "not asked for";
    ASSERT_TRUE(r->outputs[0].logprobs.has_value());
    const TokenLogprobs& lp = *r->outputs[0].logprobs;
    std::span<const float> l = e->last_logits(a);
    double max = l[0], sum = 0.0;
    for (float x : l) max = std::max(max, static_cast<double>(x));
    for (float x : l) sum += std::exp(static_cast<double>(x) - max);
    auto expected = [&](int32_t t) { return static_cast<double>(l[static_cast<size_t>(t)]) - max - std::log(sum); };
    EXPECT_EQ(lp.sampled.token, r->outputs[0].token);
    EXPECT_NEAR(lp.sampled.logprob, expected(lp.sampled.token), 1e-4);
    ASSERT_EQ(lp.top.size(), 4u);
    for (size_t i = 0; i < lp.top.size(); ++i) {
      EXPECT_NEAR(lp.top[i].logprob, expected(lp.top[i].token), 1e-4);
      if (i > 0) {
        EXPECT_GE(lp.top[i - 1].logprob, lp.top[i].logprob);
      }
    }
    const auto argmax = std::max_element(l.begin(), l.end()) - l.begin();
    EXPECT_EQ(lp.top[0].token, argmax);
    next = {r->outputs[0].token};
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, RealEngineMiscTest, ::testing::Values("synth-tiny-q8_0.gguf"),
                         [](const auto&) { return std::string("q8x0"); });

// A windowed layer's KV is a ring: the pool holds every position of the full
// layers and only the window of the windowed ones, parks snapshot that much,
// and a resumed sequence goes on from it.
class RealEngineWindowTest : public RealEngineTest {};

TEST_P(RealEngineWindowTest, WindowedLayersHoldOnlyTheirWindow) {
  std::unique_ptr<RealEngine> e = Open();
  ASSERT_TRUE(e);
  const KvLayout& l = e->engine().kv_pool().layout();
  ASSERT_GT(l.window, 0);
  ASSERT_LT(l.window, 64);
  const std::vector<int32_t> prompt = Tokens(120, 4, e->engine().model().config().n_vocab);
  SequenceId id = *e->OpenSequence({{}, Greedy()});
  for (int32_t begin = 0; begin < 120; begin += 24) {
    StepItem item{id, std::span<const int32_t>(prompt).subspan(begin, 24), 0, false};
    ASSERT_TRUE(e->Step({&item, 1}).ok());
    EXPECT_EQ(e->memory().pool_used_bytes, l.sequence_bytes(begin + 24)) << begin + 24;
  }
  KvLayout full = l;
  full.window = 0;
  EXPECT_LT(l.sequence_bytes(120), full.sequence_bytes(120) * 3 / 4);
  EXPECT_EQ(e->Info(id)->own_kv_bytes, l.sequence_bytes(120));

  Result<ParkReport> park = e->Park(id, ParkKind::kSnapshotRam);
  ASSERT_TRUE(park.ok());
  EXPECT_EQ(e->memory().pool_used_bytes, 0u);
  EXPECT_GE(park->bytes, l.rows_bytes(0, 120));
  EXPECT_LT(park->bytes, l.rows_bytes(0, 120) + 4096) << "rows of the window, the history and a header";
  EXPECT_LT(l.rows_bytes(0, 120), full.rows_bytes(0, 120) * 3 / 4);
  ASSERT_TRUE(e->Resume(id).ok());
  EXPECT_EQ(e->memory().pool_used_bytes, l.sequence_bytes(120)) << "a restore takes only the window's blocks";
  StepItem next{id, std::span<const int32_t>(prompt).first(1), 0, true};
  ASSERT_TRUE(e->Step({&next, 1}).ok());
  EXPECT_EQ(e->memory().pool_used_bytes, l.sequence_bytes(121));
}

INSTANTIATE_TEST_SUITE_P(Gemma, RealEngineWindowTest,
                         ::testing::Values("gemma3-tiny-q4_0.gguf", "gemma2-tiny-f32.gguf"),
                         [](const auto& info) { return std::string(info.param).substr(0, 6); });

// The same engine with a Q8_0 KV cache (synth-tiny's head_dim is 32: one
// block per row; phi3's is 64: two).
class RealEngineKvQ8Test : public RealEngineTest {
 protected:
  void SetUp() override {
    RealEngineTest::SetUp();
    kv_type_ = KvType::kQ8_0;
  }

  // A 40-token prompt, then `steps` greedy decode steps; with `forced`, the
  // decode feeds those tokens instead of its own picks (teacher forcing), so
  // two KV types are compared on the same inputs even where they would part.
  Trace GreedyTrace(KvType kv, int steps, const std::vector<int32_t>* forced) {
    kv_type_ = kv;
    std::unique_ptr<RealEngine> e = Open();
    if (!e) return {};
    const std::vector<int32_t> prompt = Tokens(40, 2, e->engine().model().config().n_vocab);
    SequenceId id = *e->OpenSequence({{}, Greedy()});
    Trace trace;
    std::vector<int32_t> next = prompt;
    for (int i = 0; i <= steps; ++i) {
      StepItem item{id, next, 0, true};
      Result<StepResult> r = e->Step({&item, 1});
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) return trace;
      trace.tokens.push_back(r->outputs.at(0).token);
      std::span<const float> l = e->last_logits(id);
      trace.logits.emplace_back(l.begin(), l.end());
      next = {forced != nullptr ? forced->at(static_cast<size_t>(i)) : trace.tokens.back()};
    }
    return trace;
  }
};

TEST_P(RealEngineKvQ8Test, SnapshotsResumeBitExactly) {
  const Trace ref = Run(Sampled(), {});
  ASSERT_EQ(ref.tokens.size(), 1u + kDecode);
  for (ParkKind kind : {ParkKind::kSnapshotRam, ParkKind::kSnapshotDisk}) {
    for (int at : {1, 3, 7}) {
      const Trace t = Run(Sampled(), {at, kind, false});
      ASSERT_EQ(t.tokens, ref.tokens) << ParkKindName(kind) << " at event " << at;
      for (size_t i = 0; i < ref.logits.size(); ++i) {
        ASSERT_EQ(t.logits[i], ref.logits[i]) << ParkKindName(kind) << " at event " << at << ", output " << i;
      }
    }
  }
}

// Q8_0 rounds each K and V element to 1/254 of its block's largest magnitude
// (F16 to 2^-11 of its own); through the attention's weighted sums that moves
// the logits by a few hundredths of their range (kQ8LogitTolerance). The
// random test models have near ties (measured: one flip at a gap of 0.015 of
// the range on synth-tiny Q8_0, one at 0.0004 on phi3), so a top token may
// change only where F16's top two were that close.
TEST_P(RealEngineKvQ8Test, LogitsStayCloseToF16AndTheTopTokenAgrees) {
  constexpr int kSteps = 40;
  const Trace f16 = GreedyTrace(KvType::kF16, kSteps, nullptr);
  ASSERT_EQ(f16.tokens.size(), kSteps + 1u);
  const Trace q8 = GreedyTrace(KvType::kQ8_0, kSteps, &f16.tokens);
  ASSERT_EQ(q8.tokens.size(), kSteps + 1u);
  double worst = 0;
  int flips = 0;
  for (size_t i = 0; i < f16.logits.size(); ++i) {
    const std::vector<float>& f = f16.logits[i];
    float scale = 1.0f;
    for (float v : f) scale = std::max(scale, std::fabs(v));
    for (size_t j = 0; j < f.size(); ++j) {
      worst = std::max(worst, static_cast<double>(std::fabs(q8.logits[i][j] - f[j]) / scale));
    }
    if (q8.tokens[i] == f16.tokens[i]) continue;
    // A flip is allowed only where F16's top two were closer than two
    // tolerances apart (a near tie of the random synthetic weights).
    const float gap = f[static_cast<size_t>(f16.tokens[i])] - f[static_cast<size_t>(q8.tokens[i])];
    ++flips;
    EXPECT_LT(gap, 2 * kQ8LogitTolerance * scale) << "output " << i << " changed its top token";
    std::printf("output %zu: top token %d -> %d at an F16 gap of %.3g of the range\n", i, f16.tokens[i],
                q8.tokens[i], gap / scale);
  }
  std::printf("q8_0 vs f16 KV: largest logit difference %.3g of the logit range, %d flips\n", worst, flips);
  EXPECT_LT(worst, kQ8LogitTolerance);
  EXPECT_LE(flips, 2) << "of " << f16.logits.size() << " outputs";
}

INSTANTIATE_TEST_SUITE_P(SharedModels, RealEngineKvQ8Test,
                         ::testing::Values("synth-tiny-q8_0.gguf", "synth-tiny-q4_0.gguf", "phi3-q4_0.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(0, n.size() - 5);
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : 'x';
                           return n;
                         });

// stories260K's head_dim is 8: a Q8_0 row would not be whole blocks, and the
// engine says so instead of opening.
TEST(RealEngineKvQ8ErrorTest, RefusesAHeadDimThatIsNotAMultipleOf32) {
  const std::string path = ModelPath("stories260K.gguf");
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent (shared test models not installed)";
  RealEngineOptions o;
  o.engine.model_path = path;
  o.engine.n_threads = 1;
  o.engine.n_ctx = 64;
  o.engine.kv_capacity_bytes = 1u << 20;
  o.engine.kv_type = KvType::kQ8_0;
  o.calibrate = false;
  Result<std::unique_ptr<RealEngine>> e = RealEngine::Open(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("head_dim is 8"), std::string::npos) << e.status().ToString();
  o.engine.kv_type = KvType::kF16;
  EXPECT_TRUE(RealEngine::Open(o).ok());
}

// The scheduler stops a task at any of these tokens, so a chat model ends its
// turn at "<|end|>" as well as at EOS: llama.cpp's set for Phi-3 is </s>,
// <|endoftext|> (EOS) and <|end|>.
TEST(RealEngineEogTest, ReportsEveryEndOfGenerationToken) {
  const std::string path = ModelPath("phi3-q4_0.gguf");
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent (shared test models not installed)";
  RealEngineOptions o;
  o.engine.model_path = path;
  o.engine.n_threads = 1;
  o.engine.n_ctx = 64;
  o.engine.kv_capacity_bytes = 4u << 20;
  o.calibrate = false;
  Result<std::unique_ptr<RealEngine>> e = RealEngine::Open(o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->eos_token(), 32000);
  EXPECT_EQ((*e)->eog_tokens(), (std::vector<int32_t>{2, 32000, 32007}));
}

}  // namespace
}  // namespace valet
