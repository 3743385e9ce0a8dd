#include "testing/sched/fake_engine.h"

#include <algorithm>
#include <unordered_set>

#include "sampling/logprobs.h"

namespace valet::testing {

namespace {

uint64_t Mix(uint64_t x) {
  // splitmix64 finalizer: a cheap, well-spread bijection.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr int32_t kByteBase = 3;

}  // namespace

FakeEngine::FakeEngine(FakeEngineOptions options)
    : options_(options), constraints_(std::make_unique<ConstraintCompiler>([] {
        // Its vocabulary as the constraint engine sees it: bytes, BOS and EOS.
        std::vector<std::string> texts(static_cast<size_t>(kVocab));
        std::vector<TokenClass> classes(static_cast<size_t>(kVocab), TokenClass::kText);
        classes[0] = classes[kBos] = TokenClass::kSpecial;
        classes[kEos] = TokenClass::kEog;
        for (int32_t b = 0; b < 256; ++b) texts[static_cast<size_t>(kByteBase + b)] = std::string(1, static_cast<char>(b));
        return TokenTrie::Build(std::move(texts), std::move(classes));
      })) {}

Status FakeEngine::CheckConstraint(const Constraint& constraint) const {
  if (!constraint.active()) return Status::Ok();
  return constraints_->Compile(constraint).status();
}

int32_t FakeEngine::Constrained(const SequenceConstraint& c, int32_t token) {
  for (int32_t i = 0; i < kVocab; ++i) {
    const int32_t t = (token + i) % kVocab;
    if (c.Allows(t)) return t;
  }
  return token;  // PrepareMask refused a mask that allows nothing
}

std::vector<int32_t> FakeEngine::Tokenize(std::string_view text, const TokenizeOptions& options) const {
  std::vector<int32_t> out;
  out.reserve(text.size() + 1);
  if (options.add_bos && options_.add_bos) out.push_back(kBos);
  auto literal = options.literal.begin();
  for (size_t i = 0; i < text.size();) {
    while (literal != options.literal.end() && literal->end() <= i) ++literal;
    const int32_t special = SpecialAt(text, i);
    if (special >= 0) {
      const size_t end = i + options_.special_tokens[static_cast<size_t>(special - kVocab)].size();
      if (literal == options.literal.end() || literal->begin >= end) {
        out.push_back(special);
        i = end;
        continue;
      }
    }
    out.push_back(kByteBase + static_cast<unsigned char>(text[i]));
    ++i;
  }
  return out;
}

int32_t FakeEngine::SpecialAt(std::string_view text, size_t pos) const {
  int32_t best = -1;
  size_t best_size = 0;
  for (size_t k = 0; k < options_.special_tokens.size(); ++k) {
    const std::string& s = options_.special_tokens[k];
    if (s.size() > best_size && text.substr(pos, s.size()) == s) {
      best = kVocab + static_cast<int32_t>(k);
      best_size = s.size();
    }
  }
  return best;
}

ChatFormat FakeEngine::chat_format() const {
  ChatFormat f;
  f.template_source = options_.chat_template;
  f.special_texts = options_.special_tokens;
  return f;
}

std::string FakeEngine::TokenPiece(int32_t token) const {
  if (token < kByteBase || token >= kVocab) return {};
  return std::string(1, static_cast<char>(token - kByteBase));
}

int32_t FakeEngine::SampleAfter(std::span<const int32_t> history, uint64_t seed) const {
  uint64_t h = Mix(seed);
  for (int32_t t : history) h = Mix(h ^ static_cast<uint32_t>(t));
  if (options_.eos_one_in > 0 && (h >> 40) % static_cast<uint64_t>(options_.eos_one_in) == 0) return kEos;
  return kByteBase + 32 + static_cast<int32_t>(h % 95);  // printable ASCII
}

std::vector<float> FakeEngine::LogitsAfter(std::span<const int32_t> history, uint64_t seed, int32_t sampled) const {
  uint64_t h = Mix(seed ^ 0x10915ULL);
  for (int32_t t : history) h = Mix(h ^ static_cast<uint32_t>(t));
  std::vector<float> logits(static_cast<size_t>(kVocab));
  for (int32_t t = 0; t < kVocab; ++t) {
    logits[static_cast<size_t>(t)] = static_cast<float>(Mix(h ^ static_cast<uint64_t>(t)) % 1000) / 250.0f;
  }
  logits[static_cast<size_t>(sampled)] += 6.0f;  // the fake's pick is its most likely token
  return logits;
}

Result<FakeEngine::Seq*> FakeEngine::Find(SequenceId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return NotFound("fake engine: unknown sequence " + std::to_string(seq));
  return &it->second;
}

Result<const FakeEngine::Seq*> FakeEngine::Find(SequenceId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return NotFound("fake engine: unknown sequence " + std::to_string(seq));
  return &it->second;
}

size_t FakeEngine::OwnBytes(const Seq& s) const {
  return static_cast<size_t>(s.n_cached - s.n_shared) * options_.kv_bytes_per_token;
}

size_t FakeEngine::UsedBytes() const {
  size_t used = 0;
  for (const auto& [id, s] : seqs_) used += OwnBytes(s);
  for (const auto& [tokens, p] : prefixes_) {
    if (p->computed) used += p->tokens.size() * options_.kv_bytes_per_token;
  }
  return used;
}

Result<SequenceId> FakeEngine::OpenSequence(const SequenceSpec& spec) {
  if (static_cast<int32_t>(spec.shared_prefix.size()) >= options_.context_length) {
    return OutOfRange("fake engine: shared prefix fills the context");
  }
  Seq s;
  s.seed = spec.sampling.seed;
  s.top_logprobs = spec.top_logprobs;
  s.history = spec.shared_prefix;
  if (!spec.shared_prefix.empty()) {
    std::unique_ptr<Prefix>& p = prefixes_[spec.shared_prefix];
    if (!p) {
      p = std::make_unique<Prefix>();
      p->tokens = spec.shared_prefix;
      p->rank = spec.prefix_rank;
    }
    p->rank = std::min(p->rank, spec.prefix_rank);
    ++p->refs;
    s.prefix = p.get();
    if (p->computed) s.n_shared = s.n_cached = static_cast<int32_t>(p->tokens.size());
  }
  if (spec.constraint.active()) {
    VALET_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, constraints_->Compile(spec.constraint));
    VALET_ASSIGN_OR_RETURN(s.constraint, SequenceConstraint::Create(std::move(compiled), spec.resume_generated));
  }
  const SequenceId id = next_seq_++;
  seqs_.emplace(id, std::move(s));
  return id;
}

void FakeEngine::DropPrefixRef(Seq& s) {
  if (s.prefix != nullptr) --s.prefix->refs;
  s.prefix = nullptr;
}

Status FakeEngine::CloseSequence(SequenceId seq) {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(seq));
  if (s->parked && s->park_kind == ParkKind::kSnapshotRam) snapshot_ram_ -= s->snapshot_bytes;
  if (s->parked && s->park_kind == ParkKind::kSnapshotDisk) snapshot_disk_ -= s->snapshot_bytes;
  DropPrefixRef(*s);
  seqs_.erase(seq);
  return Status::Ok();
}

