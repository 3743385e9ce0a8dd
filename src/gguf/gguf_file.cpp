#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>

namespace valet {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kMinVersion = 2;
constexpr uint32_t kMaxVersion = 3;
constexpr int kMaxDims = 4;
// Smallest encodings, used to reject counts that cannot fit before reserving.
constexpr size_t kMinKeyValueSize = 8 + 4 + 1;  // key length, type, 1-byte value
constexpr size_t kMinTensorInfoSize =
    8 + 4 + 8 + 4 + 8;                         // name length, n_dims, ne[0], type, offset
constexpr size_t kMinNestedArraySize = 4 + 8;  // element type, count

std::string Quoted(std::string_view s) {
  std::string out(1, '\'');
  out += GgufPrintable(s);
  out += '\'';
  return out;
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Out-of-range double -> float casts are undefined behaviour; saturate to infinity.
float ToFloat(double d) {
  if (d > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (d < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

bool IsKnownValueType(uint32_t raw) {
  return raw <= static_cast<uint32_t>(GgufValueType::kFloat64);
}

// Minimum encoded size of one array element of this type.
size_t MinElementSize(GgufValueType t) {
  if (t == GgufValueType::kString) return 8;
  if (t == GgufValueType::kArray) return kMinNestedArraySize;
  return GgufScalarSize(t);
}

}  // namespace

// One pass over the file image, filling a GgufFile. Every read is bounds
// checked against the buffer; all size arithmetic is overflow checked.
class GgufFile::Parser {
 public:
  explicit Parser(GgufFile& file)
      : f_(file), base_(file.bytes_.data()), size_(file.bytes_.size()) {}

  Status Run() {
    uint64_t n_tensors = 0;
    uint64_t n_kv = 0;
    VALET_RETURN_IF_ERROR(ReadHeader(&n_tensors, &n_kv));
    VALET_RETURN_IF_ERROR(ReadMetadata(n_kv));
    VALET_RETURN_IF_ERROR(IndexMetadata());
    VALET_RETURN_IF_ERROR(ResolveAlignment());
    VALET_RETURN_IF_ERROR(ReadTensorInfos(n_tensors));
    VALET_RETURN_IF_ERROR(IndexTensors());
    VALET_RETURN_IF_ERROR(LocateTensorData());
    return CheckOverlaps();
  }

 private:
  Status Fail(StatusCode code, const std::string& msg) const {
    return {code, f_.path_ + ": " + msg};
  }
  Status Truncated(const char* what) const {
    return Fail(StatusCode::kCorrupt, std::string("truncated file: ") + what + " at offset " +
                                          std::to_string(pos_) + " runs past the end (file size " +
                                          std::to_string(size_) + ")");
  }
  size_t remaining() const { return size_ - pos_; }

  Status ReadBytes(size_t n, const uint8_t** out, const char* what) {
    if (n > remaining()) return Truncated(what);
    *out = base_ + pos_;
    pos_ += n;
    return Status::Ok();
  }
  template <typename T>
  Status ReadPod(T* out, const char* what) {
    const uint8_t* p = nullptr;
    VALET_RETURN_IF_ERROR(ReadBytes(sizeof(T), &p, what));
    std::memcpy(out, p, sizeof(T));
    return Status::Ok();
  }
  Status ReadString(std::string_view* out, const char* what) {
    uint64_t len = 0;
    VALET_RETURN_IF_ERROR(ReadPod(&len, what));
    if (len > remaining()) {
      return Fail(StatusCode::kCorrupt, std::string(what) + " length " + std::to_string(len) +
                                            " at offset " + std::to_string(pos_ - 8) +
                                            " runs past the end of the file (file size " +
                                            std::to_string(size_) + ")");
    }
    const uint8_t* p = nullptr;
    VALET_RETURN_IF_ERROR(ReadBytes(static_cast<size_t>(len), &p, what));
    *out = std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    return Status::Ok();
  }

  // Rejects a count whose smallest encoding is larger than the rest of the file.
  Status CheckCountFits(uint64_t count, size_t min_size, const std::string& what) const {
    if (count > remaining() / min_size) {
      return Fail(StatusCode::kCorrupt, what + " " + std::to_string(count) + " cannot fit in the " +
                                            std::to_string(remaining()) + " bytes left at offset " +
                                            std::to_string(pos_));
    }
    return Status::Ok();
  }

  Status ReadHeader(uint64_t* n_tensors, uint64_t* n_kv) {
    const uint8_t* magic = nullptr;
    if (size_ < sizeof(kMagic)) {
      return Fail(StatusCode::kCorrupt,
                  "not a GGUF file (only " + std::to_string(size_) + " bytes)");
    }
    VALET_RETURN_IF_ERROR(ReadBytes(sizeof(kMagic), &magic, "magic"));
    if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
      return Fail(StatusCode::kCorrupt, "not a GGUF file (bad magic)");
    }
    VALET_RETURN_IF_ERROR(ReadPod(&f_.version_, "version"));
    VALET_RETURN_IF_ERROR(CheckVersion(f_.version_));
    VALET_RETURN_IF_ERROR(ReadPod(n_tensors, "tensor count"));
    VALET_RETURN_IF_ERROR(ReadPod(n_kv, "metadata count"));
    VALET_RETURN_IF_ERROR(CheckCountFits(*n_kv, kMinKeyValueSize, "metadata count"));
    return CheckCountFits(*n_tensors, kMinTensorInfoSize, "tensor count");
  }

  Status CheckVersion(uint32_t v) const {
    if (v == 1) {
      return Fail(StatusCode::kUnsupported,
                  "GGUF v1 is not supported (re-convert the file with a current llama.cpp)");
    }
    if ((v & 0xffffu) == 0 && __builtin_bswap32(v) >= 1 && __builtin_bswap32(v) <= kMaxVersion) {
      return Fail(StatusCode::kUnsupported, "big-endian GGUF files are not supported");
    }
    if (v < kMinVersion || v > kMaxVersion) {
      return Fail(StatusCode::kUnsupported, "GGUF version " + std::to_string(v) +
                                                " is not supported (valet reads v2 and v3)");
    }
    return Status::Ok();
  }

  Status ReadMetadata(uint64_t n_kv) {
    f_.metadata_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) {
      GgufKeyValue kv;
      VALET_RETURN_IF_ERROR(ReadString(&kv.key, "metadata key"));
      uint32_t raw_type = 0;
      VALET_RETURN_IF_ERROR(ReadPod(&raw_type, "metadata value type"));
      VALET_RETURN_IF_ERROR(ReadValue(raw_type, kv.key, &kv.value));
      f_.metadata_.push_back(std::move(kv));
    }
    return Status::Ok();
  }

  Status ReadValue(uint32_t raw_type, std::string_view key, GgufValue* out) {
    if (!IsKnownValueType(raw_type)) {
      return Fail(StatusCode::kCorrupt, "metadata key " + Quoted(key) + " has unknown value type " +
                                            std::to_string(raw_type));
    }
    const auto type = static_cast<GgufValueType>(raw_type);
    if (type == GgufValueType::kArray) return ReadArray(key, 1, out);
    if (type == GgufValueType::kString) {
      out->type = type;
      return ReadString(&out->str, "metadata string");
    }
    const uint8_t* p = nullptr;
    VALET_RETURN_IF_ERROR(ReadBytes(GgufScalarSize(type), &p, "metadata value"));
    *out = GgufValue::FromScalarBytes(type, p);
    return Status::Ok();
  }

  Status ReadArray(std::string_view key, int depth, GgufValue* out) {
    uint32_t raw_elem = 0;
    VALET_RETURN_IF_ERROR(ReadPod(&raw_elem, "array element type"));
    if (!IsKnownValueType(raw_elem)) {
      return Fail(StatusCode::kCorrupt, "metadata key " + Quoted(key) +
                                            " has an array of unknown value type " +
                                            std::to_string(raw_elem));
    }
    out->type = GgufValueType::kArray;
    out->elem_type = static_cast<GgufValueType>(raw_elem);
    VALET_RETURN_IF_ERROR(ReadPod(&out->count, "array length"));
    VALET_RETURN_IF_ERROR(CheckCountFits(out->count, MinElementSize(out->elem_type),
                                         "metadata key " + Quoted(key) + ": array length"));
    const size_t n = static_cast<size_t>(out->count);
    switch (out->elem_type) {
      case GgufValueType::kString:
        out->strings.resize(n);
        for (size_t i = 0; i < n; ++i) {
          VALET_RETURN_IF_ERROR(ReadString(&out->strings[i], "metadata string"));
        }
        return Status::Ok();
      case GgufValueType::kArray:
        if (depth >= kMaxArrayDepth) {
          return Fail(StatusCode::kCorrupt, "metadata key " + Quoted(key) +
                                                " nests arrays deeper than " +
                                                std::to_string(kMaxArrayDepth) + " levels");
        }
        out->items.resize(n);
        for (size_t i = 0; i < n; ++i) {
          VALET_RETURN_IF_ERROR(ReadArray(key, depth + 1, &out->items[i]));
        }
        return Status::Ok();
      default:
        // CheckCountFits bounded n * element size by the bytes left.
        return ReadBytes(n * GgufScalarSize(out->elem_type), &out->raw, "array data");
    }
  }

  Status IndexMetadata() {
    auto& idx = f_.metadata_by_key_;
    idx.resize(f_.metadata_.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>(i);
    const auto& md = f_.metadata_;
    // Ties in file order (std::stable_sort's order, without its temporary
    // buffer, which libstdc++ 12 takes from a deprecated function).
    std::sort(idx.begin(), idx.end(),
              [&](uint32_t a, uint32_t b) { return std::tie(md[a].key, a) < std::tie(md[b].key, b); });
    for (size_t i = 1; i < idx.size(); ++i) {
      if (md[idx[i - 1]].key == md[idx[i]].key) {
        return Fail(StatusCode::kCorrupt, "duplicate metadata key " + Quoted(md[idx[i]].key));
      }
    }
    return Status::Ok();
  }

  Status ResolveAlignment() {
    const GgufValue* v = f_.Find("general.alignment");
    if (v == nullptr) return Status::Ok();
    const std::optional<uint64_t> a = v->AsUint();
    if (!a.has_value() || !IsPowerOfTwo(*a) || *a > (uint64_t{1} << 30)) {
      return Fail(StatusCode::kCorrupt,
                  "general.alignment must be a non-zero power of two integer, got " +
                      GgufValueToString(*v, 2));
    }
    f_.alignment_ = static_cast<size_t>(*a);
    return Status::Ok();
  }

  Status ReadTensorInfos(uint64_t n) {
    VALET_RETURN_IF_ERROR(CheckCountFits(n, kMinTensorInfoSize, "tensor count"));
    f_.tensors_.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < f_.tensors_.size(); ++i) {
      VALET_RETURN_IF_ERROR(ReadTensorInfo(&f_.tensors_[i]));
    }
    return Status::Ok();
  }

  Status TensorError(StatusCode code, const GgufTensorInfo& t, const std::string& msg) const {
    return Fail(code, "tensor " + Quoted(t.name) + ": " + msg);
  }

  Status ReadTensorInfo(GgufTensorInfo* t) {
    std::string_view name;
    VALET_RETURN_IF_ERROR(ReadString(&name, "tensor name"));
    t->name.assign(name);
    uint32_t n_dims = 0;
    VALET_RETURN_IF_ERROR(ReadPod(&n_dims, "tensor dimension count"));
    if (n_dims < 1 || n_dims > kMaxDims) {
      return TensorError(StatusCode::kCorrupt, *t,
                         "has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    }
    t->n_dims = static_cast<int>(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t raw = 0;
      VALET_RETURN_IF_ERROR(ReadPod(&raw, "tensor dimension"));
      if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return TensorError(StatusCode::kCorrupt, *t,
                           "dimension " + std::to_string(d) + " is negative");
      }
      t->ne[d] = static_cast<int64_t>(raw);
    }
    uint32_t raw_type = 0;
    VALET_RETURN_IF_ERROR(ReadPod(&raw_type, "tensor type"));
    VALET_RETURN_IF_ERROR(ReadPod(&t->offset, "tensor offset"));
    VALET_RETURN_IF_ERROR(CheckTensorType(raw_type, t));
    return ComputeTensorSize(t);
  }

  Status CheckTensorType(uint32_t raw_type, GgufTensorInfo* t) const {
    if (FindGgmlTypeTraits(raw_type) == nullptr) {
      // Small ids are plausibly ggml types valet does not know; large ones are garbage.
      const StatusCode code = raw_type < 64 ? StatusCode::kUnsupported : StatusCode::kCorrupt;
      return TensorError(code, *t, "unknown ggml type id " + std::to_string(raw_type));
    }
    t->type = static_cast<GgmlType>(raw_type);
    return Status::Ok();
  }

  Status ComputeTensorSize(GgufTensorInfo* t) const {
    const GgmlTypeTraits& traits = GetGgmlTypeTraits(t->type);
    int64_t elements = 1;
    for (int d = 0; d < kMaxDims; ++d) {
      if (__builtin_mul_overflow(elements, t->ne[d], &elements)) {
        return TensorError(StatusCode::kCorrupt, *t, "element count overflows 64 bits");
      }
    }
    if (t->ne[0] % traits.block_size != 0) {
      return TensorError(StatusCode::kCorrupt, *t,
                         "row length " + std::to_string(t->ne[0]) + " is not a multiple of the " +
                             traits.name + " block size " + std::to_string(traits.block_size));
    }
    uint64_t bytes = static_cast<uint64_t>(t->ne[0] / traits.block_size);
    bool overflow = __builtin_mul_overflow(bytes, uint64_t{traits.type_size}, &bytes);
    for (int d = 1; d < kMaxDims && !overflow; ++d) {
      overflow = __builtin_mul_overflow(bytes, static_cast<uint64_t>(t->ne[d]), &bytes);
    }
    if (overflow || bytes > std::numeric_limits<size_t>::max()) {
      return TensorError(StatusCode::kCorrupt, *t, "byte size overflows 64 bits");
    }
    t->nbytes = static_cast<size_t>(bytes);
    return Status::Ok();
  }

  Status IndexTensors() {
    auto& idx = f_.tensors_by_name_;
    const auto& ts = f_.tensors_;
    idx.resize(ts.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>(i);
    std::sort(idx.begin(), idx.end(),
              [&](uint32_t a, uint32_t b) { return std::tie(ts[a].name, a) < std::tie(ts[b].name, b); });
    for (size_t i = 1; i < idx.size(); ++i) {
      if (ts[idx[i - 1]].name == ts[idx[i]].name) {
        return Fail(StatusCode::kCorrupt, "duplicate tensor name " + Quoted(ts[idx[i]].name));
      }
    }
    return Status::Ok();
  }

  Status LocateTensorData() {
    const size_t align = f_.alignment_;
    size_t data_offset = 0;
    if (__builtin_add_overflow(pos_, align - 1, &data_offset)) {
      return Fail(StatusCode::kCorrupt, "data section offset overflows");
    }
    data_offset -= data_offset % align;
    f_.data_offset_ = data_offset;
    if (f_.tensors_.empty()) return Status::Ok();
    if (data_offset > size_) {
      return Fail(StatusCode::kCorrupt,
                  "tensor data section would start at offset " + std::to_string(data_offset) +
                      ", past the end of the file (size " + std::to_string(size_) + ")");
    }
    const uint64_t data_size = size_ - data_offset;
    for (GgufTensorInfo& t : f_.tensors_) {
      if (t.offset % align != 0) {
        return TensorError(StatusCode::kCorrupt, t,
                           "data offset " + std::to_string(t.offset) +
                               " is not a multiple of the alignment " + std::to_string(align));
      }
      uint64_t end = 0;
      if (__builtin_add_overflow(t.offset, uint64_t{t.nbytes}, &end) || end > data_size) {
        return TensorError(StatusCode::kCorrupt, t,
                           "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
                               ") lies outside the " + std::to_string(data_size) +
                               "-byte data section");
      }
      t.data = base_ + data_offset + t.offset;
    }
    return Status::Ok();
  }

  Status CheckOverlaps() const {
    const auto& ts = f_.tensors_;
    std::vector<uint32_t> by_offset(ts.size());
    for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = static_cast<uint32_t>(i);
    std::sort(by_offset.begin(), by_offset.end(), [&](uint32_t a, uint32_t b) {
      return ts[a].offset != ts[b].offset ? ts[a].offset < ts[b].offset
                                          : ts[a].nbytes < ts[b].nbytes;
    });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorInfo& prev = ts[by_offset[i - 1]];
      const GgufTensorInfo& cur = ts[by_offset[i]];
      // In range, so offset + nbytes cannot overflow here.
      if (prev.offset + prev.nbytes > cur.offset) {
        return TensorError(StatusCode::kCorrupt, cur, "data overlaps tensor " + Quoted(prev.name));
      }
    }
    return Status::Ok();
  }

  GgufFile& f_;
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
};

Result<GgufFile> GgufFile::Open(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(MappedBuffer bytes, MappedBuffer::MapFile(path));
  return Parse(std::move(bytes), path);
}

Result<GgufFile> GgufFile::FromBuffer(std::vector<uint8_t> bytes, std::string name) {
  return Parse(MappedBuffer::FromBytes(std::move(bytes)), std::move(name));
}

Result<GgufFile> GgufFile::Parse(MappedBuffer bytes, std::string path) {
  GgufFile file;
  file.path_ = std::move(path);
  file.bytes_ = std::move(bytes);
  VALET_RETURN_IF_ERROR(Parser(file).Run());
  return file;
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = std::lower_bound(metadata_by_key_.begin(), metadata_by_key_.end(), key,
                             [&](uint32_t i, std::string_view k) { return metadata_[i].key < k; });
  if (it == metadata_by_key_.end() || metadata_[*it].key != key) return nullptr;
  return &metadata_[*it].value;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = std::lower_bound(tensors_by_name_.begin(), tensors_by_name_.end(), name,
                             [&](uint32_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it == tensors_by_name_.end() || tensors_[*it].name != name) return nullptr;
  return &tensors_[*it];
}

Result<const GgufValue*> GgufFile::Require(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return NotFound(path_ + ": metadata key " + Quoted(key) + " not found");
  return v;
}

Status GgufFile::TypeMismatch(std::string_view key, const GgufValue& v, const char* wanted) const {
  std::string got = GgufValueTypeName(v.type);
  if (v.is_array()) got += std::string(" of ") + GgufValueTypeName(v.elem_type);
  return Corrupt(path_ + ": metadata key " + Quoted(key) + " is " + got + ", expected " + wanted);
}

Result<const GgufValue*> GgufFile::RequireArray(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (!v->is_array()) return TypeMismatch(key, *v, "an array");
  return v;
}

Result<uint64_t> GgufFile::GetUint(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (!GgufIsInteger(v->type)) return TypeMismatch(key, *v, "an integer");
  const std::optional<uint64_t> u = v->AsUint();
  if (!u.has_value()) {
    return Corrupt(path_ + ": metadata key " + Quoted(key) + " is negative (" +
                   GgufValueToString(*v) + "), expected a non-negative integer");
  }
  return *u;
}

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (!GgufIsInteger(v->type)) return TypeMismatch(key, *v, "an integer");
  const std::optional<int64_t> i = v->AsInt();
  if (!i.has_value()) {
    return Corrupt(path_ + ": metadata key " + Quoted(key) + " value " + GgufValueToString(*v) +
                   " does not fit in int64");
  }
  return *i;
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  const std::optional<double> d = v->AsDouble();
  if (!d.has_value()) return TypeMismatch(key, *v, "a number");
  return *d;
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kBool) return TypeMismatch(key, *v, "bool");
  return v->scalar_bits != 0;
}

Result<std::string_view> GgufFile::GetString(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kString) return TypeMismatch(key, *v, "string");
  return v->str;
}

Result<std::vector<std::string_view>> GgufFile::GetStringArray(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, RequireArray(key));
  if (v->elem_type != GgufValueType::kString) return TypeMismatch(key, *v, "array of string");
  return v->strings;
}

