#include "server/tool_call_stream.h"

#include <algorithm>

namespace valet {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

// Where the text that may begin a call starts, for families that mark calls.
std::string_view Marker(const ToolCallSyntax& s) {
  std::string_view m = !s.prefix.empty() ? s.prefix : s.call_prefix;
  while (!m.empty() && (m.back() == '[' || kSpace.find(m.back()) != std::string_view::npos)) m.remove_suffix(1);
  return m;
}

}  // namespace

std::string ToolCallStream::Push(std::string_view piece) {
  text_ += piece;
  if (held_) return {};
  const std::string_view marker = Marker(syntax_);
  size_t safe = text_.size();
  if (marker.empty()) {
    // A bare-object family: the answer is a call only if it opens with '{'.
    const size_t first = text_.find_first_not_of(kSpace);
    if (first == std::string::npos) return {};
    if (text_[first] == '{') {
      held_ = true;
      return {};  // nothing was shown before: the leading whitespace is the call's
    }
  } else if (const size_t at = text_.find(marker); at != std::string::npos) {
    held_ = true;
    safe = at;
  } else {
    // Hold back a tail that may be the marker's first bytes.
    for (size_t n = std::min(marker.size() - 1, text_.size()); n > 0; --n) {
      if (std::string_view(text_).substr(text_.size() - n) == marker.substr(0, n)) {
        safe = text_.size() - n;
        break;
      }
    }
  }
  if (safe <= shown_) return {};
  std::string out = text_.substr(shown_, safe - shown_);
  shown_ = safe;
  return out;
}

}  // namespace valet
