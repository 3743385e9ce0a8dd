// The snapshot codecs. zstd and lz4 are optional libraries: an app's build
// (Android's NDK has neither) may leave them out, and then choosing that
// codec is refused up front and a frame that needs it is reported as
// Unsupported, never misread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "valet/status.h"

namespace valet {

enum class Compression { kNone, kZstd, kLz4 };

const char* CompressionName(Compression c);
// "none", "zstd", "lz4".
Result<Compression> ParseCompression(std::string_view name);
// Unsupported when this build lacks the codec's library.
Status CheckCompressionAvailable(Compression c);
int ZstdMaxLevel();  // 0 without zstd

// Bytes Compress may write for `raw_size` input bytes.
size_t CompressBound(Compression c, size_t raw_size);
// Compresses `raw` into `dst` (CompressBound bytes) and returns the bytes
// written. The codec must be available; lz4 takes at most LZ4_MAX_INPUT_SIZE.
size_t Compress(Compression c, int zstd_level, std::span<const uint8_t> raw, std::span<uint8_t> dst);
// Fills `raw` (its size is the expected one) from `payload`; Corrupt when the
// payload does not decompress to exactly that many bytes.
Status Decompress(Compression c, std::span<const uint8_t> payload, std::span<uint8_t> raw);

}  // namespace valet
