#include "chat/operators.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "chat/value_ops.h"

namespace valet::chat {
namespace {

Status OperandError(std::string_view op, const Value& a, const Value& b) {
  return InvalidArgument("cannot apply '" + std::string(op) + "' to a " + a.KindName() + " and a " + b.KindName());
}

Status TooLarge(size_t max_bytes) {
  return OutOfRange("a value grew past the render limit of " + std::to_string(max_bytes) + " bytes");
}

Result<Value> Arithmetic(std::string_view op, const Value& a, const Value& b) {
  const bool ints = a.is_int() && b.is_int();
  const double x = a.AsDouble(), y = b.AsDouble();
  if (op == "+") return ints ? Value::Int(a.AsInt() + b.AsInt()) : Value::Float(x + y);
  if (op == "-") return ints ? Value::Int(a.AsInt() - b.AsInt()) : Value::Float(x - y);
  if (op == "*") return ints ? Value::Int(a.AsInt() * b.AsInt()) : Value::Float(x * y);
  if (op == "/") {
    if (y == 0) return InvalidArgument("division by zero");
    return Value::Float(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0) return InvalidArgument("division by zero");
    if (ints) {
      // Python rounds the quotient toward negative infinity.
      int64_t q = a.AsInt() / b.AsInt(), r = a.AsInt() % b.AsInt();
      if (r != 0 && ((r < 0) != (b.AsInt() < 0))) {
        --q;
        r += b.AsInt();
      }
      return Value::Int(op == "//" ? q : r);
    }
    const double q = std::floor(x / y);
    return Value::Float(op == "//" ? q : x - q * y);
  }
  if (op == "**") {
    if (ints && b.AsInt() >= 0) return Value::Int(static_cast<int64_t>(std::pow(x, y)));
    return Value::Float(std::pow(x, y));
  }
  return OperandError(op, a, b);
}

Result<Value> Compared(std::string_view op, const Value& a, const Value& b) {
  VALET_ASSIGN_OR_RETURN(int c, Compare(a, b));
  if (op == "<") return Value::Bool(c < 0);
  if (op == ">") return Value::Bool(c > 0);
  if (op == "<=") return Value::Bool(c <= 0);
  return Value::Bool(c >= 0);
}

Result<Value> Plus(const Value& a, const Value& b, size_t max_bytes) {
  if (a.is_array() && b.is_array()) {
    if (a.array().size() + b.array().size() > max_bytes) return TooLarge(max_bytes);
    Value::Array items = a.array();
    items.insert(items.end(), b.array().begin(), b.array().end());
    return Value::NewArray(std::move(items));
  }
  const bool printable_a = !a.is_undefined() && !a.is_none();
  const bool printable_b = !b.is_undefined() && !b.is_none();
  if ((a.is_string() || b.is_string()) && printable_a && printable_b) {
    std::string s = a.ToString() + b.ToString();
    if (s.size() > max_bytes) return TooLarge(max_bytes);
    return Value::String(std::move(s));
  }
  return OperandError("+", a, b);
}

Result<Value> Repeat(const Value& s, const Value& n, size_t max_bytes) {
  const int64_t count = std::max<int64_t>(0, n.AsInt());
  const std::string& text = s.AsString();
  if (!text.empty() && static_cast<uint64_t>(count) > max_bytes / text.size()) return TooLarge(max_bytes);
  std::string out;
  for (int64_t i = 0; i < count; ++i) out += text;
  return Value::String(std::move(out));
}

}  // namespace

Result<Value> ApplyBinary(std::string_view op, const Value& a, const Value& b, size_t max_bytes) {
  if (op == "==") return Value::Bool(a.Equals(b));
  if (op == "!=") return Value::Bool(!a.Equals(b));
  if (op == "in" || op == "not in") {
    VALET_ASSIGN_OR_RETURN(bool found, Contains(b, a));
    return Value::Bool(op == "in" ? found : !found);
  }
  if (op == "~") {
    std::string s = a.ToString() + b.ToString();
    if (s.size() > max_bytes) return TooLarge(max_bytes);
    return Value::String(std::move(s));
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=") return Compared(op, a, b);
  if (op == "+" && !(a.is_number() && b.is_number())) return Plus(a, b, max_bytes);
  if (op == "*" && a.is_string() && b.is_int()) return Repeat(a, b, max_bytes);
  if (op == "*" && a.is_int() && b.is_string()) return Repeat(b, a, max_bytes);
  if (a.is_number() && b.is_number()) return Arithmetic(op, a, b);
  return OperandError(op, a, b);
}

Result<Value> ApplyUnary(std::string_view op, const Value& v) {
  if (op == "not") return Value::Bool(!v.Truthy());
  if (!v.is_number()) return InvalidArgument("cannot apply unary '" + std::string(op) + "' to a " + v.KindName());
  if (op == "+") return v;
  return v.is_int() ? Value::Int(-v.AsInt()) : Value::Float(-v.AsDouble());
}

}  // namespace valet::chat
