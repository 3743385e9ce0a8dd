#include "engine/real_engine.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <optional>
#include <random>
#include <unordered_set>
#include <utility>

#include "common/log.h"
#include "engine/sequence_snapshot.h"
#include "sampling/logprobs.h"

namespace valet {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Calibration payload: big enough to time, small enough for a phone's budget.
constexpr size_t kCalibrationBytes = 4u << 20;
// The store key of the calibration payload; sequence ids start at 1.
constexpr uint64_t kCalibrationKey = 0;

}  // namespace

struct RealEngine::Seq {
  Seq(KvPool& pool, Sampler s) : kv(pool), sampler(std::move(s)) {}
  std::vector<int32_t> history;  // every token fed, the shared prefix first
  std::vector<int32_t> prefix;   // SequenceSpec::shared_prefix
  int32_t prefix_rank = 0;       // SequenceSpec::prefix_rank
  KvSequence kv;
  Sampler sampler;
  int32_t n_shared = 0;  // leading positions that are (or were registered as) the cached prefix
  bool parked = false;
  ParkKind park_kind = ParkKind::kResident;
  int32_t snapshot_end = -1;  // while parked with a snapshot: positions it restores up to
  std::vector<float> logits;
  int32_t top_logprobs = -1;  // SequenceSpec::top_logprobs
  std::optional<SequenceConstraint> constraint;  // SequenceSpec::constraint
  StepCut cut;  // how far a stopped step got (LlamaContext::Forward); in the snapshot while parked with one
  int32_t snapshot_cut_tokens = 0;  // while parked with a snapshot: its stopped step's tokens
  int32_t pending() const { return static_cast<int32_t>(history.size()) - kv.n_tokens(); }
};

RealEngine::~RealEngine() {
  seqs_.clear();  // sequences release their blocks before the cache and the pool go
  cache_.reset();
}

Result<std::unique_ptr<RealEngine>> RealEngine::Open(const RealEngineOptions& options) {
  std::unique_ptr<RealEngine> e(new RealEngine());
  e->options_ = options;
  VALET_ASSIGN_OR_RETURN(e->engine_, Engine::Open(options.engine));
  e->constraints_ = std::make_unique<ConstraintCompiler>(
      [&tokenizer = e->engine_->tokenizer()] { return TokenTrie::FromTokenizer(tokenizer); });
  auto t0 = Clock::now();
  VALET_ASSIGN_OR_RETURN(e->store_, SnapshotStore::Create(options.store));
  e->cache_ = std::make_unique<PrefixCache>(e->engine_->kv_pool());
  if (options.prefix_spill_max_rank >= 0) e->cache_->EnableSpill(*e->store_, options.prefix_spill_max_rank);
  e->own_load_phases_.push_back({"snapshot store", Since(t0)});
  if (options.engine.load_observer.cancelled()) {
    return Aborted("the load of " + options.engine.model_path + " was cancelled");
  }
  if (options.calibrate) {
    t0 = Clock::now();
    e->Calibrate();
    e->own_load_phases_.push_back({"calibration", Since(t0)});
  }
  return e;
}

std::vector<LoadPhase> RealEngine::load_profile() const {
  std::vector<LoadPhase> all = engine_->load_profile();
  all.insert(all.end(), own_load_phases_.begin(), own_load_phases_.end());
  return all;
}

void RealEngine::Warn(const std::string& message) const {
  if (options_.store.warn) {
    options_.store.warn(message);
  } else {
    LogWarn(message);
  }
}

// One snapshot-sized payload through each store tier: the starting point of
// the measured bandwidths, refined by every snapshot afterwards. Compute is
// not measured here: a scratch prefill would fault in every weight page and
// hold the first request back by seconds on a 3B model, while the first real
// step (which precedes any park decision) measures it as well.
void RealEngine::Calibrate() {
  std::vector<uint8_t> payload(std::min(kCalibrationBytes, store_->options().ram_budget_bytes / 4));
  std::mt19937_64 rng(11);
  for (size_t i = 0; i + 8 <= payload.size(); i += 8) {
    const uint64_t v = rng();
    std::copy_n(reinterpret_cast<const uint8_t*>(&v), 8, payload.data() + i);
  }
  for (SnapshotTier tier : {SnapshotTier::kRam, SnapshotTier::kDisk}) {
    if (payload.empty() || (tier == SnapshotTier::kDisk && !store_->has_disk())) continue;
    const auto t0 = Clock::now();
    Result<SnapshotTier> put = store_->Put(kCalibrationKey, payload, tier);
    if (put.ok() && *put == tier && store_->Get(kCalibrationKey).ok()) {
      (tier == SnapshotTier::kRam ? ram_ : disk_) = {static_cast<double>(payload.size()), Since(t0)};
    }
    store_->Erase(kCalibrationKey);
  }
}

