#include "chat/value_ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace valet::chat {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

Result<std::string> StringArg(const CallArgs& args, size_t index, std::string_view name, const char* method) {
  const Value* v = args.Get(index, name);
  if (v == nullptr || !v->is_string()) {
    return InvalidArgument(std::string(method) + "() needs a string argument '" + std::string(name) + "'");
  }
  return v->AsString();
}

// Python's str.split: no separator splits on whitespace runs and drops empties.
Value Split(const std::string& s, const Value* sep, int64_t maxsplit) {
  Value::Array parts;
  if (sep == nullptr || sep->is_none()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && IsSpace(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        std::string rest = s.substr(i);
        while (!rest.empty() && IsSpace(rest.back())) rest.pop_back();
        parts.push_back(Value::String(rest));
        break;
      }
      size_t j = i;
      while (j < s.size() && !IsSpace(s[j])) ++j;
      parts.push_back(Value::String(s.substr(i, j - i)));
      i = j;
    }
    return Value::NewArray(std::move(parts));
  }
  const std::string& d = sep->AsString();
  size_t start = 0;
  while (true) {
    const bool may_split = maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit;
    const size_t found = may_split ? s.find(d, start) : std::string::npos;
    if (found == std::string::npos) {
      parts.push_back(Value::String(s.substr(start)));
      break;
    }
    parts.push_back(Value::String(s.substr(start, found - start)));
    start = found + d.size();
  }
  return Value::NewArray(std::move(parts));
}

Result<bool> AffixMatch(const std::string& s, const Value& pattern, bool prefix) {
  auto match = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (pattern.is_string()) return match(pattern.AsString());
  if (pattern.is_array()) {
    for (const Value& p : pattern.array()) {
      if (!p.is_string()) return InvalidArgument("startswith/endswith tuple elements must be strings");
      if (match(p.AsString())) return true;
    }
    return false;
  }
  return InvalidArgument("startswith/endswith needs a string or a tuple of strings");
}

Result<Value> CallStringMethod(const std::string& s, std::string_view method, const CallArgs& args) {
  if (method == "strip" || method == "lstrip" || method == "rstrip") {
    const Value* chars = args.Get(0, "chars");
    const std::string* set = chars != nullptr && chars->is_string() ? &chars->AsString() : nullptr;
    return Value::String(StripChars(s, set, method != "rstrip", method != "lstrip"));
  }
  if (method == "upper") return Value::String(AsciiUpper(s));
  if (method == "lower") return Value::String(AsciiLower(s));
  if (method == "title") return Value::String(TitleCase(s));
  if (method == "capitalize") return Value::String(Capitalize(s));
  if (method == "startswith" || method == "endswith") {
    const Value* p = args.Get(0, "prefix");
    if (p == nullptr) return InvalidArgument(std::string(method) + "() needs an argument");
    VALET_ASSIGN_OR_RETURN(bool m, AffixMatch(s, *p, method == "startswith"));
    return Value::Bool(m);
  }
  if (method == "split") {
    const Value* maxsplit = args.Get(1, "maxsplit");
    const Value* sep = args.Get(0, "sep");
    if (sep != nullptr && sep->is_string() && sep->AsString().empty()) return InvalidArgument("split(): empty separator");
    if (sep != nullptr && !sep->is_string() && !sep->is_none()) return InvalidArgument("split(): separator must be a string");
    return Split(s, sep, maxsplit != nullptr && maxsplit->is_int() ? maxsplit->AsInt() : -1);
  }
  if (method == "replace") {
    VALET_ASSIGN_OR_RETURN(std::string from, StringArg(args, 0, "old", "replace"));
    VALET_ASSIGN_OR_RETURN(std::string to, StringArg(args, 1, "new", "replace"));
    const Value* count = args.Get(2, "count");
    return Value::String(ReplaceAll(s, from, to, count != nullptr && count->is_int() ? count->AsInt() : -1));
  }
  if (method == "find") {
    VALET_ASSIGN_OR_RETURN(std::string sub, StringArg(args, 0, "sub", "find"));
    const size_t at = s.find(sub);
    return Value::Int(at == std::string::npos ? -1 : static_cast<int64_t>(CodePointCount(s.substr(0, at))));
  }
  return InvalidArgument("strings have no method '" + std::string(method) + "'");
}

Result<Value> CallObjectMethod(const Value& object, std::string_view method, const CallArgs& args) {
  if (method == "get") {
    const Value* key = args.Get(0, "key");
    if (key == nullptr || !key->is_string()) return InvalidArgument("get() needs a string key");
    if (const Value* found = object.Find(key->AsString())) return *found;
    const Value* fallback = args.Get(1, "default");
    return fallback != nullptr ? *fallback : Value::None();
  }
  Value::Array out;
  for (const auto& [k, v] : object.object()) {
    if (method == "items") {
      out.push_back(Value::NewArray({Value::String(k), v}));
    } else if (method == "keys") {
      out.push_back(Value::String(k));
    } else {
      out.push_back(v);
    }
  }
  return Value::NewArray(std::move(out));
}

