// A deterministic engine for scheduler tests and benchmarks. No model: the
// "sampled" token is a hash of the sequence's whole token history and its
// sampling seed, so a task's output is a pure function of its prompt and its
// own history - parking and resuming, of any kind, cannot change it. Time is
// virtual: every Step/Park/Resume advances a clock by a cost model. The KV
// pool has a capacity, so memory pressure happens as it would on a phone.
//
// Tokenizer: BOS = 1, EOS = 2, byte b = token b + 3, and the i-th of
// FakeEngineOptions::special_tokens = kVocab + i (the longest text at each
// position, unless it overlaps a TokenizeOptions::literal range). Sampled tokens are printable ASCII bytes (and
// EOS, when eos_one_in > 0). Under a constraint (SequenceSpec::constraint) the
// hashed token stands if the constraint allows it, else the next allowed id.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "constrain/sequence_constraint.h"
#include "engine/engine_interface.h"

namespace valet::testing {

// A clock any thread may read; only the engine's thread advances it.
class VirtualClock {
 public:
  double Now() const { return now_.load(std::memory_order_acquire); }
  void Advance(double seconds) { now_.store(Now() + seconds, std::memory_order_release); }
  void Set(double seconds) { now_.store(seconds, std::memory_order_release); }

 private:
  std::atomic<double> now_{0.0};
};

struct FakeEngineOptions {
  int32_t context_length = 4096;
  int32_t max_step_tokens = 512;
  size_t kv_bytes_per_token = 1024;
  size_t pool_capacity_bytes = size_t{64} << 20;
  size_t snapshot_ram_capacity_bytes = size_t{256} << 20;
  int32_t eos_one_in = 0;  // a sampled token is EOS with probability 1/eos_one_in; 0: never
  // Virtual cost model (seconds).
  double step_overhead_seconds = 0.004;      // per Step: weights streamed once per step
  double prefill_seconds_per_token = 0.0004;  // prompt and recompute tokens
  double decode_seconds_per_item = 0.0005;    // the batch term of a decode step
  double ram_bytes_per_second = 4e9;
  double disk_bytes_per_second = 4e8;
  double park_overhead_seconds = 0.00005;
  bool corrupt_snapshots = false;  // resume from a snapshot falls back to recompute
  // Control-token texts ("<|im_start|>"), also reported as ChatFormat::special_texts.
  std::vector<std::string> special_tokens;
  // Whether Tokenize puts BOS first when asked to (a vocabulary's add_bos flag).
  bool add_bos = true;
  // ChatFormat::template_source; empty: the scheduler's built-in ChatML.
  std::string chat_template;
};

class FakeEngine : public EngineInterface {
 public:
  explicit FakeEngine(FakeEngineOptions options = {});

  using EngineInterface::Tokenize;
  std::vector<int32_t> Tokenize(std::string_view text, const TokenizeOptions& options) const override;
  std::string TokenPiece(int32_t token) const override;
  Status CheckConstraint(const Constraint& constraint) const override;
  ChatFormat chat_format() const override;
  int32_t eos_token() const override { return kEos; }
  int32_t context_length() const override { return options_.context_length; }
  int32_t max_step_tokens() const override { return options_.max_step_tokens; }

  Result<SequenceId> OpenSequence(const SequenceSpec& spec) override;
  Status CloseSequence(SequenceId seq) override;
  Result<SequenceInfo> Info(SequenceId seq) const override;
  Result<StepResult> Step(std::span<const StepItem> items) override;
  Result<ParkReport> Park(SequenceId seq, ParkKind kind) override;
  Result<ResumeReport> Resume(SequenceId seq) override;
  ParkKind AdvisePark(SequenceId seq, size_t bytes_needed) const override;
  // Like the real engine, an aborted step changes no history (checked once,
  // at its start) and keeps each item as a cut (SequenceInfo::cut_tokens),
  // dropped when the sequence's next step brings another item or it is
  // evicted (cut_tokens_dropped counts them).
  void SetAbortFlag(const std::atomic<bool>* flag) override { abort_ = flag; }
  const std::atomic<bool>* abort_flag() const { return abort_; }
  Status SetThreads(const StepThreads& threads) override;
  EngineMemory memory() const override;
  MemoryBudgets memory_budgets() const override;
  Status SetMemoryBudgets(const MemoryBudgets& budgets) override;
  size_t KvBytesFor(int32_t n_tokens) const override;
  size_t DemoteSnapshots() override;
  size_t DropUnusedPrefixes(int32_t min_rank) override;
  size_t AdviseWeights(WeightsAdvice advice) override;
  EngineCosts costs() const override;
  // Every AdviseWeights call, in order.
  const std::vector<WeightsAdvice>& weights_advice() const { return weights_advice_; }