std::vector<int32_t> RealEngine::Tokenize(std::string_view text, const TokenizeOptions& options) const {
  return engine_->TokenizePrompt(text, options);
}

ChatFormat RealEngine::chat_format() const { return engine_->chat_format(); }

std::vector<std::pair<std::string, std::string>> RealEngine::token_settings() const {
  return {{"kv_type", KvTypeName(engine_->options().kv_type)}};
}

std::string RealEngine::TokenPiece(int32_t token) const { return engine_->tokenizer().TokenToPiece(token); }

Status RealEngine::CheckConstraint(const Constraint& constraint) const {
  if (!constraint.active()) return Status::Ok();
  return constraints_->Compile(constraint).status();
}
int32_t RealEngine::eos_token() const { return engine_->tokenizer().vocabulary().eos_id(); }
std::vector<int32_t> RealEngine::eog_tokens() const {
  const std::span<const int32_t> eog = engine_->tokenizer().vocabulary().eog_ids();
  return {eog.begin(), eog.end()};
}
int32_t RealEngine::context_length() const { return engine_->context().options().n_ctx; }
int32_t RealEngine::max_step_tokens() const { return engine_->context().options().max_batch_tokens; }

Result<RealEngine::Seq*> RealEngine::Find(SequenceId id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return NotFound("no sequence " + std::to_string(id));
  return it->second.get();
}

Result<SequenceId> RealEngine::OpenSequence(const SequenceSpec& spec) {
  const int32_t n_vocab = engine_->model().config().n_vocab;
  for (int32_t t : spec.shared_prefix) {
    if (t < 0 || t >= n_vocab) return InvalidArgument("shared prefix token " + std::to_string(t) + " is not in the vocabulary");
  }
  if (static_cast<int64_t>(spec.shared_prefix.size()) >= context_length()) {
    return OutOfRange("the shared prefix fills the whole context of " + std::to_string(context_length()));
  }
  if (spec.top_logprobs < -1 || spec.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("top_logprobs must be in [-1, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  VALET_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(spec.sampling, n_vocab));
  auto s = std::make_unique<Seq>(engine_->kv_pool(), std::move(sampler));
  s->top_logprobs = spec.top_logprobs;
  s->prefix = spec.shared_prefix;
  s->prefix_rank = spec.prefix_rank;
  s->history = spec.shared_prefix;
  for (int32_t t : s->history) s->sampler.Accept(t);
  if (spec.resume_rng) {
    SamplerState resumed = s->sampler.state();
    resumed.generated = spec.resume_generated;
    resumed.rng.words = *spec.resume_rng;
    if (resumed.rng == RngState{}) return InvalidArgument("a resumed sampler's random state cannot be all zero");
    s->sampler.set_state(resumed);
  }
  if (spec.constraint.active()) {
    VALET_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, constraints_->Compile(spec.constraint));
    VALET_ASSIGN_OR_RETURN(s->constraint, SequenceConstraint::Create(std::move(compiled), spec.resume_generated));
  }
  if (!s->prefix.empty()) AttachPrefix(*s, cache_->Match(s->prefix, s->prefix_rank));
  const SequenceId id = next_id_++;
  seqs_.emplace(id, std::move(s));
  return id;
}

Status RealEngine::CloseSequence(SequenceId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return NotFound("no sequence " + std::to_string(id));
  store_->Erase(static_cast<uint64_t>(id));
  seqs_.erase(it);
  return Status::Ok();
}

Result<SequenceInfo> RealEngine::Info(SequenceId id) const {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(id));
  SequenceInfo info;
  info.n_tokens = static_cast<int32_t>(s->history.size());
  info.n_cached = s->kv.n_tokens();
  info.n_shared = std::min(s->n_shared, s->kv.n_tokens());
  info.pending_recompute = s->snapshot_end >= 0 ? info.n_tokens - s->snapshot_end : s->pending();
  info.parked = s->parked;
  info.park_kind = s->park_kind;
  info.cut_tokens = s->snapshot_end >= 0 ? s->snapshot_cut_tokens : static_cast<int32_t>(s->cut.tokens.size());
  const KvPool& pool = engine_->kv_pool();
  for (KvBlockId b : s->kv.blocks()) {
    if (b != KvSequence::kNoBlock && pool.ref_count(b) == 1) info.own_kv_bytes += pool.layout().block_bytes();
  }
  return info;
}

