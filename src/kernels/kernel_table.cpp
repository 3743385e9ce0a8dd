#include "kernels/kernel_table.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "kernels/arm/neon.h"
#include "kernels/packed_kernels.h"
#include "kernels/ref/scalar.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/vnni.h"

namespace valet {
namespace {

constexpr GgmlType kTiledTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,   GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kQ2_K,
    GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,   GgmlType::kIQ4_XS};

// A SIMD table takes the variant's tiles and none of the scalar ones: where a
// variant lacked a tile, MatMul's per-pair SIMD vec_dot would still beat the
// reference tile, which loops the scalar vec_dot.
using tile_for_fn = TileKernel (*)(GgmlType);
void PatchTiles(KernelTable& t, tile_for_fn gemm, tile_for_fn gemv) {
  for (GgmlType type : kTiledTypes) {
    TypeKernels& k = t.types[static_cast<uint32_t>(type)];
    k.gemm = gemm(type);
    k.gemv = gemv(type);
  }
}

// The first of `candidates` that takes fewer tokens than `gemm` and whose
// rows divide its rows: the tile for a chunk's last tokens short of gemm's.
TileKernel NarrowerTile(const TileKernel& gemm, std::initializer_list<TileKernel> candidates) {
  for (const TileKernel& c : candidates) {
    if (c.fn != nullptr && c.cols < gemm.cols && gemm.rows % c.rows == 0) return c;
  }
  return {};
}

// The row-group kernels a variant has, of the types that have a row-group
// layout; the model keeps rows for the others (weight_pack.h). Prefill tiles
// take `cols` tokens, a chunk's last ones 4 at a time where that is narrower.
using packed_for_fn = TileKernel (*)(GgmlType, int cols);
using packed_gemm_fn = TileKernel (*)(GgmlType);
void PatchPacked(KernelTable& t, packed_for_fn packed, packed_gemm_fn one_group = nullptr, int cols = 4) {
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL,
                        GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                        GgmlType::kQ6_K, GgmlType::kIQ4_XS}) {
    TypeKernels& k = t.types[static_cast<uint32_t>(type)];
    k.packed_gemm = packed(type, cols);
    k.packed_gemm_tail = one_group != nullptr ? one_group(type) : TileKernel{};
    k.packed_gemm_narrow = NarrowerTile(k.packed_gemm, {packed(type, 4)});
    k.packed_gemv = packed(type, 1);
  }
}

// A variant's own prefill row-group GEMMs, for the types it has one for,
// and (when those take several groups per call) its one-group form; the
// table's earlier tiles serve a chunk's last tokens.
void PatchPackedGemm(KernelTable& t, packed_gemm_fn gemm, packed_gemm_fn one_group = nullptr) {
  for (uint32_t id = 0; id < KernelTable::kMaxTypeId; ++id) {
    const TileKernel k = gemm(static_cast<GgmlType>(id));
    if (k.fn == nullptr) continue;
    TypeKernels& types = t.types[id];
    types.packed_gemm_narrow = NarrowerTile(k, {types.packed_gemm, types.packed_gemm_narrow});
    types.packed_gemm = k;
    types.packed_gemm_tail = one_group != nullptr ? one_group(static_cast<GgmlType>(id)) : TileKernel{};
  }
}

void Set(KernelTable& t, GgmlType type, TypeKernels k) { t.types[static_cast<uint32_t>(type)] = k; }

