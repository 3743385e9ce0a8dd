#include "kernels/matmul_packed.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/packed_blocks.h"
#include "kernels/prefetch.h"

namespace valet {
namespace {

// Tokens per pass over a thread's row groups: about kChunkTokens and at most
// kMaxChunkTokens, so their activations (n x n_in x 1.25 bytes at most) stay
// in L2 while each group's blocks stay in L1 across them. Every chunk streams
// all the weights once, so a batch a few tokens past a multiple of 64 is not
// cut into a chunk of those few.
constexpr int64_t kChunkTokens = 64;
constexpr int64_t kMaxChunkTokens = 96;
// Up to this many tokens the caller converts the activations alone: waking
// the pool costs more than the work (decode).
constexpr int64_t kInlineConvertTokens = 4;
// Rows of one unit of prefill work (RunUnit): enough units that threads end
// together, each long enough that taking it costs nothing.
constexpr int64_t kSlabRows = 64;

// What the row-group kernels of a type read: BlockQ8_0S rows (the 32-element
// types), BlockQ8_1S rows (Q4_1 and Q5_1, whose offsets need Q8_1's s), or the
// table's Q8_K rows (the super-block types). act is the type quantized from.
struct ActFormat {
  int64_t block;      // elements per activation block
  size_t block_bytes;
  GgmlType act;       // kQ8_0 (widened to BlockQ8_0S), kQ8_1 (BlockQ8_1S) or kQ8_K
};

ActFormat ActFormatFor(GgmlType type) {
  if (type == GgmlType::kQ2_K || type == GgmlType::kQ3_K || type == GgmlType::kQ4_K || type == GgmlType::kQ5_K ||
      type == GgmlType::kQ6_K || type == GgmlType::kIQ4_XS)
    return {kQK_K, sizeof(BlockQ8_K), GgmlType::kQ8_K};
  if (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1) return {kQK8_0, sizeof(BlockQ8_1S), GgmlType::kQ8_1};
  return {kQK8_0, sizeof(BlockQ8_0S), GgmlType::kQ8_0};
}

// Products one job can hold: Q, K and V, or gate and up, with room to spare.
constexpr size_t kMaxParts = 4;
// A prefill chunk's last r tokens short of a tile go through the whole tile,
// over activation rows padded with zeros, once r x kPadTail > the tile's
// tokens: a tile costs about three one-token GEMVs, and less than the narrower
// tile (3b-shape Q4_0, 2 threads, AVX-512: 64 + 8 tokens 0.64 s, 64 + 4 0.66 s
// and 64 + 5 0.69 s before). Its outputs land in a buffer of kMaxTileOutputs floats.
constexpr int64_t kPadTail = 4;
constexpr int64_t kMaxTileOutputs = 1024;

struct PackedPart {
  const WeightMatrix* w;
  float* y;  // [n_tokens][w->n_out]
  TileKernel gemm;
  TileKernel tail;    // one group, or fn == nullptr
  TileKernel narrow;  // fewer tokens than gemm, or fn == nullptr
  TileKernel gemv;
  size_t group_bytes;
  int64_t groups;
  size_t first_byte;  // where the part's groups start among all parts' bytes
};

struct PackedJob {
  PackedPart parts[kMaxParts];
  size_t n_parts;
  int64_t n_in;
  const float* x;  // [n_tokens][n_in]
  int64_t n_tokens;
  ActFormat format;
  from_float_fn quantize;    // Q8_0 / Q8_1 (then widened) or Q8_K
  from_float_fn quantize_s;  // Q8_0 straight into BlockQ8_0S, or nullptr
  uint8_t* act;              // [n_tokens + pad][n_in / format.block] activation blocks, pad rows zero
  bool pad_tails;            // prefill: a chunk's last tokens may run through a padded tile
  size_t total_bytes;
  RowsEpilogue epilogue;
};

// The same for Q8_1: its fp16 d and s widened.
void ConvertBlocks1(from_float_fn q8_1, const float* x, BlockQ8_1S* out, int64_t begin, int64_t end) {
  for (int64_t l = begin; l < end; ++l) {
    BlockQ8_1 b;
    q8_1(x + l * kQK8_0, &b, kQK8_0);
    BlockQ8_1S& s = out[l];
    s.d = Fp16ToFp32(b.d);
    s.s = Fp16ToFp32(b.s);
    std::memcpy(s.qs, b.qs, sizeof(s.qs));
  }
}

// A short batch splits evenly when each thread converts the same block range
// of every row; a long one converts whole rows per thread, one stream each
// for the prefetchers (its x comes from L3).
void RunConvert(const PackedJob& job, int ith, int nth) {
  const ActFormat& f = job.format;
  const int64_t nb = job.n_in / f.block;
  const bool by_rows = job.n_tokens >= kChunkTokens;
  const Range r = by_rows ? Range{0, nb} : SplitRange(nb, ith, nth);
  const Range tokens = by_rows ? SplitRange(job.n_tokens, ith, nth) : Range{0, job.n_tokens};
  if (r.begin >= r.end) return;
  for (int64_t t = tokens.begin; t < tokens.end; ++t) {
    uint8_t* row = job.act + static_cast<size_t>(t * nb) * f.block_bytes;
    const float* x = job.x + t * job.n_in;
    if (f.act == GgmlType::kQ8_0 && job.quantize_s != nullptr) {
      job.quantize_s(x + r.begin * f.block, row + static_cast<size_t>(r.begin) * f.block_bytes,
                     (r.end - r.begin) * f.block);
    } else if (f.act == GgmlType::kQ8_0) {
      WidenQ8_0Blocks(job.quantize, x + r.begin * f.block, reinterpret_cast<BlockQ8_0S*>(row) + r.begin,
                      r.end - r.begin);
    } else if (f.act == GgmlType::kQ8_1) {
      ConvertBlocks1(job.quantize, x, reinterpret_cast<BlockQ8_1S*>(row), r.begin, r.end);
    } else {
      job.quantize(x + r.begin * f.block, row + static_cast<size_t>(r.begin) * f.block_bytes,
                   (r.end - r.begin) * f.block);
    }
  }
}

// Bytes [from, to) of p, into L2.
void PrefetchBytes(const uint8_t* p, size_t from, size_t to) {
  for (size_t o = from; o < to; o += kCacheLineBytes)
    __builtin_prefetch(p + o, 0, static_cast<int>(PrefetchLevel::kL2));
}

// A tile call's outputs (cols token rows of `rows` floats, ldo apart), for
// writing: they are written before they are read, and a 512-token step's
// outputs overflow L2, so the lines are owned before the kernel's stores (and,
// for the K-quants, the loads behind them) reach them.
void PrefetchOutputs(const float* out, int64_t ldo, int64_t cols, int64_t rows) {
  constexpr int64_t kLineFloats = kCacheLineBytes / sizeof(float);
  for (int64_t k = 0; k < cols; ++k) {
    for (int64_t r = 0; r < rows; r += kLineFloats)
      __builtin_prefetch(out + k * ldo + r, 1, static_cast<int>(PrefetchLevel::kL1));
  }
}

// The first group of a part whose first byte lies at or past `byte`.
int64_t FirstGroupFrom(const PackedPart& p, size_t byte) {
  if (byte <= p.first_byte) return 0;
  const int64_t g = static_cast<int64_t>((byte - p.first_byte + p.group_bytes - 1) / p.group_bytes);
  return std::min(g, p.groups);
}

// The kernels a type's row groups run: the table's, or the scalar ones where
// the table has no row-group GEMM for it.
const TypeKernels& TableKernels(const KernelTable& table, GgmlType type) {
  return table[type].packed_gemm.fn != nullptr ? table[type] : ScalarKernels()[type];
}

// Row groups [groups.begin, groups.end) of one part.
struct Slab {
  const PackedPart* p = nullptr;
  Range groups{0, 0};

