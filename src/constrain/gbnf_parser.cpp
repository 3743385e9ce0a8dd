#include "constrain/gbnf_parser.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "constrain/utf8_ranges.h"

namespace valet {
namespace {

constexpr size_t kNoElement = static_cast<size_t>(-1);

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// One level of parentheses (or the rule body itself) being read.
struct Group {
  std::vector<std::vector<GrammarSymbol>> alternatives;
  std::vector<GrammarSymbol> sequence;
  size_t last_start = kNoElement;  // where the element a postfix operator applies to begins
};

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

  Result<Grammar> Parse();

 private:
  Status Error(const std::string& message) const;
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  void SkipSpace(bool newlines);
  std::string_view ParseName();

  Result<uint32_t> RuleId(std::string_view name);
  Result<uint32_t> NewRule(std::vector<std::vector<GrammarSymbol>> alternatives);
  Status CountSymbols(uint64_t n);
  uint32_t ByteSetId(const ByteSet& set);
  GrammarSymbol Byte(uint8_t b);

  Status ParseRule();
  Status ParseBody(uint32_t rule);
  Result<bool> ParseElement(std::vector<Group>& groups);
  Result<uint32_t> ParseCodePoint(bool in_class);
  Status ParseLiteral(Group& g);
  Status ParseClass(Group& g, bool any);
  Status ParsePostfix(Group& g);
  Result<uint32_t> ParseCount();
  Result<GrammarSymbol> StarOf(GrammarSymbol element);
  Result<GrammarSymbol> Counted(GrammarSymbol element, uint32_t min, uint32_t max);

  std::string_view text_;
  GrammarLimits limits_;
  size_t pos_ = 0;
  uint32_t current_rule_ = 0;
  uint32_t generated_ = 0;
  uint64_t symbols_ = 0;
  std::vector<GrammarRuleDef> rules_;
  std::unordered_map<std::string, uint32_t> names_;
  std::vector<ByteSet> byte_sets_;
  std::map<ByteSet, uint32_t> byte_set_ids_;
  std::vector<GrammarRepeat> repeats_;
};

Status GbnfParser::Error(const std::string& message) const {
  const size_t at = std::min(pos_, text_.size());
  const auto line = 1 + std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(at), '\n');
  return InvalidArgument("grammar line " + std::to_string(line) + ": " + message);
}

void GbnfParser::SkipSpace(bool newlines) {
  while (!AtEnd()) {
    const char c = Peek();
    if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
      ++pos_;
    } else if (c == '#') {
      while (!AtEnd() && Peek() != '\n') ++pos_;
    } else {
      return;
    }
  }
}

std::string_view GbnfParser::ParseName() {
  const size_t start = pos_;
  while (!AtEnd() && IsWordChar(Peek())) ++pos_;
  return text_.substr(start, pos_ - start);
}

Result<uint32_t> GbnfParser::RuleId(std::string_view name) {
  auto it = names_.find(std::string(name));
  if (it != names_.end()) return it->second;
  if (rules_.size() >= limits_.max_rules) {
    return OutOfRange("grammar: more than " + std::to_string(limits_.max_rules) + " rules (max_rules)");
  }
  const auto id = static_cast<uint32_t>(rules_.size());
  rules_.push_back({std::string(name), false, {}});
  names_.emplace(std::string(name), id);
  return id;
}

Result<uint32_t> GbnfParser::NewRule(std::vector<std::vector<GrammarSymbol>> alternatives) {
  if (rules_.size() >= limits_.max_rules) {
    return OutOfRange("grammar: more than " + std::to_string(limits_.max_rules) +
                      " rules with the ones groups and repetitions make (max_rules)");
  }
  const auto id = static_cast<uint32_t>(rules_.size());
  rules_.push_back({rules_[current_rule_].name + "_" + std::to_string(++generated_), true,
                    std::move(alternatives)});
  return id;
}

Status GbnfParser::CountSymbols(uint64_t n) {
  symbols_ += n;
  if (symbols_ > limits_.max_symbols) {
    return OutOfRange("grammar: more than " + std::to_string(limits_.max_symbols) +
                      " symbols once repetitions are expanded (max_symbols)");
  }
  return Status::Ok();
}

uint32_t GbnfParser::ByteSetId(const ByteSet& set) {
  auto [it, inserted] = byte_set_ids_.emplace(set, static_cast<uint32_t>(byte_sets_.size()));
  if (inserted) byte_sets_.push_back(set);
  return it->second;
}

GrammarSymbol GbnfParser::Byte(uint8_t b) {
  ByteSet set;
  set.Add(b);
  return {SymbolKind::kBytes, ByteSetId(set)};
}