KernelTable BuildScalar() {
  using namespace scalar;  // NOLINT: the table lists every scalar kernel
  KernelTable t;
  t.name = "scalar";
  Set(t, GgmlType::kF32, {GgmlType::kF32, F32ToFloat, F32FromFloat, DotF32});
  Set(t, GgmlType::kF16, {GgmlType::kF16, F16ToFloat, F16FromFloat, DotF16});
  Set(t, GgmlType::kBF16, {GgmlType::kBF16, Bf16ToFloat, Bf16FromFloat, DotBf16});
  Set(t, GgmlType::kQ8_0, {GgmlType::kQ8_0, Q8_0ToFloat, Q8_0FromFloat, DotQ8_0});
  Set(t, GgmlType::kQ4_0, {GgmlType::kQ8_0, Q4_0ToFloat, Q4_0FromFloat, DotQ4_0});
  Set(t, GgmlType::kQ4_K, {GgmlType::kQ8_K, Q4_KToFloat, Q4_KFromFloat, DotQ4_K});
  Set(t, GgmlType::kQ6_K, {GgmlType::kQ8_K, Q6_KToFloat, Q6_KFromFloat, DotQ6_K});
  Set(t, GgmlType::kQ8_K, {GgmlType::kQ8_K, Q8_KToFloat, Q8_KFromFloat, nullptr});
  Set(t, GgmlType::kQ4_1, {GgmlType::kQ8_1, Q4_1ToFloat, Q4_1FromFloat, DotQ4_1});
  Set(t, GgmlType::kQ5_0, {GgmlType::kQ8_0, Q5_0ToFloat, Q5_0FromFloat, DotQ5_0});
  Set(t, GgmlType::kQ5_1, {GgmlType::kQ8_1, Q5_1ToFloat, Q5_1FromFloat, DotQ5_1});
  Set(t, GgmlType::kQ8_1, {GgmlType::kQ8_1, Q8_1ToFloat, Q8_1FromFloat, nullptr});
  Set(t, GgmlType::kIQ4_NL, {GgmlType::kQ8_0, IQ4_NLToFloat, IQ4_NLFromFloat, DotIQ4_NL});
  Set(t, GgmlType::kQ2_K, {GgmlType::kQ8_K, Q2_KToFloat, Q2_KFromFloat, DotQ2_K});
  Set(t, GgmlType::kQ3_K, {GgmlType::kQ8_K, Q3_KToFloat, Q3_KFromFloat, DotQ3_K});
  Set(t, GgmlType::kQ5_K, {GgmlType::kQ8_K, Q5_KToFloat, Q5_KFromFloat, DotQ5_K});
  Set(t, GgmlType::kIQ4_XS, {GgmlType::kQ8_K, IQ4_XSToFloat, IQ4_XSFromFloat, DotIQ4_XS});
  for (TypeKernels& k : t.types) k.gemm = k.gemv = TileKernel{};
  for (GgmlType type : kTiledTypes) {
    t.types[static_cast<uint32_t>(type)].gemm = GemmTile(type);
    t.types[static_cast<uint32_t>(type)].gemv = GemvTile(type);
  }
  PatchPacked(t, PackedTile);
  t.attention = Attention;
  t.swiglu = SwiGlu;
  return t;
}

KernelTable BuildAvx2() {
  KernelTable t = BuildScalar();
  t.name = "avx2";
  auto patch = [&t](GgmlType type, from_float_fn from, vec_dot_fn dot) {
    TypeKernels& k = t.types[static_cast<uint32_t>(type)];
    if (from != nullptr) k.from_float = from;
    if (dot != nullptr) k.vec_dot = dot;
  };
  patch(GgmlType::kF32, nullptr, avx2::DotF32);
  patch(GgmlType::kF16, avx2::F16FromFloat, avx2::DotF16);
  t.types[static_cast<uint32_t>(GgmlType::kF16)].to_float = avx2::F16ToFloat;
  patch(GgmlType::kBF16, nullptr, avx2::DotBf16);
  patch(GgmlType::kQ8_0, avx2::Q8_0FromFloat, avx2::DotQ8_0);
  patch(GgmlType::kQ4_0, nullptr, avx2::DotQ4_0);
  patch(GgmlType::kQ4_K, nullptr, avx2::DotQ4_K);
  patch(GgmlType::kQ6_K, nullptr, avx2::DotQ6_K);
  patch(GgmlType::kQ8_K, avx2::Q8_KFromFloat, nullptr);
  patch(GgmlType::kQ8_1, avx2::Q8_1FromFloat, nullptr);
  patch(GgmlType::kQ4_1, nullptr, avx2::DotQ4_1);
  patch(GgmlType::kQ5_0, nullptr, avx2::DotQ5_0);
  patch(GgmlType::kQ5_1, nullptr, avx2::DotQ5_1);
  patch(GgmlType::kIQ4_NL, nullptr, avx2::DotIQ4_NL);
  patch(GgmlType::kQ2_K, nullptr, avx2::DotQ2_K);
  patch(GgmlType::kQ3_K, nullptr, avx2::DotQ3_K);
  patch(GgmlType::kQ5_K, nullptr, avx2::DotQ5_K);
  patch(GgmlType::kIQ4_XS, nullptr, avx2::DotIQ4_XS);
  PatchTiles(t, avx2::GemmTile, avx2::GemvTile);
  PatchPacked(t, avx2::PackedTile, avx2::PackedTileOneGroup, 8);
  t.attention = avx2::Attention;
  t.swiglu = avx2::SwiGlu;
  t.q8_0s_from_float = avx2::Q8_0SFromFloat;
  return t;
}

