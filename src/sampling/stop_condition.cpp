#include "sampling/stop_condition.h"

#include <algorithm>
#include <utility>

namespace valet {
namespace {

// Bytes a UTF-8 sequence starting with `lead` occupies; 0 when `lead` cannot
// start a multi-byte sequence (ASCII, a continuation byte, or invalid).
size_t Utf8SequenceLength(unsigned char lead) {
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

// Shortens text[0, n) so it does not end inside a multi-byte sequence that
// later bytes could still complete. Malformed bytes are let through: waiting
// would never make them valid.
size_t TrimIncompleteUtf8(std::string_view text, size_t n) {
  size_t i = n;
  size_t continuation = 0;
  while (i > 0 && continuation < 3 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++continuation;
  }
  if (i == 0) return n;
  const size_t need = Utf8SequenceLength(static_cast<unsigned char>(text[i - 1]));
  if (need != 0 && continuation + 1 < need) return i - 1;
  return n;
}

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone: return "none";
    case StopReason::kEos: return "eos";
    case StopReason::kMaxTokens: return "max_tokens";
    case StopReason::kStopString: return "stop_string";
  }
  return "unknown";
}

Result<StopChecker> StopChecker::Create(StopOptions options) {
  if (options.max_tokens < 0) return InvalidArgument("max_tokens must be >= 0 (0: no limit)");
  for (const std::string& s : options.stop_strings) {
    if (s.empty()) return InvalidArgument("stop strings must not be empty");
  }
  return StopChecker(std::move(options));
}

StopChecker::StopChecker(StopOptions options) : options_(std::move(options)) {}

bool StopChecker::IsEos(int32_t token) const {
  const auto& ids = options_.eos_token_ids;
  return std::find(ids.begin(), ids.end(), token) != ids.end();
}

StopDecision StopChecker::Feed(int32_t token, std::string_view piece) {
  if (reason_ != StopReason::kNone) return {std::string(), reason_};
  ++tokens_fed_;
  if (IsEos(token)) return Finish(StopReason::kEos);
  pending_.append(piece);

  size_t match = std::string::npos;
  for (const std::string& s : options_.stop_strings) match = std::min(match, pending_.find(s));
  if (match != std::string::npos) {
    pending_.resize(match);
    return Finish(StopReason::kStopString);
  }
  if (options_.max_tokens > 0 && tokens_fed_ >= options_.max_tokens) {
    return Finish(StopReason::kMaxTokens);
  }
  const size_t n = SafePrefixLength();
  StopDecision decision{pending_.substr(0, n), StopReason::kNone};
  pending_.erase(0, n);
  return decision;
}

std::string StopChecker::Flush() { return std::exchange(pending_, std::string()); }

StopDecision StopChecker::Finish(StopReason reason) {
  reason_ = reason;
  return {Flush(), reason};
}

size_t StopChecker::SafePrefixLength() const {
  const size_t n = pending_.size() - StopPrefixSuffixLength();
  return TrimIncompleteUtf8(pending_, n);
}

// Longest tail of pending_ that is a proper prefix of some stop string. A stop
// string that appears later must start inside this tail, since no complete
// match exists yet.
size_t StopChecker::StopPrefixSuffixLength() const {
  const std::string_view text = pending_;
  size_t longest = 0;
  for (const std::string& s : options_.stop_strings) {
    const size_t max_len = std::min(s.size() - 1, text.size());
    for (size_t len = max_len; len > longest; --len) {
      if (text.ends_with(std::string_view(s).substr(0, len))) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace valet
