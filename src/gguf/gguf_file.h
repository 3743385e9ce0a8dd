// Read-only view of a GGUF (v2/v3) file: metadata and tensor directory are
// parsed and validated once; tensor data stays in the mmap'ed file and is
// reached through GgufTensorInfo::data. Every malformed input yields a
// one-line Status naming the file, never a crash or an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_value.h"
#include "gguf/mapped_buffer.h"
#include "valet/status.h"

namespace valet {

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the row length; unused dims are 1
  uint64_t offset = 0;           // relative to the data section
  size_t nbytes = 0;
  const uint8_t* data = nullptr;  // into the file's bytes

  int64_t element_count() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct GgufKeyValue {
  std::string_view key;  // into the file's bytes
  GgufValue value;
};

class GgufFile {
 public:
  // Deepest array-of-arrays nesting accepted (1 = a flat array).
  static constexpr int kMaxArrayDepth = 4;
  static constexpr size_t kDefaultAlignment = 32;

  static Result<GgufFile> Open(const std::string& path);
  // Parses a file image held in memory (the fuzzer, tests); `name` stands in
  // for the path in error messages.
  static Result<GgufFile> FromBuffer(std::vector<uint8_t> bytes, std::string name);
  // Parses bytes mapped or read already (MappedBuffer::MapRange: a model
  // inside another file); `path` names them in error messages.
  static Result<GgufFile> Parse(MappedBuffer bytes, std::string path);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t file_size() const { return bytes_.size(); }
  // Offset of the tensor data section from the start of the file.
  size_t data_offset() const { return data_offset_; }
  // The file's bytes (header, metadata, tensor descriptions, then data).
  std::span<const uint8_t> bytes() const { return {bytes_.data(), bytes_.size()}; }

  size_t metadata_count() const { return metadata_.size(); }
  // In file order.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const GgufValue* Find(std::string_view key) const;

  // Typed getters. NotFound when the key is absent; Corrupt when its type does
  // not convert (or the value does not fit). Messages name the file and key.
  Result<uint64_t> GetUint(std::string_view key) const;  // any non-negative integer
  Result<int64_t> GetInt(std::string_view key) const;    // any integer that fits
  Result<double> GetFloat(std::string_view key) const;   // floats and integers
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string_view> GetString(std::string_view key) const;
  Result<std::vector<std::string_view>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetFloatArray(
      std::string_view key) const;  // float or integer elements
  Result<std::vector<int32_t>> GetIntArray(
      std::string_view key) const;  // integer elements that fit

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // O(log n).
  const GgufTensorInfo* FindTensor(std::string_view name) const;

  // Human-readable rendering of a value (arrays abbreviated), for `valet info`.
  static std::string ValueToString(const GgufValue& v, size_t max_items = 8);

 private:
  class Parser;
  GgufFile() = default;

  Result<const GgufValue*> Require(std::string_view key) const;
  Status TypeMismatch(std::string_view key, const GgufValue& v, const char* wanted) const;
  Result<const GgufValue*> RequireArray(std::string_view key) const;

  std::string path_;
  MappedBuffer bytes_;
  uint32_t version_ = 0;
  size_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<uint32_t> metadata_by_key_;  // indices into metadata_, sorted by key
  std::vector<GgufTensorInfo> tensors_;
  std::vector<uint32_t> tensors_by_name_;  // indices into tensors_, sorted by name
};

}  // namespace valet
