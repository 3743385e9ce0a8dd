#include "engine/sequence_snapshot.h"

#include <cstring>
#include <vector>

namespace valet {
namespace {

constexpr uint32_t kMagic = 0x51455356;  // "VSEQ"
// 2: the KV element type joined the layout; 3: generated tokens; 4: the
// window (windowed layers store only the rows their window keeps); 5: a
// stopped step (CutFixed and what follows it, after the rows). A version 4
// snapshot (a durable checkpoint written before) still reads, without a cut.
constexpr uint32_t kVersion = 5;
constexpr uint32_t kVersionWithoutCut = 4;

// Fixed part, then history, recent tokens, generated tokens, rows; every
// field is 4-byte aligned so the rows can be read in place.
struct Fixed {
  uint32_t magic;
  uint32_t version;
  int32_t n_layer, n_kv_head, head_dim, block_tokens;
  int32_t kv_type;  // KvType
  int32_t window, window_period;
  uint32_t n_generated;
  int32_t kv_begin, kv_end;
  uint32_t n_history, n_recent;
  uint64_t rng[4];
};
static_assert(sizeof(Fixed) == 88, "no padding bytes: the header is copied out whole");

// After the rows: the stopped step's layer (0: none), its tokens, the floats
// of hidden state per token; then its tokens, rows and hidden state.
struct CutFixed {
  int32_t layer;
  uint32_t n_tokens;
  uint32_t width;
  uint32_t zero;
};
static_assert(sizeof(CutFixed) == 16, "no padding bytes");

// memcpy must not see an empty vector's null data(), even for 0 bytes.
void PutInts(uint8_t*& p, const std::vector<int32_t>& v) {
  if (!v.empty()) std::memcpy(p, v.data(), v.size() * sizeof(int32_t));
  p += v.size() * sizeof(int32_t);
}

void GetInts(const uint8_t*& p, uint32_t n, std::vector<int32_t>& v) {
  v.resize(n);
  if (n != 0) std::memcpy(v.data(), p, n * sizeof(int32_t));
  p += n * sizeof(int32_t);
}

// The stopped step after a version 5 snapshot's rows, bounded by the bytes
// there before anything is sized from it.
Status DecodeCut(std::span<const uint8_t> bytes, const KvLayout& l, DecodedSnapshot* d) {
  CutFixed c;
  if (bytes.size() < sizeof(c)) return Corrupt("sequence snapshot has the wrong size");
  std::memcpy(&c, bytes.data(), sizeof(c));
  bytes = bytes.subspan(sizeof(c));
  const uint64_t per_token = sizeof(int32_t) + l.token_bytes() + uint64_t{c.width} * sizeof(float);
  if (c.zero != 0 || (c.layer == 0) != (c.n_tokens == 0) || c.layer < 0 || (c.n_tokens > 0 && c.width == 0) ||
      bytes.size() % per_token != 0 || bytes.size() / per_token != c.n_tokens) {
    return Corrupt("sequence snapshot has an inconsistent stopped step");
  }
  if (c.n_tokens == 0) return Status::Ok();
  const uint8_t* p = bytes.data();
  d->cut.layer = c.layer;
  GetInts(p, c.n_tokens, d->cut.tokens);
  d->cut_rows = p;
  p += c.n_tokens * l.token_bytes();
  d->cut.hidden.resize(static_cast<size_t>(c.n_tokens) * c.width);
  std::memcpy(d->cut.hidden.data(), p, d->cut.hidden.size() * sizeof(float));
  return Status::Ok();
}

}  // namespace

std::vector<uint8_t> EncodeSequenceSnapshot(const SnapshotHeader& h, const KvSequence& seq, const StepCut* cut) {
  const KvLayout& l = seq.pool().layout();
  Fixed f{kMagic, kVersion, l.n_layer, l.n_kv_head, l.head_dim, l.block_tokens, static_cast<int32_t>(l.type),
          l.window, l.window_period,
          static_cast<uint32_t>(h.sampler.generated.size()), h.kv_begin, h.kv_end,
          static_cast<uint32_t>(h.history.size()), static_cast<uint32_t>(h.sampler.recent_tokens.size()),
          {h.sampler.rng.words[0], h.sampler.rng.words[1], h.sampler.rng.words[2], h.sampler.rng.words[3]}};
  const size_t ints =
      (h.history.size() + h.sampler.recent_tokens.size() + h.sampler.generated.size()) * sizeof(int32_t);
  const size_t rows = l.rows_bytes(h.kv_begin, h.kv_end);
  const bool with_cut = cut != nullptr && !cut->empty();
  const auto n_cut = with_cut ? static_cast<uint32_t>(cut->tokens.size()) : 0u;
  const CutFixed c{with_cut ? cut->layer : 0, n_cut, n_cut == 0 ? 0u : static_cast<uint32_t>(cut->hidden.size() / n_cut), 0};
  const size_t cut_bytes = sizeof(c) + n_cut * (sizeof(int32_t) + l.token_bytes()) + (with_cut ? cut->hidden.size() * sizeof(float) : 0);
  std::vector<uint8_t> out(sizeof(f) + ints + rows + cut_bytes);
  uint8_t* p = out.data();
  std::memcpy(p, &f, sizeof(f));
  p += sizeof(f);
  PutInts(p, h.history);
  PutInts(p, h.sampler.recent_tokens);
  PutInts(p, h.sampler.generated);
  seq.ExportRows(h.kv_begin, h.kv_end, p);
  p += rows;
  std::memcpy(p, &c, sizeof(c));
  p += sizeof(c);
  if (!with_cut) return out;
  PutInts(p, cut->tokens);
  seq.ExportPendingRows(static_cast<int32_t>(n_cut), p);
  p += n_cut * l.token_bytes();
  std::memcpy(p, cut->hidden.data(), cut->hidden.size() * sizeof(float));
  return out;
}

Result<DecodedSnapshot> DecodeSequenceSnapshot(std::span<const uint8_t> bytes, const KvLayout& l) {
  Fixed f;
  if (bytes.size() < sizeof(f)) return Corrupt("sequence snapshot is shorter than its header");
  std::memcpy(&f, bytes.data(), sizeof(f));
  if (f.magic != kMagic || (f.version != kVersion && f.version != kVersionWithoutCut)) {
    return Corrupt("not a sequence snapshot (magic/version)");
  }
  if (f.n_layer != l.n_layer || f.n_kv_head != l.n_kv_head || f.head_dim != l.head_dim ||
      f.kv_type != static_cast<int32_t>(l.type) || f.window != l.window || f.window_period != l.window_period) {
    return Corrupt("sequence snapshot was taken from a KV pool of another shape");
  }
  if (f.kv_begin < 0 || f.kv_end < f.kv_begin || static_cast<uint32_t>(f.kv_end) > f.n_history) {
    return Corrupt("sequence snapshot has inconsistent positions");
  }
  const size_t ints = (static_cast<size_t>(f.n_history) + f.n_recent + f.n_generated) * sizeof(int32_t);
  const size_t rows = l.rows_bytes(f.kv_begin, f.kv_end);
  const size_t base = sizeof(f) + ints + rows;
  if (bytes.size() < base) return Corrupt("sequence snapshot has the wrong size");
  DecodedSnapshot d;
  if (f.version == kVersion) {
    VALET_RETURN_IF_ERROR(DecodeCut(bytes.subspan(base), l, &d));
  } else if (bytes.size() != base) {
    return Corrupt("sequence snapshot has the wrong size");
  }
  d.header.kv_begin = f.kv_begin;
  d.header.kv_end = f.kv_end;
  const uint8_t* p = bytes.data() + sizeof(f);
  GetInts(p, f.n_history, d.header.history);
  GetInts(p, f.n_recent, d.header.sampler.recent_tokens);
  GetInts(p, f.n_generated, d.header.sampler.generated);
  for (int i = 0; i < 4; ++i) d.header.sampler.rng.words[i] = f.rng[i];
  if (d.header.sampler.rng == RngState{}) return Corrupt("sequence snapshot has an all-zero RNG state");
  d.rows = p;
  return d;
}

}  // namespace valet
