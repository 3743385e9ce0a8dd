#include "server/client_text.h"

namespace valet {

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // A character is at most 4 bytes: three steps back reach its first byte.
  for (int back = 0; back < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++back) --cut;
  return text.substr(0, cut);
}

std::string QuoteClientText(std::string_view text) {
  // Appended piece by piece (g++ 12 misreads `"'" + std::string(...)` as an
  // overlapping copy under -Werror=restrict).
  std::string out;
  out.reserve(kMaxQuotedBytes + 32);
  out.push_back('\'');
  out.append(Utf8Prefix(text, kMaxQuotedBytes));
  if (text.size() <= kMaxQuotedBytes) {
    out.push_back('\'');
    return out;
  }
  out.append("…' (");
  out.append(std::to_string(text.size()));
  out.append(" bytes)");
  return out;
}

}  // namespace valet
