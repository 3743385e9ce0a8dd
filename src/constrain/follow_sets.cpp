#include "constrain/follow_sets.h"

#include "constrain/work_budget.h"

namespace valet {
namespace {

bool MergeChanged(ByteSet& into, const ByteSet& from) {
  const ByteSet before = into;
  into.Merge(from);
  return into != before;
}

bool SymbolNullable(const Grammar& g, GrammarSymbol sym) {
  if (sym.kind == SymbolKind::kBytes) return false;
  if (sym.kind == SymbolKind::kRepeat && g.repeats[sym.value].min == 0) return true;
  return g.nullable[CalleeOf(g.repeats, sym)];
}

}  // namespace

// Passes until nothing changes: each set only grows, so a pass that changes
// nothing is the fixed point; the budget bounds the passes.
FollowSets FollowSets::Compute(const Grammar& g, uint64_t& budget) {
  FollowSets f;
  f.all_.AddRange(0, 255);
  const size_t n = g.symbols.size();
  f.rule_of_.assign(n, 0);
  for (uint32_t r = 0; r < g.rule_count(); ++r) {
    for (uint32_t a = g.rule_alts[r]; a < g.rule_alts[r + 1]; ++a) {
      for (uint32_t p = g.alt_starts[a];; ++p) {
        f.rule_of_[p] = r;
        if (g.symbols[p].kind == SymbolKind::kEnd) break;
      }
    }
  }
  std::vector<ByteSet> first(g.rule_count());
  f.rest_first_.assign(n, ByteSet{});
  f.rest_nullable_.assign(n, false);
  // First bytes of every rule (nullability is the grammar's), then of every rest.
  for (bool changed = true; changed;) {
    if (!ChargeWork(budget, n)) return f;
    changed = false;
    for (uint32_t a = 0; a < g.alt_starts.size(); ++a) {
      const uint32_t r = f.rule_of_[g.alt_starts[a]];
      for (uint32_t p = g.alt_starts[a]; g.symbols[p].kind != SymbolKind::kEnd; ++p) {
        const GrammarSymbol sym = g.symbols[p];
        const ByteSet& add =
            sym.kind == SymbolKind::kBytes ? g.byte_sets[sym.value] : first[CalleeOf(g.repeats, sym)];
        changed |= MergeChanged(first[r], add);
        if (!SymbolNullable(g, sym)) break;
      }
    }
  }
  for (size_t p = n; p-- > 0;) {
    const GrammarSymbol sym = g.symbols[p];
    if (sym.kind == SymbolKind::kEnd) {
      f.rest_nullable_[p] = true;
      continue;
    }
    f.rest_first_[p] = sym.kind == SymbolKind::kBytes ? g.byte_sets[sym.value] : first[CalleeOf(g.repeats, sym)];
    if (SymbolNullable(g, sym)) {
      f.rest_first_[p].Merge(f.rest_first_[p + 1]);
      f.rest_nullable_[p] = f.rest_nullable_[p + 1];
    }
  }
  // What follows each rule: what comes after its references, what follows
  // the referring rule where that is nothing, and another iteration's first
  // bytes inside a repetition.
  f.after_rule_.assign(g.rule_count(), ByteSet{});
  for (bool changed = true; changed;) {
    if (!ChargeWork(budget, n)) return f;
    changed = false;
    for (uint32_t p = 0; p < n; ++p) {
      const GrammarSymbol sym = g.symbols[p];
      if (sym.kind != SymbolKind::kRule && sym.kind != SymbolKind::kRepeat) continue;
      ByteSet add = f.rest_first_[p + 1];
      if (f.rest_nullable_[p + 1]) add.Merge(f.after_rule_[f.rule_of_[p]]);
      const uint32_t callee = CalleeOf(g.repeats, sym);
      if (sym.kind == SymbolKind::kRepeat && g.repeats[sym.value].max >= 2) add.Merge(first[callee]);
      changed |= MergeChanged(f.after_rule_[callee], add);
    }
  }
  f.complete_ = true;
  return f;
}

ByteSet FollowSets::AfterPosition(uint32_t pos) const {
  if (!complete_) return all_;
  ByteSet out = rest_first_[pos];
  if (rest_nullable_[pos]) out.Merge(after_rule_[rule_of_[pos]]);
  return out;
}

}  // namespace valet
