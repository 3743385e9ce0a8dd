#include "kernels/weight_pack.h"

#include <cassert>
#include <cstring>
#include <optional>
#include <type_traits>

#include "kernels/packed_blocks.h"

namespace valet {
namespace {

// Q5_0 / Q5_1: the 32 high bits of a row's block regrouped by qs byte offset
// b (packed_blocks.h): out[b] bit m = element 4m + b's, bit 4 + m = element
// 16 + 4m + b's.
void PackHighBits(const uint8_t* qh, uint8_t* out) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof(h));
  for (int b = 0; b < 4; ++b) {
    uint32_t v = 0;
    for (int m = 0; m < 4; ++m) {
      v |= ((h >> (4 * m + b)) & 1) << m;
      v |= ((h >> (16 + 4 * m + b)) & 1) << (4 + m);
    }
    out[b] = static_cast<uint8_t>(v);
  }
}

// Row group g, block l: the kPackRows blocks of type Block at position l of
// rows 8g..8g+7, their quants interleaved 4 bytes at a time.
template <class Block, class Packed>
void PackGroups(const WeightMatrix& w, Packed* dst) {
  constexpr int kChunkBytes = 4;
  constexpr int kQuantBytes = sizeof(Block::qs);
  const int64_t nb = w.n_in / GetGgmlTypeTraits(w.type).block_size;
  for (int64_t g = 0; g < w.n_out / kPackRows; ++g) {
    for (int64_t l = 0; l < nb; ++l) {
      Packed& p = dst[g * nb + l];
      for (int r = 0; r < kPackRows; ++r) {
        const Block& b = static_cast<const Block*>(w.Row(g * kPackRows + r))[l];
        p.d[r] = b.d;
        if constexpr (requires { b.m; }) p.m[r] = b.m;
        if constexpr (requires { b.qh; }) PackHighBits(b.qh, &p.qh[kChunkBytes * r]);
        for (int m = 0; m < kQuantBytes / kChunkBytes; ++m) {
          std::memcpy(&p.qs[kPackRows * kChunkBytes * m + kChunkBytes * r], &b.qs[kChunkBytes * m],
                      kChunkBytes);
        }
      }
    }
  }
}

// Q4_K and Q5_K: scales and mins unpacked, the low 4 bits (and Q5_K's 5th
// bits) interleaved 4 bytes at a time.
template <class Block, class Packed>
void PackQ4Q5_K(const WeightMatrix& w, Packed* dst) {
  const int64_t nb = w.n_in / kQK_K;
  for (int64_t g = 0; g < w.n_out / kPackRows; ++g) {
    for (int64_t l = 0; l < nb; ++l) {
      Packed& p = dst[g * nb + l];
      for (int r = 0; r < kPackRows; ++r) {
        const Block& b = static_cast<const Block*>(w.Row(g * kPackRows + r))[l];
        p.d[r] = b.d;
        p.dmin[r] = b.dmin;
        for (int j = 0; j < 8; ++j) {
          UnpackQ4KScaleMin(b.scales, j, &p.sc[8 * j + r], &p.mins[16 * (j / 2) + 2 * r + j % 2]);
        }
        for (int c = 0; c < 4; ++c) {
          for (int m = 0; m < 8; ++m) std::memcpy(&p.qs[256 * c + 32 * m + 4 * r], &b.qs[32 * c + 4 * m], 4);
        }
        if constexpr (std::is_same_v<Block, BlockQ5_K>) {
          for (int m = 0; m < 8; ++m) std::memcpy(&p.qh[32 * m + 4 * r], &b.qh[4 * m], 4);
        }
      }
    }
  }
}