Result<Grammar> GbnfParser::Parse() {
  if (text_.size() > limits_.max_text_bytes) {
    return OutOfRange("grammar: " + std::to_string(text_.size()) + " bytes of text, more than " +
                      std::to_string(limits_.max_text_bytes) + " (max_text_bytes)");
  }
  SkipSpace(true);
  while (!AtEnd()) {
    VALET_RETURN_IF_ERROR(ParseRule());
    SkipSpace(true);
  }
  if (rules_.empty()) return Error("no rules");
  auto root = names_.find("root");
  if (root == names_.end() || !rules_[root->second].defined) {
    return InvalidArgument("grammar: no 'root' rule (the grammar starts there)");
  }
  return BuildGrammar(std::move(rules_), std::move(byte_sets_), std::move(repeats_), root->second);
}

Status GbnfParser::ParseRule() {
  const std::string_view name = ParseName();
  if (name.empty()) return Error(std::string("expected a rule name, found '") + Peek() + "'");
  SkipSpace(false);
  if (text_.substr(pos_, 3) != "::=") return Error("expected '::=' after '" + std::string(name) + "'");
  pos_ += 3;
  VALET_ASSIGN_OR_RETURN(const uint32_t id, RuleId(name));
  if (rules_[id].defined) return Error("rule '" + std::string(name) + "' is defined twice");
  rules_[id].defined = true;
  current_rule_ = id;
  SkipSpace(true);
  return ParseBody(id);
}

// The body up to the newline (or end) that closes it. Parentheses push a
// Group instead of recursing.
Status GbnfParser::ParseBody(uint32_t rule) {
  std::vector<Group> groups(1);
  for (;;) {
    const bool nested = groups.size() > 1;
    SkipSpace(nested);
    if (AtEnd()) {
      if (nested) return Error("unclosed '('");
      break;
    }
    if (!nested && (Peek() == '\n' || Peek() == '\r')) break;
    VALET_ASSIGN_OR_RETURN(const bool more, ParseElement(groups));
    if (!more) break;
  }
  Group& top = groups.back();
  top.alternatives.push_back(std::move(top.sequence));
  rules_[rule].alternatives = std::move(top.alternatives);
  return Status::Ok();
}

// One element, operator or parenthesis; false when the rule has ended.
Result<bool> GbnfParser::ParseElement(std::vector<Group>& groups) {
  Group& g = groups.back();
  const char c = Peek();
  if (c == '"') {
    VALET_RETURN_IF_ERROR(ParseLiteral(g));
  } else if (c == '[' || c == '.') {
    VALET_RETURN_IF_ERROR(ParseClass(g, c == '.'));
  } else if (c == '(') {
    if (groups.size() > limits_.max_nesting) {
      return OutOfRange("grammar: parentheses nested more than " + std::to_string(limits_.max_nesting) +
                        " deep (max_nesting)");
    }
    ++pos_;
    groups.emplace_back();
  } else if (c == ')') {
    if (groups.size() == 1) return Error("')' without '('");
    ++pos_;
    Group inner = std::move(groups.back());
    groups.pop_back();
    inner.alternatives.push_back(std::move(inner.sequence));
    Group& outer = groups.back();
    outer.last_start = outer.sequence.size();
    VALET_RETURN_IF_ERROR(CountSymbols(1));
    // (x) is x: every (json_char){0,n} then loops over the one json_char rule,
    // and the loops share their position masks.
    if (inner.alternatives.size() == 1 && inner.alternatives[0].size() == 1) {
      outer.sequence.push_back(inner.alternatives[0][0]);
      return true;
    }
    VALET_ASSIGN_OR_RETURN(const uint32_t id, NewRule(std::move(inner.alternatives)));
    outer.sequence.push_back({SymbolKind::kRule, id});
  } else if (c == '|') {
    ++pos_;
    g.alternatives.push_back(std::move(g.sequence));
    g.sequence.clear();
    g.last_start = kNoElement;
    SkipSpace(true);
  } else if (c == '*' || c == '+' || c == '?' || c == '{') {
    VALET_RETURN_IF_ERROR(ParsePostfix(g));
  } else if (IsWordChar(c)) {
    const std::string_view name = ParseName();
    const size_t after = pos_;
    SkipSpace(false);
    if (text_.substr(pos_, 3) == "::=") {
      pos_ = after;
      return Error("rule '" + std::string(name) + "' must start on a new line");
    }
    pos_ = after;
    VALET_ASSIGN_OR_RETURN(const uint32_t id, RuleId(name));
    VALET_RETURN_IF_ERROR(CountSymbols(1));
    g.last_start = g.sequence.size();
    g.sequence.push_back({SymbolKind::kRule, id});
  } else {
    return Error(std::string("unexpected character '") + c + "'");
  }
  return true;
}

