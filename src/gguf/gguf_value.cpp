#include "gguf/gguf_value.h"

#include <cassert>
#include <cstdio>
#include <cstring>
#include <limits>

namespace valet {
namespace {

template <typename T>
T LoadLe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // x86-64 is little-endian, like GGUF
  return v;
}

std::string FormatDouble(double d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", d);
  return buf;
}

void AppendQuoted(std::string& out, std::string_view s, size_t max_len) {
  out += '"';
  out += GgufPrintable(s, max_len);
  out += '"';
}

std::string ScalarToString(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kBool:
      return v.scalar_bits != 0 ? "true" : "false";
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64:
      return FormatDouble(*v.AsDouble());
    case GgufValueType::kInt8:
    case GgufValueType::kInt16:
    case GgufValueType::kInt32:
    case GgufValueType::kInt64:
      return std::to_string(static_cast<int64_t>(v.scalar_bits));
    default:
      return std::to_string(v.scalar_bits);
  }
}

void AppendValue(std::string& out, const GgufValue& v, size_t max_items);

void AppendArray(std::string& out, const GgufValue& v, size_t max_items) {
  out += '[';
  const uint64_t shown = v.count < max_items ? v.count : max_items;
  for (uint64_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    if (v.elem_type == GgufValueType::kArray) {
      AppendValue(out, v.items[i], max_items);
    } else {
      AppendValue(out, v.Element(i), max_items);
    }
  }
  if (shown < v.count) {
    out += shown > 0 ? ", ... (" : "... (";
    out += std::to_string(v.count) + " total)";
  }
  out += ']';
}

void AppendValue(std::string& out, const GgufValue& v, size_t max_items) {
  if (v.type == GgufValueType::kString) {
    AppendQuoted(out, v.str, 120);
  } else if (v.type == GgufValueType::kArray) {
    AppendArray(out, v, max_items);
  } else {
    out += ScalarToString(v);
  }
}

}  // namespace

const char* GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
      return "uint8";
    case GgufValueType::kInt8:
      return "int8";
    case GgufValueType::kUint16:
      return "uint16";
    case GgufValueType::kInt16:
      return "int16";
    case GgufValueType::kUint32:
      return "uint32";
    case GgufValueType::kInt32:
      return "int32";
    case GgufValueType::kFloat32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "uint64";
    case GgufValueType::kInt64:
      return "int64";
    case GgufValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

size_t GgufScalarSize(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

bool GgufIsInteger(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool GgufIsFloat(GgufValueType type) {
  return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64;
}

static bool IsSigned(GgufValueType type) {
  return type == GgufValueType::kInt8 || type == GgufValueType::kInt16 ||
         type == GgufValueType::kInt32 || type == GgufValueType::kInt64;
}

std::optional<uint64_t> GgufValue::AsUint() const {
  if (!GgufIsInteger(type)) return std::nullopt;
  if (IsSigned(type) && static_cast<int64_t>(scalar_bits) < 0) return std::nullopt;
  return scalar_bits;
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (!GgufIsInteger(type)) return std::nullopt;
  if (!IsSigned(type) && scalar_bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  return static_cast<int64_t>(scalar_bits);
}

std::optional<double> GgufValue::AsDouble() const {
  if (type == GgufValueType::kFloat32) {
    float f;
    const uint32_t bits = static_cast<uint32_t>(scalar_bits);
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  if (type == GgufValueType::kFloat64) {
    double d;
    std::memcpy(&d, &scalar_bits, sizeof(d));
    return d;
  }
  if (!GgufIsInteger(type)) return std::nullopt;
  if (IsSigned(type)) return static_cast<double>(static_cast<int64_t>(scalar_bits));
  return static_cast<double>(scalar_bits);
}

GgufValue GgufValue::Element(uint64_t i) const {
  assert(is_array() && i < count);
  if (elem_type == GgufValueType::kArray) return items[i];
  if (elem_type == GgufValueType::kString) {
    GgufValue v;
    v.type = GgufValueType::kString;
    v.str = strings[i];
    return v;
  }
  return FromScalarBytes(elem_type, raw + i * GgufScalarSize(elem_type));
}

GgufValue GgufValue::FromScalarBytes(GgufValueType type, const uint8_t* p) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufValueType::kUint8:
      v.scalar_bits = LoadLe<uint8_t>(p);
      break;
    case GgufValueType::kBool:
      v.scalar_bits = LoadLe<uint8_t>(p);
      break;
    case GgufValueType::kInt8:
      v.scalar_bits = static_cast<uint64_t>(int64_t{LoadLe<int8_t>(p)});
      break;
    case GgufValueType::kUint16:
      v.scalar_bits = LoadLe<uint16_t>(p);
      break;
    case GgufValueType::kInt16:
      v.scalar_bits = static_cast<uint64_t>(int64_t{LoadLe<int16_t>(p)});
      break;
    case GgufValueType::kUint32:
      v.scalar_bits = LoadLe<uint32_t>(p);
      break;
    case GgufValueType::kFloat32:
      v.scalar_bits = LoadLe<uint32_t>(p);
      break;
    case GgufValueType::kInt32:
      v.scalar_bits = static_cast<uint64_t>(int64_t{LoadLe<int32_t>(p)});
      break;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      v.scalar_bits = LoadLe<uint64_t>(p);
      break;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      assert(false && "FromScalarBytes on a non-scalar type");
      break;
  }
  return v;
}

std::string GgufValueToString(const GgufValue& value, size_t max_items) {
  std::string out;
  AppendValue(out, value, max_items);
  return out;
}

std::string GgufPrintable(std::string_view text, size_t max_len) {
  std::string out;
  const size_t n = text.size() < max_len ? text.size() : max_len;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (n < text.size()) out += "...";
  return out;
}

}  // namespace valet