Status RealEngine::ValidateStep(std::span<const StepItem> items) const {
  if (items.empty()) return InvalidArgument("empty step");
  std::unordered_set<SequenceId> seen;
  int64_t total = 0;
  for (const StepItem& item : items) {
    VALET_ASSIGN_OR_RETURN(Seq * s, Find(item.seq));
    if (!seen.insert(item.seq).second) return InvalidArgument("sequence " + std::to_string(item.seq) + " appears twice in a step");
    if (s->parked) return InvalidArgument("sequence " + std::to_string(item.seq) + " is parked; resume it first");
    if (item.tokens.empty() == (item.recompute == 0)) {
      return InvalidArgument("a step item needs either tokens or a recompute count");
    }
    if (item.recompute < 0 || item.recompute > s->pending()) {
      return InvalidArgument("sequence " + std::to_string(item.seq) + " has " + std::to_string(s->pending()) +
                             " tokens to recompute, not " + std::to_string(item.recompute));
    }
    if (item.sample && item.recompute != 0 && item.recompute != s->pending()) {
      return InvalidArgument("sampling needs the whole history computed first");
    }
    total += item.tokens.empty() ? item.recompute : s->pending() + static_cast<int64_t>(item.tokens.size());
  }
  if (total > max_step_tokens()) {
    return OutOfRange("step of " + std::to_string(total) + " tokens exceeds the limit of " + std::to_string(max_step_tokens()));
  }
  return Status::Ok();
}

Result<StepResult> RealEngine::Step(std::span<const StepItem> items) {
  VALET_RETURN_IF_ERROR(ValidateStep(items));
  // The whole step, sampling included, runs at the priority its batch asked
  // for (SetThreads): on this thread or on the lane's lead.
  Result<StepResult> result = Internal("step did not run");
  engine_->context().lanes().Run([&] { result = StepOnLane(items); });
  return result;
}

Result<StepResult> RealEngine::StepOnLane(std::span<const StepItem> items) {
  const auto t0 = Clock::now();
  std::vector<Seq*> seqs(items.size());
  std::vector<std::vector<int32_t>> merged(items.size());  // pending recompute + new tokens
  std::vector<BatchItem> batch(items.size());
  int32_t n_tokens = 0, n_recomputed = 0, cut_dropped = 0;
  bool decode_only = true;
  for (size_t i = 0; i < items.size(); ++i) {
    Seq* s = seqs[i] = *Find(items[i].seq);
    // Before the forward pass: a constraint that admits nothing fails the
    // step while no sequence has changed.
    if (items[i].sample && s->constraint) VALET_RETURN_IF_ERROR(s->constraint->PrepareMask());
    const int32_t pending = s->pending();
    std::span<const int32_t> input;
    if (items[i].tokens.empty()) {
      input = std::span<const int32_t>(s->history).subspan(s->kv.n_tokens(), items[i].recompute);
      n_recomputed += items[i].recompute;
    } else if (pending > 0) {
      merged[i].assign(s->history.end() - pending, s->history.end());
      merged[i].insert(merged[i].end(), items[i].tokens.begin(), items[i].tokens.end());
      input = merged[i];
      n_recomputed += pending;
    } else {
      input = items[i].tokens;
    }
    if (!s->cut.empty() && !std::ranges::equal(input, s->cut.tokens)) cut_dropped += DropCut(*s);
    batch[i] = BatchItem{&s->kv, input, items[i].sample ? LogitsMode::kLast : LogitsMode::kNone, &s->cut};
    n_tokens += static_cast<int32_t>(input.size());
    decode_only = decode_only && input.size() == 1;
  }
  VALET_RETURN_IF_ERROR(engine_->context().Forward(batch, logits_));

  StepResult result;
  const int32_t n_vocab = engine_->model().config().n_vocab;
  size_t row = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    Seq& s = *seqs[i];
    for (int32_t t : items[i].tokens) {
      s.history.push_back(t);
      s.sampler.Accept(t);
    }
    if (!s.prefix.empty() && s.n_shared < static_cast<int32_t>(s.prefix.size()) &&
        s.kv.n_tokens() >= static_cast<int32_t>(s.prefix.size())) {
      s.n_shared = cache_->Insert(s.prefix, s.kv, s.prefix_rank);
      s.kv.UnpinWindow();
    }
    if (!items[i].sample) continue;
    std::span<const float> l(logits_.data() + row * n_vocab, n_vocab);
    ++row;
    if (options_.keep_logits) s.logits.assign(l.begin(), l.end());
    // The distribution sampled from: the constraint's refused tokens at -inf.
    const std::span<const float> allowed = s.constraint ? s.constraint->Apply(l) : l;
    StepOutput out{items[i].seq, s.sampler.Sample(allowed), std::nullopt, s.sampler.rng_state().words};
    if (s.constraint) {
      const Status accepted = s.constraint->Accept(out.token);
      assert(accepted.ok() && "a token the mask allowed is one the matcher accepts");
      (void)accepted;
    }
    // Before the sampler's penalties and filters (sampling.h), after the constraint.
    if (s.top_logprobs >= 0) out.logprobs = ComputeLogprobs(allowed, out.token, s.top_logprobs);
    result.outputs.push_back(std::move(out));
  }
  result.tokens_computed = n_tokens;
  result.cut_tokens_dropped = cut_dropped;
  result.seconds = Since(t0);
  accounting_.tokens_recomputed += n_recomputed;
  Meter& m = decode_only ? decode_ : prefill_;
  m.amount += n_tokens;
  m.seconds += result.seconds;
  return result;
}

