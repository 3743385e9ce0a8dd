#include "constrain/regex_gbnf.h"

#include <algorithm>
#include <utility>

namespace valet {
namespace {

using Ranges = std::vector<CodePointRange>;

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's \s: the ASCII spaces and Unicode's space separators.
const Ranges kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.` without the s flag: anything but line terminators.
const Ranges kLineTerminators = {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}};

void Append(Ranges& into, const Ranges& from, bool negate) {
  Ranges add = NormalizeRanges(from, negate);
  into.insert(into.end(), add.begin(), add.end());
}

// A JSON string's escape for control character / quote / backslash `c`, as
// JSON.stringify writes it (lowercase hex).
std::string JsonEscape(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case 0x08:
      return "\\b";
    case 0x0C:
      return "\\f";
    case 0x0A:
      return "\\n";
    case 0x0D:
      return "\\r";
    case 0x09:
      return "\\t";
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
    }
  }
}

bool NeedsJsonEscape(uint32_t c) { return c < 0x20 || c == '"' || c == '\\'; }

class RegexTranslator {
 public:
  RegexTranslator(std::string_view pattern, const RegexOptions& options, GbnfBuilder& builder)
      : p_(pattern), options_(options), builder_(builder) {}

  Result<std::string> Run();

 private:
  Status Error(std::string what) const {
    return InvalidArgument("regex: " + what + " at offset " + std::to_string(pos_));
  }
  bool AtEnd() const { return pos_ >= p_.size(); }
  char Peek() const { return p_[pos_]; }
  Status Step();
  Status OpenGroup();
  Status Quantifier();
  Result<uint32_t> ReadNumber();
  Status Atom(const Ranges& ranges);
  Result<uint32_t> ReadCodePoint();
  // An escape after '\': a single code point, or a class escape into `ranges`.
  Status Escape(Ranges& ranges, bool in_class);
  Status Class();
  Status FinishAlternative();
  std::string AnyChars();

  std::string_view p_;
  const RegexOptions& options_;
  GbnfBuilder& builder_;
  size_t pos_ = 0;
  uint32_t depth_ = 0;
  bool can_quantify_ = false;
  bool anchored_start_ = false;
  bool anchored_end_ = false;
  std::string out_;  // the current top-level alternative
  std::vector<std::string> alternatives_;
};

Result<std::string> RegexTranslator::Run() {
  if (p_.size() > options_.max_pattern_bytes) {
    return OutOfRange("regex: longer than " + std::to_string(options_.max_pattern_bytes) +
                      " bytes");
  }
  if (!AtEnd() && Peek() == '^') {
    anchored_start_ = true;
    ++pos_;
  }
  while (!AtEnd()) VALET_RETURN_IF_ERROR(Step());
  if (depth_ != 0) return Error("unclosed '('");
  VALET_RETURN_IF_ERROR(FinishAlternative());
  std::string out = "(";
  for (size_t i = 0; i < alternatives_.size(); ++i) out += (i ? " | " : "") + alternatives_[i];
  return out + ")";
}

std::string RegexTranslator::AnyChars() {
  const std::string name =
      options_.text == RegexText::kJsonString ? "regex_any_json_char" : "regex_any_char";
  Result<std::string> any = CharSetGbnf(NormalizeRanges({}, true), options_.text, builder_);
  return builder_.Shared(name, any.value() + "*");
}

Status RegexTranslator::FinishAlternative() {
  std::string alt;
  if (options_.anchoring == RegexAnchoring::kSearch && !anchored_start_) alt += AnyChars() + " ";
  alt += out_.empty() ? "\"\"" : out_;
  if (options_.anchoring == RegexAnchoring::kSearch && !anchored_end_) {
    alt += ' ';
    alt += AnyChars();
  }
  alternatives_.push_back(std::move(alt));
  out_.clear();
  anchored_start_ = anchored_end_ = false;
  can_quantify_ = false;
  return Status::Ok();
}

Status RegexTranslator::Step() {
  const char c = Peek();
  switch (c) {
    case '(':
      return OpenGroup();
    case ')':
      if (depth_ == 0) return Error("unmatched ')'");
      --depth_;
      ++pos_;
      out_ += ")";
      can_quantify_ = true;
      return Status::Ok();
    case '|':
      ++pos_;
      if (depth_ > 0) {
        out_ += " |";
        can_quantify_ = false;
        return Status::Ok();
      }
      VALET_RETURN_IF_ERROR(FinishAlternative());
      if (!AtEnd() && Peek() == '^') {
        anchored_start_ = true;
        ++pos_;
      }
      return Status::Ok();
    case '*':
    case '+':
    case '?':
    case '{':
      return Quantifier();
    case '^':
      return Error("'^' inside the pattern (only at the start of an alternative)");
    case '$':
      ++pos_;
      if (depth_ > 0 || (!AtEnd() && Peek() != '|'))
        return Error("'$' inside the pattern (only at the end)");
      anchored_end_ = true;
      return Status::Ok();
    case '[':
      return Class();
    case '.': {
      ++pos_;
      Ranges r;
      Append(r, kLineTerminators, true);
      return Atom(r);
    }
    case '\\': {
      ++pos_;
      Ranges r;
      VALET_RETURN_IF_ERROR(Escape(r, false));
      return Atom(r);
    }
    case ']':
    case '}':
      return Error(std::string("unescaped '") + c + "'");
    default: {
      VALET_ASSIGN_OR_RETURN(const uint32_t cp, ReadCodePoint());
      return Atom({{cp, cp}});
    }
  }
}

Status RegexTranslator::OpenGroup() {
  ++pos_;
  if (!AtEnd() && Peek() == '?') {
    if (p_.substr(pos_, 2) == "?:") {
      pos_ += 2;
    } else if (p_.substr(pos_, 2) == "?<" && p_.substr(pos_, 3) != "?<=" &&
               p_.substr(pos_, 3) != "?<!") {
      const size_t close = p_.find('>', pos_);
      if (close == std::string_view::npos) return Error("unterminated group name");
      pos_ = close + 1;
    } else {
      return Error("lookaround and group flags are not supported");
    }
  }
  if (++depth_ > options_.max_nesting) {
    return OutOfRange("regex: groups nested deeper than " + std::to_string(options_.max_nesting));
  }
  out_ += out_.empty() || out_.back() == '(' ? "(" : " (";
  can_quantify_ = false;
  return Status::Ok();
}

Result<uint32_t> RegexTranslator::ReadNumber() {
  uint64_t v = 0;
  const size_t start = pos_;
  while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
    v = v * 10 + static_cast<uint64_t>(Peek() - '0');
    if (v > options_.max_repetition) {
      return OutOfRange("regex: repetition count above " + std::to_string(options_.max_repetition));
    }
    ++pos_;
  }
  if (pos_ == start) return Error("expected a number in '{m,n}'");
  return static_cast<uint32_t>(v);
}

Status RegexTranslator::Quantifier() {
  if (!can_quantify_) return Error(std::string("nothing to repeat before '") + Peek() + "'");
  const char c = Peek();
  ++pos_;
  if (c != '{') {
    out_ += c;
  } else {
    VALET_ASSIGN_OR_RETURN(const uint32_t m, ReadNumber());
    std::string q = Concat({"{", std::to_string(m)});
    if (!AtEnd() && Peek() == ',') {
      ++pos_;
      q += ",";
      if (!AtEnd() && Peek() != '}') {
        VALET_ASSIGN_OR_RETURN(const uint32_t n, ReadNumber());
        if (n < m) return Error("'{m,n}' with n < m");
        q += std::to_string(n);
      }
    }
    if (AtEnd() || Peek() != '}') return Error("unterminated '{m,n}'");
    ++pos_;
    out_ += q + "}";
  }
  if (!AtEnd() && Peek() == '?') ++pos_;  // lazy: the same language
  can_quantify_ = false;
  return Status::Ok();
}

Status RegexTranslator::Atom(const Ranges& ranges) {
  VALET_ASSIGN_OR_RETURN(std::string expr,
                         CharSetGbnf(NormalizeRanges(ranges, false), options_.text, builder_));
  if (!out_.empty() && out_.back() != '(') out_ += ' ';
  out_ += expr;
  can_quantify_ = true;
  return Status::Ok();
}

Result<uint32_t> RegexTranslator::ReadCodePoint() {
  const DecodedCodePoint d = DecodeCodePoint(p_.substr(pos_));
  if (d.length == 0) return Error("invalid UTF-8");
  pos_ += d.length;
  return d.cp;
}

Status RegexTranslator::Escape(Ranges& ranges, bool in_class) {
  if (AtEnd()) return Error("'\\' at the end");
  const char e = Peek();
  ++pos_;
  switch (e) {
    case 'd':
      Append(ranges, kDigit, false);
      return Status::Ok();
    case 'D':
      Append(ranges, kDigit, true);
      return Status::Ok();
    case 'w':
      Append(ranges, kWord, false);
      return Status::Ok();
    case 'W':
      Append(ranges, kWord, true);
      return Status::Ok();
    case 's':
      Append(ranges, kSpace, false);
      return Status::Ok();
    case 'S':
      Append(ranges, kSpace, true);
      return Status::Ok();
    case 'n':
      ranges.push_back({0x0A, 0x0A});
      return Status::Ok();
    case 'r':
      ranges.push_back({0x0D, 0x0D});
      return Status::Ok();
    case 't':
      ranges.push_back({0x09, 0x09});
      return Status::Ok();
    case 'f':
      ranges.push_back({0x0C, 0x0C});
      return Status::Ok();
    case 'v':
      ranges.push_back({0x0B, 0x0B});
      return Status::Ok();
    case '0':
      ranges.push_back({0, 0});
      return Status::Ok();
    case 'b':
      if (in_class) {
        ranges.push_back({0x08, 0x08});
        return Status::Ok();
      }
      return Error("word boundary '\\b' is not supported");
    case 'x':
    case 'u': {
      const int digits = e == 'x' ? 2 : 4;
      uint32_t v = 0;
      for (int i = 0; i < digits; ++i) {
        const int h = AtEnd() ? -1 : HexDigitValue(Peek());
        if (h < 0) return Error(std::string("expected hex digits after '\\") + e + "'");
        v = v * 16 + static_cast<uint32_t>(h);
        ++pos_;
      }
      if (v >= 0xD800 && v <= 0xDFFF) return Error("a surrogate escape is not supported");
      ranges.push_back({v, v});
      return Status::Ok();
    }
    default:
      if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9')) {
        return Error(std::string("escape '\\") + e + "' is not supported");
      }
      if (static_cast<unsigned char>(e) >= 0x80) return Error("'\\' before a non-ASCII character");
      ranges.push_back({static_cast<uint32_t>(static_cast<unsigned char>(e)),
                        static_cast<uint32_t>(static_cast<unsigned char>(e))});
      return Status::Ok();
  }
}

Status RegexTranslator::Class() {
  ++pos_;  // '['
  bool negate = false;
  if (!AtEnd() && Peek() == '^') {
    negate = true;
    ++pos_;
  }
  Ranges ranges;
  while (!AtEnd() && Peek() != ']') {
    Ranges item;
    if (Peek() == '\\') {
      ++pos_;
      VALET_RETURN_IF_ERROR(Escape(item, true));
    } else {
      VALET_ASSIGN_OR_RETURN(const uint32_t cp, ReadCodePoint());
      item.push_back({cp, cp});
    }
    // A range "a-z": both ends single characters.
    if (item.size() == 1 && item[0].lo == item[0].hi && pos_ + 1 < p_.size() && Peek() == '-' &&
        p_[pos_ + 1] != ']') {
      ++pos_;
      Ranges hi;
      if (Peek() == '\\') {
        ++pos_;
        VALET_RETURN_IF_ERROR(Escape(hi, true));
      } else {
        VALET_ASSIGN_OR_RETURN(const uint32_t cp, ReadCodePoint());
        hi.push_back({cp, cp});
      }
      if (hi.size() != 1 || hi[0].lo != hi[0].hi) return Error("a class escape as a range's end");
      if (hi[0].lo < item[0].lo) return Error("a range out of order in a class");
      item[0].hi = hi[0].lo;
    }
    ranges.insert(ranges.end(), item.begin(), item.end());
  }
  if (AtEnd()) return Error("unterminated '['");
  ++pos_;  // ']'
  Ranges set = NormalizeRanges(std::move(ranges), negate);
  if (set.empty()) return Error("a class that matches nothing");
  return Atom(set);
}

}  // namespace

Result<std::string> CharSetGbnf(const std::vector<CodePointRange>& ranges, RegexText text,
                                GbnfBuilder& builder) {
  if (ranges.empty()) return InvalidArgument("regex: a character set that matches nothing");
  if (text == RegexText::kRaw) return GbnfClass(ranges);
  Ranges plain;
  std::vector<uint32_t> escaped;
  for (const CodePointRange& r : ranges) {
    for (uint32_t c = r.lo; c <= r.hi && c < 0x80; ++c) {
      if (NeedsJsonEscape(c)) escaped.push_back(c);
    }
  }
  Ranges specials = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  Ranges keep = NormalizeRanges(specials, true);  // everything that stands for itself
  for (const CodePointRange& r : ranges) {
    for (const CodePointRange& k : keep) {
      const uint32_t lo = std::max(r.lo, k.lo), hi = std::min(r.hi, k.hi);
      if (lo <= hi) plain.push_back({lo, hi});
    }
  }
  std::vector<std::string> alts;
  if (!plain.empty()) alts.push_back(GbnfClass(NormalizeRanges(std::move(plain), false)));
  if (escaped.size() == 34) {
    alts.push_back(builder.Shared(
        "json_escape", "\"\\\\\" ([\"\\\\bfnrt] | \"u00\" (\"0\" [0-7bef] | \"1\" [0-9a-f]))"));
  } else {
    for (uint32_t c : escaped) alts.push_back(GbnfLiteral(JsonEscape(c)));
  }
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

Result<std::string> RegexToGbnf(std::string_view pattern, const RegexOptions& options,
                                GbnfBuilder& builder) {
  return RegexTranslator(pattern, options, builder).Run();
}

}  // namespace valet