// One of the VNNI encodings (x86/vnni.h) over the AVX2 table: the same
// integers, so the same bits.
using patch_fn = void (*)(KernelTable&);
KernelTable BuildVnni(const KernelTable& avx2, const char* name, patch_fn patch) {
  KernelTable t = avx2;
  t.name = name;
  patch(t);
  return t;
}

// The EVEX encoding, plus 512-bit row-group GEMMs (decode keeps AVX2's).
KernelTable BuildAvx512Vnni(const KernelTable& avx2) {
  KernelTable t = BuildVnni(avx2, "avx512vnni", avx512vnni::Patch);
  PatchPackedGemm(t, avx512vnni::PackedGemm, avx512vnni::PackedGemmOneGroup);
  t.attention = avx512vnni::Attention;
  return t;
}

#if VALET_NEON_COMPILED
// Only the types with a NEON dot change; the K-quants keep the scalar dots
// (their matrices are row groups, which run the NEON row-group kernels).
KernelTable BuildNeon() {
  KernelTable t = BuildScalar();
  t.name = "neon";
  auto patch = [&t](GgmlType type, vec_dot_fn dot) {
    t.types[static_cast<uint32_t>(type)].vec_dot = dot;
  };
  patch(GgmlType::kF32, neon::DotF32);
  patch(GgmlType::kF16, neon::DotF16);
  patch(GgmlType::kBF16, neon::DotBf16);
  patch(GgmlType::kQ8_0, neon::DotQ8_0);
  patch(GgmlType::kQ4_0, neon::DotQ4_0);
  t.types[static_cast<uint32_t>(GgmlType::kQ8_0)].from_float = neon::Q8_0FromFloat;
  PatchTiles(t, neon::GemmTile, neon::GemvTile);
  PatchPacked(t, neon::PackedTile);
  t.attention = neon::Attention;
  t.swiglu = neon::SwiGlu;
  return t;
}

// SDOT dots and tiles for Q8_0 and Q4_0, SDOT row-group kernels for every
// row-group type; every other type as the base table.
KernelTable BuildNeonDotprod(const KernelTable& neon) {
  KernelTable t = neon;
  t.name = "neon_dotprod";
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    TypeKernels& k = t.types[static_cast<uint32_t>(type)];
    k.vec_dot = neon::DotprodVecDot(type);
    k.gemm = neon::DotprodTile(type, 2);
    k.gemv = neon::DotprodTile(type, 1);
  }
  PatchPacked(t, neon::DotprodPackedTile);
  return t;
}

// SMMLA gemm tiles and row-group GEMMs; decode keeps SDOT, where SMMLA's
// second token would be wasted.
KernelTable BuildNeonI8mm(const KernelTable& dotprod) {
  KernelTable t = dotprod;
  t.name = "neon_i8mm";
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    t.types[static_cast<uint32_t>(type)].gemm = neon::I8mmGemmTile(type);
  }
  PatchPackedGemm(t, neon::I8mmPackedGemm);
  return t;
}
#endif

bool CpuHasAvx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return avx2::Compiled() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

bool CpuHasAvxVnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return CpuHasAvx2() && __builtin_cpu_supports("avxvnni");
#else
  return false;
#endif
}

bool CpuHasAvx512Vnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return CpuHasAvx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

bool CpuHasAvx512Bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return CpuHasAvx512Vnni() && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

bool Forced(const char* forced, const char* name) {
  return forced != nullptr && std::strcmp(forced, name) == 0;
}

