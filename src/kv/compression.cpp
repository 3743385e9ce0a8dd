#include "kv/compression.h"

#include <cassert>
#include <cstring>
#include <string>

#if VALET_HAVE_LZ4
#include <lz4.h>
#endif
#if VALET_HAVE_ZSTD
#include <zstd.h>
#endif

namespace valet {

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kZstd: return "zstd";
    case Compression::kLz4: return "lz4";
  }
  return "unknown";
}

Result<Compression> ParseCompression(std::string_view name) {
  for (Compression c : {Compression::kNone, Compression::kZstd, Compression::kLz4}) {
    if (name == CompressionName(c)) return c;
  }
  return InvalidArgument("unknown compression '" + std::string(name) + "' (none, zstd, lz4)");
}

Status CheckCompressionAvailable(Compression c) {
  const bool available = c == Compression::kNone || (c == Compression::kZstd && VALET_HAVE_ZSTD) ||
                         (c == Compression::kLz4 && VALET_HAVE_LZ4);
  if (available) return Status::Ok();
  return Unsupported(std::string("this valet was built without ") + CompressionName(c));
}

int ZstdMaxLevel() {
#if VALET_HAVE_ZSTD
  return ZSTD_maxCLevel();
#else
  return 0;
#endif
}

size_t CompressBound(Compression c, size_t raw_size) {
  switch (c) {
    case Compression::kNone: return raw_size;
#if VALET_HAVE_ZSTD
    case Compression::kZstd: return ZSTD_compressBound(raw_size);
#endif
#if VALET_HAVE_LZ4
    case Compression::kLz4:
      assert(raw_size <= static_cast<size_t>(LZ4_MAX_INPUT_SIZE) && "lz4 frame too large");
      return static_cast<size_t>(LZ4_compressBound(static_cast<int>(raw_size)));
#endif
    default: break;
  }
  assert(false && "codec not built in (checked when the store was created)");
  return 0;
}

size_t Compress(Compression c, [[maybe_unused]] int zstd_level, std::span<const uint8_t> raw, std::span<uint8_t> dst) {
  switch (c) {
    case Compression::kNone:
      if (!raw.empty()) std::memcpy(dst.data(), raw.data(), raw.size());
      return raw.size();
#if VALET_HAVE_ZSTD
    case Compression::kZstd: {
      const size_t n = ZSTD_compress(dst.data(), dst.size(), raw.data(), raw.size(), zstd_level);
      assert(!ZSTD_isError(n) && "zstd cannot fail with a bound-sized buffer");
      return n;
    }
#endif
#if VALET_HAVE_LZ4
    case Compression::kLz4:
      return static_cast<size_t>(LZ4_compress_default(reinterpret_cast<const char*>(raw.data()),
                                                      reinterpret_cast<char*>(dst.data()),
                                                      static_cast<int>(raw.size()), static_cast<int>(dst.size())));
#endif
    default: break;
  }
  assert(false && "codec not built in (checked when the store was created)");
  return 0;
}

Status Decompress(Compression c, std::span<const uint8_t> payload, std::span<uint8_t> raw) {
  switch (c) {
    case Compression::kNone:
      if (payload.size() != raw.size()) return Corrupt("snapshot frame sizes disagree");
      if (!raw.empty()) std::memcpy(raw.data(), payload.data(), raw.size());
      return Status::Ok();
    case Compression::kZstd: {
#if VALET_HAVE_ZSTD
      const size_t n = ZSTD_decompress(raw.data(), raw.size(), payload.data(), payload.size());
      if (ZSTD_isError(n) || n != raw.size()) return Corrupt("snapshot frame does not decompress (zstd)");
      return Status::Ok();
#else
      return CheckCompressionAvailable(c);
#endif
    }
    case Compression::kLz4: {
#if VALET_HAVE_LZ4
      if (raw.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) return Corrupt("snapshot frame too large for lz4");
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(payload.data()),
                                        reinterpret_cast<char*>(raw.data()), static_cast<int>(payload.size()),
                                        static_cast<int>(raw.size()));
      if (n < 0 || static_cast<size_t>(n) != raw.size()) return Corrupt("snapshot frame does not decompress (lz4)");
      return Status::Ok();
#else
      return CheckCompressionAvailable(c);
#endif
    }
  }
  return Corrupt("snapshot frame has an unknown codec " + std::to_string(static_cast<int>(c)));
}

}  // namespace valet
