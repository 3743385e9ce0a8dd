// What each grammar position accepts on its own, precomputed once per
// (grammar, vocabulary) so the next-token mask need not walk the whole trie
// (the idea of XGrammar's adaptive token mask cache, over valet's stacks).
//
// A matcher stack is its top (a terminal position) and a chain of return
// frames. Part of that chain is forced by the grammar: a rule referenced from
// one place only always returns there (a string's character rule returns into
// the string's loop, which returns before the closing quote). The rest is the
// context, unknown here, stood in for by an escape frame. Every text token is
// run from the position over that chain and classified:
//   - accepted: some path consumes all its bytes without escaping, and no
//     path escapes; true in every context that has the forced chain (a path
//     may end where the chain returns into the context: the token is then
//     accepted if the context goes on from there, which the mask checks);
//   - rejected: every path dies without escaping; false in every context;
//   - context-dependent: some path went on into the context; the mask
//     checks these against the matcher's real stacks.
// Inside a JSON string nearly every token is accepted or rejected; only those
// that close the string and go on depend on what follows it.
//
// A rule repeated by a counted repetition (x{m,n}) returns into the loop's
// frame, whose count is only known at mask time. Its positions' entries run
// the loop without bounds, counting the iterations each token goes through:
// a token needing k iterations (the one running included) fits while the real
// count c leaves room, c + k - 1 <= n. A token may also leave the loop (after
// enough iterations), and go on to the end of the loop's rule when only one
// loop repeats the rule; a byte that may come after that depends on what
// follows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "constrain/grammar.h"
#include "constrain/grammar_stacks.h"
#include "constrain/token_trie.h"

namespace valet {

struct CompiledGrammar;

// Bounds on the precomputation (grammars are untrusted). Positions past a
// bound get no entry; a mask at a state on such a position walks the trie.
struct PositionMaskLimits {
  // Work over all positions: trie nodes visited, stacks stepped and symbols
  // expanded, tokens marked, bitset words passed (each a few ns: 2^23 is
  // about 0.1 s on the benchmark's machine).
  uint64_t max_steps = uint64_t{1} << 23;
  size_t max_bytes = size_t{4} << 20;  // the entries' memory
};

struct PositionMask {
  std::vector<uint32_t> chain;  // forced return positions above the position, innermost first
  bool rooted = false;          // the chain ends at the root: no context, no escape frame
  bool returns = false;         // an accepted token may end where the chain returns into the context
  bool counted = false;         // above the chain: a counted repetition's frame of counted_rule
  uint32_t counted_rule = 0;
  bool exit_goes_on = false;    // counted: tokens may go on past the loop to its rule's end
  // The most the runs needed, in expansions per byte, stacks after a byte,
  // and frame depth over the escape frame: a real context adds to these, and
  // the entry holds only while the sums stay within the matcher's limits.
  uint32_t peak_expansions = 0;
  uint32_t peak_stacks = 0;
  uint32_t peak_depth = 0;
  // The accepted tokens: a bitset over the vocabulary (TokenMask's layout),
  // or, when smaller, their ids (accepted_words then empty).
  std::vector<uint64_t> accepted_words;
  std::vector<int32_t> accepted_ids;
  // Context-dependent tokens: trie nodes, in preorder, each standing for its
  // whole subtree (a path escaped at its byte).
  std::vector<uint32_t> dependent;
  // Their tokens as a bitset when there are many (clearing them word by word
  // beats visiting each), else empty.
  std::vector<uint64_t> dependent_words;
  // counted: the tokens that need at least two iterations, fewest first;
  // counted_ends[i] is how many need at most i + 2; all of them as a bitset
  // when they are many (else empty).
  std::vector<int32_t> counted_ids;
  std::vector<uint32_t> counted_ends;
  std::vector<uint64_t> counted_words;

  size_t memory_bytes() const;
};

class PositionMasks {
 public:
  static std::shared_ptr<const PositionMasks> Build(const Grammar& g, const TokenTrie& trie,
                                                    const MatcherLimits& limits,
                                                    const PositionMaskLimits& bounds = {});

  // The entry for a terminal position, or null (none was computed).
  const PositionMask* Find(uint32_t pos) const {
    return pos < index_.size() && index_[pos] >= 0 ? &masks_[static_cast<size_t>(index_[pos])]
                                                   : nullptr;
  }
  size_t positions() const { return positions_; }  // terminal positions in the grammar
  size_t entries() const { return masks_.size(); }
  size_t memory_bytes() const { return memory_bytes_; }
  uint64_t steps() const { return steps_; }  // work spent building them (PositionMaskLimits)

 private:
  std::vector<int32_t> index_;  // by symbol: entry in masks_, or -1
  std::vector<PositionMask> masks_;
  size_t positions_ = 0;
  size_t memory_bytes_ = 0;
  uint64_t steps_ = 0;
};

// Sets compiled.positions for its grammar and vocabulary (nothing without a
// vocabulary).
void PrecomputePositionMasks(CompiledGrammar& compiled, const PositionMaskLimits& bounds = {});

}  // namespace valet
