// Tensor element types as GGUF files number them (the ggml_type ids), with the
// block geometry every reader needs to size a tensor. Kernels live in kernels/;
// this header is only the on-disk fact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace valet {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeTraits {
  const char* name;      // "q4_K", as llama.cpp prints it
  int64_t block_size;    // elements per block
  size_t type_size;      // bytes per block
  bool supported;        // valet has kernels for it
};

// Traits for a raw type id, or nullptr when the id is not a known ggml type.
const GgmlTypeTraits* FindGgmlTypeTraits(uint32_t raw_type);
const GgmlTypeTraits& GetGgmlTypeTraits(GgmlType type);
inline const char* GgmlTypeName(GgmlType type) { return GetGgmlTypeTraits(type).name; }

// Bytes of one row of `n` elements; n must be a multiple of the block size.
inline size_t GgmlRowSize(GgmlType type, int64_t n) {
  const GgmlTypeTraits& t = GetGgmlTypeTraits(type);
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace valet
