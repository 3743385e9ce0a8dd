#include "constrain/json_schema_gbnf.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "constrain/gbnf_builder.h"
#include "constrain/json_terms_gbnf.h"
#include "constrain/regex_gbnf.h"

namespace valet {
namespace {

// What kinds of JSON value a schema admits, for oneOf's overlap check.
enum Kind : uint8_t {
  kNull = 1,
  kBool = 2,
  kInt = 4,   // numbers without a fraction
  kFrac = 8,  // numbers with one
  kString = 16,
  kArray = 32,
  kObject = 64,
  kAnyKind = 127,
};

constexpr std::string_view kAnnotations[] = {"title",    "description", "$schema", "$id",
                                             "$comment", "examples",    "default", "deprecated",
                                             "readOnly", "writeOnly",   "$defs",   "definitions"};
constexpr std::string_view kKeywords[] = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};

template <size_t N>
bool OneOf(std::string_view key, const std::string_view (&set)[N]) {
  return std::find(std::begin(set), std::end(set), key) != std::end(set);
}

// A rule name from a property name: letters, digits and '-' only, short.
std::string RuleBase(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= 24) break;
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (word)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "item" : out;
}

uint8_t KindsOfType(std::string_view type) {
  if (type == "null") return kNull;
  if (type == "boolean") return kBool;
  if (type == "integer") return kInt;
  if (type == "number") return kInt | kFrac;
  if (type == "string") return kString;
  if (type == "array") return kArray;
  if (type == "object") return kObject;
  return 0;
}

// The kinds a "type" admits (a name or a list of names; any other: none).
uint8_t KindsOfTypes(const Json& type) {
  if (type.is_string()) return KindsOfType(type.get_ref<const std::string&>());
  uint8_t kinds = 0;
  if (type.is_array()) {
    for (const Json& t : type)
      kinds |= t.is_string() ? KindsOfType(t.get_ref<const std::string&>()) : 0;
  }
  return kinds;
}

uint8_t KindOfValue(const Json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_number_integer() || v.is_number_unsigned()) return kInt;
  if (v.is_number_float()) return std::floor(v.get<double>()) == v.get<double>() ? kInt : kFrac;
  if (v.is_string()) return kString;
  if (v.is_array()) return kArray;
  return kObject;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const JsonSchemaOptions& options, GbnfBuilder& b, JsonTerms& terms)
      : root_(root), options_(options), b_(b), terms_(terms) {}

  // The rule of the whole value; every rule it needs is in the builder after.
  Result<std::string> Run() {
    VALET_ASSIGN_OR_RETURN(std::string top, RuleFor(root_, "#", "value"));
    while (!pending_.empty()) {
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      VALET_ASSIGN_OR_RETURN(std::string body, Compile(*p.node, p.path));
      b_.Define(p.rule, std::move(body));
    }
    return top;
  }

 private:
  struct Pending {
    const Json* node;
    std::string rule;
    std::string path;
  };

  Status Error(const std::string& path, const std::string& what) const {
    return InvalidArgument("json schema: " + what + " at " + path);
  }
  Status Unsupported(const std::string& path, const std::string& what) const {
    return valet::Unsupported("json schema: " + what + " at " + path);
  }

  Result<std::string> RuleFor(const Json& node, std::string path, std::string_view base);
  Result<std::string> Compile(const Json& node, const std::string& path);
  Status CheckKeywords(const Json& node, const std::string& path) const;
  Result<const Json*> Resolve(const Json& ref, const std::string& path) const;
  Result<uint8_t> Kinds(const Json& node, const std::string& path) const;
  Result<std::string> Values(const Json& node, const std::string& path);
  Result<std::string> Alternatives(const Json& node, const std::string& path, const char* key);
  Status CheckDisjoint(const Json& branches, const std::string& path) const;
  Result<std::string> Typed(const Json& node, const std::string& path, std::string_view type);
  Result<std::string> Object(const Json& node, const std::string& path);
  Result<std::string> Array(const Json& node, const std::string& path);
  Result<std::string> String(const Json& node, const std::string& path);
  Result<std::string> Number(const Json& node, const std::string& path, bool integer);
  Result<uint32_t> Count(const Json& node, const char* key, const std::string& path,
                         uint32_t fallback) const;

  const Json& root_;
  const JsonSchemaOptions& options_;
  GbnfBuilder& b_;
  JsonTerms& terms_;
  std::map<const Json*, std::string> rules_;
  std::deque<Pending> pending_;
};