  // The token the fake samples after `history` (what a task run alone gets).
  int32_t SampleAfter(std::span<const int32_t> history, uint64_t seed) const;
  // The logits the fake reports log-probabilities from: a hash of the history
  // per token, with `sampled` (SampleAfter's pick) the most likely.
  std::vector<float> LogitsAfter(std::span<const int32_t> history, uint64_t seed, int32_t sampled) const;

  VirtualClock& clock() { return clock_; }
  // For SchedulerOptions::clock.
  std::function<double()> ClockFunction() {
    return [this] { return clock_.Now(); };
  }
  // Runs at the start of every Step (on the engine's thread); a non-OK
  // status fails the step. Tests use it to inject errors or concurrent events.
  void set_step_hook(std::function<Status(std::span<const StepItem>)> hook) { step_hook_ = std::move(hook); }

  int threads() const { return threads_.n_threads; }
  // What SetThreads asked for last, and for each step since the engine was made.
  const StepThreads& step_threads() const { return threads_; }
  const std::vector<StepThreads>& step_threads_log() const { return threads_log_; }
  int64_t steps() const { return steps_; }
  int64_t cut_tokens_dropped() const { return cut_tokens_dropped_; }
  size_t open_sequences() const { return seqs_.size(); }

  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;
  static constexpr int32_t kVocab = 259;

 private:
  const std::atomic<bool>* abort_ = nullptr;
  int64_t cut_tokens_dropped_ = 0;
  std::vector<WeightsAdvice> weights_advice_;
  struct Prefix {
    std::vector<int32_t> tokens;
    bool computed = false;  // its KV is in the pool, shared by reference
    int32_t refs = 0;
    int32_t rank = 0;  // the lowest SequenceSpec::prefix_rank it was opened with
  };
  struct Seq {
    std::vector<int32_t> history;
    uint64_t seed = 0;
    int32_t top_logprobs = -1;
    Prefix* prefix = nullptr;  // set while the sequence references it
    int32_t n_shared = 0;      // history tokens whose KV is the shared prefix's
    int32_t n_cached = 0;      // history tokens with KV (shared ones included)
    bool parked = false;
    ParkKind park_kind = ParkKind::kResident;
    size_t snapshot_bytes = 0;
    std::optional<SequenceConstraint> constraint;
    // An aborted step's item: its tokens, or its recompute count.
    std::optional<std::pair<std::vector<int32_t>, int32_t>> cut;
  };

  // The special token whose text starts at text[pos] (the longest), or -1.
  int32_t SpecialAt(std::string_view text, size_t pos) const;
  Result<Seq*> Find(SequenceId seq);
  Result<const Seq*> Find(SequenceId seq) const;
  size_t OwnBytes(const Seq& s) const;
  size_t UsedBytes() const;
  Status CheckStep(std::span<const StepItem> items) const;
  void Publish(Seq& s);
  void DropPrefixRef(Seq& s);
  int32_t DropCut(Seq& s);  // returns the cut's tokens

  // The constrained pick: `token` if allowed, else the next allowed id.
  static int32_t Constrained(const SequenceConstraint& c, int32_t token);

  FakeEngineOptions options_;
  std::unique_ptr<ConstraintCompiler> constraints_;
  VirtualClock clock_;
  std::function<Status(std::span<const StepItem>)> step_hook_;
  std::map<std::vector<int32_t>, std::unique_ptr<Prefix>> prefixes_;
  std::unordered_map<SequenceId, Seq> seqs_;
  SequenceId next_seq_ = 1;
  size_t snapshot_ram_ = 0;
  size_t snapshot_disk_ = 0;
  StepThreads threads_{1, 0, CoreClass::kAll};
  std::vector<StepThreads> threads_log_;
  int64_t steps_ = 0;
};

}  // namespace valet::testing
