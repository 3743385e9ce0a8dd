// Grammars shared by the constrain tests (and the benchmark).
#pragma once

namespace valet::test {

// JSON in the style of llama.cpp's json.gbnf, written for these tests, with
// whitespace runs bounded (at most two characters) as structured output needs.
inline constexpr const char* kJsonGbnf = R"gbnf(
# A JSON value, with bounded whitespace.
root    ::= value
value   ::= object | array | string | number | ("true" | "false" | "null")
object  ::=
  "{" ws (
    pair
    ("," ws pair)*
  )? "}"
pair    ::= string ws ":" ws value ws
array   ::= "[" ws ( value ws ("," ws value ws)* )? "]"
string  ::= "\"" ( [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number  ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws      ::= [ \t\n]{0,2}  # compact by default
)gbnf";

}  // namespace valet::test