Result<std::string> SchemaCompiler::RuleFor(const Json& node, std::string path,
                                            std::string_view base) {
  if (auto it = rules_.find(&node); it != rules_.end()) return it->second;
  if (rules_.size() >= options_.max_subschemas) {
    return OutOfRange("json schema: more than " + std::to_string(options_.max_subschemas) +
                      " subschemas (max_subschemas)");
  }
  std::string rule = b_.Reserve(RuleBase(base));
  rules_.emplace(&node, rule);
  pending_.push_back({&node, rule, std::move(path)});
  return rule;
}

Status SchemaCompiler::CheckKeywords(const Json& node, const std::string& path) const {
  for (const auto& [key, value] : node.items()) {
    if (OneOf(key, kAnnotations)) continue;
    if (!OneOf(key, kKeywords)) return Unsupported(path, "keyword '" + key + "' is not supported");
  }
  if (node.contains("$ref")) {
    for (const auto& [key, value] : node.items()) {
      if (key != "$ref" && !OneOf(key, kAnnotations)) {
        return Unsupported(path, "'" + key + "' beside '$ref' is not supported");
      }
    }
  }
  return Status::Ok();
}

// "#" or a JSON pointer into this document ("#/$defs/item").
Result<const Json*> SchemaCompiler::Resolve(const Json& ref, const std::string& path) const {
  if (!ref.is_string()) return Error(path, "'$ref' is not a string");
  const std::string& text = ref.get_ref<const std::string&>();
  if (text.empty() || text[0] != '#')
    return Unsupported(path, "'$ref' to another document ('" + text + "')");
  if (text.size() > 1 && text[1] != '/')
    return Unsupported(path, "'$ref' by anchor ('" + text + "')");
  const Json* at = &root_;
  size_t pos = 1;
  while (pos < text.size()) {
    size_t end = text.find('/', pos + 1);
    if (end == std::string::npos) end = text.size();
    std::string token;
    for (size_t i = pos + 1; i < end; ++i) {
      if (text[i] == '~' && i + 1 < end && (text[i + 1] == '0' || text[i + 1] == '1')) {
        token += text[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += text[i];
      }
    }
    const Json* next = at->is_object() ? FindMember(*at, token) : nullptr;
    if (next == nullptr) return Error(path, "'$ref' to nothing ('" + text + "')");
    at = next;
    pos = end;
  }
  return at;
}

Result<std::string> SchemaCompiler::Compile(const Json& node, const std::string& path) {
  if (node.is_boolean()) {
    if (node.get<bool>()) return terms_.AnyValue();
    return Error(path, "the schema false admits nothing");
  }
  if (!node.is_object()) return Error(path, "a schema is an object or a boolean");
  VALET_RETURN_IF_ERROR(CheckKeywords(node, path));
  if (const Json* ref = FindMember(node, "$ref")) {
    VALET_ASSIGN_OR_RETURN(const Json* target, Resolve(*ref, path));
    return RuleFor(*target, ref->get<std::string>(), "ref");
  }
  if (node.contains("const") || node.contains("enum")) return Values(node, path);
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    if (node.contains(key)) return Alternatives(node, path, key);
  }
  const Json* type = FindMember(node, "type");
  if (type == nullptr) {
    // No type: the keywords present say which kind is meant; none, any value.
    if (node.contains("properties") || node.contains("required") ||
        node.contains("additionalProperties")) {
      return Object(node, path);
    }
    if (node.contains("items") || node.contains("prefixItems") || node.contains("minItems") ||
        node.contains("maxItems")) {
      return Array(node, path);
    }
    if (node.contains("minLength") || node.contains("maxLength") || node.contains("pattern") ||
        node.contains("format")) {
      return String(node, path);
    }
    if (node.contains("minimum") || node.contains("maximum") || node.contains("exclusiveMinimum") ||
        node.contains("exclusiveMaximum")) {
      return Number(node, path, false);
    }
    return terms_.AnyValue();
  }
  if (type->is_string()) return Typed(node, path, type->get_ref<const std::string&>());
  if (!type->is_array() || type->empty())
    return Error(path, "'type' is a string or a non-empty array");
  std::string out = "(";
  for (size_t i = 0; i < type->size(); ++i) {
    if (!(*type)[i].is_string()) return Error(path, "'type' lists a non-string");
    VALET_ASSIGN_OR_RETURN(std::string alt,
                           Typed(node, path, (*type)[i].get_ref<const std::string&>()));
    out += (i ? " | " : "") + alt;
  }
  return out + ")";
}

