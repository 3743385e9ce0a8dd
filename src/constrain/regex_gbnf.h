// Regular expressions as GBNF: the constraint form `regex` and JSON Schema's
// `pattern`. The subset (ECMAScript syntax, as JSON Schema specifies):
//   literals, `.`, classes `[a-z]` `[^...]`, `\d \w \s \D \W \S`,
//   escapes `\n \r \t \f \v \0 \xHH \uHHHH` and escaped punctuation,
//   groups `( )`, `(?: )`, `(?<name> )`, alternation `|`,
//   quantifiers `* + ? {m} {m,} {m,n}` (lazy forms allowed: same language),
//   `^` at the start and `$` at the end of a top-level alternative.
// Refused with the construct named: backreferences, lookaround, `\b \B`,
// flags, `\p{...}`, anchors elsewhere. A regular language needs no recursion:
// the translation is one left-to-right scan, nesting counted and bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/gbnf_builder.h"
#include "valet/status.h"

namespace valet {

enum class RegexText : uint8_t {
  kRaw,         // the characters are the output itself
  kJsonString,  // the characters are a JSON string's contents: emitted escaped
};

enum class RegexAnchoring : uint8_t {
  kWhole,   // the whole text matches (the `regex` constraint)
  kSearch,  // a match anywhere unless anchored (JSON Schema `pattern`)
};

struct RegexOptions {
  RegexText text = RegexText::kRaw;
  RegexAnchoring anchoring = RegexAnchoring::kWhole;
  size_t max_pattern_bytes = 4096;
  uint32_t max_nesting = 32;
  uint32_t max_repetition = 1000;
};

// A parenthesized GBNF expression for `pattern`; rules it needs are added to
// `builder`. Errors name the construct and its byte offset.
Result<std::string> RegexToGbnf(std::string_view pattern, const RegexOptions& options,
                                GbnfBuilder& builder);

// The characters of `ranges` (normalized) as a GBNF expression: a class, or
// in a JSON string the class of those that stand for themselves and the
// escapes (as JSON.stringify writes them) of `"`, `\` and control characters.
// InvalidArgument when the set is empty.
Result<std::string> CharSetGbnf(const std::vector<CodePointRange>& ranges, RegexText text,
                                GbnfBuilder& builder);

}  // namespace valet
