// A grammar that starts at a trigger (a tool call under "auto": the answer is
// free text until the family's call marker, the call grammar from there on).
// Until the trigger appears the output is unconstrained but for the tokens
// that would complete the trigger with bytes after it that the grammar
// refuses; the trigger is found across tokens by a KMP automaton, so a
// marker that is one token (Qwen's <tool_call>) and a marker spelled in
// pieces both wake the grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "valet/status.h"

namespace valet {

struct CompiledGrammar;

inline constexpr size_t kMaxTriggerBytes = 64;

class GrammarTrigger {
 public:
  // For `compiled`'s grammar (which begins right after the trigger) and its
  // token trie. InvalidArgument for an empty or longer than kMaxTriggerBytes
  // trigger; without a trie, no refused tokens are listed.
  static Result<std::shared_ptr<const GrammarTrigger>> Build(std::string text,
                                                             std::shared_ptr<const CompiledGrammar> compiled);

  // How much of the trigger the text so far ends with (0 .. size()-1).
  using State = uint32_t;
  struct Scan {
    State state = 0;       // after the bytes, when the trigger is not completed
    bool completed = false;
    size_t end = 0;        // completed: the bytes up to here hold the trigger; the rest is the grammar's
  };
  Scan Run(State state, std::string_view bytes) const;

  // Tokens that complete the trigger from `state` with bytes the grammar refuses.
  std::span<const int32_t> refused(State state) const { return refused_[state]; }
  const std::string& text() const { return text_; }

 private:
  GrammarTrigger() = default;

  std::string text_;
  std::vector<uint8_t> next_;                  // [state * 256 + byte]: the state after the byte (size(): completed)
  std::vector<std::vector<int32_t>> refused_;  // per state
};

}  // namespace valet
