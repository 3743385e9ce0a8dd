#include "server/utf8_assembler.h"

#include <cstdint>

namespace valet {

namespace {

// The length of a sequence starting with `lead`; 0 for a byte that cannot start one.
size_t SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

size_t CompleteUtf8Prefix(std::string_view bytes) {
  // Only the last three bytes can belong to an unfinished sequence.
  const size_t n = bytes.size();
  const size_t first = n > 3 ? n - 3 : 0;
  for (size_t i = n; i-- > first;) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (IsContinuation(b)) continue;
    const size_t len = SequenceLength(b);
    // An ASCII byte, an invalid lead or a finished sequence: nothing to hold.
    if (len <= 1 || i + len <= n) return n;
    for (size_t j = i + 1; j < n; ++j) {
      if (!IsContinuation(static_cast<uint8_t>(bytes[j]))) return n;
    }
    return i;
  }
  return n;
}

std::string Utf8Assembler::Push(std::string_view bytes) {
  held_.append(bytes);
  const size_t ready = CompleteUtf8Prefix(held_);
  std::string out = held_.substr(0, ready);
  held_.erase(0, ready);
  return out;
}

std::string Utf8Assembler::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace valet
