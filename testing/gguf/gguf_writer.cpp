#include "testing/gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace valet::testing {
namespace {

template <typename T>
void AppendPod(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // x86-64 is little-endian, like GGUF
}

void AppendString(std::vector<uint8_t>& out, std::string_view s) {
  AppendPod<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void AppendType(std::vector<uint8_t>& out, GgufValueType t) {
  AppendPod(out, static_cast<uint32_t>(t));
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

template <typename T>
GgufArray GgufArray::OfScalars(GgufValueType type, std::span<const T> v) {
  GgufArray a;
  a.elem_type_ = type;
  a.count_ = v.size();
  a.payload_.resize(v.size_bytes());
  if (!v.empty()) std::memcpy(a.payload_.data(), v.data(), v.size_bytes());
  return a;
}

GgufArray GgufArray::Of(std::span<const uint8_t> v) { return OfScalars(GgufValueType::kUint8, v); }
GgufArray GgufArray::Of(std::span<const int8_t> v) { return OfScalars(GgufValueType::kInt8, v); }
GgufArray GgufArray::Of(std::span<const uint16_t> v) {
  return OfScalars(GgufValueType::kUint16, v);
}
GgufArray GgufArray::Of(std::span<const int16_t> v) { return OfScalars(GgufValueType::kInt16, v); }
GgufArray GgufArray::Of(std::span<const uint32_t> v) {
  return OfScalars(GgufValueType::kUint32, v);
}
GgufArray GgufArray::Of(std::span<const int32_t> v) { return OfScalars(GgufValueType::kInt32, v); }
GgufArray GgufArray::Of(std::span<const uint64_t> v) {
  return OfScalars(GgufValueType::kUint64, v);
}
GgufArray GgufArray::Of(std::span<const int64_t> v) { return OfScalars(GgufValueType::kInt64, v); }
GgufArray GgufArray::Of(std::span<const float> v) { return OfScalars(GgufValueType::kFloat32, v); }
GgufArray GgufArray::Of(std::span<const double> v) { return OfScalars(GgufValueType::kFloat64, v); }

GgufArray GgufArray::OfBools(std::span<const bool> v) {
  GgufArray a;
  a.elem_type_ = GgufValueType::kBool;
  a.count_ = v.size();
  for (bool b : v) a.payload_.push_back(b ? 1 : 0);
  return a;
}

GgufArray GgufArray::OfStrings(std::span<const std::string> v) {
  GgufArray a;
  a.elem_type_ = GgufValueType::kString;
  a.count_ = v.size();
  for (const std::string& s : v) AppendString(a.payload_, s);
  return a;
}

GgufArray GgufArray::OfStrings(std::span<const std::string_view> v) {
  GgufArray a;
  a.elem_type_ = GgufValueType::kString;
  a.count_ = v.size();
  for (std::string_view s : v) AppendString(a.payload_, s);
  return a;
}

GgufArray GgufArray::OfArrays(std::span<const GgufArray> v) {
  GgufArray a;
  a.elem_type_ = GgufValueType::kArray;
  a.count_ = v.size();
  for (const GgufArray& inner : v) inner.AppendEncoded(a.payload_);
  return a;
}

void GgufArray::AppendEncoded(std::vector<uint8_t>& out) const {
  AppendType(out, elem_type_);
  AppendPod<uint64_t>(out, count_);
  out.insert(out.end(), payload_.begin(), payload_.end());
}

void GgufWriter::PutEncoded(std::string_view key, std::vector<uint8_t> encoded) {
  for (Entry& e : metadata_) {
    if (e.key == key) {
      e.encoded = std::move(encoded);
      return;
    }
  }
  metadata_.push_back(Entry{std::string(key), std::move(encoded)});
}

void GgufWriter::Put(std::string_view key, GgufValueType type, const void* payload, size_t size) {
  std::vector<uint8_t> enc;
  AppendType(enc, type);
  const auto* p = static_cast<const uint8_t*>(payload);
  enc.insert(enc.end(), p, p + size);
  PutEncoded(key, std::move(enc));
}

void GgufWriter::SetUint8(std::string_view key, uint8_t v) {
  Put(key, GgufValueType::kUint8, &v, sizeof(v));
}
void GgufWriter::SetInt8(std::string_view key, int8_t v) {
  Put(key, GgufValueType::kInt8, &v, sizeof(v));
}
void GgufWriter::SetUint16(std::string_view key, uint16_t v) {
  Put(key, GgufValueType::kUint16, &v, sizeof(v));
}
void GgufWriter::SetInt16(std::string_view key, int16_t v) {
  Put(key, GgufValueType::kInt16, &v, sizeof(v));
}
void GgufWriter::SetUint32(std::string_view key, uint32_t v) {
  Put(key, GgufValueType::kUint32, &v, sizeof(v));
}
void GgufWriter::SetInt32(std::string_view key, int32_t v) {
  Put(key, GgufValueType::kInt32, &v, sizeof(v));
}
void GgufWriter::SetUint64(std::string_view key, uint64_t v) {
  Put(key, GgufValueType::kUint64, &v, sizeof(v));
}
void GgufWriter::SetInt64(std::string_view key, int64_t v) {
  Put(key, GgufValueType::kInt64, &v, sizeof(v));
}
void GgufWriter::SetFloat32(std::string_view key, float v) {
  Put(key, GgufValueType::kFloat32, &v, sizeof(v));
}
void GgufWriter::SetFloat64(std::string_view key, double v) {
  Put(key, GgufValueType::kFloat64, &v, sizeof(v));
}

void GgufWriter::SetBool(std::string_view key, bool v) {
  const uint8_t b = v ? 1 : 0;
  Put(key, GgufValueType::kBool, &b, 1);
}

void GgufWriter::SetString(std::string_view key, std::string_view v) {
  std::vector<uint8_t> enc;
  AppendType(enc, GgufValueType::kString);
  AppendString(enc, v);
  PutEncoded(key, std::move(enc));
}

void GgufWriter::SetArray(std::string_view key, const GgufArray& v) {
  std::vector<uint8_t> enc;
  AppendType(enc, GgufValueType::kArray);
  v.AppendEncoded(enc);
  PutEncoded(key, std::move(enc));
}

Status GgufWriter::SetAlignment(uint32_t alignment) {
  if (!IsPowerOfTwo(alignment)) {
    return InvalidArgument("GGUF alignment must be a non-zero power of two, got " +
                           std::to_string(alignment));
  }
  alignment_ = alignment;
  SetUint32(kAlignmentKey, alignment);
  return Status::Ok();
}

Status GgufWriter::AddTensor(std::string_view name, GgmlType type, std::span<const int64_t> ne,
                             std::span<const uint8_t> bytes) {
  const std::string where = "tensor '" + std::string(name) + "': ";
  for (const Tensor& t : tensors_) {
    if (t.name == name) return InvalidArgument(where + "duplicate name");
  }
  if (ne.empty() || ne.size() > 4) return InvalidArgument(where + "needs 1 to 4 dimensions");
  const GgmlTypeTraits& traits = GetGgmlTypeTraits(type);
  if (ne[0] % traits.block_size != 0) {
    return InvalidArgument(where + "row length is not a multiple of the block size");
  }
  uint64_t expected = 0;
  bool overflow = ne[0] < 0;
  if (!overflow)
    overflow = __builtin_mul_overflow(static_cast<uint64_t>(ne[0] / traits.block_size),
                                      uint64_t{traits.type_size}, &expected);
  for (size_t d = 1; d < ne.size() && !overflow; ++d) {
    overflow =
        ne[d] < 0 || __builtin_mul_overflow(expected, static_cast<uint64_t>(ne[d]), &expected);
  }
  if (overflow) return InvalidArgument(where + "negative or overflowing shape");
  if (bytes.size() != expected) {
    return InvalidArgument(where + "has " + std::to_string(bytes.size()) +
                           " bytes, its shape needs " + std::to_string(expected));
  }
  tensors_.push_back(Tensor{std::string(name), type, std::vector<int64_t>(ne.begin(), ne.end()),
                            std::vector<uint8_t>(bytes.begin(), bytes.end())});
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::EncodeHeader() const {
  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  AppendPod<uint32_t>(out, 3);
  AppendPod<uint64_t>(out, tensors_.size());
  AppendPod<uint64_t>(out, metadata_.size());
  for (const Entry& e : metadata_) {
    AppendString(out, e.key);
    out.insert(out.end(), e.encoded.begin(), e.encoded.end());
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    AppendString(out, t.name);
    AppendPod<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) AppendPod<uint64_t>(out, static_cast<uint64_t>(n));
    AppendPod<uint32_t>(out, static_cast<uint32_t>(t.type));
    AppendPod<uint64_t>(out, offset);
    offset += t.bytes.size() + PaddingAfter(t.bytes.size());
  }
  out.resize(out.size() + PaddingAfter(out.size()), 0);
  return out;
}

std::vector<uint8_t> GgufWriter::Serialize() const {
  std::vector<uint8_t> out = EncodeHeader();
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    out.resize(out.size() + PaddingAfter(t.bytes.size()), 0);
  }
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError(tmp + ": cannot create: " + std::strerror(errno));
  const std::vector<uint8_t> header = EncodeHeader();
  const std::vector<uint8_t> zeros(alignment_, 0);
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (const Tensor& t : tensors_) {
    if (!ok) break;
    const size_t pad = PaddingAfter(t.bytes.size());
    ok = std::fwrite(t.bytes.data(), 1, t.bytes.size(), f) == t.bytes.size() &&
         std::fwrite(zeros.data(), 1, pad, f) == pad;
  }
  int write_errno = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {  // buffered data is only flushed here
    ok = false;
    write_errno = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return IoError(path + ": write failed: " + std::strerror(write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status s =
        IoError(path + ": cannot rename " + tmp + " into place: " + std::strerror(errno));
    std::remove(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

}  // namespace valet::testing
