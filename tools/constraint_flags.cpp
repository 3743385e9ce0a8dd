#include "constraint_flags.h"

#include <cstdio>
#include <string>

namespace valet::cli {
namespace {

// Bounded before it is read: the compilers refuse larger inputs anyway.
Result<std::string> ReadConstraintFile(const std::string& path) {
  constexpr size_t kMaxBytes = 1 << 20;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return InvalidArgument("cannot open " + path);
  std::string text(kMaxBytes + 1, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  if (text.size() > kMaxBytes)
    return InvalidArgument(path + ": a grammar or schema file is at most 1 MiB");
  return text;
}

}  // namespace

Result<Constraint> ReadConstraintFlags(const Args& a) {
  Constraint c;
  int given = 0;
  VALET_ASSIGN_OR_RETURN(std::string grammar_file, a.String("--grammar", ""));
  VALET_ASSIGN_OR_RETURN(std::string schema_file, a.String("--json-schema", ""));
  VALET_ASSIGN_OR_RETURN(std::string regex, a.String("--regex", ""));
  if (!grammar_file.empty()) {
    ++given;
    c.kind = ConstraintKind::kGrammar;
    VALET_ASSIGN_OR_RETURN(c.text, ReadConstraintFile(grammar_file));
  }
  if (!schema_file.empty()) {
    ++given;
    c.kind = ConstraintKind::kJsonSchema;
    VALET_ASSIGN_OR_RETURN(c.text, ReadConstraintFile(schema_file));
  }
  if (a.Has("--json-object")) {
    ++given;
    c.kind = ConstraintKind::kJsonObject;
  }
  if (!regex.empty()) {
    ++given;
    c.kind = ConstraintKind::kRegex;
    c.text = regex;
  }
  if (given > 1)
    return InvalidArgument(
        "--grammar, --json-schema, --json-object and --regex exclude each other");
  VALET_ASSIGN_OR_RETURN(const int64_t ws,
                         a.Int("--max-whitespace", 0, 0, kMaxConstraintWhitespace));
  c.max_whitespace = static_cast<uint32_t>(ws);
  return c;
}

}  // namespace valet::cli
