// Helpers shared by the GGUF tests: a byte-level GGUF builder that can write
// any field value (including invalid ones), independent of GgufWriter.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace valet::gguf_testing {

class RawGguf {
 public:
  std::vector<uint8_t> magic = {'G', 'G', 'U', 'F'};
  uint32_t version = 3;
  int64_t tensor_count = -1;  // -1: the number of tensors added
  int64_t kv_count = -1;      // -1: the number of key/values added
  size_t alignment = 32;      // padding before the data section
  std::vector<uint8_t> kvs;
  std::vector<uint8_t> infos;
  std::vector<uint8_t> data;
  int n_kv = 0;
  int n_tensors = 0;

  template <typename T>
  static void Pod(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
  }
  static void Str(std::vector<uint8_t>& out, std::string_view s) {
    Pod<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }

  // Starts a key/value: key then type id; the caller appends the value to kvs.
  std::vector<uint8_t>& Key(std::string_view key, uint32_t type) {
    Str(kvs, key);
    Pod<uint32_t>(kvs, type);
    ++n_kv;
    return kvs;
  }
  void KeyU32(std::string_view key, uint32_t v) { Pod<uint32_t>(Key(key, 4), v); }
  void KeyString(std::string_view key, std::string_view v) { Str(Key(key, 8), v); }

  void Tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    Tensor(name, static_cast<uint32_t>(ne.size()), ne, type, offset);
  }
  void Tensor(std::string_view name, uint32_t n_dims, const std::vector<uint64_t>& ne,
              uint32_t type, uint64_t offset) {
    Str(infos, name);
    Pod<uint32_t>(infos, n_dims);
    for (uint64_t n : ne) Pod<uint64_t>(infos, n);
    Pod<uint32_t>(infos, type);
    Pod<uint64_t>(infos, offset);
    ++n_tensors;
  }

  std::vector<uint8_t> Bytes() const {
    std::vector<uint8_t> out = magic;
    Pod<uint32_t>(out, version);
    Pod<uint64_t>(out, static_cast<uint64_t>(tensor_count >= 0 ? tensor_count : n_tensors));
    Pod<uint64_t>(out, static_cast<uint64_t>(kv_count >= 0 ? kv_count : n_kv));
    out.insert(out.end(), kvs.begin(), kvs.end());
    out.insert(out.end(), infos.begin(), infos.end());
    while (out.size() % alignment != 0) out.push_back(0);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
};

}  // namespace valet::gguf_testing
