#include "constrain/json_terms_gbnf.h"

#include <algorithm>
#include <cmath>

#include "constrain/regex_gbnf.h"

namespace valet {
namespace {

// Numbers the schema leaves unbounded are generated with at most this many
// digits before the point (and after it): a model cannot run on forever.
constexpr int64_t kFreeMagnitude = 9'999'999'999'999'999;  // 16 digits
constexpr double kLargestBound = 9.0e15;                   // exactly representable integers only

std::string Repeat(const std::string& item, uint32_t min, bool bounded, uint32_t max) {
  if (bounded && max == 0) return "";
  if (!bounded) {
    if (min == 0) return "(" + item + ")*";
    return Concat({"(", item, "){", std::to_string(min), ",}"});
  }
  if (min == 0 && max == 1) return "(" + item + ")?";
  if (min == max) return Concat({"(", item, "){", std::to_string(min), "}"});
  return Concat({"(", item, "){", std::to_string(min), ",", std::to_string(max), "}"});
}

}  // namespace

Status NumberBounds::Add(double value, bool lower, bool exclusive, bool integer) {
  if (!std::isfinite(value) || std::fabs(value) > kLargestBound)
    return OutOfRange("is out of range");
  int64_t v = 0;
  if (integer) {
    // Rounded inwards: x >= 1.5 is x >= 2 for an integer, x > 3 is x >= 4.
    const double r = lower ? (exclusive ? std::floor(value) + 1 : std::ceil(value))
                           : (exclusive ? std::ceil(value) - 1 : std::floor(value));
    v = static_cast<int64_t>(r);
  } else {
    if (exclusive)
      return Unsupported("on a number is not supported (use minimum/maximum, or type integer)");
    if (std::floor(value) != value)
      return Unsupported("with a fraction on a number is not supported");
    v = static_cast<int64_t>(value);
  }
  if (lower) {
    lo = has_lo ? std::max(lo, v) : v;
    has_lo = true;
  } else {
    hi = has_hi ? std::min(hi, v) : v;
    has_hi = true;
  }
  return Status::Ok();
}

std::string JsonTerms::Seq(std::initializer_list<std::string_view> parts) const {
  std::string out;
  for (std::string_view p : parts) {
    if (p == "~") {
      if (max_ws_ == 0) continue;
      p = "json_ws";
    }
    if (p.empty()) continue;
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

void JsonTerms::DefineWhitespace() {
  if (max_ws_ > 0) b_.Shared("json_ws", "[ \\t\\n]{0," + std::to_string(max_ws_) + "}");
}

// Two rules of the same characters: one for the unbounded string's loop and
// one for every counted loop, so that each is repeated in one way only, which
// the position masks need to share their entries (see position_masks.h).
std::string JsonTerms::Char(bool counted) {
  Result<std::string> any = CharSetGbnf(NormalizeRanges({}, true), RegexText::kJsonString, b_);
  return b_.Shared(counted ? "json_char_counted" : "json_char", any.value());
}

std::string JsonTerms::Fraction() { return b_.Shared("json_fraction", "\".\" [0-9]{1,16}"); }

std::string JsonTerms::String(uint32_t min_length, bool bounded, uint32_t max_length) {
  const std::string body =
      Concat({"\"\\\"\" ", Repeat(Char(bounded), min_length, bounded, max_length), " \"\\\"\""});
  // Every unbounded string is the one shared rule: its character rule then
  // has one caller, whose return the position masks can fix.
  if (min_length == 0 && !bounded) return b_.Shared("json_string", body);
  return body;
}

std::string JsonTerms::AnyValue() {
  const std::string name = "json_value";
  if (!b_.ReserveShared(name)) return name;
  const std::string string = String(0, false, 0);
  const std::string number = b_.Shared(
      "json_number",
      Seq({"\"-\"?", "(\"0\" | [1-9] [0-9]{0,15})", Fraction() + "?", "([eE] [-+]? [0-9]{1,3})?"}));
  b_.Shared(
      "json_array",
      Seq({"\"[\"", "~",
           Concat({"(", Seq({name, Repeat(Seq({"~", "\",\"", "~", name}), 0, false, 0)}), ")?"}),
           "~", "\"]\""}));
  b_.Define(name, "json_object | json_array | " + string + " | " + number +
                      " | \"true\" | \"false\" | \"null\"");
  AnyObject();
  return name;
}

std::string JsonTerms::Map(const std::string& value_rule) {
  AnyValue();  // json_string
  const std::string kv = Seq({"json_string", "~", "\":\"", "~", value_rule});
  return Seq({"\"{\"", "~",
              Concat({"(", Seq({kv, Repeat(Seq({"~", "\",\"", "~", kv}), 0, false, 0)}), ")?"}),
              "~", "\"}\""});
}

std::string JsonTerms::AnyObject() {
  const std::string name = "json_object";
  if (b_.ReserveShared(name)) b_.Define(name, Map(AnyValue()));
  return name;
}

std::string JsonTerms::EmptyObject() const { return Seq({"\"{\"", "~", "\"}\""}); }

// Properties in the schema's order, the optional ones skippable. A_i (the
// properties from i on after one has been written) and B_i (from i on, none
// written yet) are chains of rules, so the grammar grows linearly.
std::string JsonTerms::Properties(const std::vector<Property>& properties) {
  const size_t n = properties.size();
  if (n == 0) return EmptyObject();
  std::vector<std::string> after(n + 1);  // A_i's rule; empty for A_n
  for (size_t i = n; i-- > 1;) {
    const Property& p = properties[i];
    std::string piece = Seq({"~", "\",\"", "~", p.key_literal, "~", "\":\"", "~", p.value_rule});
    if (!p.required) piece = "(" + piece + ")?";
    after[i] = b_.Add("after", Seq({piece, after[i + 1]}));
  }
  std::string next_first = "\"\"";  // B_n: nothing at all
  for (size_t i = n; i-- > 0;) {
    const Property& p = properties[i];
    std::string first = Seq({p.key_literal, "~", "\":\"", "~", p.value_rule, after[i + 1]});
    if (!p.required) first += " | " + next_first;
    next_first = b_.Add("first", first);
  }
  return Seq({"\"{\"", "~", next_first, "~", "\"}\""});
}

// A_i after position i: the remaining prefix items (required while below
// min_items), then the rest's items with their bounds.
std::string JsonTerms::Array(const ArrayShape& shape) {
  std::vector<std::string> prefix = shape.prefix;
  std::string rest = shape.rest;
  if (shape.bounded && shape.max_items < prefix.size()) {
    prefix.resize(shape.max_items);
    rest.clear();
  }
  const uint32_t k = static_cast<uint32_t>(prefix.size());
  const uint32_t rmin = shape.min_items > k ? shape.min_items - k : 0;
  const bool rbounded = shape.bounded || rest.empty();
  const uint32_t rmax = rest.empty() ? 0 : shape.bounded ? shape.max_items - k : 0;
  const std::string comma = Seq({"~", "\",\"", "~"});
  std::string tail = rest.empty() ? "" : Repeat(Seq({comma, rest}), rmin, rbounded, rmax);
  if (!tail.empty() && k > 0) tail = b_.Add("items", tail);
  for (uint32_t i = k; i-- > 1;) {
    std::string piece = Seq({comma, prefix[i], tail});
    tail = b_.Add("items", i < shape.min_items ? piece : "(" + piece + ")?");
  }
  std::string head;
  if (k > 0) {
    head = Seq({prefix[0], tail});
    if (shape.min_items == 0) head = "(" + head + ")?";
  } else if (!rest.empty() && !(rbounded && rmax == 0)) {
    const uint32_t more_min = rmin > 0 ? rmin - 1 : 0;
    head = Seq({rest, Repeat(Seq({comma, rest}), more_min, rbounded, rbounded ? rmax - 1 : 0)});
    if (rmin == 0) head = "(" + head + ")?";
  }
  return Seq({"\"[\"", "~", head, "~", "\"]\""});
}

Result<std::string> JsonTerms::Integer(const NumberBounds& bounds) {
  const int64_t lo =
      bounds.has_lo ? bounds.lo : std::min(-kFreeMagnitude, bounds.has_hi ? bounds.hi : 0);
  const int64_t hi = bounds.has_hi ? bounds.hi : std::max(kFreeMagnitude, lo);
  if (lo > hi) return InvalidArgument("no integer lies within the bounds");
  return GbnfIntRange({true, lo}, {true, hi});
}

// Whole-valued inclusive bounds: a number is I.F; x <= hi is I < hi with any
// fraction or I == hi with a zero one, mirrored for negative numbers (-M.F).
Result<std::string> JsonTerms::Number(const NumberBounds& bounds) {
  const std::string frac = Fraction() + "?";
  if (!bounds.has_lo && !bounds.has_hi) {
    AnyValue();
    return std::string("json_number");
  }
  if (bounds.has_lo && bounds.has_hi && bounds.lo > bounds.hi)
    return InvalidArgument("no number lies within the bounds");
  const std::string zero_frac = "(\".\" \"0\"{1,16})?";
  std::vector<std::string> alts;
  if (!bounds.has_hi || bounds.hi >= 0) {  // I.F >= 0
    const int64_t a = bounds.has_lo ? std::max<int64_t>(bounds.lo, 0) : 0;
    const int64_t b = bounds.has_hi ? bounds.hi - 1 : std::max(kFreeMagnitude, a);
    if (a <= b) alts.push_back(Seq({GbnfIntRange({true, a}, {true, b}), frac}));
    if (bounds.has_hi) alts.push_back(Seq({GbnfLiteral(std::to_string(bounds.hi)), zero_frac}));
  }
  if (!bounds.has_lo || bounds.lo < 0) {  // -M.F < 0
    const int64_t a = bounds.has_hi && bounds.hi < 0 ? -bounds.hi : 0;
    const int64_t b = bounds.has_lo ? -bounds.lo - 1 : std::max(kFreeMagnitude, a);
    if (a <= b) alts.push_back(Seq({"\"-\"", GbnfIntRange({true, a}, {true, b}), frac}));
    if (bounds.has_lo) alts.push_back(Seq({GbnfLiteral(std::to_string(bounds.lo)), zero_frac}));
  }
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

Result<std::string> JsonTerms::Format(std::string_view format) {
  const std::string q = "\"\\\"\"";
  if (format == "date" || format == "date-time") {
    const std::string leap = b_.Shared("leap_year",
                                       "[0-9] [0-9] (\"0\" [48] | [2468] [048] | [13579] [26]) | "
                                       "([02468] [048] | [13579] [26]) \"00\"");
    const std::string date = b_.Shared(
        "format_date",
        "[0-9]{4} \"-\" ((\"01\" | \"03\" | \"05\" | \"07\" | \"08\" | \"10\" | \"12\") \"-\" "
        "(\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | (\"04\" | \"06\" | \"09\" | \"11\") \"-\" "
        "(\"0\" [1-9] | [12] [0-9] | \"30\") | \"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])) "
        "| " +
            leap + " \"-02-29\"");
    if (format == "date") return Seq({q, date, q});
    const std::string time = b_.Shared(
        "format_time",
        "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
        "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])");
    return Seq({q, date, "\"T\"", time, q});
  }
  if (format == "time") {
    (void)Format("date-time");
    return Seq({q, "format_time", q});
  }
  if (format == "uuid") {
    return Seq(
        {q, "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}",
         q});
  }
  if (format == "email") {
    const std::string atom = b_.Shared("email_atom", "[a-zA-Z0-9!#$%&'*+/=?\\^_`{|}~\\-]{1,16}");
    const std::string label =
        b_.Shared("email_label", "[a-zA-Z0-9] ([a-zA-Z0-9\\-]{0,20} [a-zA-Z0-9])?");
    return Seq(
        {q, atom, "(\".\" " + atom + "){0,3}", "\"@\"", label, "(\".\" " + label + "){1,4}", q});
  }
  return Unsupported("format '" + std::string(format) +
                     "' is not supported (date, date-time, time, uuid, email)");
}

}  // namespace valet
