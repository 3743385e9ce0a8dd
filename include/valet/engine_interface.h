// The engine as the scheduler sees it, and nothing more. Public so that an
// app may drive the Scheduler with an engine of its own.
//
// The scheduler (sched/) depends on this header only: the real engine (model +
// KV pool + snapshot store) and the deterministic fake engine used by the
// scheduler's tests both implement it. Every call is made from the one
// inference thread that owns the engine, except the text calls (Tokenize,
// TokenPiece, CheckConstraint): the Scheduler tokenizes a task's prompt on the thread that
// submits it, concurrently with the inference thread's steps, so those two
// must be safe to call from any thread (a tokenizer that only reads immutable
// vocabulary data is). Nothing else needs locking.
//
// A sequence is a token history plus whatever KV state the engine keeps for
// it. Steps append tokens; parking releases some or all of the KV state
// (never the history), so a parked sequence can always be resumed exactly.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "valet/byte_range.h"
#include "valet/constraint.h"
#include "valet/export.h"
#include "valet/sampling.h"
#include "valet/status.h"
#include "valet/threads.h"

namespace valet {

using SequenceId = int64_t;

// How a paused sequence leaves (or keeps) its KV state, cheapest resume first.
enum class ParkKind {
  kResident,      // KV stays in the pool; resume is free
  kSnapshotRam,   // own blocks copied to the RAM tier of the snapshot store, then freed
  kSnapshotDisk,  // own blocks written to the disk tier, then freed
  kPartial,       // own blocks dropped; a shared system-prompt prefix stays cached
  kFull,          // everything dropped; resume re-prefills the whole history
};
inline const char* ParkKindName(ParkKind kind) {
  switch (kind) {
    case ParkKind::kResident: return "resident";
    case ParkKind::kSnapshotRam: return "snapshot_ram";
    case ParkKind::kSnapshotDisk: return "snapshot_disk";
    case ParkKind::kPartial: return "partial";
    case ParkKind::kFull: return "full";
  }
  return "unknown";
}

struct SequenceSpec {
  // Tokens of a static system prompt that many sequences start with. When its
  // KV is cached, the sequence references those blocks and starts after them.
  std::vector<int32_t> shared_prefix;
  SamplingParams sampling;
  // 0..kMaxTopLogprobs: every sampled token's StepOutput carries its
  // log-probability and the top_logprobs most likely tokens'; -1: none.
  int32_t top_logprobs = -1;
  // A task recovered from its journal (docs/durable.md) goes on with the
  // sampler it had: the tokens it had drawn (the presence and frequency
  // penalties count them) and the random state after the last. Its fed
  // tokens rebuild the repeat-penalty window as they are fed again.
  std::vector<int32_t> resume_generated{};
  std::optional<std::array<uint64_t, 4>> resume_rng{};
  // How long its shared prefix stays cached once unused: a prefix is evicted
  // only after every unused one of a higher rank (the scheduler passes the
  // tier, so the foreground's system prompt goes last); equal ranks go least
  // recently used first. A prefix shared by several ranks keeps the lowest.
  int32_t prefix_rank = 0;
  // What its sampled tokens must follow (valet/constraint.h): refused tokens
  // are masked before the sampler, end of generation only where the
  // constraint can end. The matcher's state is the sequence's: it survives
  // every kind of park, and a resumed task's resume_generated replays it.
  Constraint constraint{};
};

// One sequence's share of a step. Exactly one of `tokens` (new input: a
// prompt chunk, or the previously sampled token) and `recompute` (history to
// re-prefill after a partial/full park or a failed restore) is non-empty.
struct StepItem {
  SequenceId seq = 0;
  std::span<const int32_t> tokens;
  int32_t recompute = 0;
  bool sample = false;  // sample the next token after this item (the sequence must then be fully computed)
};

struct StepOutput {
  SequenceId seq = 0;
  int32_t token = -1;  // the sampled token, for items with sample = true
  std::optional<TokenLogprobs> logprobs;  // when the sequence asked for them (SequenceSpec::top_logprobs)
  // The sampler's random state after drawing `token` (a durable task's
  // journal keeps it); zero where the engine has none.
  std::array<uint64_t, 4> rng_state{};
};

struct StepResult {
  std::vector<StepOutput> outputs;  // one per sampling item, in item order
  int32_t tokens_computed = 0;      // new + recomputed tokens run through the model
  // Tokens of an earlier stopped step whose progress was dropped because
  // this step gave their sequence other tokens (SetAbortFlag).
  int32_t cut_tokens_dropped = 0;
  double seconds = 0.0;             // wall (real engine) or virtual (fake engine) time of the step
};

struct ParkReport {
  ParkKind kind = ParkKind::kResident;
  size_t bytes = 0;               // bytes copied out (snapshots) or freed from the pool
  int32_t tokens_dropped = 0;     // tokens whose KV must be recomputed on resume
  int32_t cut_tokens_dropped = 0; // tokens of a stopped step whose progress the park dropped
  double seconds = 0.0;
};

struct ResumeReport {
  ParkKind kind = ParkKind::kResident;  // how it had been parked
  size_t bytes = 0;                     // bytes restored
  int32_t tokens_to_recompute = 0;      // pending recompute; run it with StepItem::recompute
  bool fell_back = false;               // a snapshot was missing or corrupt: recompute instead
  int32_t cut_tokens_dropped = 0;       // tokens of a stopped step the snapshot could not give back
  double seconds = 0.0;
};

struct SequenceInfo {
  int32_t n_tokens = 0;         // history length (prompt + generated tokens fed so far)
  int32_t n_cached = 0;         // of which have KV in the pool
  int32_t n_shared = 0;         // of which are referenced from a shared prefix
  int32_t pending_recompute = 0;
  bool parked = false;
  ParkKind park_kind = ParkKind::kResident;
  size_t own_kv_bytes = 0;      // pool bytes this sequence alone holds
  // Tokens of a step stopped between layers (SetAbortFlag) whose progress the
  // engine keeps: the next step that gives the sequence the same tokens goes on from it.
  int32_t cut_tokens = 0;
};

struct EngineMemory {
  size_t pool_capacity_bytes = 0;
  size_t pool_used_bytes = 0;
  size_t snapshot_ram_bytes = 0;
  size_t snapshot_disk_bytes = 0;
  size_t weights_file_backed_bytes = 0;  // the model's mapping and the weights cache's
  size_t weights_anonymous_bytes = 0;    // row groups packed in memory
  size_t scratch_bytes = 0;              // forward-pass activations and matmul buffers
};

// The memory the engine may use; the app may change it at run time.
struct MemoryBudgets {
  size_t pool_bytes = 0;          // KV pool capacity (whole blocks)
  size_t snapshot_ram_bytes = 0;  // RAM tier of the snapshot store; snapshots beyond it go to disk
};

// Measured (real engine) or modelled (fake) costs, for choosing how to park.
struct EngineCosts {
  double prefill_seconds_per_token = 0.0;
  double decode_seconds_per_token = 0.0;
  double ram_bytes_per_second = 0.0;   // snapshot copy bandwidth
  double disk_bytes_per_second = 0.0;  // snapshot write+read bandwidth
};

// How the model writes a conversation: its Jinja chat template (GGUF
// tokenizer.chat_template; empty: the scheduler's built-in ChatML) and the
// texts the template knows as bos_token and eos_token.
struct ChatFormat {
  std::string template_source;
  std::string bos_token;
  std::string eos_token;
  // The texts Tokenize turns into control (or unknown) tokens, "<|im_start|>",
  // "<s>" ...: in message content the scheduler keeps them text
  // (TokenizeOptions::literal). Not user-defined tokens: those are tokens even
  // with special-token parsing off (llama.cpp's parse_special = false).
  std::vector<std::string> special_texts;
};

// How Tokenize reads a prompt.
struct TokenizeOptions {
  // Prepend BOS (when the vocabulary has one and asks for it).
  bool add_bos = true;
  // Special-token texts become their tokens, except in these sorted, disjoint
  // byte ranges of the text (message content, from the scheduler's chat
  // renderer), which read as with special-token parsing off: a control-token
  // text overlapping one is text. Without special texts in them they change nothing.
  std::span<const ByteRange> literal = {};
};

// How soon the weights are needed again (EngineInterface::AdviseWeights).
enum class WeightsAdvice { kCold, kPageOut };

class VALET_API EngineInterface {
 public:
  virtual ~EngineInterface() = default;