bool IsStringMethod(std::string_view n) {
  return n == "strip" || n == "lstrip" || n == "rstrip" || n == "upper" || n == "lower" || n == "title" ||
         n == "capitalize" || n == "startswith" || n == "endswith" || n == "split" || n == "replace" || n == "find";
}

bool IsObjectMethod(std::string_view n) { return n == "get" || n == "items" || n == "keys" || n == "values"; }

int64_t NormalizeIndex(int64_t i, int64_t size) { return i < 0 ? i + size : i; }

void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  *out += '"';
  for (std::string_view cp : SplitCodePoints(s)) {
    const unsigned char c = static_cast<unsigned char>(cp[0]);
    char buf[16];
    if (cp.size() == 1) {
      switch (c) {
        case '"': *out += "\\\""; continue;
        case '\\': *out += "\\\\"; continue;
        case '\b': *out += "\\b"; continue;
        case '\f': *out += "\\f"; continue;
        case '\n': *out += "\\n"; continue;
        case '\r': *out += "\\r"; continue;
        case '\t': *out += "\\t"; continue;
        default: break;
      }
      if (c < 0x20) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        *out += buf;
        continue;
      }
    }
    if (!ensure_ascii || c < 0x80 || cp.size() == 1) {
      *out += cp;
      continue;
    }
    uint32_t code = c & (0xFF >> (cp.size() + 1));
    for (size_t i = 1; i < cp.size(); ++i) code = (code << 6) | (static_cast<unsigned char>(cp[i]) & 0x3F);
    if (code >= 0x10000) {
      code -= 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF));
    } else {
      std::snprintf(buf, sizeof(buf), "\\u%04x", code);
    }
    *out += buf;
  }
  *out += '"';
}

// Between container elements: ", " on one line, or "," and a new indented line.
void AppendSeparator(bool first, const JsonOptions& options, const std::string& child_pad, std::string* out) {
  if (!first) out->append(options.indent > 0 ? "," : ", ");
  if (options.indent > 0) out->append(child_pad);
}

Status AppendJson(const Value& v, const JsonOptions& options, int depth, std::string* out) {
  if (depth > Value::kMaxNesting) {
    return OutOfRange("tojson: nested deeper than " + std::to_string(Value::kMaxNesting) +
                      " levels (does a value contain itself?)");
  }
  if (out->size() > options.max_bytes) {
    return OutOfRange("tojson: output exceeds " + std::to_string(options.max_bytes) + " bytes");
  }
  std::string pad, child_pad;
  if (options.indent > 0) {
    pad.assign(static_cast<size_t>(options.indent) * static_cast<size_t>(depth) + 1, ' ');
    pad[0] = '\n';
    child_pad = pad;
    child_pad.append(static_cast<size_t>(options.indent), ' ');
  }
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
    case Value::Kind::kCallable:
      *out += "null";
      return Status::Ok();
    case Value::Kind::kBool:
    case Value::Kind::kInt:
      *out += v.ToString();
      return Status::Ok();
    case Value::Kind::kFloat: {
      // JavaScript's JSON.stringify prints integral floats without ".0".
      const double d = v.AsDouble();
      *out += std::trunc(d) == d && std::fabs(d) < 1e16 ? std::to_string(static_cast<int64_t>(d)) : FormatFloat(d);
      return Status::Ok();
    }
    case Value::Kind::kString:
      AppendJsonString(v.AsString(), options.ensure_ascii, out);
      return Status::Ok();
    case Value::Kind::kArray: {
      *out += '[';
      const auto& items = v.array();
      for (size_t i = 0; i < items.size(); ++i) {
        AppendSeparator(i == 0, options, child_pad, out);
        VALET_RETURN_IF_ERROR(AppendJson(items[i], options, depth + 1, out));
      }
      if (options.indent > 0) *out += items.empty() ? child_pad + pad : pad;
      *out += ']';
      return Status::Ok();
    }
    case Value::Kind::kObject: {
      *out += '{';
      bool first = true;
      for (const auto& [k, member] : v.object()) {
        AppendSeparator(first, options, child_pad, out);
        first = false;
        AppendJsonString(k, options.ensure_ascii, out);
        *out += ": ";
        VALET_RETURN_IF_ERROR(AppendJson(member, options, depth + 1, out));
      }
      if (options.indent > 0) *out += pad;
      *out += '}';
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string_view> SplitCodePoints(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    }
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

size_t CodePointCount(std::string_view s) { return SplitCodePoints(s).size(); }

std::string StripChars(std::string_view s, const std::string* chars, bool left, bool right) {
  auto strip = [&](char c) { return chars == nullptr ? IsSpace(c) : chars->find(c) != std::string::npos; };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && strip(s[b])) ++b;
  }
  if (right) {
    while (e > b && strip(s[e - 1])) --e;
  }
  return std::string(s.substr(b, e - b));
}

std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string TitleCase(std::string_view s) {
  std::string out(s);
  bool word_start = true;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    const bool is_alpha = std::isalpha(u) != 0;
    c = static_cast<char>(word_start ? std::toupper(u) : std::tolower(u));
    word_start = !is_alpha && !std::isdigit(u);
  }
  return out;
}