void PackIQ4_XS(const WeightMatrix& w, BlockIQ4_XSx8* dst) {
  const int64_t nb = w.n_in / kQK_K;
  for (int64_t g = 0; g < w.n_out / kPackRows; ++g) {
    for (int64_t l = 0; l < nb; ++l) {
      BlockIQ4_XSx8& p = dst[g * nb + l];
      for (int r = 0; r < kPackRows; ++r) {
        const BlockIQ4_XS& b = static_cast<const BlockIQ4_XS*>(w.Row(g * kPackRows + r))[l];
        p.d[r] = b.d;
        for (int s = 0; s < 8; ++s) {
          p.sc[8 * s + r] = static_cast<int8_t>(UnpackIQ4XSScale(b, s) - 32);
          for (int m = 0; m < 4; ++m) std::memcpy(&p.qs[128 * s + 32 * m + 4 * r], &b.qs[16 * s + 4 * m], 4);
        }
      }
    }
  }
}

void PackQ2_K(const WeightMatrix& w, BlockQ2_Kx8* dst) {
  const int64_t nb = w.n_in / kQK_K;
  for (int64_t g = 0; g < w.n_out / kPackRows; ++g) {
    for (int64_t l = 0; l < nb; ++l) {
      BlockQ2_Kx8& p = dst[g * nb + l];
      for (int r = 0; r < kPackRows; ++r) {
        const BlockQ2_K& b = static_cast<const BlockQ2_K*>(w.Row(g * kPackRows + r))[l];
        p.d[r] = b.d;
        p.dmin[r] = b.dmin;
        for (int grp = 0; grp < 16; ++grp) p.sc[16 * (grp / 2) + 2 * r + grp % 2] = b.scales[grp];
        for (int m = 0; m < 8; ++m) {
          for (int h = 0; h < 2; ++h) std::memcpy(&p.qs[256 * h + 32 * m + 4 * r], &b.qs[32 * h + 4 * m], 4);
        }
      }
    }
  }
}

void PackQ3_K(const WeightMatrix& w, BlockQ3_Kx8* dst) {
  const int64_t nb = w.n_in / kQK_K;
  for (int64_t g = 0; g < w.n_out / kPackRows; ++g) {
    for (int64_t l = 0; l < nb; ++l) {
      BlockQ3_Kx8& p = dst[g * nb + l];
      for (int r = 0; r < kPackRows; ++r) {
        const BlockQ3_K& b = static_cast<const BlockQ3_K*>(w.Row(g * kPackRows + r))[l];
        p.d[r] = b.d;
        for (int grp = 0; grp < 16; ++grp) {
          p.sc[16 * (grp / 2) + 2 * r + grp % 2] = static_cast<int8_t>(UnpackQ3KScale(b.scales, grp) - 32);
        }
        for (int m = 0; m < 8; ++m) {
          std::memcpy(&p.hmask[32 * m + 4 * r], &b.hmask[4 * m], 4);
          for (int h = 0; h < 2; ++h) std::memcpy(&p.qs[256 * h + 32 * m + 4 * r], &b.qs[32 * h + 4 * m], 4);
        }
      }
    }
  }
}

// The 256 6-bit quants (q + 32) of a Q6_K block in element order.
void Q6KQuants(const BlockQ6_K& b, uint8_t* u) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      u[128 * h + l] = static_cast<uint8_t>((ql[l] & 0x0f) | ((qh[l] & 3) << 4));
      u[128 * h + 32 + l] = static_cast<uint8_t>((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4));
      u[128 * h + 64 + l] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      u[128 * h + 96 + l] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

void PackQ6_K(const WeightMatrix& w, BlockQ6_Kx8* dst) {
  const int64_t nb = w.n_in / kQK_K;
  for (int64_t g = 0; g < w.n_out / kPackRows; ++g) {
    for (int64_t l = 0; l < nb; ++l) {
      BlockQ6_Kx8& p = dst[g * nb + l];
      std::memset(&p, 0, sizeof(p));
      for (int r = 0; r < kPackRows; ++r) {
        const BlockQ6_K& b = static_cast<const BlockQ6_K*>(w.Row(g * kPackRows + r))[l];
        p.d[r] = b.d;
        for (int grp = 0; grp < 16; ++grp) p.sc[16 * (grp / 2) + 2 * r + grp % 2] = b.scales[grp];
        uint8_t u[kQK_K];
        Q6KQuants(b, u);
        for (int e = 0; e < kQK_K; ++e) {
          const int s = e / 32, m = (e % 32) / 4, k = e % 4;
          p.ql[256 * (s / 2) + 32 * m + 4 * r + k] |= static_cast<uint8_t>((u[e] & 15) << (4 * (s % 2)));
          p.qh[256 * (s / 4) + 32 * m + 4 * r + k] |= static_cast<uint8_t>((u[e] >> 4) << (2 * (s % 4)));
        }
      }
    }
  }
}