  // Text <-> tokens, with the model's vocabulary; any thread (see the top).
  // An implementation overrides the first and says
  // `using EngineInterface::Tokenize;` to keep the second.
  virtual std::vector<int32_t> Tokenize(std::string_view text, const TokenizeOptions& options) const = 0;
  // Special-token texts parsed everywhere, as llama.cpp's server does for a raw prompt.
  std::vector<int32_t> Tokenize(std::string_view text, bool add_bos) const {
    TokenizeOptions options;
    options.add_bos = add_bos;
    return Tokenize(text, options);
  }
  virtual std::string TokenPiece(int32_t token) const = 0;
  // Whether OpenSequence would take this constraint (compiled once and cached
  // for it); any thread, so a task is refused at submission. The default:
  // an engine without a vocabulary takes none.
  virtual Status CheckConstraint(const Constraint& constraint) const {
    if (!constraint.active()) return Status::Ok();
    return Unsupported("this engine cannot constrain its output");
  }
  virtual int32_t eos_token() const = 0;
  // Every token that ends generation (EOS, end of turn "<|eot_id|>", "<|im_end|>" ...).
  virtual std::vector<int32_t> eog_tokens() const { return {eos_token()}; }
  virtual ChatFormat chat_format() const { return {}; }
  virtual int32_t context_length() const = 0;    // positions per sequence
  // What of this engine's configuration beyond the model file and
  // context_length() changes the tokens it computes, as (name, value) pairs
  // (the real engine: its KV cache's element type). A durable task's journal
  // records them and resumes only under the same (docs/durable.md).
  virtual std::vector<std::pair<std::string, std::string>> token_settings() const { return {}; }
  virtual int32_t max_step_tokens() const = 0;   // tokens one Step may compute

