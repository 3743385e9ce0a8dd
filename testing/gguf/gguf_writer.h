// Builds a GGUF v3 file: metadata in insertion order, then tensors laid out
// one after another, each padded to the alignment. Used by tests, the fuzz
// seeds and the synthetic-model tool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_value.h"
#include "valet/status.h"

namespace valet::testing {

// An array value ready to be stored, possibly an element of another array.
// Elements of an array of arrays may have different element types.
class GgufArray {
 public:
  static GgufArray Of(std::span<const uint8_t> v);
  static GgufArray Of(std::span<const int8_t> v);
  static GgufArray Of(std::span<const uint16_t> v);
  static GgufArray Of(std::span<const int16_t> v);
  static GgufArray Of(std::span<const uint32_t> v);
  static GgufArray Of(std::span<const int32_t> v);
  static GgufArray Of(std::span<const uint64_t> v);
  static GgufArray Of(std::span<const int64_t> v);
  static GgufArray Of(std::span<const float> v);
  static GgufArray Of(std::span<const double> v);
  static GgufArray OfBools(std::span<const bool> v);
  static GgufArray OfStrings(std::span<const std::string> v);
  static GgufArray OfStrings(std::span<const std::string_view> v);
  static GgufArray OfArrays(std::span<const GgufArray> v);

  GgufValueType elem_type() const { return elem_type_; }
  uint64_t size() const { return count_; }
  // Element type, count and elements, as they follow the kArray type tag.
  void AppendEncoded(std::vector<uint8_t>& out) const;

 private:
  template <typename T>
  static GgufArray OfScalars(GgufValueType type, std::span<const T> v);

  GgufValueType elem_type_ = GgufValueType::kUint8;
  uint64_t count_ = 0;
  std::vector<uint8_t> payload_;  // the encoded elements
};

class GgufWriter {
 public:
  static constexpr std::string_view kAlignmentKey = "general.alignment";

  // Setting a key that already exists replaces its value in place (it keeps
  // its original position).
  void SetUint8(std::string_view key, uint8_t v);
  void SetInt8(std::string_view key, int8_t v);
  void SetUint16(std::string_view key, uint16_t v);
  void SetInt16(std::string_view key, int16_t v);
  void SetUint32(std::string_view key, uint32_t v);
  void SetInt32(std::string_view key, int32_t v);
  void SetUint64(std::string_view key, uint64_t v);
  void SetInt64(std::string_view key, int64_t v);
  void SetFloat32(std::string_view key, float v);
  void SetFloat64(std::string_view key, double v);
  void SetBool(std::string_view key, bool v);
  void SetString(std::string_view key, std::string_view v);
  void SetArray(std::string_view key, const GgufArray& v);

  // Sets the data alignment and stores it as general.alignment (uint32).
  // InvalidArgument unless a non-zero power of two. Writing general.alignment
  // through the scalar setters does not change the layout: use this.
  Status SetAlignment(uint32_t alignment);
  size_t alignment() const { return alignment_; }

  // Copies `bytes`. InvalidArgument on a duplicate name, 0 or more than 4
  // dims, a negative dim, a row length that is not a multiple of the type's
  // block size, or a byte count other than the shape requires.
  Status AddTensor(std::string_view name, GgmlType type, std::span<const int64_t> ne,
                   std::span<const uint8_t> bytes);

  size_t metadata_count() const { return metadata_.size(); }
  size_t tensor_count() const { return tensors_.size(); }

  std::vector<uint8_t> Serialize() const;
  // Streams the file to `path` (through a temporary file renamed into place).
  Status WriteFile(const std::string& path) const;

 private:
  struct Entry {
    std::string key;
    std::vector<uint8_t> encoded;  // value type tag followed by the value
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;
  };

  void Put(std::string_view key, GgufValueType type, const void* payload, size_t size);
  void PutEncoded(std::string_view key, std::vector<uint8_t> encoded);
  // Everything before the data section, including its padding. Tensor
  // offsets are assigned here, so the alignment may change at any time.
  std::vector<uint8_t> EncodeHeader() const;
  size_t PaddingAfter(size_t n) const { return (alignment_ - n % alignment_) % alignment_; }

  std::vector<Entry> metadata_;
  std::vector<Tensor> tensors_;
  size_t alignment_ = 32;
};

}  // namespace valet::testing
