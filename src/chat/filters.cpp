#include "chat/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <list>
#include <map>
#include <string>
#include <vector>

#include "chat/value_ops.h"

namespace valet::chat {
namespace {

using FilterFn = std::function<Result<Value>(const Value&, const CallArgs&)>;
using TestFn = std::function<Result<bool>(const Value&, const CallArgs&)>;

Status TypeError(std::string_view filter, const Value& v) {
  return InvalidArgument("filter '" + std::string(filter) + "' cannot take a " + v.KindName());
}

// Jinja sorts stably. Not with std::stable_sort, whose buffer libstdc++ 12
// takes from the deprecated std::get_temporary_buffer, nor with std::sort and
// the index as tie-break: a template's keys need not be ordered (NaN, floats
// against large ints, failed comparisons answering false), and std::sort may
// then step out of the range; list::sort only merges.
template <class T, class Less>
void StableSort(std::vector<T>& items, Less less) {
  std::list<T> sorted(std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
  sorted.sort(less);
  std::move(sorted.begin(), sorted.end(), items.begin());
}

bool FlagArg(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
  const Value* v = args.Get(index, name);
  return v == nullptr ? fallback : v->Truthy();
}

Result<Value> Length(const Value& v, const CallArgs&) {
  if (v.is_string()) return Value::Int(static_cast<int64_t>(CodePointCount(v.AsString())));
  if (v.is_array()) return Value::Int(static_cast<int64_t>(v.array().size()));
  if (v.is_object()) return Value::Int(static_cast<int64_t>(v.object().size()));
  if (v.is_undefined()) return Value::Int(0);
  return TypeError("length", v);
}

Result<Value> ToJsonFilter(const Value& v, const CallArgs& args) {
  JsonOptions options;
  if (const Value* indent = args.Get(0, "indent"); indent != nullptr && !indent->is_none()) {
    if (!indent->is_int() || indent->AsInt() < 0 || indent->AsInt() > 32) {
      return InvalidArgument("tojson: indent must be an integer from 0 to 32");
    }
    options.indent = static_cast<int>(indent->AsInt());
  }
  const Value* ensure_ascii = args.Keyword("ensure_ascii");
  options.ensure_ascii = ensure_ascii != nullptr && ensure_ascii->Truthy();
  VALET_ASSIGN_OR_RETURN(std::string json, ToJson(v, options));
  return Value::String(std::move(json));
}

Result<Value> Trim(const Value& v, const CallArgs& args) {
  if (!v.is_string()) return v.is_undefined() ? Value::String("") : Value::String(StripChars(v.ToString(), nullptr, true, true));
  const Value* chars = args.Get(0, "chars");
  const std::string* set = chars != nullptr && chars->is_string() ? &chars->AsString() : nullptr;
  return Value::String(StripChars(v.AsString(), set, true, true));
}

Result<Value> StringMap(const Value& v, std::string (*fn)(std::string_view)) {
  return Value::String(fn(v.is_string() ? v.AsString() : v.ToString()));
}

Result<Value> Default(const Value& v, const CallArgs& args) {
  const Value* fallback = args.Get(0, "default_value");
  const bool use_for_falsy = FlagArg(args, 1, "boolean", false);
  if (v.is_undefined() || (use_for_falsy && !v.Truthy())) return fallback != nullptr ? *fallback : Value::String("");
  return v;
}

Result<Value> FirstOrLast(const Value& v, bool first) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  if (items.empty()) return Value();
  return first ? items.front() : items.back();
}

Result<Value> Join(const Value& v, const CallArgs& args) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  const Value* sep = args.Get(0, "d");
  const Value* attribute = args.Get(1, "attribute");
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && sep != nullptr) out += sep->ToString();
    const Value item = attribute != nullptr ? GetAttribute(items[i], attribute->ToString()) : items[i];
    out += item.ToString();
  }
  return Value::String(std::move(out));
}

Result<Value> Replace(const Value& v, const CallArgs& args) {
  const Value* from = args.Get(0, "old");
  const Value* to = args.Get(1, "new");
  const Value* count = args.Get(2, "count");
  if (from == nullptr || to == nullptr) return InvalidArgument("replace needs two arguments");
  return Value::String(ReplaceAll(v.ToString(), from->ToString(), to->ToString(),
                                  count != nullptr && count->is_int() ? count->AsInt() : -1));
}

Result<Value> Items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::NewArray();
  if (!v.is_object()) return TypeError("items", v);
  Value::Array out;
  for (const auto& [k, member] : v.object()) out.push_back(Value::NewArray({Value::String(k), member}));
  return Value::NewArray(std::move(out));
}