  virtual Result<SequenceId> OpenSequence(const SequenceSpec& spec) = 0;
  virtual Status CloseSequence(SequenceId seq) = 0;
  virtual Result<SequenceInfo> Info(SequenceId seq) const = 0;

  // One forward pass over the batch (each sequence at most once). On error no
  // sequence changes.
  virtual Result<StepResult> Step(std::span<const StepItem> items) = 0;

  // Parks a running sequence. kFull on a sequence already parked drops what
  // it still holds (a snapshot, the shared prefix's reference): the last
  // resort when the pool or the snapshot store must give everything back.
  virtual Result<ParkReport> Park(SequenceId seq, ParkKind kind) = 0;
  virtual Result<ResumeReport> Resume(SequenceId seq) = 0;
  // Durable tasks' checkpoints (docs/durable.md): bytes from which a new
  // process's engine, with the same model, brings the sequence's KV back
  // without computing it. Export needs every position of the history in the
  // pool (not parked, or parked resident): InvalidArgument otherwise.
  // Import goes into a sequence just opened with the same spec and not yet
  // fed; the exported history must be the first n < expected.size() tokens of
  // `expected` (the shared prefix, prompt and fed tokens the task will have),
  // and n is returned. On any error nothing changes and the caller feeds the
  // tokens instead. Engines without KV answer Unsupported.
  virtual Result<std::vector<uint8_t>> ExportSequence(SequenceId seq) const {
    (void)seq;
    return Unsupported("this engine has no sequence checkpoints");
  }
  virtual Result<int32_t> ImportSequence(SequenceId seq, std::span<const uint8_t> bytes,
                                         std::span<const int32_t> expected) {
    (void)seq, (void)bytes, (void)expected;
    return Unsupported("this engine has no sequence checkpoints");
  }
  // The most bytes ExportSequence can return (a bound for reading one back).
  virtual size_t MaxExportBytes() const { return 0; }

  // The cheapest way to park `seq` now that keeps `bytes_needed` free in the
  // pool for others (0: no pressure), from measured costs.
  virtual ParkKind AdvisePark(SequenceId seq, size_t bytes_needed) const = 0;
  // How to park `seq` when the system asks for memory back (onTrimMemory):
  // its KV must leave RAM, to a disk snapshot where that has room, else
  // dropped down to the shared prefix (the default) to be recomputed.
  virtual ParkKind AdviseTrimPark(SequenceId seq) const {
    (void)seq;
    return ParkKind::kPartial;
  }

  // Lets Step stop early (between layers) while *flag is true: it then
  // returns kAborted and no sequence's history changes, so the step can
  // simply be redone later. An engine may keep how far each item got
  // (SequenceInfo::cut_tokens) and go on from there when a later step gives
  // the sequence the same tokens; a resident or snapshot park keeps that, an
  // eviction drops it.
  // nullptr: steps run to the end. The flag may be set from any thread.
  virtual void SetAbortFlag(const std::atomic<bool>* flag) { (void)flag; }

  // How the next steps' compute threads run: how many, at what OS priority
  // and on which cores (the governor's knob, set from the budget of the
  // highest tier in each batch; valet/threads.h). InvalidArgument outside the
  // ranges there; an engine may run everything at the app's priority.
  virtual Status SetThreads(const StepThreads& threads) = 0;

  virtual EngineMemory memory() const = 0;
  virtual MemoryBudgets memory_budgets() const = 0;
  // A pool smaller than what is in use takes effect as blocks are released;
  // InvalidArgument under one block, OutOfRange over what was reserved at start-up.
  virtual Status SetMemoryBudgets(const MemoryBudgets& budgets) = 0;
  // Pool bytes a sequence of `n_tokens` positions takes (whole blocks), at
  // most: while its last step runs (sliding-window layers hold that step's
  // positions beside their window until it ends).
  virtual size_t KvBytesFor(int32_t n_tokens) const = 0;
  // Moves every RAM-tier snapshot to the disk tier (none without one); returns
  // the bytes moved. Parked sequences stay parked, their snapshots intact.
  virtual size_t DemoteSnapshots() = 0;
  // Drops cached shared prefixes of SequenceSpec::prefix_rank >= min_rank
  // that no sequence references; returns the pool bytes freed.
  virtual size_t DropUnusedPrefixes(int32_t min_rank) = 0;
  // Tells the OS how soon the model's weights are needed again (onTrimMemory):
  // kCold marks them the first to reclaim under pressure, kPageOut gives the
  // file-backed ones back now (clean pages: dropped, read again on the next
  // step). Nothing is lost either way; returns the bytes advised.
  virtual size_t AdviseWeights(WeightsAdvice advice) = 0;
  virtual EngineCosts costs() const = 0;
};

}  // namespace valet