// const and enum: the listed values, compact, those of the allowed types.
Result<std::string> SchemaCompiler::Values(const Json& node, const std::string& path) {
  for (const auto& [key, value] : node.items()) {
    if (key != "const" && key != "enum" && key != "type" && !OneOf(key, kAnnotations)) {
      return Unsupported(path, "'" + key + "' beside 'const' or 'enum' is not supported");
    }
  }
  const Json* type = FindMember(node, "type");
  const uint8_t allowed = type == nullptr ? uint8_t{kAnyKind} : KindsOfTypes(*type);
  std::vector<const Json*> values;
  if (const Json* c = FindMember(node, "const")) values.push_back(c);
  if (const Json* e = FindMember(node, "enum")) {
    if (!e->is_array()) return Error(path, "'enum' is not an array");
    if (!values.empty()) return Unsupported(path, "'const' beside 'enum' is not supported");
    for (const Json& v : *e) values.push_back(&v);
  }
  std::string out;
  for (const Json* v : values) {
    if ((KindOfValue(*v) & allowed) == 0) continue;
    out += (out.empty() ? "(" : " | ") + GbnfLiteral(DumpJson(*v));
  }
  if (out.empty()) return Error(path, "no value of 'enum' or 'const' has an allowed type");
  return out + ")";
}

Result<std::string> SchemaCompiler::Alternatives(const Json& node, const std::string& path,
                                                 const char* key) {
  for (const auto& [k, value] : node.items()) {
    if (k != key && !OneOf(k, kAnnotations)) {
      return Unsupported(path, "'" + k + "' beside '" + key + "' is not supported");
    }
  }
  const Json& branches = node[key];
  if (!branches.is_array() || branches.empty())
    return Error(path, std::string("'") + key + "' is not a non-empty array");
  if (std::string_view(key) == "allOf") {
    if (branches.size() != 1)
      return Unsupported(path, "'allOf' with more than one schema is not supported");
    return RuleFor(branches[0], path + "/allOf/0", "all");
  }
  if (std::string_view(key) == "oneOf") VALET_RETURN_IF_ERROR(CheckDisjoint(branches, path));
  std::string out = "(";
  for (size_t i = 0; i < branches.size(); ++i) {
    VALET_ASSIGN_OR_RETURN(std::string rule,
                           RuleFor(branches[i], path + "/" + key + "/" + std::to_string(i), "alt"));
    out += (i ? " | " : "") + rule;
  }
  return out + ")";
}

// The kinds of value a schema can produce, following $ref (a bounded number of hops).
Result<uint8_t> SchemaCompiler::Kinds(const Json& node, const std::string& path) const {
  const Json* at = &node;
  for (int hops = 0; hops < 64; ++hops) {
    if (!at->is_object())
      return at->is_boolean() && !at->get<bool>() ? uint8_t{0} : uint8_t{kAnyKind};
    const Json* ref = FindMember(*at, "$ref");
    if (ref == nullptr) break;
    VALET_ASSIGN_OR_RETURN(at, Resolve(*ref, path));
  }
  if (const Json* c = FindMember(*at, "const")) return KindOfValue(*c);
  uint8_t kinds = kAnyKind;
  if (const Json* type = FindMember(*at, "type")) {
    kinds = 0;
    if (type->is_string()) kinds = KindsOfType(type->get_ref<const std::string&>());
    if (type->is_array()) {
      for (const Json& t : *type)
        kinds |= t.is_string() ? KindsOfType(t.get_ref<const std::string&>()) : 0;
    }
  }
  if (const Json* e = FindMember(*at, "enum"); e != nullptr && e->is_array()) {
    uint8_t of_values = 0;
    for (const Json& v : *e) of_values |= KindOfValue(v);
    kinds &= of_values | (of_values & kInt ? kFrac : 0);
  }
  return kinds;
}

