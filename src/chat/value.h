// The runtime value of valet's Jinja engine: undefined, none, bool, int,
// float, string, array, object (insertion-ordered) and callable. Arrays and
// objects are shared by reference, as in Python and JavaScript, so that
// `{% set ns.x = ... %}` on a namespace() object is seen by every holder.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "valet/status.h"

namespace valet::chat {

class Value;

// Arguments of a call: positional first, then keyword (name=value).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index`, else the keyword `name`, else nullptr.
  const Value* Get(size_t index, std::string_view name) const;
  // The keyword argument `name`, else nullptr.
  const Value* Keyword(std::string_view name) const;
};

using NativeFunction = std::function<Result<Value>(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kCallable };
  using Array = std::vector<Value>;
  using Object = std::vector<std::pair<std::string, Value>>;

  Value() = default;  // undefined
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value String(std::string s);
  static Value NewArray(Array items = {});
  static Value NewObject(Object members = {});
  static Value Callable(std::string name, NativeFunction fn);
  // Integral JSON numbers become ints (as JavaScript's renderer sees them).
  static Value FromJson(const Json& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  // Each accessor requires the matching kind.
  bool AsBool() const;
  int64_t AsInt() const;
  double AsDouble() const;  // int or float
  const std::string& AsString() const;
  Array& array() const;
  Object& object() const;
  Result<Value> Call(const CallArgs& args) const;
  const std::string& callable_name() const;

  // Object member lookup; nullptr when absent or not an object.
  const Value* Find(std::string_view key) const;
  void Set(std::string_view key, Value v) const;  // requires is_object()

  // Python truthiness: empty containers, 0, "", none and undefined are false.
  bool Truthy() const;
  // Deep equality with Python's numeric rules (1 == 1.0). Containers nested
  // deeper than kMaxNesting (a value that contains itself) or comparisons
  // visiting more than kMaxCompareNodes elements compare unequal, so hostile
  // values cannot hang a render.
  bool Equals(const Value& other) const;
  static constexpr int kMaxNesting = 64;
  static constexpr size_t kMaxCompareNodes = 1'000'000;
  // The text `{{ value }}` prints: undefined and none print nothing.
  std::string ToOutput() const;
  // Python's str(): none is "None", containers print like Python reprs
  // ("[...]" past kMaxNesting, as Python prints a list that contains itself).
  // Output stops growing past kMaxStringBytes; callers' size limits then fail.
  std::string ToString() const;
  static constexpr size_t kMaxStringBytes = size_t{16} << 20;
  const char* KindName() const;

 private:
  bool EqualsAt(const Value& other, int depth, size_t* budget) const;
  void AppendString(int depth, std::string* out) const;

  Kind kind_ = Kind::kUndefined;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0.0;
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<const std::pair<std::string, NativeFunction>> callable_;
};

// Formats a float the way the reference renderer prints it (1.0, 0.25).
std::string FormatFloat(double d);

}  // namespace valet::chat