Result<SequenceInfo> FakeEngine::Info(SequenceId seq) const {
  VALET_ASSIGN_OR_RETURN(const Seq* s, Find(seq));
  SequenceInfo info;
  info.n_tokens = static_cast<int32_t>(s->history.size());
  info.n_cached = s->n_cached;
  info.n_shared = s->n_shared;
  const bool snapshot = s->parked && (s->park_kind == ParkKind::kSnapshotRam || s->park_kind == ParkKind::kSnapshotDisk);
  info.pending_recompute = snapshot ? 0 : info.n_tokens - s->n_cached;
  info.parked = s->parked;
  info.park_kind = s->park_kind;
  info.own_kv_bytes = OwnBytes(*s);
  if (s->cut) info.cut_tokens = s->cut->second + static_cast<int32_t>(s->cut->first.size());
  return info;
}

Status FakeEngine::CheckStep(std::span<const StepItem> items) const {
  if (items.empty()) return InvalidArgument("fake engine: empty step");
  std::unordered_set<SequenceId> seen;
  int64_t total = 0;
  for (const StepItem& item : items) {
    VALET_ASSIGN_OR_RETURN(const Seq* s, Find(item.seq));
    if (!seen.insert(item.seq).second) return InvalidArgument("fake engine: a sequence appears twice in a step");
    if (s->parked) return InvalidArgument("fake engine: step on a parked sequence");
    if (item.tokens.empty() == (item.recompute == 0)) {
      return InvalidArgument("fake engine: an item needs exactly one of tokens and recompute");
    }
    const int32_t pending = static_cast<int32_t>(s->history.size()) - s->n_cached;
    if (item.recompute < 0 || item.recompute > pending) return InvalidArgument("fake engine: bad recompute count");
    if (!item.tokens.empty() && pending > 0) return InvalidArgument("fake engine: new tokens before recompute");
    if (item.sample && item.recompute > 0 && item.recompute != pending) {
      return InvalidArgument("fake engine: sampling a partly computed sequence");
    }
    if (static_cast<int64_t>(s->history.size() + item.tokens.size()) > options_.context_length) {
      return OutOfRange("fake engine: context full");
    }
    total += item.recompute + static_cast<int64_t>(item.tokens.size());
  }
  if (total > options_.max_step_tokens) return InvalidArgument("fake engine: step exceeds max_step_tokens");
  if (UsedBytes() + static_cast<size_t>(total) * options_.kv_bytes_per_token > options_.pool_capacity_bytes) {
    return ResourceExhausted("fake engine: KV pool full");
  }
  return Status::Ok();
}

