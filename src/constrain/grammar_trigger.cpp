#include "constrain/grammar_trigger.h"

#include <algorithm>

#include "constrain/grammar_matcher.h"

namespace valet {

Result<std::shared_ptr<const GrammarTrigger>> GrammarTrigger::Build(std::string text,
                                                                    std::shared_ptr<const CompiledGrammar> compiled) {
  if (text.empty() || text.size() > kMaxTriggerBytes) {
    return InvalidArgument("a grammar trigger is 1-" + std::to_string(kMaxTriggerBytes) + " bytes");
  }
  std::shared_ptr<GrammarTrigger> t(new GrammarTrigger());
  t->text_ = std::move(text);
  const std::string& m = t->text_;
  const size_t n = m.size();
  // The KMP automaton: from `k` bytes matched, the longest suffix of
  // m[0, k) + b that is a prefix of m. A mismatch at k behaves as at the
  // state m[1, k) leads to (`fallback`).
  t->next_.assign(n * 256, 0);
  const auto byte = [&m](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(m[i])); };
  t->next_[byte(0)] = 1;
  size_t fallback = 0;
  for (size_t k = 1; k < n; ++k) {
    std::copy_n(t->next_.begin() + static_cast<ptrdiff_t>(fallback * 256), 256,
                t->next_.begin() + static_cast<ptrdiff_t>(k * 256));
    t->next_[k * 256 + byte(k)] = static_cast<uint8_t>(k + 1);
    fallback = t->next_[fallback * 256 + byte(k)];
  }
  t->refused_.resize(n);
  if (compiled->trie == nullptr) return std::shared_ptr<const GrammarTrigger>(std::move(t));
  const TokenTrie& trie = *compiled->trie;
  VALET_ASSIGN_OR_RETURN(const GrammarMatcher fresh, GrammarMatcher::Create(std::move(compiled)));
  const char last = m.back();
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    const std::string& bytes = trie.bytes(id);
    // Completing the trigger writes its last byte.
    if (trie.token_class(id) != TokenClass::kText || bytes.find(last) == std::string::npos) continue;
    for (State k = 0; k < n; ++k) {
      const Scan scan = t->Run(k, bytes);
      if (!scan.completed) continue;
      GrammarMatcher after = fresh;
      if (!after.AcceptBytes(std::string_view(bytes).substr(scan.end))) t->refused_[k].push_back(id);
    }
  }
  return std::shared_ptr<const GrammarTrigger>(std::move(t));
}

GrammarTrigger::Scan GrammarTrigger::Run(State state, std::string_view bytes) const {
  const size_t n = text_.size();
  for (size_t i = 0; i < bytes.size(); ++i) {
    state = next_[state * 256 + static_cast<uint8_t>(bytes[i])];
    if (state == n) return {0, true, i + 1};
  }
  return {state, false, bytes.size()};
}

}  // namespace valet
