// EngineInterface on top of the real Engine: sequences with their own
// samplers, shared system-prompt prefixes from a PrefixCache, and parking
// through a SnapshotStore, with measured costs for the park advisor.
//
// Conventions the scheduler can rely on:
// - A sequence's history starts as SequenceSpec::shared_prefix. The part of
//   it found in the prefix cache is referenced, not computed; the rest is
//   pending recompute (Info().pending_recompute), run with StepItem::recompute.
//   An item with tokens also runs any pending recompute first, in the same step.
// - Once a sequence has computed its whole shared prefix, the prefix's blocks
//   are cached for later sequences; a partly filled last block is copied on
//   write, so cached blocks never change.
// - Parking as snapshot_ram/snapshot_disk/partial keeps the shared prefix
//   referenced; a snapshot that cannot be stored or restored falls back to
//   recomputing from the history (ParkReport::kind says kPartial, or
//   ResumeReport::fell_back), with a warning, never wrong output.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_interface.h"
#include "engine/park_advisor.h"
#include "constrain/sequence_constraint.h"
#include "kv/prefix_cache.h"
#include "kv/snapshot_store.h"

namespace valet {

struct RealEngineOptions {
  EngineOptions engine;
  SnapshotStoreOptions store;
  // Measure the snapshot tiers' bandwidths at start-up; otherwise they are
  // learned from the first snapshots. Compute speed is always learned from
  // the first steps.
  bool calibrate = true;
  // Keep the logits each sampling item was sampled from (tests, diagnostics).
  bool keep_logits = false;
  // Cached prefixes of SequenceSpec::prefix_rank up to this that the pool
  // reclaims are spilled to the snapshot store and copied back when matched
  // (PrefixCache::EnableSpill): 0, the foreground chat's; -1: none.
  int32_t prefix_spill_max_rank = 0;
};

// Per-kind counters of everything parked and resumed so far.
struct ParkAccounting {
  int64_t parks[5] = {};    // by ParkKind
  int64_t resumes[5] = {};  // by the kind the sequence had been parked as
  size_t bytes_parked = 0;  // snapshot bytes written + pool bytes freed by partial/full
  size_t bytes_restored = 0;
  int64_t tokens_dropped = 0;
  int64_t tokens_recomputed = 0;  // run through the model again by recompute items
  // Tokens of steps stopped between layers whose progress was dropped (the
  // sequence evicted, its snapshot lost, or given other tokens next): run
  // again from the first layer. A cut that is gone on from costs nothing.
  int64_t cut_tokens_dropped = 0;
  int64_t fallbacks = 0;          // snapshots that could not be stored or restored
  double park_seconds = 0.0;
  double resume_seconds = 0.0;
  // Cached prefix tokens recomputed because a windowed layer's rows for them
  // were no longer kept (PrefixMatch::window_cut).
  int64_t prefix_window_cut_tokens = 0;
};

class RealEngine final : public EngineInterface {
 public:
  static Result<std::unique_ptr<RealEngine>> Open(const RealEngineOptions& options);
  ~RealEngine() override;

  using EngineInterface::Tokenize;
  std::vector<int32_t> Tokenize(std::string_view text, const TokenizeOptions& options) const override;
  std::string TokenPiece(int32_t token) const override;
  Status CheckConstraint(const Constraint& constraint) const override;
  int32_t eos_token() const override;
  std::vector<int32_t> eog_tokens() const override;
  ChatFormat chat_format() const override;
  int32_t context_length() const override;
  // The KV type: F16 and Q8_0 keys and values round differently, so tokens differ.
  std::vector<std::pair<std::string, std::string>> token_settings() const override;
  int32_t max_step_tokens() const override;