void FakeEngine::Publish(Seq& s) {
  if (s.prefix == nullptr || s.n_shared > 0) return;
  const int32_t n = static_cast<int32_t>(s.prefix->tokens.size());
  if (s.n_cached < n) return;
  s.prefix->computed = true;
  s.n_shared = n;
}

Result<StepResult> FakeEngine::Step(std::span<const StepItem> items) {
  if (step_hook_) VALET_RETURN_IF_ERROR(step_hook_(items));
  if (abort_ != nullptr && abort_->load(std::memory_order_relaxed)) {
    if (CheckStep(items).ok()) {
      for (const StepItem& item : items) {
        seqs_.at(item.seq).cut.emplace(std::vector<int32_t>(item.tokens.begin(), item.tokens.end()), item.recompute);
      }
    }
    return Aborted("fake engine: step aborted");
  }
  // Unreferenced cached prefixes are the first to go, the highest rank first.
  Status checked = CheckStep(items);
  while (checked.code() == StatusCode::kResourceExhausted) {
    int32_t highest = -1;
    for (const auto& [tokens, p] : prefixes_) {
      if (p->refs == 0) highest = std::max(highest, p->rank);
    }
    if (highest < 0) break;
    DropUnusedPrefixes(highest);
    checked = CheckStep(items);
  }
  VALET_RETURN_IF_ERROR(checked);
  for (const StepItem& item : items) {  // before anything changes, as the real engine
    Seq& s = seqs_.at(item.seq);
    if (item.sample && s.constraint) VALET_RETURN_IF_ERROR(s.constraint->PrepareMask());
  }
  StepResult result;
  for (const StepItem& item : items) {
    Seq& s = seqs_.at(item.seq);
    if (s.cut && (item.recompute != s.cut->second || !std::ranges::equal(item.tokens, s.cut->first))) {
      result.cut_tokens_dropped += DropCut(s);
    }
    s.cut.reset();  // gone on from
  }
  threads_log_.push_back(threads_);
  int64_t prefill_tokens = 0;
  int64_t decode_items = 0;
  for (const StepItem& item : items) {
    Seq& s = seqs_.at(item.seq);
    if (item.recompute > 0) {
      s.n_cached += item.recompute;
      prefill_tokens += item.recompute;
    } else {
      s.history.insert(s.history.end(), item.tokens.begin(), item.tokens.end());
      s.n_cached += static_cast<int32_t>(item.tokens.size());
      if (item.tokens.size() == 1 && item.sample) {
        ++decode_items;
      } else {
        prefill_tokens += static_cast<int64_t>(item.tokens.size());
      }
    }
    Publish(s);
    result.tokens_computed += item.recompute + static_cast<int32_t>(item.tokens.size());
    if (!item.sample) continue;
    StepOutput out{item.seq, SampleAfter(s.history, s.seed), std::nullopt};
    if (s.constraint) {
      out.token = Constrained(*s.constraint, out.token);
      (void)s.constraint->Accept(out.token);
    }
    // The fake draws nothing from an RNG (its token is a hash of the
    // history), but a durable task's journal wants a sampler's state, never
    // all zero: one that names where the sequence is.
    out.rng_state = {Mix(s.seed), static_cast<uint64_t>(s.history.size()), 0, 1};
    if (s.top_logprobs >= 0) {
      std::vector<float> logits = LogitsAfter(s.history, s.seed, out.token);
      // Accepted already, so the mask is the one this token was drawn under.
      const std::span<const float> drawn = s.constraint ? s.constraint->Apply(logits) : std::span<const float>(logits);
      out.logprobs = ComputeLogprobs(drawn, out.token, s.top_logprobs);
    }
    result.outputs.push_back(std::move(out));
  }
  result.seconds = options_.step_overhead_seconds + options_.prefill_seconds_per_token * prefill_tokens +
                   options_.decode_seconds_per_item * decode_items;
  clock_.Advance(result.seconds);
  ++steps_;
  return result;
}

