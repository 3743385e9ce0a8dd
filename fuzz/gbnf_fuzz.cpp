// libFuzzer target for the constraint engine: the input is a constraint's
// text, a NUL byte, then bytes to feed. The text is compiled as each kind a
// request may carry (a GBNF grammar, a JSON Schema, a regular expression, a
// tool-call spec):
// each must compile or fail with an error within its limits; a compiled
// grammar's matcher takes the bytes one at a time, and before each the mask over a small vocabulary
// must equal the brute-force one (every token tried on a copy of the matcher), both the one from
// the precomputed position masks and the whole-trie walk. Never a crash, a hang or a disagreement.
// Seeds in fuzz/gbnf/:
//   build-fuzz/fuzz/gbnf_fuzz -max_len=4096 -timeout=10 work/ fuzz/gbnf
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/constraint_grammar.h"
#include "constrain/gbnf_parser.h"
#include "constrain/position_masks.h"
#include "constrain/token_mask.h"
#include "constrain/token_trie.h"

namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

std::shared_ptr<const valet::TokenTrie> Vocabulary() {
  static const auto trie = [] {
    std::vector<std::string> texts;
    std::vector<valet::TokenClass> classes;
    for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"{\"", "\":", "\",", "}", "true", "null", "  ", "12", "ab", "abc",
                          "\xC3\xA9", "\\u", "\"\n", "[]", "x*", "::="}) {
      texts.push_back(t);
    }
    classes.assign(texts.size(), valet::TokenClass::kText);
    texts.push_back("</s>");
    classes.push_back(valet::TokenClass::kEog);
    texts.push_back("<ctl>");
    classes.push_back(valet::TokenClass::kSpecial);
    return *valet::TokenTrie::Build(std::move(texts), std::move(classes));
  }();
  return trie;
}

void CheckMask(const valet::GrammarMatcher& m, valet::TokenMasker& masker, valet::TokenMask& mask) {
  Check(masker.Compute(m, mask).ok());
  for (int32_t id = 0; id < mask.size(); ++id) {
    valet::GrammarMatcher copy = m;
    Check(copy.AcceptToken(id).ok() == mask.Allowed(id));
  }
}

// The constraint as a grammar, with smaller grammar bounds than a request's
// so that one input stays fast (a schema's lengths and a regex's counts
// over them fail as a request's over its limits would).
valet::Result<valet::Grammar> Compile(const valet::Constraint& c) {
  valet::GrammarLimits limits;
  limits.max_rules = 512;
  limits.max_symbols = 1 << 14;
  limits.max_repetition = 64;
  VALET_ASSIGN_OR_RETURN(valet::ConstraintGrammar g, valet::ConstraintToGbnf(c, limits));
  g.limits.max_rules = std::min<uint32_t>(g.limits.max_rules, 4096);
  g.limits.max_symbols = std::min<uint32_t>(g.limits.max_symbols, 1 << 16);
  g.limits.max_repetition = std::min<uint32_t>(g.limits.max_repetition, 64);
  return valet::ParseGbnf(g.gbnf, g.limits);
}

// Feeds `bytes` one at a time, checking both masks before each.
void Feed(valet::Grammar grammar, std::string_view bytes) {
  auto compiled = std::make_shared<valet::CompiledGrammar>();
  compiled->grammar = std::make_shared<const valet::Grammar>(std::move(grammar));
  compiled->trie = Vocabulary();
  compiled->limits.max_stacks = 256;
  compiled->limits.max_depth = 64;
  compiled->limits.max_expansions = 1 << 12;
  // The walk alone (no position masks), then with them, each checked.
  auto walked = std::make_shared<valet::CompiledGrammar>(*compiled);
  valet::PositionMaskLimits bounds;
  bounds.max_steps = 1 << 16;
  valet::PrecomputePositionMasks(*compiled, bounds);
  valet::Result<valet::GrammarMatcher> matcher = valet::GrammarMatcher::Create(compiled);
  valet::Result<valet::GrammarMatcher> walker = valet::GrammarMatcher::Create(walked);
  if (!matcher.ok() || !walker.ok()) return;
  valet::TokenMasker masker;
  valet::TokenMasker walk_masker;
  valet::TokenMask mask;
  for (size_t i = 0; i < bytes.size() && i < 64; ++i) {
    CheckMask(*matcher, masker, mask);
    CheckMask(*walker, walk_masker, mask);
    const bool accepted = matcher->Accept(static_cast<uint8_t>(bytes[i]));
    Check(walker->Accept(static_cast<uint8_t>(bytes[i])) == accepted);
    if (!accepted) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view bytes =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  for (valet::ConstraintKind kind :
       {valet::ConstraintKind::kGrammar, valet::ConstraintKind::kJsonSchema,
        valet::ConstraintKind::kRegex, valet::ConstraintKind::kToolCall}) {
    valet::Result<valet::Grammar> grammar = Compile({kind, std::string(text)});
    if (!grammar.ok()) {
      Check(!grammar.status().message().empty());
      continue;
    }
    Feed(std::move(grammar).value(), bytes);
  }
  return 0;
}
