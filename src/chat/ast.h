// The syntax tree of a parsed Jinja template: expressions and statements.
// Produced by Parser, walked by Interpreter; immutable after parsing.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace valet::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // args: items (also tuples)
    kDict,      // args: key0, value0, key1, value1, ...
    kAttr,      // args[0].name
    kIndex,     // args[0][args[1]]
    kSlice,     // args[0][args[1]:args[2]:args[3]] (null parts are omitted bounds)
    kCall,      // args[0](args[1..], kwargs)
    kFilter,    // args[0] | name(args[1..], kwargs)
    kTest,      // args[0] is [not] name(args[1..])
    kUnary,     // op args[0]: "-", "+", "not"
    kBinary,    // args[0] op args[1]: arithmetic, comparison, "in", "not in", "~"
    kAnd,       // args[0] and args[1]
    kOr,        // args[0] or args[1]
    kTernary,   // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;  // name, attribute, filter, test or operator
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: none given
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; bodies.back() is the else branch when longer
    kFor,       // for targets in expr [if filter]: bodies[0]; bodies[1] is the else branch
    kSet,       // set targets = expr; or `set target %}bodies[0]{% endset`; or `set target.attr = expr`
    kMacro,     // macro name(params): bodies[0]
    kBreak,
    kContinue,
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;                  // kText; kMacro: name; kSet with attr: the attribute
  std::vector<std::string> targets;  // kFor / kSet names
  ExprPtr expr;                      // kOutput, kFor iterable, kSet value, kSet attr object
  ExprPtr filter;                    // kFor `if` condition
  ExprPtr target_object;             // kSet of an attribute: the object (a namespace)
  std::vector<ExprPtr> conditions;   // kIf
  std::vector<Body> bodies;
  std::vector<MacroParam> params;    // kMacro
};

}  // namespace valet::chat
