#include "constrain/grammar.h"

#include <utility>

namespace valet {
namespace {

// Which rules can match the empty string, in time linear in the grammar (a
// fixpoint loop would be quadratic, and grammar text is untrusted): each
// alternative counts its symbols not yet known nullable, and a rule becoming
// nullable decrements the alternatives that mention it.
std::vector<bool> NullableRules(const std::vector<GrammarRuleDef>& rules,
                                const std::vector<GrammarRepeat>& repeats) {
  struct Alt { uint32_t rule; uint32_t remaining; };
  std::vector<Alt> alts;
  std::vector<std::vector<uint32_t>> uses(rules.size());  // rule -> alternatives mentioning it
  std::vector<bool> nullable(rules.size(), false);
  std::vector<uint32_t> queue;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    for (const auto& seq : rules[r].alternatives) {
      bool has_terminal = false;
      for (const GrammarSymbol& s : seq) has_terminal |= s.kind == SymbolKind::kBytes;
      if (has_terminal) continue;  // never nullable
      const auto id = static_cast<uint32_t>(alts.size());
      alts.push_back({r, 0});
      for (const GrammarSymbol& s : seq) {
        // x{0,n} matches nothing whatever x is; x{m,n} as x does.
        if (s.kind == SymbolKind::kRepeat && repeats[s.value].min == 0) continue;
        uses[CalleeOf(repeats, s)].push_back(id);
        ++alts[id].remaining;
      }
      if (alts[id].remaining == 0 && !nullable[r]) {
        nullable[r] = true;
        queue.push_back(r);
      }
    }
  }
  while (!queue.empty()) {
    const uint32_t r = queue.back();
    queue.pop_back();
    for (uint32_t a : uses[r]) {
      if (--alts[a].remaining == 0 && !nullable[alts[a].rule]) {
        nullable[alts[a].rule] = true;
        queue.push_back(alts[a].rule);
      }
    }
  }
  return nullable;
}

// A rule that can reach itself through leftmost references (each preceded
// only by nullable symbols) is left-recursive. Iterative DFS: nesting in the
// grammar text must never become nesting on the C++ stack.
Status RefuseLeftRecursion(const std::vector<GrammarRuleDef>& rules,
                           const std::vector<GrammarRepeat>& repeats, const std::vector<bool>& nullable) {
  std::vector<std::vector<uint32_t>> left(rules.size());
  for (uint32_t r = 0; r < rules.size(); ++r) {
    for (const auto& seq : rules[r].alternatives) {
      for (const GrammarSymbol& s : seq) {
        if (s.kind == SymbolKind::kBytes) break;
        const uint32_t callee = CalleeOf(repeats, s);
        left[r].push_back(callee);
        if (!nullable[callee] && !(s.kind == SymbolKind::kRepeat && repeats[s.value].min == 0)) break;
      }
    }
  }
  enum : uint8_t { kWhite, kGrey, kBlack };
  std::vector<uint8_t> color(rules.size(), kWhite);
  std::vector<std::pair<uint32_t, size_t>> stack;  // rule, next edge
  for (uint32_t start = 0; start < rules.size(); ++start) {
    if (color[start] != kWhite) continue;
    stack.push_back({start, 0});
    color[start] = kGrey;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == left[r].size()) {
        color[r] = kBlack;
        stack.pop_back();
        continue;
      }
      const uint32_t to = left[r][next++];
      if (color[to] == kGrey) {
        return InvalidArgument("grammar: left recursion: rule '" + rules[to].name +
                               "' can reach itself without consuming input");
      }
      if (color[to] == kWhite) {
        color[to] = kGrey;
        stack.push_back({to, 0});
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Grammar> BuildGrammar(std::vector<GrammarRuleDef> rules, std::vector<ByteSet> byte_sets,
                             std::vector<GrammarRepeat> repeats, uint32_t root) {
  for (const GrammarRuleDef& rule : rules) {
    if (!rule.defined) return InvalidArgument("grammar: undefined rule '" + rule.name + "'");
  }
  if (root >= rules.size()) return Internal("grammar: root rule out of range");
  for (const GrammarRepeat& r : repeats) {
    if (r.rule >= rules.size() || r.max == 0 || r.max < r.min) return Internal("grammar: bad repetition");
  }
  std::vector<bool> nullable = NullableRules(rules, repeats);
  VALET_RETURN_IF_ERROR(RefuseLeftRecursion(rules, repeats, nullable));

  Grammar g;
  g.root = root;
  g.nullable = std::move(nullable);
  g.byte_sets = std::move(byte_sets);
  g.repeats = std::move(repeats);
  for (GrammarRuleDef& rule : rules) {
    g.rule_alts.push_back(static_cast<uint32_t>(g.alt_starts.size()));
    for (const auto& seq : rule.alternatives) {
      g.alt_starts.push_back(static_cast<uint32_t>(g.symbols.size()));
      g.symbols.insert(g.symbols.end(), seq.begin(), seq.end());
      g.symbols.push_back({SymbolKind::kEnd, 0});
    }
    g.rule_names.push_back(std::move(rule.name));
  }
  g.rule_alts.push_back(static_cast<uint32_t>(g.alt_starts.size()));
  return g;
}

}  // namespace valet
