// GGUF metadata values as the reader exposes them: views into the file's
// bytes, never copies, so a 32,000-entry vocabulary costs one string_view per
// entry and a numeric array costs nothing beyond a pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace valet {

// Ids as GGUF stores them.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint32", "string", ...; "unknown" for ids outside the enum.
const char* GgufValueTypeName(GgufValueType type);
// Encoded size of a fixed-size scalar type; 0 for string, array and unknown ids.
size_t GgufScalarSize(GgufValueType type);
bool GgufIsInteger(GgufValueType type);
bool GgufIsFloat(GgufValueType type);

struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;

  // Scalars (type is neither kString nor kArray): the value widened to 64 bits
  // as its type dictates; read it with the accessors below.
  uint64_t scalar_bits = 0;
  // kString.
  std::string_view str;

  // kArray. Numeric and bool elements stay packed little-endian in the file
  // (`raw`, possibly unaligned); strings are pre-split into `strings`; nested
  // arrays are parsed into `items`.
  GgufValueType elem_type = GgufValueType::kUint8;
  uint64_t count = 0;
  const uint8_t* raw = nullptr;
  std::vector<std::string_view> strings;
  std::vector<GgufValue> items;

  bool is_array() const { return type == GgufValueType::kArray; }

  // Scalar conversions; nullopt when the type does not convert (or, for
  // AsUint/AsInt, the value does not fit).
  std::optional<uint64_t> AsUint() const;
  std::optional<int64_t> AsInt() const;
  std::optional<double> AsDouble() const;  // floats and integers

  // Element i of an array as a standalone value (copies a nested array).
  // Requires is_array() && i < count.
  GgufValue Element(uint64_t i) const;

  // Builds a scalar value from its little-endian encoding (size GgufScalarSize).
  static GgufValue FromScalarBytes(GgufValueType type, const uint8_t* bytes);
};

// Human-readable rendering: strings quoted and escaped, arrays abbreviated to
// their first max_items elements followed by "... (N total)".
std::string GgufValueToString(const GgufValue& value, size_t max_items = 8);

// Escapes control bytes, quotes and backslashes and truncates, so text from an
// untrusted file keeps error messages on one line.
std::string GgufPrintable(std::string_view text, size_t max_len = 80);

}  // namespace valet