PrefixMatch RealEngine::MatchPrefix(Seq& s) const {
  const int32_t n = std::min(s.n_shared, s.kv.n_tokens());
  if (n <= 0) return {};
  return cache_->Match(std::span<const int32_t>(s.prefix).first(n), s.prefix_rank);
}

void RealEngine::AttachPrefix(Seq& s, const PrefixMatch& m) {
  s.kv.AttachShared(m.blocks, m.n_tokens);
  s.n_shared = m.n_tokens;
  accounting_.prefix_window_cut_tokens += m.window_cut;
  // The rest of the prefix is computed with what follows it; its window
  // must outlive that step for the cache to take it (KvSequence::PinWindow).
  if (m.n_tokens < static_cast<int32_t>(s.prefix.size())) s.kv.PinWindow(static_cast<int32_t>(s.prefix.size()));
}

Status RealEngine::StoreSnapshot(SequenceId id, Seq& s, int32_t kv_begin, SnapshotTier tier, size_t* bytes) {
  SnapshotHeader h{kv_begin, s.kv.n_tokens(), s.history, s.sampler.state()};
  const auto t0 = Clock::now();
  std::vector<uint8_t> blob = EncodeSequenceSnapshot(h, s.kv, &s.cut);
  VALET_ASSIGN_OR_RETURN(SnapshotTier used, store_->Put(static_cast<uint64_t>(id), blob, tier));
  Meter& m = used == SnapshotTier::kRam ? ram_ : disk_;
  m.amount += static_cast<double>(blob.size());
  m.seconds += Since(t0);
  if (used != tier) Warn("snapshot of sequence " + std::to_string(id) + " went to the other tier");
  s.park_kind = used == SnapshotTier::kRam ? ParkKind::kSnapshotRam : ParkKind::kSnapshotDisk;
  s.snapshot_end = h.kv_end;
  s.snapshot_cut_tokens = static_cast<int32_t>(s.cut.tokens.size());
  s.cut.Clear();  // the snapshot holds it
  *bytes = blob.size();
  return Status::Ok();
}