// oneOf is compiled as anyOf, which is right only when no value can match two
// branches: each branch a different kind of value, or objects told apart by
// a required property's distinct const/enum values.
Status SchemaCompiler::CheckDisjoint(const Json& branches, const std::string& path) const {
  uint8_t seen = 0;
  bool disjoint = true;
  for (const Json& b : branches) {
    VALET_ASSIGN_OR_RETURN(const uint8_t k, Kinds(b, path));
    if ((k & seen) != 0) disjoint = false;
    seen |= k;
  }
  if (disjoint) return Status::Ok();
  // A discriminator: one property every branch requires, each with its own values.
  std::map<std::string, std::vector<std::string>> values_by_property;
  std::map<std::string, size_t> branches_with;
  for (const Json& b : branches) {
    const Json* props = b.is_object() ? FindMember(b, "properties") : nullptr;
    const Json* required = b.is_object() ? FindMember(b, "required") : nullptr;
    if (props == nullptr || required == nullptr || !required->is_array()) continue;
    for (const Json& r : *required) {
      const Json* p = r.is_string() ? FindMember(*props, r.get_ref<const std::string&>()) : nullptr;
      if (p == nullptr || !p->is_object()) continue;
      std::vector<std::string>& vals = values_by_property[r.get<std::string>()];
      if (const Json* c = FindMember(*p, "const"))
        vals.push_back(DumpJson(*c));
      else if (const Json* e = FindMember(*p, "enum"); e != nullptr && e->is_array()) {
        for (const Json& v : *e) vals.push_back(DumpJson(v));
      } else {
        continue;
      }
      ++branches_with[r.get<std::string>()];
    }
  }
  for (auto& [name, vals] : values_by_property) {
    if (branches_with[name] != branches.size()) continue;
    std::sort(vals.begin(), vals.end());
    if (std::adjacent_find(vals.begin(), vals.end()) == vals.end()) return Status::Ok();
  }
  return Unsupported(
      path,
      "'oneOf' whose branches may match the same value (use 'anyOf', or tell them apart "
      "by type or by a required property's const)");
}

Result<std::string> SchemaCompiler::Typed(const Json& node, const std::string& path,
                                          std::string_view type) {
  if (type == "null") return std::string("\"null\"");
  if (type == "boolean") return std::string("(\"true\" | \"false\")");
  if (type == "integer") return Number(node, path, true);
  if (type == "number") return Number(node, path, false);
  if (type == "string") return String(node, path);
  if (type == "array") return Array(node, path);
  if (type == "object") return Object(node, path);
  return Error(path, "unknown type '" + std::string(type) + "'");
}

Result<uint32_t> SchemaCompiler::Count(const Json& node, const char* key, const std::string& path,
                                       uint32_t fallback) const {
  const Json* v = FindMember(node, key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer() && !v->is_number_unsigned()) {
    if (!(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
          v->get<double>() >= 0)) {
      return Error(path, std::string("'") + key + "' is not a non-negative integer");
    }
  }
  const double d = v->get<double>();
  if (d < 0) return Error(path, std::string("'") + key + "' is negative");
  if (d > options_.max_length) {
    return OutOfRange("json schema: '" + std::string(key) + "' above " +
                      std::to_string(options_.max_length) + " (max_length) at " + path);
  }
  return static_cast<uint32_t>(d);
}