int32_t FakeEngine::DropCut(Seq& s) {
  const int32_t n = s.cut ? s.cut->second + static_cast<int32_t>(s.cut->first.size()) : 0;
  cut_tokens_dropped_ += n;
  s.cut.reset();
  return n;
}

Result<ParkReport> FakeEngine::Park(SequenceId seq, ParkKind kind) {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(seq));
  if (s->parked && kind == ParkKind::kFull) {
    const int32_t cut_dropped = DropCut(*s);
    // Dropping a parked sequence's remaining state: snapshot and prefix go.
    if (s->park_kind == ParkKind::kSnapshotRam) snapshot_ram_ -= s->snapshot_bytes;
    if (s->park_kind == ParkKind::kSnapshotDisk) snapshot_disk_ -= s->snapshot_bytes;
    ParkReport report;
    report.kind = kind;
    report.tokens_dropped = s->n_cached;
    report.cut_tokens_dropped = cut_dropped;
    s->snapshot_bytes = 0;
    s->n_cached = s->n_shared = 0;
    DropPrefixRef(*s);
    s->park_kind = kind;
    return report;
  }
  if (s->parked) return InvalidArgument("fake engine: sequence already parked");
  const size_t own = OwnBytes(*s);
  ParkReport report;
  report.kind = kind;
  report.seconds = options_.park_overhead_seconds;
  switch (kind) {
    case ParkKind::kResident:
      break;
    case ParkKind::kSnapshotRam:
      if (snapshot_ram_ + own > options_.snapshot_ram_capacity_bytes) {
        return ResourceExhausted("fake engine: snapshot RAM tier full");
      }
      snapshot_ram_ += own;
      report.seconds += static_cast<double>(own) / options_.ram_bytes_per_second;
      break;
    case ParkKind::kSnapshotDisk:
      snapshot_disk_ += own;
      report.seconds += static_cast<double>(own) / options_.disk_bytes_per_second;
      break;
    case ParkKind::kPartial:
      report.tokens_dropped = s->n_cached - s->n_shared;
      break;
    case ParkKind::kFull:
      report.tokens_dropped = s->n_cached;
      DropPrefixRef(*s);
      s->n_shared = 0;
      break;
  }
  if (kind == ParkKind::kPartial || kind == ParkKind::kFull) report.cut_tokens_dropped = DropCut(*s);
  if (kind != ParkKind::kResident) {
    report.bytes = own;
    s->snapshot_bytes = (kind == ParkKind::kSnapshotRam || kind == ParkKind::kSnapshotDisk) ? own : 0;
    s->n_cached = s->n_shared;
  }
  s->parked = true;
  s->park_kind = kind;
  clock_.Advance(report.seconds);
  return report;
}

Result<ResumeReport> FakeEngine::Resume(SequenceId seq) {
  VALET_ASSIGN_OR_RETURN(Seq * s, Find(seq));
  if (!s->parked) return InvalidArgument("fake engine: sequence is not parked");
  ResumeReport report;
  report.kind = s->park_kind;
  report.seconds = options_.park_overhead_seconds;
  const bool snapshot = s->park_kind == ParkKind::kSnapshotRam || s->park_kind == ParkKind::kSnapshotDisk;
  if (snapshot && !options_.corrupt_snapshots) {
    if (UsedBytes() + s->snapshot_bytes > options_.pool_capacity_bytes) {
      return ResourceExhausted("fake engine: no pool room to restore a snapshot");
    }
    const double bw = s->park_kind == ParkKind::kSnapshotRam ? options_.ram_bytes_per_second
                                                             : options_.disk_bytes_per_second;
    report.bytes = s->snapshot_bytes;
    report.seconds += static_cast<double>(s->snapshot_bytes) / bw;
    s->n_cached = static_cast<int32_t>(s->history.size());
  } else if (snapshot) {
    report.fell_back = true;
  }
  if (s->park_kind == ParkKind::kSnapshotRam) snapshot_ram_ -= s->snapshot_bytes;
  if (s->park_kind == ParkKind::kSnapshotDisk) snapshot_disk_ -= s->snapshot_bytes;
  s->snapshot_bytes = 0;
  report.tokens_to_recompute = static_cast<int32_t>(s->history.size()) - s->n_cached;
  s->parked = false;
  clock_.Advance(report.seconds);
  return report;
}

