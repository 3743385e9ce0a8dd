// Decides when generation stops (EOS token, token budget, stop strings) and
// how much of the streamed text may be shown so far. Text that could still
// turn into a stop string, and an unfinished UTF-8 sequence, are held back
// until resolved; a matched stop string is never emitted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "valet/sampling.h"
#include "valet/status.h"

namespace valet {

struct StopOptions {
  std::vector<int32_t> eos_token_ids;
  int32_t max_tokens = 0;  // tokens fed (EOS included) before stopping; 0: no limit
  std::vector<std::string> stop_strings;  // non-empty, matched on raw bytes
};

struct StopDecision {
  std::string text;  // safe to show now, in order after earlier decisions' text
  StopReason reason = StopReason::kNone;

  bool stopped() const { return reason != StopReason::kNone; }
};

// A value type: copying it snapshots a paused sequence's stream position.
class StopChecker {
 public:
  // InvalidArgument on an empty stop string or negative max_tokens.
  static Result<StopChecker> Create(StopOptions options);

  // Feeds one generated token and its detokenized bytes. An EOS token's piece
  // is not text and is dropped. On a stop, text holds everything left to show
  // (held-back bytes included, except a matched stop string and what follows
  // it). After a stop every call returns empty text and the same reason.
  StopDecision Feed(int32_t token, std::string_view piece);

  // Releases held-back bytes when generation ends for an outside reason
  // (cancel, context full). Feeding after a Flush loses stop-string matches
  // that would have spanned it.
  std::string Flush();

  int32_t tokens_fed() const { return tokens_fed_; }
  StopReason reason() const { return reason_; }
  // Bytes currently held back.
  size_t pending_size() const { return pending_.size(); }

 private:
  explicit StopChecker(StopOptions options);

  bool IsEos(int32_t token) const;
  StopDecision Finish(StopReason reason);
  // Returns how many leading bytes of pending_ can be shown now.
  size_t SafePrefixLength() const;
  size_t StopPrefixSuffixLength() const;

  StopOptions options_;
  std::string pending_;  // fed but not yet shown
  int32_t tokens_fed_ = 0;
  StopReason reason_ = StopReason::kNone;
};

}  // namespace valet