Result<ParkReport> RealEngine::Park(SequenceId id, ParkKind kind) {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(id));
  if (s->parked && kind == ParkKind::kFull) return DropParked(id, *s);
  if (s->parked) return InvalidArgument("sequence " + std::to_string(id) + " is already parked");
  const auto t0 = Clock::now();
  ParkReport r;
  const size_t used_before = engine_->kv_pool().used_bytes();
  const int32_t cached_before = s->kv.n_tokens();
  s->park_kind = kind;
  if (kind != ParkKind::kResident) {
    PrefixMatch keep = kind == ParkKind::kFull ? PrefixMatch{} : MatchPrefix(*s);
    if (kind == ParkKind::kSnapshotRam || kind == ParkKind::kSnapshotDisk) {
      const SnapshotTier tier = kind == ParkKind::kSnapshotRam ? SnapshotTier::kRam : SnapshotTier::kDisk;
      Status stored = StoreSnapshot(id, *s, keep.n_tokens, tier, &r.bytes);
      if (!stored.ok()) {
        Warn("cannot snapshot sequence " + std::to_string(id) + " (" + stored.message() +
             "); it will be recomputed from its history");
        ++accounting_.fallbacks;
        s->park_kind = ParkKind::kPartial;
      }
    }
    // A snapshot took the stopped step along; otherwise its rows go with the rest.
    r.cut_tokens_dropped = DropCut(*s);
    s->kv.Clear();
    AttachPrefix(*s, keep);
  }
  if (s->park_kind == ParkKind::kPartial || s->park_kind == ParkKind::kFull) {
    r.bytes = used_before - std::min(used_before, engine_->kv_pool().used_bytes());
    r.tokens_dropped = cached_before - s->kv.n_tokens();
  }
  s->parked = true;
  r.kind = s->park_kind;
  r.seconds = Since(t0);
  accounting_.parks[static_cast<int>(r.kind)] += 1;
  accounting_.bytes_parked += r.bytes;
  accounting_.tokens_dropped += r.tokens_dropped;
  accounting_.park_seconds += r.seconds;
  return r;
}

int32_t RealEngine::DropCut(Seq& s) {
  const auto n = static_cast<int32_t>(s.cut.tokens.size());
  accounting_.cut_tokens_dropped += n;
  s.cut.Clear();
  return n;
}

int32_t RealEngine::DropSnapshotCut(Seq& s) {
  const int32_t n = std::exchange(s.snapshot_cut_tokens, 0);
  accounting_.cut_tokens_dropped += n;
  return n;
}

ParkReport RealEngine::DropParked(SequenceId id, Seq& s) {
  ParkReport r;
  const size_t used_before = engine_->kv_pool().used_bytes();
  r.tokens_dropped = s.kv.n_tokens();
  r.cut_tokens_dropped = DropCut(s) + DropSnapshotCut(s);
  store_->Erase(static_cast<uint64_t>(id));
  s.snapshot_end = -1;
  s.kv.Clear();
  AttachPrefix(s, PrefixMatch{});
  s.park_kind = ParkKind::kFull;
  r.kind = ParkKind::kFull;
  r.bytes = used_before - std::min(used_before, engine_->kv_pool().used_bytes());
  accounting_.parks[static_cast<int>(r.kind)] += 1;
  accounting_.tokens_dropped += r.tokens_dropped;
  return r;
}

Result<std::vector<uint8_t>> RealEngine::ExportSequence(SequenceId id) const {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(id));
  if ((s->parked && s->park_kind != ParkKind::kResident) || s->pending() != 0) {
    return InvalidArgument("sequence " + std::to_string(id) + " does not have all its KV in the pool");
  }
  // From position 0, the shared prefix's rows included: the new process's
  // prefix cache starts empty.
  return EncodeSequenceSnapshot(SnapshotHeader{0, s->kv.n_tokens(), s->history, s->sampler.state()}, s->kv);
}

Result<int32_t> RealEngine::ImportSequence(SequenceId id, std::span<const uint8_t> bytes,
                                           std::span<const int32_t> expected) {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(id));
  if (s->parked || s->history != s->prefix) {
    return InvalidArgument("sequence " + std::to_string(id) + " is not freshly opened");
  }
  VALET_ASSIGN_OR_RETURN(DecodedSnapshot d, DecodeSequenceSnapshot(bytes, engine_->kv_pool().layout()));
  const std::vector<int32_t>& h = d.header.history;
  if (d.header.kv_begin != 0 || d.header.kv_end != static_cast<int32_t>(h.size())) {
    return Corrupt("a checkpoint must hold every position of its history");
  }
  if (h.size() < s->prefix.size() || h.size() >= expected.size() || !std::equal(h.begin(), h.end(), expected.begin())) {
    return InvalidArgument("the checkpoint's history is not a beginning of the sequence's tokens");
  }
  (void)DropCut(*s);
  s->kv.Clear();
  s->kv.UnpinWindow();
  Status imported = s->kv.ImportRows(static_cast<int32_t>(h.size()), d.rows);
  if (!imported.ok()) {
    AttachPrefix(*s, cache_->Match(s->prefix, s->prefix_rank));
    return ResourceExhausted(imported.message());
  }
  for (size_t i = s->prefix.size(); i < h.size(); ++i) s->sampler.Accept(h[i]);
  s->history = h;
  // Its prefix rows are its own now; it neither shares nor registers them.
  s->prefix.clear();
  s->n_shared = 0;
  return static_cast<int32_t>(h.size());
}