// One character of a literal or class: an escape or one UTF-8 encoded code point.
Result<uint32_t> GbnfParser::ParseCodePoint(bool in_class) {
  if (AtEnd()) return Error(in_class ? "unterminated character class" : "unterminated string");
  const auto c = static_cast<unsigned char>(Peek());
  if (c == '\n' || c == '\r') return Error(in_class ? "newline in a character class" : "newline in a string");
  if (c == '\\') {
    if (pos_ + 1 >= text_.size()) return Error("'\\' at the end of the grammar");
    const char e = text_[pos_ + 1];
    pos_ += 2;
    int digits = 0;
    switch (e) {
      case 'n': return 0x0Au;
      case 'r': return 0x0Du;
      case 't': return 0x09u;
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
        return static_cast<uint32_t>(e);
      default: return Error(std::string("unknown escape '\\") + e + "'");
    }
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = AtEnd() ? -1 : HexDigitValue(Peek());
      if (h < 0) return Error("expected " + std::to_string(digits) + " hex digits after '\\" + e + "'");
      value = value * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      return Error("escape names no Unicode scalar value");
    }
    return value;
  }
  const DecodedCodePoint d = DecodeCodePoint(text_.substr(pos_));
  if (d.length == 0) return Error("invalid UTF-8");
  pos_ += d.length;
  return d.cp;
}

Status GbnfParser::ParseLiteral(Group& g) {
  ++pos_;  // the opening quote
  const size_t start = g.sequence.size();
  while (AtEnd() || Peek() != '"') {
    VALET_ASSIGN_OR_RETURN(const uint32_t cp, ParseCodePoint(false));
    const std::string bytes = EncodeUtf8(cp);
    VALET_RETURN_IF_ERROR(CountSymbols(bytes.size()));
    for (char b : bytes) g.sequence.push_back(Byte(static_cast<uint8_t>(b)));
  }
  ++pos_;  // the closing quote
  g.last_start = start;
  return Status::Ok();
}