ParkKind FakeEngine::AdvisePark(SequenceId seq, size_t bytes_needed) const {
  Result<const Seq*> found = Find(seq);
  if (bytes_needed == 0 || !found.ok()) return ParkKind::kResident;
  const Seq& s = **found;
  const double own = static_cast<double>(OwnBytes(s));
  struct Option {
    ParkKind kind;
    double seconds;
  };
  std::vector<Option> options;
  if (snapshot_ram_ + OwnBytes(s) <= options_.snapshot_ram_capacity_bytes) {
    options.push_back({ParkKind::kSnapshotRam, 2 * own / options_.ram_bytes_per_second});
  }
  options.push_back({ParkKind::kSnapshotDisk, 2 * own / options_.disk_bytes_per_second});
  if (s.n_shared > 0) {
    options.push_back({ParkKind::kPartial, (s.n_cached - s.n_shared) * options_.prefill_seconds_per_token});
  }
  options.push_back({ParkKind::kFull, s.n_cached * options_.prefill_seconds_per_token});
  return std::min_element(options.begin(), options.end(),
                          [](const Option& a, const Option& b) { return a.seconds < b.seconds; })
      ->kind;
}

Status FakeEngine::SetThreads(const StepThreads& threads) {
  if (threads.n_threads < 0) return InvalidArgument("fake engine: threads must not be negative");
  if (threads.nice < 0 || threads.nice > kMaxStepNice) return InvalidArgument("fake engine: nice out of range");
  threads_ = threads;
  return Status::Ok();
}

EngineMemory FakeEngine::memory() const {
  EngineMemory m;
  m.pool_capacity_bytes = options_.pool_capacity_bytes;
  m.pool_used_bytes = UsedBytes();
  m.snapshot_ram_bytes = snapshot_ram_;
  m.snapshot_disk_bytes = snapshot_disk_;
  return m;
}

MemoryBudgets FakeEngine::memory_budgets() const {
  return MemoryBudgets{options_.pool_capacity_bytes, options_.snapshot_ram_capacity_bytes};
}

Status FakeEngine::SetMemoryBudgets(const MemoryBudgets& budgets) {
  if (budgets.pool_bytes < options_.kv_bytes_per_token) return InvalidArgument("fake engine: pool under one token");
  options_.pool_capacity_bytes = budgets.pool_bytes;
  options_.snapshot_ram_capacity_bytes = budgets.snapshot_ram_bytes;
  if (snapshot_ram_ > budgets.snapshot_ram_bytes) DemoteSnapshots();
  return Status::Ok();
}

size_t FakeEngine::KvBytesFor(int32_t n_tokens) const {
  return static_cast<size_t>(n_tokens) * options_.kv_bytes_per_token;
}

size_t FakeEngine::DemoteSnapshots() {
  size_t moved = 0;
  for (auto& [id, s] : seqs_) {
    if (!s.parked || s.park_kind != ParkKind::kSnapshotRam) continue;
    s.park_kind = ParkKind::kSnapshotDisk;
    moved += s.snapshot_bytes;
  }
  snapshot_ram_ -= moved;
  snapshot_disk_ += moved;
  clock_.Advance(static_cast<double>(moved) / options_.disk_bytes_per_second);
  return moved;
}

size_t FakeEngine::DropUnusedPrefixes(int32_t min_rank) {
  const size_t before = UsedBytes();
  std::erase_if(prefixes_, [&](const auto& kv) { return kv.second->refs == 0 && kv.second->rank >= min_rank; });
  return before - UsedBytes();
}

size_t FakeEngine::AdviseWeights(WeightsAdvice advice) {
  weights_advice_.push_back(advice);
  return 0;
}

EngineCosts FakeEngine::costs() const {
  EngineCosts c;
  c.prefill_seconds_per_token = options_.prefill_seconds_per_token;
  c.decode_seconds_per_token = options_.decode_seconds_per_item;
  c.ram_bytes_per_second = options_.ram_bytes_per_second;
  c.disk_bytes_per_second = options_.disk_bytes_per_second;
  return c;
}

}  // namespace valet::testing