size_t RealEngine::MaxExportBytes() const {
  const int32_t n_ctx = context_length();
  // The rows of a full context, and its history, recent and generated tokens.
  return engine_->kv_pool().layout().rows_bytes(0, n_ctx) + 16 * static_cast<size_t>(n_ctx) + (64u << 10);
}

Status RealEngine::RestoreSnapshot(SequenceId id, Seq& s, size_t* bytes) {
  const auto t0 = Clock::now();
  VALET_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, store_->Get(static_cast<uint64_t>(id)));
  VALET_ASSIGN_OR_RETURN(DecodedSnapshot d, DecodeSequenceSnapshot(blob, engine_->kv_pool().layout()));
  if (d.header.history != s.history) return Corrupt("snapshot history differs from the sequence's");
  if (d.header.kv_begin != s.kv.n_tokens()) return Corrupt("snapshot does not start where the shared prefix ends");
  const ModelConfig& c = engine_->model().config();
  if (static_cast<int32_t>(d.cut.tokens.size()) != s.snapshot_cut_tokens || d.cut.layer >= c.n_layer ||
      d.cut.hidden.size() != d.cut.tokens.size() * static_cast<size_t>(c.n_embd)) {
    return Corrupt("snapshot's stopped step differs from the sequence's");
  }
  const int32_t n = d.header.kv_end - d.header.kv_begin;
  // Pool exhaustion is not corruption: the caller retries once others make room.
  Status imported = s.kv.ImportRows(n, d.rows);
  if (!imported.ok()) return ResourceExhausted(imported.message());
  // Without room for the stopped step's rows the step runs again whole (Resume counts it).
  if (!d.cut.empty() && s.kv.ImportPendingRows(static_cast<int32_t>(d.cut.tokens.size()), d.cut_rows).ok()) {
    s.cut = std::move(d.cut);
    s.snapshot_cut_tokens = 0;
  }
  s.sampler.set_state(d.header.sampler);
  *bytes = blob.size();
  Meter& m = s.park_kind == ParkKind::kSnapshotRam ? ram_ : disk_;
  m.seconds += Since(t0);
  return Status::Ok();
}

Result<ResumeReport> RealEngine::Resume(SequenceId id) {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(id));
  if (!s->parked) return InvalidArgument("sequence " + std::to_string(id) + " is not parked");
  const auto t0 = Clock::now();
  ResumeReport r;
  r.kind = s->park_kind;
  if (r.kind == ParkKind::kSnapshotRam || r.kind == ParkKind::kSnapshotDisk) {
    Status restored = RestoreSnapshot(id, *s, &r.bytes);
    if (restored.code() == StatusCode::kResourceExhausted) return restored;  // stays parked, snapshot kept
    if (!restored.ok()) {
      Warn("cannot restore sequence " + std::to_string(id) + " (" + restored.message() +
           "); recomputing it from its history");
      r.fell_back = true;
      r.bytes = 0;
      ++accounting_.fallbacks;
    }
    r.cut_tokens_dropped = DropSnapshotCut(*s);
    store_->Erase(static_cast<uint64_t>(id));
    s->snapshot_end = -1;
  }
  s->parked = false;
  r.tokens_to_recompute = s->pending();
  r.seconds = Since(t0);
  accounting_.resumes[static_cast<int>(r.kind)] += 1;
  accounting_.bytes_restored += r.bytes;
  accounting_.resume_seconds += r.seconds;
  return r;
}

