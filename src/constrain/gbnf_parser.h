// Reads llama.cpp's GBNF grammar syntax into a Grammar:
//   name ::= alternatives          (the grammar starts at `root`)
//   a b  a | b  ( ... )  x*  x+  x?  x{m}  x{m,}  x{m,n}
//   "literal" with \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH escapes
//   [a-z0-9_]  [^"\\]  .  and # comments to the end of the line.
// As in llama.cpp, a rule ends at a newline outside parentheses, and a
// newline may follow `::=`, `|` or `(`.
//
// Grammar text is untrusted (a request carries it): every limit below is
// checked before the work it bounds, parsing never recurses on the C++ stack
// (nesting lives on an explicit stack), and each limit's error names it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "constrain/grammar.h"
#include "valet/status.h"

namespace valet {

struct GrammarLimits {
  size_t max_text_bytes = 256 * 1024;
  uint32_t max_rules = 4096;          // named and generated (groups, repetitions, classes)
  uint32_t max_symbols = 1u << 18;    // terminals and references, after repetition is expanded
  uint32_t max_nesting = 64;          // parentheses
  uint32_t max_repetition = 1000;     // m and n of x{m,n}
};

Result<Grammar> ParseGbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace valet