const KernelTable& ChooseActive() {
  const char* forced = std::getenv("VALET_KERNELS");
  if (Forced(forced, "scalar")) return ScalarKernels();
  // The NEON tables exist only on AArch64 builds, the x86 ones only on x86-64.
  if (NeonKernels() != nullptr) {
    if (Forced(forced, "neon")) return *NeonKernels();
    if (!Forced(forced, "neon_dotprod") && NeonI8mmKernels() != nullptr) return *NeonI8mmKernels();
    return NeonDotprodKernels() != nullptr ? *NeonDotprodKernels() : *NeonKernels();
  }
  // Best first: the AVX-512 tables add 512-bit kernels to what AVX-VNNI has.
  const KernelTable* const x86[] = {Avx512Bf16Kernels(), Avx512VnniKernels(), AvxVnniKernels(), Avx2Kernels()};
  for (const KernelTable* t : x86) {
    if (t != nullptr && Forced(forced, t->name)) return *t;
  }
  for (const KernelTable* t : x86) {
    if (t != nullptr) return *t;
  }
  return ScalarKernels();
}

}  // namespace

const KernelTable& ScalarKernels() {
  static const KernelTable table = BuildScalar();
  return table;
}

const KernelTable* Avx2Kernels() {
  static const KernelTable* table = CpuHasAvx2() ? new KernelTable(BuildAvx2()) : nullptr;
  return table;
}

const KernelTable* AvxVnniKernels() {
  static const KernelTable* table =
      CpuHasAvxVnni() ? new KernelTable(BuildVnni(*Avx2Kernels(), "vnni", vnni::Patch)) : nullptr;
  return table;
}

const KernelTable* Avx512VnniKernels() {
  static const KernelTable* table = CpuHasAvx512Vnni() ? new KernelTable(BuildAvx512Vnni(*Avx2Kernels())) : nullptr;
  return table;
}

const KernelTable* Avx512Bf16Kernels() {
  static const KernelTable* table =
      CpuHasAvx512Bf16() ? new KernelTable(BuildVnni(*Avx512VnniKernels(), "avx512bf16", avx512bf16::Patch))
                         : nullptr;
  return table;
}

const KernelTable* NeonKernels() {
#if VALET_NEON_COMPILED
  static const KernelTable table = BuildNeon();
  return &table;
#else
  return nullptr;
#endif
}

const KernelTable* NeonDotprodKernels() {
#if VALET_NEON_COMPILED
  static const KernelTable* table =
      neon::CpuHasDotprod() ? new KernelTable(BuildNeonDotprod(*NeonKernels())) : nullptr;
  return table;
#else
  return nullptr;
#endif
}

const KernelTable* NeonI8mmKernels() {
#if VALET_NEON_COMPILED
  static const KernelTable* table =
      neon::CpuHasI8mm() ? new KernelTable(BuildNeonI8mm(*NeonDotprodKernels())) : nullptr;
  return table;
#else
  return nullptr;
#endif
}

int AvailableKernelTables(const KernelTable* out[kMaxKernelTables]) {
  int n = 0;
  out[n++] = &ScalarKernels();
  if (Avx2Kernels() != nullptr) out[n++] = Avx2Kernels();
  if (AvxVnniKernels() != nullptr) out[n++] = AvxVnniKernels();
  if (Avx512VnniKernels() != nullptr) out[n++] = Avx512VnniKernels();
  if (Avx512Bf16Kernels() != nullptr) out[n++] = Avx512Bf16Kernels();
  if (NeonKernels() != nullptr) out[n++] = NeonKernels();
  // Only the best extension table, like VNNI over AVX2: the dotprod table's
  // own gemm tiles are covered on a CPU with dotprod but not i8mm (the qemu
  // runs in scripts/test.sh emulate both).
  if (NeonI8mmKernels() != nullptr) {
    out[n++] = NeonI8mmKernels();
  } else if (NeonDotprodKernels() != nullptr) {
    out[n++] = NeonDotprodKernels();
  }
  return n;
}

const KernelTable& ActiveKernels() {
  static const KernelTable& table = ChooseActive();
  return table;
}

const char* ActiveKernelsName() { return ActiveKernels().name; }

}  // namespace valet