Result<ParkAdviceInput> RealEngine::AdviceInput(SequenceId id, size_t bytes_needed) const {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(id));
  const KvPool& pool = engine_->kv_pool();
  const size_t block = pool.layout().block_bytes();
  ParkAdviceInput in;
  in.bytes_needed = bytes_needed;
  in.pool_free_bytes = static_cast<size_t>(pool.free_blocks()) * block;
  const int32_t shared = std::min(s->n_shared, s->kv.n_tokens());
  const int32_t bt = pool.layout().block_tokens;
  const size_t n_slices = static_cast<size_t>(pool.layout().n_slices());
  for (size_t i = 0; i < s->kv.blocks().size(); ++i) {
    if (s->kv.blocks()[i] == KvSequence::kNoBlock) continue;
    const int32_t refs = pool.ref_count(s->kv.blocks()[i]);
    const bool prefix_block = static_cast<int32_t>(i / n_slices + 1) * bt <= shared;
    if (refs == 1) in.own_bytes += block;
    else if (prefix_block && refs == 2) in.prefix_bytes += block;  // this sequence and the cache
  }
  in.own_tokens = s->kv.n_tokens() - shared;
  in.all_tokens = static_cast<int32_t>(s->history.size());
  const size_t cut_bytes = s->cut.tokens.size() * pool.layout().token_bytes() + s->cut.bytes();
  in.snapshot_bytes = SnapshotStore::FrameBytes(pool.layout().rows_bytes(shared, s->kv.n_tokens()) + cut_bytes);
  in.ram_free_bytes = store_->ram_free_bytes();
  in.disk_free_bytes = store_->disk_free_bytes();
  in.costs = costs();
  return in;
}

ParkKind RealEngine::AdvisePark(SequenceId id, size_t bytes_needed) const {
  Result<ParkAdviceInput> in = AdviceInput(id, bytes_needed);
  return in.ok() ? valet::AdvisePark(*in) : ParkKind::kResident;
}

ParkKind RealEngine::AdviseTrimPark(SequenceId id) const {
  Result<ParkAdviceInput> in = AdviceInput(id, 0);
  return in.ok() ? valet::AdviseTrimPark(*in) : ParkKind::kPartial;
}

Status RealEngine::SetThreads(const StepThreads& threads) { return engine_->context().lanes().Configure(threads); }

EngineMemory RealEngine::memory() const {
  const KvPool& pool = engine_->kv_pool();
  const LlamaModel::WeightMemory w = engine_->model().weight_memory();
  return EngineMemory{pool.capacity_bytes(), pool.used_bytes(), store_->ram_bytes(), store_->disk_bytes(),
                      w.file_backed,         w.anonymous,         engine_->context().scratch_bytes()};
}

MemoryBudgets RealEngine::memory_budgets() const {
  return MemoryBudgets{engine_->kv_pool().capacity_bytes(), store_->options().ram_budget_bytes};
}

Status RealEngine::SetMemoryBudgets(const MemoryBudgets& budgets) {
  VALET_RETURN_IF_ERROR(engine_->kv_pool().SetCapacity(budgets.pool_bytes));
  store_->SetRamBudget(budgets.snapshot_ram_bytes);
  NoteDemotedSnapshots();
  return Status::Ok();
}

size_t RealEngine::KvBytesFor(int32_t n_tokens) const {
  return engine_->kv_pool().layout().sequence_bytes(n_tokens, max_step_tokens());
}

size_t RealEngine::DemoteSnapshots() {
  const size_t moved = store_->DemoteToDisk();
  NoteDemotedSnapshots();
  return moved;
}

void RealEngine::NoteDemotedSnapshots() {
  for (auto& [id, s] : seqs_) {
    if (s->parked && s->park_kind == ParkKind::kSnapshotRam &&
        store_->tier_of(static_cast<uint64_t>(id)) == SnapshotTier::kDisk) {
      s->park_kind = ParkKind::kSnapshotDisk;
    }
  }
}

size_t RealEngine::AdviseWeights(WeightsAdvice advice) {
  return engine_->model().AdviseWeights(advice);
}

size_t RealEngine::DropUnusedPrefixes(int32_t min_rank) {
  const size_t before = engine_->kv_pool().used_bytes();
  while (cache_->EvictOne(min_rank)) {
  }
  return before - std::min(before, engine_->kv_pool().used_bytes());
}

EngineCosts RealEngine::costs() const {
  EngineCosts c;
  c.prefill_seconds_per_token = prefill_.amount > 0 ? prefill_.seconds / prefill_.amount : 0.0;
  c.decode_seconds_per_token = decode_.amount > 0 ? decode_.seconds / decode_.amount : 0.0;
  c.ram_bytes_per_second = ram_.rate();
  c.disk_bytes_per_second = disk_.rate();
  return c;
}

std::span<const float> RealEngine::last_logits(SequenceId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? std::span<const float>() : std::span<const float>(it->second->logits);
}

}  // namespace valet
