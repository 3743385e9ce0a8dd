// A range of bytes in a UTF-8 text. The chat renderer reports where message
// content lies in a rendered prompt with these, and tokenizers take them to
// keep that content's special-token texts literal.
#pragma once

#include <cstddef>

namespace valet {

struct ByteRange {
  size_t begin = 0;
  size_t length = 0;

  size_t end() const { return begin + length; }
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

}  // namespace valet