Result<Value> DictSort(const Value& v, const CallArgs& args) {
  if (!v.is_object()) return TypeError("dictsort", v);
  const bool case_sensitive = FlagArg(args, 0, "case_sensitive", false);
  const Value* by = args.Get(1, "by");
  const bool by_value = by != nullptr && by->is_string() && by->AsString() == "value";
  const bool reverse = FlagArg(args, 2, "reverse", false);
  std::vector<std::pair<std::string, Value>> entries = v.object();
  Status error = Status::Ok();
  auto key_of = [&](const std::pair<std::string, Value>& e) {
    const Value k = by_value ? e.second : Value::String(e.first);
    return k.is_string() && !case_sensitive ? Value::String(AsciiLower(k.AsString())) : k;
  };
  StableSort(entries, [&](const auto& a, const auto& b) {
    Result<int> c = Compare(key_of(a), key_of(b));
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  VALET_RETURN_IF_ERROR(error);
  Value::Array out;
  for (auto& [k, member] : entries) out.push_back(Value::NewArray({Value::String(k), member}));
  return Value::NewArray(std::move(out));
}

Result<Value> SelectOrReject(const Value& v, const CallArgs& args, bool by_attribute, bool select) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) return InvalidArgument("selectattr/rejectattr need an attribute name");
    attribute = args.positional[next++].ToString();
  }
  std::string test;
  if (next < args.positional.size()) test = args.positional[next++].ToString();
  if (!test.empty() && !IsKnownTest(test)) return InvalidArgument("unknown test '" + test + "'");
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
  Value::Array out;
  for (const Value& item : items) {
    const Value subject = by_attribute ? GetAttribute(item, attribute) : item;
    bool passed = subject.Truthy();
    if (!test.empty()) {
      VALET_ASSIGN_OR_RETURN(passed, ApplyTest(test, subject, test_args));
    }
    if (passed == select) out.push_back(item);
  }
  return Value::NewArray(std::move(out));
}

Result<Value> Map(const Value& v, const CallArgs& args) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  Value::Array out;
  if (const Value* attribute = args.Keyword("attribute")) {
    const Value* fallback = args.Keyword("default");
    for (const Value& item : items) {
      Value got = GetAttribute(item, attribute->ToString());
      out.push_back(got.is_undefined() && fallback != nullptr ? *fallback : got);
    }
    return Value::NewArray(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return InvalidArgument("map needs a filter name or attribute=");
  }
  const std::string filter = args.positional[0].AsString();
  if (!IsKnownFilter(filter)) return InvalidArgument("unknown filter '" + filter + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    VALET_ASSIGN_OR_RETURN(Value mapped, ApplyFilter(filter, item, rest));
    out.push_back(std::move(mapped));
  }
  return Value::NewArray(std::move(out));
}

Result<Value> ToInt(const Value& v, const CallArgs& args) {
  const Value* fallback = args.Get(0, "default");
  if (v.is_int()) return v;
  if (v.is_float()) return Value::Int(static_cast<int64_t>(v.AsDouble()));
  if (v.is_bool()) return Value::Int(v.AsBool() ? 1 : 0);
  if (v.is_string()) {
    const std::string s = StripChars(v.AsString(), nullptr, true, true);
    char* end = nullptr;
    const long long parsed = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end != nullptr && *end == '\0') return Value::Int(parsed);
  }
  return fallback != nullptr ? *fallback : Value::Int(0);
}

Result<Value> ToFloat(const Value& v, const CallArgs& args) {
  const Value* fallback = args.Get(0, "default");
  if (v.is_number()) return Value::Float(v.AsDouble());
  if (v.is_bool()) return Value::Float(v.AsBool() ? 1.0 : 0.0);
  if (v.is_string()) {
    const std::string s = StripChars(v.AsString(), nullptr, true, true);
    char* end = nullptr;
    const double parsed = std::strtod(s.c_str(), &end);
    if (!s.empty() && end != nullptr && *end == '\0') return Value::Float(parsed);
  }
  return fallback != nullptr ? *fallback : Value::Float(0.0);
}