// Each quantized type's packer and the bytes of one packed group of blocks.
struct Packer {
  void (*pack)(const WeightMatrix& w, void* dst);
  size_t packed_block_bytes;  // per kPackRows blocks at one position
};

template <class Packed, void (*Pack)(const WeightMatrix&, Packed*)>
constexpr Packer MakePacker() {
  return {[](const WeightMatrix& w, void* dst) { Pack(w, static_cast<Packed*>(dst)); }, sizeof(Packed)};
}

template <class Block, class Packed>
constexpr Packer GroupPacker() {
  return MakePacker<Packed, PackGroups<Block, Packed>>();
}

std::optional<Packer> PackerFor(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0: return GroupPacker<BlockQ4_0, BlockQ4_0x8>();
    case GgmlType::kQ4_1: return GroupPacker<BlockQ4_1, BlockQ4_1x8>();
    case GgmlType::kQ5_0: return GroupPacker<BlockQ5_0, BlockQ5_0x8>();
    case GgmlType::kQ5_1: return GroupPacker<BlockQ5_1, BlockQ5_1x8>();
    case GgmlType::kIQ4_NL: return GroupPacker<BlockIQ4_NL, BlockIQ4_NLx8>();
    case GgmlType::kQ8_0: return GroupPacker<BlockQ8_0, BlockQ8_0x8>();
    case GgmlType::kQ2_K: return MakePacker<BlockQ2_Kx8, PackQ2_K>();
    case GgmlType::kQ3_K: return MakePacker<BlockQ3_Kx8, PackQ3_K>();
    case GgmlType::kQ4_K: return MakePacker<BlockQ4_Kx8, PackQ4Q5_K<BlockQ4_K, BlockQ4_Kx8>>();
    case GgmlType::kQ5_K: return MakePacker<BlockQ5_Kx8, PackQ4Q5_K<BlockQ5_K, BlockQ5_Kx8>>();
    case GgmlType::kQ6_K: return MakePacker<BlockQ6_Kx8, PackQ6_K>();
    case GgmlType::kIQ4_XS: return MakePacker<BlockIQ4_XSx8, PackIQ4_XS>();
    default: return std::nullopt;
  }
}

}  // namespace

bool CanPack(const WeightMatrix& w) {
  return PackerFor(w.type).has_value() && w.layout == WeightLayout::kRows && w.n_out > 0 &&
         w.n_out % kPackRows == 0 && w.row_bytes == GgmlRowSize(w.type, w.n_in);
}

size_t PackedBytes(const WeightMatrix& w) {
  const std::optional<Packer> p = PackerFor(w.type);
  assert(p.has_value() && "PackedBytes of a type without a row-group layout");
  const int64_t blocks_per_row = w.n_in / GetGgmlTypeTraits(w.type).block_size;
  return p->packed_block_bytes * static_cast<size_t>(w.n_out / kPackRows * blocks_per_row);
}

WeightMatrix PackWeights(const WeightMatrix& w, void* dst) {
  assert(CanPack(w) && "PackWeights on a matrix without a row-group layout");
  PackerFor(w.type)->pack(w, dst);
  return PackedView(w, dst);
}

WeightMatrix PackedView(const WeightMatrix& w, const void* packed) {
  WeightMatrix view = w;
  view.data = packed;
  view.layout = WeightLayout::kRowGroups;
  view.row_bytes = PackedBytes(w) / static_cast<size_t>(w.n_out);
  return view;
}

}  // namespace valet