  const uint8_t* group(int64_t g) const {
    return static_cast<const uint8_t*>(p->w->data) + static_cast<size_t>(g) * p->group_bytes;
  }
};

// Weights to ask into L2 ahead of their use.
struct Ahead {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

// The slab's first tile: what the slab before it prefetches.
Ahead FirstTile(const Slab& s) {
  const int64_t end = std::min(s.groups.end, s.groups.begin + s.p->gemm.rows / kPackRows);
  return {s.group(s.groups.begin), static_cast<size_t>(s.group(end) - s.group(s.groups.begin))};
}

// The slab for tokens [t0, t1), then `after` prefetched. A tile kernel may
// take several consecutive groups (gemm.rows a multiple of kPackRows, ldx the
// bytes between them); the last groups short of a tile go through the
// table's one-group tile where it has one, and the tokens short of a tile
// through its narrower tile (whose rows divide the tile's) while they fill
// one, then the GEMV. Every output sees the same per-block operations, tile
// or tail alike.
void RunSlab(const PackedJob& job, const Slab& s, int64_t t0, int64_t t1, Ahead after) {
  const PackedPart& p = *s.p;
  const size_t ldy = static_cast<size_t>(job.n_in / job.format.block) * job.format.block_bytes;
  const int64_t ldo = p.w->n_out, cols = p.gemm.cols, tile_groups = p.gemm.rows / kPackRows;
  const int64_t end = s.groups.end;
  const auto gemv = [&](int64_t g, int64_t t) {
    p.gemv.fn(job.n_in, s.group(g), 0, job.act + t * ldy, ldy, p.y + t * ldo + g * kPackRows, ldo);
  };
  // Tokens [t, t1), fewer than k's, through k at group g if padding pays.
  const auto padded = [&](const TileKernel& k, int64_t g, int64_t t) {
    if (!job.pad_tails || k.fn == nullptr || (t1 - t) * kPadTail <= k.cols || k.cols * k.rows > kMaxTileOutputs)
      return false;
    alignas(kCacheLineBytes) float out[kMaxTileOutputs];
    k.fn(job.n_in, s.group(g), p.group_bytes, job.act + t * ldy, ldy, out, k.rows);
    for (int64_t i = 0; i < t1 - t; ++i)
      std::memcpy(p.y + (t + i) * ldo + g * kPackRows, out + i * k.rows, sizeof(float) * static_cast<size_t>(k.rows));
    return true;
  };
  int64_t g = s.groups.begin;
  for (; g + tile_groups <= end; g += tile_groups) {
    // The next tile's weights come from L3 or memory: each token tile's
    // call first asks for its share of them into L2.
    const bool last = g + tile_groups == end;
    const uint8_t* next = last ? after.data : s.group(g + tile_groups);
    const size_t ahead = last ? after.bytes : static_cast<size_t>(s.group(std::min(end, g + 2 * tile_groups)) - next);
    const size_t share =
        RoundUpToCacheLine(ahead / static_cast<size_t>(std::max<int64_t>(1, (t1 - t0) / cols)));
    int64_t t = t0;
    for (size_t from = 0; t + cols <= t1; t += cols, from += share) {
      PrefetchBytes(next, from, std::min(ahead, from + share));
      if (t + 2 * cols <= t1) {
        PrefetchOutputs(p.y + (t + cols) * ldo + g * kPackRows, ldo, cols, p.gemm.rows);
      } else if (g + 2 * tile_groups <= end) {
        PrefetchOutputs(p.y + t0 * ldo + (g + tile_groups) * kPackRows, ldo, cols, p.gemm.rows);
      }
      p.gemm.fn(job.n_in, s.group(g), p.group_bytes, job.act + t * ldy, ldy, p.y + t * ldo + g * kPackRows, ldo);
    }
    if (t < t1 && padded(p.gemm, g, t)) continue;
    for (; p.narrow.fn != nullptr && t + p.narrow.cols <= t1; t += p.narrow.cols) {
      for (int64_t k = 0; k < tile_groups; k += p.narrow.rows / kPackRows) {
        p.narrow.fn(job.n_in, s.group(g + k), p.group_bytes, job.act + t * ldy, ldy,
                    p.y + t * ldo + (g + k) * kPackRows, ldo);
      }
    }
    for (; t < t1; ++t) {
      for (int64_t k = 0; k < tile_groups; ++k) gemv(g + k, t);
    }
  }
  for (; g < end; ++g) {
    int64_t t = t0;
    for (; p.tail.fn != nullptr && t + p.tail.cols <= t1; t += p.tail.cols) {
      p.tail.fn(job.n_in, s.group(g), p.group_bytes, job.act + t * ldy, ldy, p.y + t * ldo + g * kPackRows, ldo);
    }
    if (t < t1 && padded(p.tail, g, t)) continue;
    for (; t < t1; ++t) gemv(g, t);
  }
}

// A few tokens (decode): threads split whole row groups, by bytes across the
// parts (a Q6_K group costs more than a Q4_K one), or, with an epilogue, the
// same group range of every part; each streams one contiguous range.
void RunGroupsStatic(const PackedJob& job, int ith, int nth) {
  Range ranges[kMaxParts];
  if (job.epilogue.fn != nullptr) {
    const Range r = SplitRange(job.parts[0].groups, ith, nth);
    for (size_t i = 0; i < job.n_parts; ++i) ranges[i] = r;
  } else {
    const size_t b0 = job.total_bytes * static_cast<size_t>(ith) / static_cast<size_t>(nth);
    const size_t b1 = job.total_bytes * static_cast<size_t>(ith + 1) / static_cast<size_t>(nth);
    for (size_t i = 0; i < job.n_parts; ++i)
      ranges[i] = {FirstGroupFrom(job.parts[i], b0), FirstGroupFrom(job.parts[i], b1)};
  }
  for (size_t i = 0; i < job.n_parts; ++i) RunSlab(job, Slab{&job.parts[i], ranges[i]}, 0, job.n_tokens, Ahead{});
  if (job.epilogue.fn != nullptr && ranges[0].begin < ranges[0].end)
    job.epilogue.fn(job.epilogue.ctx, Range{0, job.n_tokens},
                    Range{ranges[0].begin * kPackRows, ranges[0].end * kPackRows});
}

// Prefill: the work is cut into units of (a chunk of about kChunkTokens tokens, a
// slab of kSlabRows rows), chunk by chunk, and threads take the next unit as
// they finish one: a core that is slowed (other work on the machine, a
// costlier type) takes fewer, and no thread waits long for another at the
// end. Within a chunk the activations stay in L2 across its slabs. With an
// epilogue a slab is the same rows of every part, and its epilogue follows it.
struct Units {
  int64_t slab_groups;   // a multiple of every part's tile
  int64_t slabs;         // per chunk: of every part at once with an epilogue, else of each part in turn
  int64_t chunk_tokens;  // a multiple of the widest tile's tokens; the last chunk may be shorter
  int64_t chunks;
  int64_t total() const { return chunks * slabs; }
};

// Tokens per chunk of n: the chunks as even as the tiles allow.
int64_t ChunkTokens(int64_t n, int64_t cols) {
  const int64_t chunks = std::max((n + kMaxChunkTokens - 1) / kMaxChunkTokens, std::max<int64_t>(1, n / kChunkTokens));
  const int64_t per = (n + chunks - 1) / chunks;
  return (per + cols - 1) / cols * cols;
}

Units UnitsFor(const PackedJob& job) {
  int64_t tile_groups = 1, cols = 1;
  for (size_t i = 0; i < job.n_parts; ++i) {
    tile_groups = std::max<int64_t>(tile_groups, job.parts[i].gemm.rows / kPackRows);
    cols = std::max<int64_t>(cols, job.parts[i].gemm.cols);
  }
  const int64_t slab_groups = (kSlabRows / kPackRows + tile_groups - 1) / tile_groups * tile_groups;
  Units u{};
  u.slab_groups = slab_groups;
  if (job.epilogue.fn != nullptr) {
    u.slabs = (job.parts[0].groups + slab_groups - 1) / slab_groups;
  } else {
    for (size_t i = 0; i < job.n_parts; ++i) u.slabs += (job.parts[i].groups + slab_groups - 1) / slab_groups;
  }
  u.chunk_tokens = ChunkTokens(job.n_tokens, cols);
  u.chunks = (job.n_tokens + u.chunk_tokens - 1) / u.chunk_tokens;
  return u;
}

// The slabs of a unit, in the order they run; returns how many.
size_t UnitSlabs(const PackedJob& job, const Units& u, int64_t unit, Slab* out) {
  int64_t slab = unit % u.slabs;
  if (job.epilogue.fn != nullptr) {
    const Range groups{slab * u.slab_groups, std::min(job.parts[0].groups, (slab + 1) * u.slab_groups)};
    for (size_t i = 0; i < job.n_parts; ++i) out[i] = Slab{&job.parts[i], groups};
    return job.n_parts;
  }
  for (size_t i = 0;; ++i) {
    const PackedPart& p = job.parts[i];
    const int64_t in_part = (p.groups + u.slab_groups - 1) / u.slab_groups;
    if (slab < in_part) {
      out[0] = Slab{&p, Range{slab * u.slab_groups, std::min(p.groups, (slab + 1) * u.slab_groups)}};
      return 1;
    }
    slab -= in_part;
  }
}

// Unit `unit`, then the first tile of unit `next` (if any) prefetched.
void RunUnit(const PackedJob& job, const Units& u, int64_t unit, int64_t next) {
  const int64_t t0 = unit / u.slabs * u.chunk_tokens, t1 = std::min(job.n_tokens, t0 + u.chunk_tokens);
  Slab slabs[kMaxParts], following[kMaxParts];
  const size_t n = UnitSlabs(job, u, unit, slabs);
  const Ahead after = next < u.total() && UnitSlabs(job, u, next, following) > 0 ? FirstTile(following[0]) : Ahead{};
  for (size_t i = 0; i < n; ++i) RunSlab(job, slabs[i], t0, t1, i + 1 < n ? FirstTile(slabs[i + 1]) : after);
  if (job.epilogue.fn != nullptr) {
    const Range rows{slabs[0].groups.begin * kPackRows, slabs[0].groups.end * kPackRows};
    job.epilogue.fn(job.epilogue.ctx, Range{t0, t1}, rows);
  }
}

}  // namespace

bool CanRunPackedTogether(std::span<const MatMulOutput> outs, bool epilogue) {
  if (outs.empty() || outs.size() > kMaxParts) return false;
  const WeightMatrix& w0 = *outs[0].w;
  for (const MatMulOutput& o : outs) {
    const WeightMatrix& w = *o.w;
    if (w.layout != WeightLayout::kRowGroups || w.n_in != w0.n_in) return false;
    if (ActFormatFor(w.type).act != ActFormatFor(w0.type).act) return false;
    if (epilogue && w.n_out != w0.n_out) return false;
  }
  return true;
}

void MatMulPacked(std::span<const MatMulOutput> outs, const float* x, int64_t n_tokens,
                  ThreadPool& pool, MatMulScratch& scratch, const KernelTable& table,
                  const RowsEpilogue& epilogue) {
  assert(CanRunPackedTogether(outs, epilogue.fn != nullptr));
  const WeightMatrix& w0 = *outs[0].w;
  const ActFormat format = ActFormatFor(w0.type);
  const bool prefill = n_tokens > kInlineConvertTokens;
  int64_t max_cols = 1;
  for (const MatMulOutput& o : outs) {
    const TypeKernels& k = TableKernels(table, o.w->type);
    max_cols = std::max<int64_t>({max_cols, k.packed_gemm.cols, k.packed_gemm_tail.cols});
  }
  // A padded tile starts before n_tokens and reads fewer than max_cols rows past it.
  const int64_t padded_tokens = prefill ? n_tokens + max_cols : n_tokens;
  const size_t row_bytes = static_cast<size_t>(w0.n_in / format.block) * format.block_bytes;
  const size_t need = static_cast<size_t>(padded_tokens) * row_bytes;
  if (scratch.activations.size() < need) scratch.activations.resize(need);
  std::memset(scratch.activations.data() + static_cast<size_t>(n_tokens) * row_bytes, 0,
              static_cast<size_t>(padded_tokens - n_tokens) * row_bytes);
  PackedJob job{};
  job.n_parts = outs.size();
  job.n_in = w0.n_in;
  job.x = x;
  job.n_tokens = n_tokens;
  job.format = format;
  job.quantize = table[format.act].from_float;
  job.quantize_s = table.q8_0s_from_float;
  job.act = scratch.activations.data();
  job.epilogue = epilogue;
  job.pad_tails = prefill;
  for (size_t i = 0; i < outs.size(); ++i) {
    const WeightMatrix& w = *outs[i].w;
    assert(w.n_out % kPackRows == 0);
    const TypeKernels& k = TableKernels(table, w.type);
    PackedPart& p = job.parts[i];
    p = PackedPart{&w, outs[i].y, k.packed_gemm, k.packed_gemm_tail, k.packed_gemm_narrow, k.packed_gemv,
                   kPackRows * w.row_bytes, w.n_out / kPackRows, job.total_bytes};
    job.total_bytes += static_cast<size_t>(p.groups) * p.group_bytes;
  }
  if (!prefill) {
    RunConvert(job, 0, 1);
  } else {
    pool.Run([&job](int ith, int nth) { RunConvert(job, ith, nth); });
  }
  if (!prefill) {
    pool.Run([&job](int ith, int nth) { RunGroupsStatic(job, ith, nth); });
    return;
  }
  const Units units = UnitsFor(job);
  std::atomic<int64_t> next{0};
  pool.Run([&job, &units, &next](int, int) {
    // A thread holds its next unit while it runs one, to prefetch its weights.
    for (int64_t unit = next.fetch_add(1, std::memory_order_relaxed); unit < units.total();) {
      const int64_t following = next.fetch_add(1, std::memory_order_relaxed);
      RunUnit(job, units, unit, following);
      unit = following;
    }
  });
}

}  // namespace valet
