// Joins a token stream's bytes into chunks that never end inside a UTF-8
// character, so every streamed chunk is valid text on its own (a byte-level
// tokenizer may emit one character over several tokens).
#pragma once

#include <string>
#include <string_view>

namespace valet {

class Utf8Assembler {
 public:
  // Returns the bytes that may be sent now: everything fed so far except a
  // trailing, still incomplete multi-byte sequence. Bytes that can never
  // become a valid character (a stray continuation byte, an invalid lead) are
  // passed through at once rather than held: holding them would stall the
  // stream, and the JSON encoder replaces them.
  std::string Push(std::string_view bytes);
  // Everything still held (an incomplete sequence at the end of generation).
  std::string Flush();
  size_t held() const { return held_.size(); }

 private:
  std::string held_;
};

// The length of the longest prefix of `bytes` that does not end inside a
// possibly-valid multi-byte sequence.
size_t CompleteUtf8Prefix(std::string_view bytes);

}  // namespace valet
