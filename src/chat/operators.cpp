#include "chat/operators.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// Python's ints never overflow; a template's arithmetic that leaves int64 is
// refused rather than wrapped (or undefined, as signed overflow is in C++).
Status IntOverflow(std::string_view op) {
  return OutOfRange("integer overflow in '" + std::string(op) + "'");
}

// Exponentiation by squaring; exact where std::pow's double is not (past 2^53).
Result<int64_t> IntPower(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if ((exp & 1) != 0 && __builtin_mul_overflow(result, base, &result)) return IntOverflow("**");
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return IntOverflow("**");
  }
  return result;
}

Result<Value> IntArithmetic(std::string_view op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op == "+") return __builtin_add_overflow(a, b, &r) ? Result<Value>(IntOverflow(op)) : Value::Int(r);
  if (op == "-") return __builtin_sub_overflow(a, b, &r) ? Result<Value>(IntOverflow(op)) : Value::Int(r);
  if (op == "*") return __builtin_mul_overflow(a, b, &r) ? Result<Value>(IntOverflow(op)) : Value::Int(r);
  if (op == "//" || op == "%") {
    if (b == 0) return InvalidArgument("division by zero");
    if (a == INT64_MIN && b == -1) return op == "%" ? Value::Int(0) : Result<Value>(IntOverflow(op));
    // Python rounds the quotient toward negative infinity.
    int64_t q = a / b, m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) {
      --q;
      m += b;
    }
    return Value::Int(op == "//" ? q : m);
  }
  if (op == "**" && b >= 0) {
    VALET_ASSIGN_OR_RETURN(int64_t p, IntPower(a, b));
    return Value::Int(p);
  }
  return OperandError(op, Value::Int(a), Value::Int(b));
}

Result<Value> Arithmetic(std::string_view op, const Value& a, const Value& b) {
  // Python's int operators stay ints, but for '/' and a negative power.
  if (a.is_int() && b.is_int() && op != "/" && !(op == "**" && b.AsInt() < 0)) {
    return IntArithmetic(op, a.AsInt(), b.AsInt());
  }
  const double x = a.AsDouble(), y = b.AsDouble();
  if (op == "+") return Value::Float(x + y);
  if (op == "-") return Value::Float(x - y);
  if (op == "*") return Value::Float(x * y);
  if (op == "/" || op == "//" || op == "%") {
    if (y == 0) return InvalidArgument("division by zero");
    if (op == "/") return Value::Float(x / y);
    const double q = std::floor(x / y);
    return Value::Float(op == "//" ? q : x - q * y);
  }
  if (op == "**") return Value::Float(std::pow(x, y));
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
  if (!v.is_int()) return Value::Float(-v.AsDouble());
  if (v.AsInt() == INT64_MIN) return IntOverflow(op);
  return Value::Int(-v.AsInt());
}

}  // namespace valet::chat