Result<std::string> SchemaCompiler::Object(const Json& node, const std::string& path) {
  const Json* props = FindMember(node, "properties");
  const Json* required = FindMember(node, "required");
  const Json* additional = FindMember(node, "additionalProperties");
  if (props != nullptr && !props->is_object()) return Error(path, "'properties' is not an object");
  if (required != nullptr && !required->is_array())
    return Error(path, "'required' is not an array");
  if (additional != nullptr && !additional->is_boolean() && !additional->is_object()) {
    return Error(path, "'additionalProperties' is not a schema");
  }
  const bool map_of = additional != nullptr && additional->is_object();
  if (map_of && props != nullptr && !props->empty()) {
    return Unsupported(path,
                       "'additionalProperties' as a schema beside 'properties' is not supported");
  }
  if (map_of) {
    VALET_ASSIGN_OR_RETURN(std::string value,
                           RuleFor(*additional, path + "/additionalProperties", "value"));
    if (required != nullptr && !required->empty()) {
      return Unsupported(path,
                         "'required' with a map ('additionalProperties' schema) is not supported");
    }
    return terms_.Map(value);
  }
  if (props == nullptr) {
    if (required != nullptr && !required->empty()) {
      return Error(path, "'required' names properties that 'properties' does not define");
    }
    if (additional != nullptr && additional->is_boolean() && !additional->get<bool>())
      return terms_.EmptyObject();
    return terms_.AnyObject();
  }
  std::vector<JsonTerms::Property> list;
  for (const auto& [name, schema] : props->items()) {
    VALET_ASSIGN_OR_RETURN(std::string rule, RuleFor(schema, path + "/properties/" + name, name));
    list.push_back({GbnfLiteral(DumpJson(Json(name))), std::move(rule), false});
  }
  if (required != nullptr) {
    for (const Json& r : *required) {
      if (!r.is_string()) return Error(path, "'required' lists a non-string");
      size_t i = 0;
      for (const auto& [name, schema] : props->items()) {
        if (name == r.get_ref<const std::string&>()) break;
        ++i;
      }
      if (i == list.size()) {
        return Unsupported(
            path, "required property '" + r.get<std::string>() + "' is not in 'properties'");
      }
      list[i].required = true;
    }
  }
  return terms_.Properties(list);
}

Result<std::string> SchemaCompiler::Array(const Json& node, const std::string& path) {
  const Json* prefix = FindMember(node, "prefixItems");
  const Json* items = FindMember(node, "items");
  if (prefix != nullptr && !prefix->is_array()) return Error(path, "'prefixItems' is not an array");
  if (items != nullptr && items->is_array()) {
    return Unsupported(path, "'items' as an array (use 'prefixItems')");
  }
  VALET_ASSIGN_OR_RETURN(const uint32_t min_items, Count(node, "minItems", path, 0));
  const bool bounded = node.contains("maxItems");
  VALET_ASSIGN_OR_RETURN(const uint32_t max_items, Count(node, "maxItems", path, 0));
  if (bounded && max_items < min_items) return Error(path, "'maxItems' below 'minItems'");
  std::vector<std::string> fixed;
  if (prefix != nullptr) {
    for (size_t i = 0; i < prefix->size(); ++i) {
      VALET_ASSIGN_OR_RETURN(
          std::string rule,
          RuleFor((*prefix)[i], path + "/prefixItems/" + std::to_string(i), "item"));
      fixed.push_back(std::move(rule));
    }
  }
  std::string rest;  // empty: no items after the prefix
  if (items == nullptr) {
    rest = terms_.AnyValue();
  } else if (!(items->is_boolean() && !items->get<bool>())) {
    VALET_ASSIGN_OR_RETURN(rest, RuleFor(*items, path + "/items", "item"));
  }
  if (rest.empty() && min_items > fixed.size())
    return Error(path, "'minItems' above the items allowed");
  JsonTerms::ArrayShape shape{std::move(fixed), std::move(rest), min_items, bounded, max_items};
  return terms_.Array(shape);
}