Result<std::vector<float>> GgufFile::GetFloatArray(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, RequireArray(key));
  if (!GgufIsFloat(v->elem_type) && !GgufIsInteger(v->elem_type)) {
    return TypeMismatch(key, *v, "array of numbers");
  }
  std::vector<float> out(static_cast<size_t>(v->count));
  if (v->elem_type == GgufValueType::kFloat32) {
    if (!out.empty()) std::memcpy(out.data(), v->raw, out.size() * sizeof(float));
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = ToFloat(*v->Element(i).AsDouble());
  return out;
}

Result<std::vector<int32_t>> GgufFile::GetIntArray(std::string_view key) const {
  VALET_ASSIGN_OR_RETURN(const GgufValue* v, RequireArray(key));
  if (!GgufIsInteger(v->elem_type)) return TypeMismatch(key, *v, "array of integers");
  std::vector<int32_t> out(static_cast<size_t>(v->count));
  for (size_t i = 0; i < out.size(); ++i) {
    const std::optional<int64_t> x = v->Element(i).AsInt();
    if (!x.has_value() || *x < std::numeric_limits<int32_t>::min() ||
        *x > std::numeric_limits<int32_t>::max()) {
      return Corrupt(path_ + ": metadata key " + Quoted(key) + " element " + std::to_string(i) +
                     " does not fit in int32");
    }
    out[i] = static_cast<int32_t>(*x);
  }
  return out;
}

std::string GgufFile::ValueToString(const GgufValue& v, size_t max_items) {
  return GgufValueToString(v, max_items);
}

}  // namespace valet
