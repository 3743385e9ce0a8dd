#include "chat/value.h"

#include <charconv>
#include <cmath>

namespace valet::chat {

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  return Keyword(name);
}

const Value* CallArgs::Keyword(std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}

Value Value::Float(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.float_ = d;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.string_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::NewArray(Array items) {
  Value v;
  v.kind_ = Kind::kArray;
  v.array_ = std::make_shared<Array>(std::move(items));
  return v;
}

Value Value::NewObject(Object members) {
  Value v;
  v.kind_ = Kind::kObject;
  v.object_ = std::make_shared<Object>(std::move(members));
  return v;
}

Value Value::Callable(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.callable_ = std::make_shared<const std::pair<std::string, NativeFunction>>(std::move(name), std::move(fn));
  return v;
}

Value Value::FromJson(const Json& json) {
  switch (json.type()) {
    case Json::value_t::boolean:
      return Bool(json.get<bool>());
    case Json::value_t::number_integer:
      return Int(json.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      return u <= uint64_t{INT64_MAX} ? Int(static_cast<int64_t>(u)) : Float(static_cast<double>(u));
    }
    case Json::value_t::number_float: {
      const double d = json.get<double>();
      const bool integral = std::trunc(d) == d && std::fabs(d) < 9.0e15;
      return integral ? Int(static_cast<int64_t>(d)) : Float(d);
    }
    case Json::value_t::string:
      return String(json.get_ref<const std::string&>());
    case Json::value_t::array: {
      Array items;
      items.reserve(json.size());
      for (const Json& item : json) items.push_back(FromJson(item));
      return NewArray(std::move(items));
    }
    case Json::value_t::object: {
      Object members;
      members.reserve(json.size());
      for (const auto& [key, item] : json.items()) members.emplace_back(key, FromJson(item));
      return NewObject(std::move(members));
    }
    default:  // null, and binary (which no parser produces)
      return None();
  }
}

bool Value::AsBool() const {
  assert(is_bool());
  return bool_;
}

int64_t Value::AsInt() const {
  assert(is_int());
  return int_;
}

double Value::AsDouble() const {
  assert(is_number());
  return is_int() ? static_cast<double>(int_) : float_;
}

const std::string& Value::AsString() const {
  assert(is_string());
  return *string_;
}

Value::Array& Value::array() const {
  assert(is_array());
  return *array_;
}

Value::Object& Value::object() const {
  assert(is_object());
  return *object_;
}

Result<Value> Value::Call(const CallArgs& args) const {
  assert(is_callable());
  return callable_->second(args);
}

const std::string& Value::callable_name() const {
  assert(is_callable());
  return callable_->first;
}

const Value* Value::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : *object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::Set(std::string_view key, Value v) const {
  assert(is_object());
  for (auto& [k, existing] : *object_) {
    if (k == key) {
      existing = std::move(v);
      return;
    }
  }
  object_->emplace_back(std::string(key), std::move(v));
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return bool_;
    case Kind::kInt:
      return int_ != 0;
    case Kind::kFloat:
      return float_ != 0.0;
    case Kind::kString:
      return !string_->empty();
    case Kind::kArray:
      return !array_->empty();
    case Kind::kObject:
      return !object_->empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

bool Value::Equals(const Value& other) const {
  size_t budget = kMaxCompareNodes;
  return EqualsAt(other, 0, &budget);
}

bool Value::EqualsAt(const Value& other, int depth, size_t* budget) const {
  if (*budget == 0 || depth > kMaxNesting) return false;
  --*budget;
  if (is_number() && other.is_number()) {
    if (is_int() && other.is_int()) return int_ == other.int_;
    return AsDouble() == other.AsDouble();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return bool_ == other.bool_;
    case Kind::kString:
      return *string_ == *other.string_;
    case Kind::kArray: {
      if (array_ == other.array_) return true;
      if (array_->size() != other.array_->size()) return false;
      for (size_t i = 0; i < array_->size(); ++i) {
        if (!(*array_)[i].EqualsAt((*other.array_)[i], depth + 1, budget)) return false;
      }
      return true;
    }
    case Kind::kObject: {
      if (object_ == other.object_) return true;
      if (object_->size() != other.object_->size()) return false;
      for (const auto& [k, v] : *object_) {
        const Value* o = other.Find(k);
        if (o == nullptr || !v.EqualsAt(*o, depth + 1, budget)) return false;
      }
      return true;
    }
    case Kind::kCallable:
      return callable_ == other.callable_;
    default:
      return false;
  }
}

std::string FormatFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (std::trunc(d) == d && std::fabs(d) < 1e16) {
    return std::to_string(static_cast<int64_t>(d)) + ".0";
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

namespace {

void AppendRepr(const std::string& s, std::string* out) {
  *out += '\'';
  for (char c : s) {
    if (c == '\'' || c == '\\') *out += '\\';
    *out += c;
  }
  *out += '\'';
}

}  // namespace

std::string Value::ToOutput() const {
  if (is_undefined() || is_none()) return "";
  return ToString();
}

std::string Value::ToString() const {
  if (is_string()) return *string_;
  std::string out;
  AppendString(0, &out);
  return out;
}

void Value::AppendString(int depth, std::string* out) const {
  if (out->size() > kMaxStringBytes) return;
  switch (kind_) {
    case Kind::kUndefined:
      return;
    case Kind::kNone:
      *out += "None";
      return;
    case Kind::kBool:
      // The reference renderer prints JavaScript booleans.
      *out += bool_ ? "true" : "false";
      return;
    case Kind::kInt:
      *out += std::to_string(int_);
      return;
    case Kind::kFloat:
      *out += FormatFloat(float_);
      return;
    case Kind::kString:
      *out += *string_;
      return;
    case Kind::kArray:
      if (depth >= kMaxNesting) {
        *out += "[...]";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < array_->size() && out->size() <= kMaxStringBytes; ++i) {
        if (i > 0) *out += ", ";
        const Value& item = (*array_)[i];
        if (item.is_string()) {
          AppendRepr(item.AsString(), out);
        } else {
          item.AppendString(depth + 1, out);
        }
      }
      *out += ']';
      return;
    case Kind::kObject: {
      if (depth >= kMaxNesting) {
        *out += "{...}";
        return;
      }
      *out += '{';
      bool first = true;
      for (const auto& [k, v] : *object_) {
        if (out->size() > kMaxStringBytes) break;
        if (!first) *out += ", ";
        first = false;
        AppendRepr(k, out);
        *out += ": ";
        if (v.is_string()) {
          AppendRepr(v.AsString(), out);
        } else {
          v.AppendString(depth + 1, out);
        }
      }
      *out += '}';
      return;
    }
    case Kind::kCallable:
      *out += "<function " + callable_->first + ">";
      return;
  }
}

const char* Value::KindName() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kArray: return "list";
    case Kind::kObject: return "mapping";
    case Kind::kCallable: return "callable";
  }
  return "?";
}

}  // namespace valet::chat