std::string Capitalize(std::string_view s) {
  std::string out = AsciiLower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  if (from.empty()) return std::string(s);
  while (count < 0 || done < count) {
    const size_t found = s.find(from, start);
    if (found == std::string_view::npos) break;
    out.append(s.substr(start, found - start));
    out.append(to);
    start = found + from.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

Value GetAttribute(const Value& object, std::string_view name) {
  if (const Value* member = object.Find(name)) return *member;
  const std::string method(name);
  if (object.is_string() && IsStringMethod(name)) {
    const std::string s = object.AsString();
    return Value::Callable(method, [s, method](const CallArgs& args) { return CallStringMethod(s, method, args); });
  }
  if (object.is_object() && IsObjectMethod(name)) {
    return Value::Callable(method,
                           [object, method](const CallArgs& args) { return CallObjectMethod(object, method, args); });
  }
  return Value();
}

Result<Value> GetItem(const Value& object, const Value& key) {
  if (object.is_object()) {
    if (!key.is_string()) return Value();
    const Value* member = object.Find(key.AsString());
    return member != nullptr ? *member : Value();
  }
  if (object.is_array() || object.is_string()) {
    if (key.is_string()) return GetAttribute(object, key.AsString());
    if (!key.is_int()) return InvalidArgument(std::string("cannot index a ") + object.KindName() + " with a " + key.KindName());
    if (object.is_array()) {
      const auto& items = object.array();
      const int64_t i = NormalizeIndex(key.AsInt(), static_cast<int64_t>(items.size()));
      if (i < 0 || i >= static_cast<int64_t>(items.size())) return Value();
      return items[static_cast<size_t>(i)];
    }
    const auto cps = SplitCodePoints(object.AsString());
    const int64_t i = NormalizeIndex(key.AsInt(), static_cast<int64_t>(cps.size()));
    if (i < 0 || i >= static_cast<int64_t>(cps.size())) return Value();
    return Value::String(std::string(cps[static_cast<size_t>(i)]));
  }
  return Value();
}

Result<Value> SliceValue(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
                         std::optional<int64_t> step) {
  if (!object.is_array() && !object.is_string()) {
    return InvalidArgument(std::string("cannot slice a ") + object.KindName());
  }
  const int64_t st = step.value_or(1);
  if (st == 0) return InvalidArgument("slice step cannot be zero");
  std::vector<std::string_view> cps;
  if (object.is_string()) cps = SplitCodePoints(object.AsString());
  const int64_t n = object.is_array() ? static_cast<int64_t>(object.array().size()) : static_cast<int64_t>(cps.size());
  // Python's slice bounds: clamp to [0, n] going forward, [-1, n-1] going back.
  auto bound = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v < 0 ? *v + n : *v;
    const int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? n : n - 1;
    return std::clamp(i, lo, hi);
  };
  const int64_t b = bound(start, st > 0 ? 0 : n - 1);
  const int64_t e = bound(stop, st > 0 ? n : -1);
  Value::Array items;
  std::string text;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (object.is_array()) {
      items.push_back(object.array()[static_cast<size_t>(i)]);
    } else {
      text.append(cps[static_cast<size_t>(i)]);
    }
  }
  return object.is_array() ? Value::NewArray(std::move(items)) : Value::String(std::move(text));
}

Result<bool> Contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;
  if (container.is_string()) {
    if (!item.is_string()) return InvalidArgument(std::string("'in <string>' needs a string, not a ") + item.KindName());
    return container.AsString().find(item.AsString()) != std::string::npos;
  }
  if (container.is_array()) {
    for (const Value& v : container.array()) {
      if (v.Equals(item)) return true;
    }
    return false;
  }
  if (container.is_object()) return item.is_string() && container.Find(item.AsString()) != nullptr;
  return InvalidArgument(std::string("cannot test membership in a ") + container.KindName());
}

Result<int> Compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.AsInt() < b.AsInt() ? -1 : a.AsInt() > b.AsInt() ? 1 : 0;
    return a.AsDouble() < b.AsDouble() ? -1 : a.AsDouble() > b.AsDouble() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  return InvalidArgument(std::string("cannot compare a ") + a.KindName() + " with a " + b.KindName());
}

Result<std::vector<Value>> Iterate(const Value& v) {
  std::vector<Value> out;
  if (v.is_undefined() || v.is_none()) return out;
  if (v.is_array()) return v.array();
  if (v.is_object()) {
    for (const auto& [k, member] : v.object()) out.push_back(Value::String(k));
    return out;
  }
  if (v.is_string()) {
    for (std::string_view cp : SplitCodePoints(v.AsString())) out.push_back(Value::String(std::string(cp)));
    return out;
  }
  return InvalidArgument(std::string("cannot iterate over a ") + v.KindName());
}

Result<std::string> ToJson(const Value& v, const JsonOptions& options) {
  std::string out;
  VALET_RETURN_IF_ERROR(AppendJson(v, options, 0, &out));
  return out;
}

}  // namespace valet::chat
