// Compiles JSON Schemas and matches texts against them, byte by byte, for
// node/schema_suite_test.mjs. Reads JSON lines {"schema": ..., "texts": [...]}
// from stdin; writes one line per input: {"error": "..."} when the schema
// does not compile, else {"accepted": [true, false, ...]}.
#include <iostream>
#include <memory>
#include <string>

#include "common/json.h"
#include "constrain/constraint_grammar.h"
#include "constrain/grammar_matcher.h"

namespace {

using namespace valet;

Result<std::shared_ptr<const CompiledGrammar>> Compile(const std::string& schema) {
  VALET_ASSIGN_OR_RETURN(ConstraintGrammar g,
                         ConstraintToGbnf({ConstraintKind::kJsonSchema, schema}));
  VALET_ASSIGN_OR_RETURN(Grammar parsed, ParseGbnf(g.gbnf, g.limits));
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(std::move(parsed));
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

bool Accepts(const std::shared_ptr<const CompiledGrammar>& compiled, const std::string& text) {
  Result<GrammarMatcher> m = GrammarMatcher::Create(compiled);
  return m.ok() && m->AcceptBytes(text) && m->CanEnd();
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    Result<Json> in = ParseJson(line);
    if (!in.ok() || !in->contains("schema") || !in->contains("texts")) {
      std::cerr << "bad input line\n";
      return 2;
    }
    Result<std::shared_ptr<const CompiledGrammar>> compiled = Compile(DumpJson((*in)["schema"]));
    Json out = Json::object();
    if (!compiled.ok()) {
      out["error"] = compiled.status().ToString();
    } else {
      Json accepted = Json::array();
      for (const Json& t : (*in)["texts"])
        accepted.push_back(Accepts(*compiled, t.get<std::string>()));
      out["accepted"] = std::move(accepted);
    }
    std::cout << DumpJson(out) << "\n" << std::flush;
  }
  return 0;
}