Result<std::string> SchemaCompiler::String(const Json& node, const std::string& path) {
  const Json* format = FindMember(node, "format");
  const Json* pattern = FindMember(node, "pattern");
  const bool has_length = node.contains("minLength") || node.contains("maxLength");
  if ((format != nullptr) + (pattern != nullptr) + has_length > 1) {
    return Unsupported(
        path, "'format', 'pattern' and 'minLength'/'maxLength' together are not supported");
  }
  if (format != nullptr) {
    if (!format->is_string()) return Error(path, "'format' is not a string");
    Result<std::string> f = terms_.Format(format->get_ref<const std::string&>());
    if (!f.ok()) return Unsupported(path, f.status().message());
    return f;
  }
  if (pattern != nullptr) {
    if (!pattern->is_string()) return Error(path, "'pattern' is not a string");
    RegexOptions ro;
    ro.text = RegexText::kJsonString;
    ro.anchoring = RegexAnchoring::kSearch;
    Result<std::string> re = RegexToGbnf(pattern->get_ref<const std::string&>(), ro, b_);
    if (!re.ok())
      return Status(re.status().code(),
                    "json schema: 'pattern': " + re.status().message() + " at " + path);
    return "\"\\\"\" " + re.value() + " \"\\\"\"";
  }
  VALET_ASSIGN_OR_RETURN(const uint32_t min_length, Count(node, "minLength", path, 0));
  const bool bounded = node.contains("maxLength");
  VALET_ASSIGN_OR_RETURN(const uint32_t max_length, Count(node, "maxLength", path, 0));
  if (bounded && max_length < min_length) return Error(path, "'maxLength' below 'minLength'");
  return terms_.String(min_length, bounded, max_length);
}

Result<std::string> SchemaCompiler::Number(const Json& node, const std::string& path,
                                           bool integer) {
  struct BoundKeyword {
    const char* key;
    bool lower;
    bool exclusive;
  };
  static constexpr BoundKeyword kBounds[] = {{"minimum", true, false},
                                             {"maximum", false, false},
                                             {"exclusiveMinimum", true, true},
                                             {"exclusiveMaximum", false, true}};
  NumberBounds bounds;
  for (const BoundKeyword& k : kBounds) {
    const Json* v = FindMember(node, k.key);
    if (v == nullptr) continue;
    if (!v->is_number()) return Error(path, std::string("'") + k.key + "' is not a number");
    Status s = bounds.Add(v->get<double>(), k.lower, k.exclusive, integer);
    if (!s.ok())
      return Status(s.code(),
                    "json schema: '" + std::string(k.key) + "' " + s.message() + " at " + path);
  }
  Result<std::string> out = integer ? terms_.Integer(bounds) : terms_.Number(bounds);
  if (!out.ok())
    return Status(out.status().code(), "json schema: " + out.status().message() + " at " + path);
  return out;
}

}  // namespace

GrammarLimits JsonSchemaGrammarLimits(const JsonSchemaOptions& options) {
  GrammarLimits limits;
  limits.max_text_bytes = 4 * 1024 * 1024;
  limits.max_rules = 1u << 16;
  limits.max_repetition = std::max<uint32_t>(limits.max_repetition, options.max_length);
  return limits;
}

Result<std::string> AddJsonSchemaRules(const Json& schema, const JsonSchemaOptions& options, GbnfBuilder& b,
                                       JsonTerms& terms) {
  return SchemaCompiler(schema, options, b, terms).Run();
}

Result<std::string> ParsedJsonSchemaToGbnf(const Json& schema, const JsonSchemaOptions& options) {
  GbnfBuilder b;
  JsonTerms terms(b, options.max_whitespace);
  VALET_ASSIGN_OR_RETURN(std::string top, AddJsonSchemaRules(schema, options, b, terms));
  terms.DefineWhitespace();
  return b.Text(top);
}

Result<std::string> JsonSchemaToGbnf(std::string_view schema_text,
                                     const JsonSchemaOptions& options) {
  if (schema_text.size() > options.max_schema_bytes) {
    return OutOfRange("json schema: larger than " + std::to_string(options.max_schema_bytes) +
                      " bytes");
  }
  Result<Json> schema = ParseJson(schema_text, options.max_depth);
  if (!schema.ok()) return InvalidArgument("json schema: " + schema.status().message());
  return ParsedJsonSchemaToGbnf(schema.value(), options);
}

std::string JsonObjectGbnf(const JsonSchemaOptions& options) {
  GbnfBuilder b;
  JsonTerms terms(b, options.max_whitespace);
  const std::string object = terms.AnyObject();
  terms.DefineWhitespace();
  return b.Text(object);
}

}  // namespace valet
