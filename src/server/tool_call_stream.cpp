#include "server/tool_call_stream.h"

#include <algorithm>

namespace valet {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

}  // namespace

std::string ToolCallStream::Push(std::string_view piece) {
  text_ += piece;
  if (held_) return {};
  const std::string_view marker = ToolCallMarker(syntax_);
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
