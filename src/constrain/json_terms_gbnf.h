// The JSON pieces a schema's grammar is made of: values of each type, objects
// with ordered optional properties, arrays with a prefix and bounds, numbers
// in a range, string formats. Shared rules (any value, a string character)
// are defined once per grammar; whitespace between tokens is bounded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/gbnf_builder.h"
#include "valet/status.h"

namespace valet {

// Bounds of a number, each side optional and inclusive after Add.
struct NumberBounds {
  bool has_lo = false, has_hi = false;
  int64_t lo = 0, hi = 0;
  // A schema bound: integers take any bound (rounded inwards); numbers take
  // whole-valued inclusive bounds only (Unsupported otherwise). Errors are
  // phrased to follow the keyword's name.
  Status Add(double value, bool lower, bool exclusive, bool integer);
};

class JsonTerms {
 public:
  struct Property {
    std::string key_literal;  // the key as a GBNF literal of its JSON text, quotes included
    std::string value_rule;
    bool required = false;
  };
  struct ArrayShape {
    std::vector<std::string> prefix;  // prefixItems' rules
    std::string rest;                 // the rule of every later item; empty: none allowed
    uint32_t min_items = 0;
    bool bounded = false;
    uint32_t max_items = 0;
  };

  JsonTerms(GbnfBuilder& builder, uint32_t max_whitespace) : b_(builder), max_ws_(max_whitespace) {}

  std::string AnyValue();
  std::string AnyObject();
  std::string EmptyObject() const;
  std::string Map(const std::string& value_rule);
  std::string Properties(const std::vector<Property>& properties);
  std::string Array(const ArrayShape& shape);
  std::string String(uint32_t min_length, bool bounded, uint32_t max_length);
  Result<std::string> Format(std::string_view format);
  Result<std::string> Integer(const NumberBounds& bounds);
  Result<std::string> Number(const NumberBounds& bounds);
  // Defines `ws` when whitespace is allowed; call once, after everything else.
  void DefineWhitespace();

 private:
  // `parts` joined by spaces, with the whitespace rule between JSON tokens
  // where "~" stands (nothing when compact).
  std::string Seq(std::initializer_list<std::string_view> parts) const;
  std::string Char(bool counted);
  std::string Fraction();

  GbnfBuilder& b_;
  const uint32_t max_ws_;
};

}  // namespace valet