  Result<SequenceId> OpenSequence(const SequenceSpec& spec) override;
  Status CloseSequence(SequenceId seq) override;
  Result<SequenceInfo> Info(SequenceId seq) const override;
  Result<StepResult> Step(std::span<const StepItem> items) override;
  Result<ParkReport> Park(SequenceId seq, ParkKind kind) override;
  Result<ResumeReport> Resume(SequenceId seq) override;
  ParkKind AdvisePark(SequenceId seq, size_t bytes_needed) const override;
  ParkKind AdviseTrimPark(SequenceId seq) const override;
  Result<std::vector<uint8_t>> ExportSequence(SequenceId seq) const override;
  Result<int32_t> ImportSequence(SequenceId seq, std::span<const uint8_t> bytes,
                                 std::span<const int32_t> expected) override;
  size_t MaxExportBytes() const override;
  void SetAbortFlag(const std::atomic<bool>* flag) override { engine_->context().set_abort_flag(flag); }
  Status SetThreads(const StepThreads& threads) override;
  // The lanes' kernel thread ids of the last step, and how steps below the
  // app's priority run (tests read priorities and cores back).
  const ThreadLanes& lanes() const { return engine_->context().lanes(); }
  EngineMemory memory() const override;
  MemoryBudgets memory_budgets() const override;
  Status SetMemoryBudgets(const MemoryBudgets& budgets) override;
  size_t KvBytesFor(int32_t n_tokens) const override;
  size_t DemoteSnapshots() override;
  size_t DropUnusedPrefixes(int32_t min_rank) override;
  size_t AdviseWeights(WeightsAdvice advice) override;
  EngineCosts costs() const override;

  const ParkAccounting& accounting() const { return accounting_; }
  // The logits the sequence's last token was sampled from (keep_logits only).
  std::span<const float> last_logits(SequenceId seq) const;
  Engine& engine() { return *engine_; }
  // Engine::Open's phases, then this one's own (the store, the calibration).
  std::vector<LoadPhase> load_profile() const;
  SnapshotStore& snapshot_store() { return *store_; }
  PrefixCache& prefix_cache() { return *cache_; }
  // The inputs AdvisePark weighs, for reports and tests.
  Result<ParkAdviceInput> AdviceInput(SequenceId seq, size_t bytes_needed) const;

 private:
  struct Seq;
  struct Meter {
    double amount = 0.0;
    double seconds = 0.0;
    double rate() const { return seconds > 0.0 ? amount / seconds : 0.0; }
  };

  RealEngine() = default;
  Result<Seq*> Find(SequenceId id) const;
  Status ValidateStep(std::span<const StepItem> items) const;
  Result<StepResult> StepOnLane(std::span<const StepItem> items);
  void Calibrate();
  // The cached blocks of the sequence's shared prefix, as far as they go.
  PrefixMatch MatchPrefix(Seq& s) const;
  // Starts s on the cached blocks of m (its shared prefix, or none).
  void AttachPrefix(Seq& s, const PrefixMatch& m);
  Status StoreSnapshot(SequenceId id, Seq& s, int32_t kv_begin, SnapshotTier tier, size_t* bytes);
  Status RestoreSnapshot(SequenceId id, Seq& s, size_t* bytes);
  // A parked sequence loses what it still holds (snapshot, shared prefix).
  ParkReport DropParked(SequenceId id, Seq& s);
  // Forgets how far a stopped step got for s (its rows are about to go, or
  // the next step feeds other tokens); returns its tokens.
  int32_t DropCut(Seq& s);
  // The same for a stopped step a snapshot held, once the snapshot is gone
  // without giving it back.
  int32_t DropSnapshotCut(Seq& s);
  // RAM snapshots the store moved to disk: their sequences are disk-parked now.
  void NoteDemotedSnapshots();
  void Warn(const std::string& message) const;

  RealEngineOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ConstraintCompiler> constraints_;
  std::vector<LoadPhase> own_load_phases_;
  std::unique_ptr<PrefixCache> cache_;
  std::unique_ptr<SnapshotStore> store_;
  std::map<SequenceId, std::unique_ptr<Seq>> seqs_;
  SequenceId next_id_ = 1;
  ParkAccounting accounting_;
  Meter prefill_, decode_, ram_, disk_;  // tokens or bytes per second
  std::vector<float> logits_;
};

}  // namespace valet