// A class becomes one terminal when all its code points are single bytes,
// otherwise a generated rule with one alternative per UTF-8 byte-range
// sequence (their first bytes are disjoint, so one survives the first byte).
Status GbnfParser::ParseClass(Group& g, bool any) {
  std::vector<CodePointRange> ranges;
  bool negate = any;
  ++pos_;  // '[' or '.'
  if (!any) {
    if (!AtEnd() && Peek() == '^') {
      negate = true;
      ++pos_;
    }
    while (AtEnd() || Peek() != ']') {
      VALET_ASSIGN_OR_RETURN(const uint32_t lo, ParseCodePoint(true));
      uint32_t hi = lo;
      if (pos_ + 1 < text_.size() && Peek() == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        VALET_ASSIGN_OR_RETURN(hi, ParseCodePoint(true));
        if (hi < lo) return Error("character range ends before it starts");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;  // ']'
  }
  const std::vector<CodePointRange> normal = NormalizeRanges(std::move(ranges), negate);
  if (normal.empty()) return Error("character class matches no character");
  ByteSet single;
  bool has_single = false;
  std::vector<std::vector<GrammarSymbol>> alternatives;
  for (const std::vector<ByteRange8>& seq : Utf8Sequences(normal)) {
    if (seq.size() == 1) {
      single.AddRange(seq[0].lo, seq[0].hi);
      has_single = true;
      continue;
    }
    std::vector<GrammarSymbol> alt;
    for (const ByteRange8& r : seq) {
      ByteSet set;
      set.AddRange(r.lo, r.hi);
      alt.push_back({SymbolKind::kBytes, ByteSetId(set)});
    }
    VALET_RETURN_IF_ERROR(CountSymbols(alt.size()));
    alternatives.push_back(std::move(alt));
  }
  g.last_start = g.sequence.size();
  VALET_RETURN_IF_ERROR(CountSymbols(1));
  const GrammarSymbol single_symbol{SymbolKind::kBytes, has_single ? ByteSetId(single) : 0};
  if (alternatives.empty()) {
    g.sequence.push_back(single_symbol);
    return Status::Ok();
  }
  if (has_single) alternatives.insert(alternatives.begin(), {single_symbol});
  VALET_ASSIGN_OR_RETURN(const uint32_t id, NewRule(std::move(alternatives)));
  g.sequence.push_back({SymbolKind::kRule, id});
  return Status::Ok();
}

Result<uint32_t> GbnfParser::ParseCount() {
  if (AtEnd() || Peek() < '0' || Peek() > '9') return Error("expected a number in '{m,n}'");
  uint32_t value = 0;
  while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
    value = value * 10 + static_cast<uint32_t>(Peek() - '0');
    if (value > limits_.max_repetition) {
      return OutOfRange("grammar: repetition count above " + std::to_string(limits_.max_repetition) +
                        " (max_repetition)");
    }
    ++pos_;
  }
  return value;
}

// element* as  R ::= element R | (empty): right recursion, which the matcher
// runs in constant stack depth (a reference in tail position pushes no frame).
Result<GrammarSymbol> GbnfParser::StarOf(GrammarSymbol element) {
  VALET_RETURN_IF_ERROR(CountSymbols(2));
  const auto id = static_cast<uint32_t>(rules_.size());
  VALET_ASSIGN_OR_RETURN(const uint32_t made, NewRule({{element, {SymbolKind::kRule, id}}, {}}));
  return GrammarSymbol{SymbolKind::kRule, made};
}

Status GbnfParser::ParsePostfix(Group& g) {
  const char op = Peek();
  if (g.last_start == kNoElement) return Error(std::string("'") + op + "' follows no element");
  ++pos_;
  uint32_t min = 0;
  uint32_t max = 0;
  bool unbounded = false;
  if (op == '{') {
    SkipSpace(false);
    VALET_ASSIGN_OR_RETURN(min, ParseCount());
    SkipSpace(false);
    max = min;
    if (!AtEnd() && Peek() == ',') {
      ++pos_;
      SkipSpace(false);
      unbounded = AtEnd() || Peek() == '}';
      if (!unbounded) {
        VALET_ASSIGN_OR_RETURN(max, ParseCount());
      }
      SkipSpace(false);
    }
    if (AtEnd() || Peek() != '}') return Error("expected '}' to close '{m,n}'");
    ++pos_;
    if (!unbounded && max < min) return Error("'{m,n}' with n < m");
  }
  // The element as one symbol.
  std::vector<GrammarSymbol> body(g.sequence.begin() + static_cast<ptrdiff_t>(g.last_start), g.sequence.end());
  g.sequence.resize(g.last_start);
  g.last_start = kNoElement;  // "x**" is refused rather than read as a nullable loop
  if (body.empty()) return Status::Ok();  // ""* is still the empty string
  GrammarSymbol element = body.front();
  if (body.size() > 1) {
    VALET_ASSIGN_OR_RETURN(const uint32_t id, NewRule({std::move(body)}));
    element = {SymbolKind::kRule, id};
  }
  if (op == '*' || op == '+') {
    if (op == '+') g.sequence.push_back(element);
    VALET_ASSIGN_OR_RETURN(const GrammarSymbol star, StarOf(element));
    g.sequence.push_back(star);
    return Status::Ok();
  }
  if (op == '?') {
    min = 0;
    max = 1;
  }
  if (unbounded) {
    if (min >= 2) {
      VALET_ASSIGN_OR_RETURN(const GrammarSymbol counted, Counted(element, min, min));
      g.sequence.push_back(counted);
    } else if (min == 1) {
      g.sequence.push_back(element);
    }
    VALET_ASSIGN_OR_RETURN(const GrammarSymbol star, StarOf(element));
    g.sequence.push_back(star);
    return Status::Ok();
  }
  if (max >= 2) {
    VALET_ASSIGN_OR_RETURN(const GrammarSymbol counted, Counted(element, min, max));
    g.sequence.push_back(counted);
    return Status::Ok();
  }
  if (max == 1) {
    VALET_RETURN_IF_ERROR(CountSymbols(1));
    if (min == 1) {
      g.sequence.push_back(element);
      return Status::Ok();
    }
    VALET_ASSIGN_OR_RETURN(const uint32_t id, NewRule({{element}, {}}));  // x? as O ::= x | (empty)
    g.sequence.push_back({SymbolKind::kRule, id});
  }
  return Status::Ok();
}

// x{m,n} (n >= 2) as one counted position over x's rule.
Result<GrammarSymbol> GbnfParser::Counted(GrammarSymbol element, uint32_t min, uint32_t max) {
  VALET_RETURN_IF_ERROR(CountSymbols(2));
  if (element.kind != SymbolKind::kRule) {
    VALET_ASSIGN_OR_RETURN(const uint32_t id, NewRule({{element}}));
    element = {SymbolKind::kRule, id};
  }
  repeats_.push_back({element.value, min, max});
  return GrammarSymbol{SymbolKind::kRepeat, static_cast<uint32_t>(repeats_.size() - 1)};
}

}  // namespace

Result<Grammar> ParseGbnf(std::string_view text, const GrammarLimits& limits) {
  return GbnfParser(text, limits).Parse();
}

}  // namespace valet
