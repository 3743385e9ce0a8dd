// Writes GBNF text: how JSON Schema and regular expressions become grammars.
// They are translated to GBNF rather than straight to a Grammar so that one
// parser, with its limits and its left-recursion checks, stands between every
// kind of constraint and the matcher, and so that a schema's grammar can be
// printed and read (`valet schema-grammar`).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/utf8_ranges.h"

namespace valet {

// Rules under unique names, in the order they were added; `root` first.
// Two namespaces that cannot meet: fresh names made from a base (a schema's
// property names among them) never hold '_', shared rules' names always do,
// so a property called "date" or "root" cannot capture a shared rule.
class GbnfBuilder {
 public:
  // Adds `body` under a fresh name made from `base` ("item", "item-2", ...;
  // '_' in the base becomes '-').
  std::string Add(std::string_view base, std::string body);
  // Reserves a fresh name to be defined later (a rule that refers to itself).
  std::string Reserve(std::string_view base);
  void Define(const std::string& name, std::string body);
  // The shared rule `name` (which holds a '_'), added with `body` unless it
  // exists; its name.
  std::string Shared(const std::string& name, std::string_view body);
  // A shared rule's name reserved to be defined later; false if it exists.
  bool ReserveShared(const std::string& name);

  size_t rule_count() const { return order_.size(); }
  size_t text_bytes() const { return text_bytes_; }
  // "root ::= <root_body>" and every rule, one per line.
  std::string Text(std::string_view root_body) const;

 private:
  std::map<std::string, std::string, std::less<>> rules_;
  std::vector<std::string> order_;
  std::map<std::string, uint32_t, std::less<>> next_suffix_;
  size_t text_bytes_ = 0;
};

// The parts end to end (g++ 12 misreads `"literal" + std::string&&` under -O3 as
// an overlapping copy, so rule text is assembled this way).
std::string Concat(std::initializer_list<std::string_view> parts);

// `bytes` as a GBNF string literal ("..." with escapes; UTF-8 kept as is).
std::string GbnfLiteral(std::string_view bytes);

// Normalized code point ranges as a GBNF character class "[...]".
std::string GbnfClass(const std::vector<CodePointRange>& ranges);

// A decimal integer range as a GBNF expression over its digits: every integer
// in [lo, hi] written without leading zeros (and without "-0"), nothing else.
// `lo`/`hi` absent mean unbounded on that side.
struct IntBound {
  bool bounded = false;
  int64_t value = 0;
};
std::string GbnfIntRange(IntBound lo, IntBound hi);

}  // namespace valet