Result<Value> Indent(const Value& v, const CallArgs& args) {
  const Value* width = args.Get(0, "width");
  const std::string pad = width == nullptr ? std::string(4, ' ')
                          : width->is_int() ? std::string(static_cast<size_t>(std::clamp<int64_t>(width->AsInt(), 0, 256)), ' ')
                                            : width->ToString();
  const bool first = FlagArg(args, 1, "first", false);
  const bool blank = FlagArg(args, 2, "blank", false);
  const std::string s = v.ToString();
  std::string out;
  size_t start = 0;
  for (size_t line = 0;; ++line) {
    const size_t nl = s.find('\n', start);
    const std::string_view text = std::string_view(s).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((line > 0 || first) && (blank || !text.empty())) out += pad;
    out += text;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return Value::String(std::move(out));
}

Result<Value> MinMax(const Value& v, bool want_min) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  if (items.empty()) return Value();
  Value best = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    VALET_ASSIGN_OR_RETURN(int c, Compare(items[i], best));
    if (want_min ? c < 0 : c > 0) best = items[i];
  }
  return best;
}

Result<Value> Sort(const Value& v, const CallArgs& args) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  const bool reverse = FlagArg(args, 0, "reverse", false);
  const Value* attribute = args.Get(2, "attribute");
  Status error = Status::Ok();
  StableSort(items, [&](const Value& a, const Value& b) {
    const Value ka = attribute != nullptr ? GetAttribute(a, attribute->ToString()) : a;
    const Value kb = attribute != nullptr ? GetAttribute(b, attribute->ToString()) : b;
    Result<int> c = Compare(ka, kb);
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  VALET_RETURN_IF_ERROR(error);
  return Value::NewArray(std::move(items));
}

Result<Value> Unique(const Value& v, const CallArgs&) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  Value::Array out;
  for (const Value& item : items) {
    if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return o.Equals(item); })) out.push_back(item);
  }
  return Value::NewArray(std::move(out));
}

Result<Value> Reverse(const Value& v, const CallArgs&) {
  VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return Value::NewArray(std::move(items));
  std::string out;
  for (const Value& cp : items) out += cp.AsString();
  return Value::String(std::move(out));
}

const std::map<std::string, FilterFn, std::less<>>& Filters() {
  static const auto* filters = new std::map<std::string, FilterFn, std::less<>>{
      {"abs", [](const Value& v, const CallArgs&) -> Result<Value> {
         if (v.is_int()) return Value::Int(std::llabs(v.AsInt()));
         if (v.is_float()) return Value::Float(std::fabs(v.AsDouble()));
         return TypeError("abs", v);
       }},
      {"capitalize", [](const Value& v, const CallArgs&) { return StringMap(v, Capitalize); }},
      {"count", Length},
      {"d", Default},
      {"default", Default},
      {"dictsort", DictSort},
      {"first", [](const Value& v, const CallArgs&) { return FirstOrLast(v, true); }},
      {"float", ToFloat},
      {"indent", Indent},
      {"int", ToInt},
      {"items", Items},
      {"join", Join},
      {"last", [](const Value& v, const CallArgs&) { return FirstOrLast(v, false); }},
      {"length", Length},
      {"list", [](const Value& v, const CallArgs&) -> Result<Value> {
         VALET_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
         return Value::NewArray(std::move(items));
       }},
      {"lower", [](const Value& v, const CallArgs&) { return StringMap(v, AsciiLower); }},
      {"map", Map},
      {"max", [](const Value& v, const CallArgs&) { return MinMax(v, false); }},
      {"min", [](const Value& v, const CallArgs&) { return MinMax(v, true); }},
      {"reject", [](const Value& v, const CallArgs& a) { return SelectOrReject(v, a, false, false); }},
      {"rejectattr", [](const Value& v, const CallArgs& a) { return SelectOrReject(v, a, true, false); }},
      {"replace", Replace},
      {"reverse", Reverse},
      {"safe", [](const Value& v, const CallArgs&) -> Result<Value> { return v; }},
      {"select", [](const Value& v, const CallArgs& a) { return SelectOrReject(v, a, false, true); }},
      {"selectattr", [](const Value& v, const CallArgs& a) { return SelectOrReject(v, a, true, true); }},
      {"sort", Sort},
      {"string", [](const Value& v, const CallArgs&) -> Result<Value> { return Value::String(v.ToString()); }},
      {"title", [](const Value& v, const CallArgs&) { return StringMap(v, TitleCase); }},
      {"tojson", ToJsonFilter},
      {"trim", Trim},
      {"unique", Unique},
      {"upper", [](const Value& v, const CallArgs&) { return StringMap(v, AsciiUpper); }},
  };
  return *filters;
}

