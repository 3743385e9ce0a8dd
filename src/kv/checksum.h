// A fast 64-bit checksum for snapshot frames. Not cryptographic: it guards
// against torn writes, truncation and bit rot, where every changed byte must
// change the result with overwhelming probability and speed matters (restores
// check hundreds of MB/s).
#pragma once

#include <cstdint>
#include <span>

namespace valet {

uint64_t Checksum64(std::span<const uint8_t> data);

}  // namespace valet
