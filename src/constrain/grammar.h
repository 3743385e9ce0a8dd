// A compiled grammar as data: rules are alternatives of sequences of symbols,
// a symbol being a terminal (one byte out of a set) or a reference to a rule.
// Everything is over bytes, not code points: a character class is expanded
// into the UTF-8 byte sequences of its code points when it is parsed, so the
// matcher and the token mask never decode UTF-8 and a token that ends in the
// middle of a character is judged on exactly the bytes it has.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "valet/status.h"

namespace valet {

// 256 bits: which bytes a terminal accepts.
struct ByteSet {
  std::array<uint64_t, 4> bits{};

  bool Has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1u; }
  void Add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  void Merge(const ByteSet& other) {
    for (size_t i = 0; i < bits.size(); ++i) bits[i] |= other.bits[i];
  }
  bool SubsetOf(const ByteSet& other) const {
    for (size_t i = 0; i < bits.size(); ++i) {
      if ((bits[i] & ~other.bits[i]) != 0) return false;
    }
    return true;
  }
  bool operator==(const ByteSet&) const = default;
  auto operator<=>(const ByteSet&) const = default;
};

enum class SymbolKind : uint8_t {
  kEnd,     // ends an alternative
  kBytes,   // one byte out of byte_sets[value]
  kRule,    // the rule numbered value
  kRepeat,  // repeats[value]: its rule, matched min to max times
};

// x{m,n} as one looping position with a count on the stack rather than n
// nested copies: the element rule then has one caller, whose return the
// precomputed position masks can fix, and a long bounded string costs no
// more grammar than a short one (XGrammar and llguidance count too).
struct GrammarRepeat {
  uint32_t rule = 0;
  uint32_t min = 0;
  uint32_t max = 0;  // >= 1 and >= min
};

struct GrammarSymbol {
  SymbolKind kind = SymbolKind::kEnd;
  uint32_t value = 0;
};

// The rule a kRule or kRepeat symbol enters.
inline uint32_t CalleeOf(const std::vector<GrammarRepeat>& repeats, GrammarSymbol sym) {
  return sym.kind == SymbolKind::kRepeat ? repeats[sym.value].rule : sym.value;
}

// The flat form the matcher walks: a position in a sequence is one uint32_t
// index into `symbols`, which is what keeps matcher stacks small.
struct Grammar {
  std::vector<GrammarSymbol> symbols;   // every alternative, each ending with kEnd
  std::vector<uint32_t> alt_starts;     // index of each alternative's first symbol
  std::vector<uint32_t> rule_alts;      // rule r owns alt_starts[rule_alts[r] .. rule_alts[r + 1])
  std::vector<std::string> rule_names;  // for errors; generated rules are named "<rule>_<n>"
  std::vector<ByteSet> byte_sets;
  std::vector<GrammarRepeat> repeats;
  std::vector<bool> nullable;           // by rule: it can match the empty string
  uint32_t root = 0;

  uint32_t rule_count() const { return static_cast<uint32_t>(rule_names.size()); }
};

// A grammar under construction: the parser's output before it is flattened.
struct GrammarRuleDef {
  std::string name;
  bool defined = false;
  std::vector<std::vector<GrammarSymbol>> alternatives;  // kBytes, kRule and kRepeat
};

// Flattens `rules` into a Grammar rooted at `root` after refusing undefined
// rules and left recursion (direct, indirect or through rules that can match
// nothing), which a top-down matcher would expand forever.
Result<Grammar> BuildGrammar(std::vector<GrammarRuleDef> rules, std::vector<ByteSet> byte_sets,
                             std::vector<GrammarRepeat> repeats, uint32_t root);

}  // namespace valet
