#include "constrain/gbnf_builder.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace valet {

std::string GbnfBuilder::Reserve(std::string_view base) {
  std::string name(base);
  std::replace(name.begin(), name.end(), '_', '-');
  uint32_t& n = next_suffix_[name];
  // A base that ends in a digit would collide with a suffixed name ("a-1" + "-2").
  for (;;) {
    ++n;
    std::string candidate = n == 1 ? name : name + "-" + std::to_string(n);
    if (candidate != "root" && rules_.find(candidate) == rules_.end()) {
      rules_.emplace(candidate, std::string());
      order_.push_back(candidate);
      return candidate;
    }
  }
}

void GbnfBuilder::Define(const std::string& name, std::string body) {
  auto it = rules_.find(name);
  assert(it != rules_.end() && "Define a name Reserve made");
  text_bytes_ += name.size() + body.size() + 6;
  it->second = std::move(body);
}

std::string GbnfBuilder::Add(std::string_view base, std::string body) {
  std::string name = Reserve(base);
  Define(name, std::move(body));
  return name;
}

std::string GbnfBuilder::Shared(const std::string& name, std::string_view body) {
  if (ReserveShared(name)) Define(name, std::string(body));
  return name;
}

bool GbnfBuilder::ReserveShared(const std::string& name) {
  assert(name.find('_') != std::string::npos && "shared rule names hold a '_'");
  if (rules_.find(name) != rules_.end()) return false;
  rules_.emplace(name, std::string());
  order_.push_back(name);
  return true;
}

std::string GbnfBuilder::Text(std::string_view root_body) const {
  std::string out = "root ::= ";
  out.reserve(text_bytes_ + root_body.size() + 16);
  out += root_body;
  out += '\n';
  for (const std::string& name : order_) {
    out += name;
    out += " ::= ";
    out += rules_.find(name)->second;
    out += '\n';
  }
  return out;
}

namespace {

bool IsPlain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80 ||
         (c >= 0x20 && c < 0x7F && c != '"' && c != '\\' && c != '[' && c != ']' && c != '-' &&
          c != '^');
}

void AppendCodePoint(std::string& out, uint32_t cp) {
  char buf[16];
  if (cp < 0x80 && IsPlain(static_cast<unsigned char>(cp))) {
    out += static_cast<char>(cp);
  } else if (cp < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
    out += buf;
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    out += buf;
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    out += buf;
  }
}

bool AllSame(std::string_view s, char c) {
  return s.find_first_not_of(c) == std::string_view::npos;
}

std::string Digits(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

// Any `n` digits, or nothing for n == 0.
std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}";
}

// Every digit string of x's length between x and y (x <= y, equal lengths).
// Recurses once per digit: at most 20 deep whatever the input.
std::string EqualLengthRange(std::string_view x, std::string_view y) {
  if (x.empty()) return "\"\"";
  if (x == y) return Concat({"\"", x, "\""});
  const size_t rest = x.size() - 1;
  if (x[0] == y[0]) return Digits(x[0], x[0]) + " " + EqualLengthRange(x.substr(1), y.substr(1));
  const bool low_full = AllSame(x.substr(1), '0');
  const bool high_full = AllSame(y.substr(1), '9');
  std::vector<std::string> alts;
  char mid_lo = static_cast<char>(x[0] + 1);
  char mid_hi = static_cast<char>(y[0] - 1);
  if (low_full) {
    mid_lo = x[0];
  } else {
    alts.push_back(Digits(x[0], x[0]) + " " +
                   EqualLengthRange(x.substr(1), std::string(rest, '9')));
  }
  if (high_full) mid_hi = y[0];
  if (mid_lo <= mid_hi) alts.push_back(Digits(mid_lo, mid_hi) + AnyDigits(rest));
  if (!high_full)
    alts.push_back(Digits(y[0], y[0]) + " " +
                   EqualLengthRange(std::string(rest, '0'), y.substr(1)));
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Magnitudes in [a, b] (b unbounded when !has_b), a >= 0, without leading zeros.
std::string MagnitudeRange(uint64_t a, bool has_b, uint64_t b) {
  const std::string sa = std::to_string(a);
  const std::string sb = has_b ? std::to_string(b) : std::string();
  const size_t last_len = has_b ? sb.size() : sa.size();
  std::vector<std::string> alts;
  for (size_t len = sa.size(); len <= last_len; ++len) {
    const std::string x = len == sa.size() ? sa : Concat({"1", std::string(len - 1, '0')});
    const std::string y = has_b && len == sb.size() ? sb : std::string(len, '9');
    alts.push_back(EqualLengthRange(x, y));
  }
  if (!has_b) alts.push_back("[1-9] [0-9]{" + std::to_string(sa.size()) + ",}");
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

uint64_t Magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

}  // namespace

std::string Concat(std::initializer_list<std::string_view> parts) {
  size_t n = 0;
  for (std::string_view p : parts) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : parts) out += p;
  return out;
}

std::string GbnfLiteral(std::string_view bytes) {
  std::string out = "\"";
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80 || (IsPlain(c) && c != '"' && c != '\\')) {
      out += ch;
    } else {
      AppendCodePoint(out, c);
    }
  }
  return out + "\"";
}

std::string GbnfClass(const std::vector<CodePointRange>& ranges) {
  std::string out = "[";
  for (const CodePointRange& r : ranges) {
    AppendCodePoint(out, r.lo);
    if (r.hi != r.lo) {
      out += '-';
      AppendCodePoint(out, r.hi);
    }
  }
  return out + "]";
}

std::string GbnfIntRange(IntBound lo, IntBound hi) {
  std::vector<std::string> alts;
  // Negative integers: "-" and a magnitude in [max(1, -hi), -lo].
  if (!lo.bounded || lo.value < 0) {
    const uint64_t min_mag = hi.bounded && hi.value < 0 ? Magnitude(hi.value) : 1;
    alts.push_back(Concat(
        {"\"-\" ", MagnitudeRange(min_mag, lo.bounded, lo.bounded ? Magnitude(lo.value) : 0)}));
  }
  // Non-negative integers in [max(0, lo), hi].
  if (!hi.bounded || hi.value >= 0) {
    const uint64_t a = lo.bounded && lo.value > 0 ? static_cast<uint64_t>(lo.value) : 0;
    alts.push_back(MagnitudeRange(a, hi.bounded, hi.bounded ? static_cast<uint64_t>(hi.value) : 0));
  }
  if (alts.size() == 1) return alts[0];
  return "(" + alts[0] + " | " + alts[1] + ")";
}

}  // namespace valet