Result<bool> CompareTest(const Value& v, const CallArgs& args, bool (*pred)(int)) {
  if (args.positional.empty()) return InvalidArgument("comparison test needs an argument");
  VALET_ASSIGN_OR_RETURN(int c, Compare(v, args.positional[0]));
  return pred(c);
}

TestFn Kind(bool (*pred)(const Value&)) {
  return [pred](const Value& v, const CallArgs&) -> Result<bool> { return pred(v); };
}

Result<bool> EqualTo(const Value& v, const CallArgs& args) {
  if (args.positional.empty()) return InvalidArgument("equality test needs an argument");
  return v.Equals(args.positional[0]);
}

const std::map<std::string, TestFn, std::less<>>& Tests() {
  static const auto* tests = new std::map<std::string, TestFn, std::less<>>{
      {"boolean", Kind([](const Value& v) { return v.is_bool(); })},
      {"callable", Kind([](const Value& v) { return v.is_callable(); })},
      {"defined", Kind([](const Value& v) { return !v.is_undefined(); })},
      {"divisibleby", [](const Value& v, const CallArgs& a) -> Result<bool> {
         if (!v.is_int() || a.positional.empty() || !a.positional[0].is_int() || a.positional[0].AsInt() == 0) {
           return InvalidArgument("divisibleby needs two non-zero integers");
         }
         return v.AsInt() % a.positional[0].AsInt() == 0;
       }},
      {"eq", EqualTo},
      {"equalto", EqualTo},
      {"even", Kind([](const Value& v) { return v.is_int() && v.AsInt() % 2 == 0; })},
      {"false", Kind([](const Value& v) { return v.is_bool() && !v.AsBool(); })},
      {"float", Kind([](const Value& v) { return v.is_float(); })},
      {"ge", [](const Value& v, const CallArgs& a) { return CompareTest(v, a, [](int c) { return c >= 0; }); }},
      {"gt", [](const Value& v, const CallArgs& a) { return CompareTest(v, a, [](int c) { return c > 0; }); }},
      {"in", [](const Value& v, const CallArgs& a) -> Result<bool> {
         if (a.positional.empty()) return InvalidArgument("'in' test needs a container");
         return Contains(a.positional[0], v);
       }},
      {"integer", Kind([](const Value& v) { return v.is_int(); })},
      {"iterable", Kind([](const Value& v) { return v.is_array() || v.is_object() || v.is_string(); })},
      {"le", [](const Value& v, const CallArgs& a) { return CompareTest(v, a, [](int c) { return c <= 0; }); }},
      {"lower", Kind([](const Value& v) { return v.is_string() && AsciiLower(v.AsString()) == v.AsString(); })},
      {"lt", [](const Value& v, const CallArgs& a) { return CompareTest(v, a, [](int c) { return c < 0; }); }},
      {"mapping", Kind([](const Value& v) { return v.is_object(); })},
      {"ne", [](const Value& v, const CallArgs& a) -> Result<bool> {
         VALET_ASSIGN_OR_RETURN(bool eq, EqualTo(v, a));
         return !eq;
       }},
      {"none", Kind([](const Value& v) { return v.is_none(); })},
      {"number", Kind([](const Value& v) { return v.is_number(); })},
      {"odd", Kind([](const Value& v) { return v.is_int() && v.AsInt() % 2 != 0; })},
      {"sequence", Kind([](const Value& v) { return v.is_array() || v.is_object() || v.is_string(); })},
      {"string", Kind([](const Value& v) { return v.is_string(); })},
      {"true", Kind([](const Value& v) { return v.is_bool() && v.AsBool(); })},
      {"undefined", Kind([](const Value& v) { return v.is_undefined(); })},
      {"upper", Kind([](const Value& v) { return v.is_string() && AsciiUpper(v.AsString()) == v.AsString(); })},
  };
  return *tests;
}

}  // namespace

bool IsKnownFilter(std::string_view name) { return Filters().find(name) != Filters().end(); }
bool IsKnownTest(std::string_view name) { return Tests().find(name) != Tests().end(); }

Result<Value> ApplyFilter(std::string_view name, const Value& operand, const CallArgs& args) {
  auto it = Filters().find(name);
  if (it == Filters().end()) return InvalidArgument("unknown filter '" + std::string(name) + "'");
  return it->second(operand, args);
}

Result<bool> ApplyTest(std::string_view name, const Value& operand, const CallArgs& args) {
  auto it = Tests().find(name);
  if (it == Tests().end()) return InvalidArgument("unknown test '" + std::string(name) + "'");
  return it->second(operand, args);
}

}  // namespace valet::chat
