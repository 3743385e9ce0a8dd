#include "chat/literal_content.h"

#include <algorithm>
#include <optional>

namespace valet::chat {
namespace {

// The reserved code points U+FDD0..U+FDEF are all "\xEF\xB7" plus one byte.
constexpr unsigned char kLead0 = 0xEF;
constexpr unsigned char kLead1 = 0xB7;
constexpr unsigned char kOpen = 0x90;        // U+FDD0
constexpr unsigned char kClose = 0x91;       // U+FDD1
constexpr unsigned char kDigitZero = 0xA0;   // U+FDE0 .. U+FDEF: hex digits 0..15
constexpr unsigned char kLastReserved = 0xAF;  // U+FDEF
constexpr size_t kReservedBytes = 3;
// Eight hex digits hold any index a render can reach; more is not a placeholder.
constexpr int kMaxDigits = 8;

unsigned char ByteAt(std::string_view s, size_t i) { return static_cast<unsigned char>(s[i]); }

// The last byte of the reserved code point at `i`, or 0 when there is none.
unsigned char ReservedAt(std::string_view s, size_t i) {
  if (i + kReservedBytes > s.size() || ByteAt(s, i) != kLead0 || ByteAt(s, i + 1) != kLead1) return 0;
  const unsigned char last = ByteAt(s, i + 2);
  return last >= kOpen && last <= kLastReserved ? last : 0;
}

void AppendReserved(unsigned char last, std::string& out) {
  out.push_back(static_cast<char>(kLead0));
  out.push_back(static_cast<char>(kLead1));
  out.push_back(static_cast<char>(last));
}

// The index of a well-formed placeholder at `i`, and where it ends.
std::optional<uint32_t> ParsePlaceholder(std::string_view s, size_t i, size_t* end) {
  if (ReservedAt(s, i) != kOpen) return std::nullopt;
  uint32_t index = 0;
  int digits = 0;
  size_t j = i + kReservedBytes;
  for (unsigned char c = ReservedAt(s, j); c >= kDigitZero && digits < kMaxDigits; c = ReservedAt(s, j)) {
    index = index * 16 + (c - kDigitZero);
    ++digits;
    j += kReservedBytes;
  }
  if (digits == 0 || ReservedAt(s, j) != kClose) return std::nullopt;
  *end = j + kReservedBytes;
  return index;
}

bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Sorts and merges overlapping or touching ranges.
std::vector<ByteRange> Merged(std::vector<ByteRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!out.empty() && r.begin <= out.back().end()) {
      out.back().length = std::max(out.back().end(), r.end()) - out.back().begin;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

void SpecialTexts::Trie::Insert(std::string_view text, bool reversed) {
  int32_t node = 0;
  for (size_t k = 0; k < text.size(); ++k) {
    const auto byte = ByteAt(text, reversed ? text.size() - 1 - k : k);
    int32_t child = Child(node, byte);
    if (child < 0) {
      child = static_cast<int32_t>(nodes_.size());
      Node fresh;
      fresh.next_sibling = nodes_[static_cast<size_t>(node)].first_child;
      fresh.byte = byte;
      nodes_.push_back(fresh);
      nodes_[static_cast<size_t>(node)].first_child = child;
    }
    node = child;
  }
  nodes_[static_cast<size_t>(node)].terminal = true;
}

int32_t SpecialTexts::Trie::Child(int32_t node, uint8_t byte) const {
  int32_t c = nodes_[static_cast<size_t>(node)].first_child;
  while (c >= 0 && nodes_[static_cast<size_t>(c)].byte != byte) c = nodes_[static_cast<size_t>(c)].next_sibling;
  return c;
}

SpecialTexts::SpecialTexts(std::span<const std::string> texts) {
  for (const std::string& t : texts) {
    if (t.empty()) continue;
    forward_.Insert(t, /*reversed=*/false);
    backward_.Insert(t, /*reversed=*/true);
    max_length_ = std::max(max_length_, t.size());
  }
}

size_t SpecialTexts::LongestMatchAt(std::string_view text, size_t pos) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t j = pos; j < text.size(); ++j) {
    node = forward_.Child(node, ByteAt(text, j));
    if (node < 0) break;
    if (forward_.Terminal(node)) best = j - pos + 1;
  }
  return best;
}

size_t SpecialTexts::LongestSuffixStartingOne(std::string_view text) const {
  const size_t n = text.size();
  for (size_t start = n > max_length_ ? n - max_length_ : 0; start < n; ++start) {
    int32_t node = 0;
    for (size_t j = start; j < n && node >= 0; ++j) node = forward_.Child(node, ByteAt(text, j));
    if (node >= 0) return n - start;
  }
  return 0;
}

size_t SpecialTexts::LongestPrefixEndingOne(std::string_view text) const {
  for (size_t len = std::min(text.size(), max_length_); len > 0; --len) {
    int32_t node = 0;
    for (size_t j = len; j > 0 && node >= 0; --j) node = backward_.Child(node, ByteAt(text, j - 1));
    if (node >= 0) return len;
  }
  return 0;
}

std::vector<ByteRange> ContentEscaper::RangesToEscape(std::string_view content) const {
  std::vector<ByteRange> ranges;
  for (size_t i = 0; i < content.size();) {
    size_t length = texts_.LongestMatchAt(content, i);
    if (length == 0 && ReservedAt(content, i) != 0) length = kReservedBytes;
    if (length == 0) {
      ++i;
      continue;
    }
    ranges.push_back({i, length});
    i += length;
  }
  // The edges, as given and with whitespace trimmed (templates trim content),
  // where a partial text could meet the rest of itself outside the content.
  size_t lead = 0, trail = content.size();
  while (lead < trail && IsAsciiSpace(content[lead])) ++lead;
  while (trail > lead && IsAsciiSpace(content[trail - 1])) --trail;
  for (const ByteRange edge : {ByteRange{0, content.size()}, ByteRange{lead, trail - lead}}) {
    const std::string_view part = content.substr(edge.begin, edge.length);
    if (const size_t p = texts_.LongestPrefixEndingOne(part); p > 0) ranges.push_back({edge.begin, p});
    if (const size_t s = texts_.LongestSuffixStartingOne(part); s > 0) ranges.push_back({edge.end() - s, s});
  }
  return Merged(std::move(ranges));
}

void ContentEscaper::AppendPlaceholder(std::string_view original, std::string& out) {
  auto it = index_of_.find(original);
  if (it == index_of_.end()) {
    it = index_of_.emplace(std::string(original), static_cast<uint32_t>(originals_.size())).first;
    originals_.emplace_back(original);
  }
  const uint32_t index = it->second;
  int digits = 1;
  while (digits < kMaxDigits && (index >> (4 * digits)) != 0) ++digits;
  AppendReserved(kOpen, out);
  for (int d = digits - 1; d >= 0; --d) {
    AppendReserved(static_cast<unsigned char>(kDigitZero + ((index >> (4 * d)) & 0xF)), out);
  }
  AppendReserved(kClose, out);
}

std::string ContentEscaper::Escape(std::string_view content) {
  const std::vector<ByteRange> ranges = RangesToEscape(content);
  if (ranges.empty()) return std::string(content);
  std::string out;
  out.reserve(content.size() + ranges.size() * 4 * kReservedBytes);
  size_t copied = 0;
  for (const ByteRange& r : ranges) {
    out.append(content.substr(copied, r.begin - copied));
    AppendPlaceholder(content.substr(r.begin, r.length), out);
    copied = r.end();
  }
  out.append(content.substr(copied));
  return out;
}

void ContentEscaper::EscapeStrings(Json& value) {
  if (value.is_string()) {
    value = Escape(value.get_ref<const std::string&>());
  } else if (value.is_array()) {
    for (Json& item : value) EscapeStrings(item);
  } else if (value.is_object()) {
    // A part's text, not its "type" or other fields a template compares.
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() == "text" || it.key() == "content") EscapeStrings(it.value());
    }
  }
}

Json ContentEscaper::EscapeMessages(const Json& messages) {
  Json out = messages;
  if (!out.is_array()) return out;
  for (Json& m : out) {
    if (auto content = m.find("content"); m.is_object() && content != m.end()) EscapeStrings(*content);
  }
  return out;
}

LiteralText ContentEscaper::Restore(std::string_view rendered) const {
  LiteralText r;
  r.text.reserve(rendered.size());
  size_t copied = 0;
  for (size_t i = rendered.find(static_cast<char>(kLead0)); i != std::string_view::npos;
       i = rendered.find(static_cast<char>(kLead0), i)) {
    if (ReservedAt(rendered, i) == 0) {
      ++i;
      continue;
    }
    r.text.append(rendered.substr(copied, i - copied));
    size_t end = i + kReservedBytes;  // a stray reserved code point is dropped
    const std::optional<uint32_t> index = ParsePlaceholder(rendered, i, &end);
    if (index && *index < originals_.size()) {
      const std::string& original = originals_[*index];
      if (!r.literal.empty() && r.literal.back().end() == r.text.size()) {
        r.literal.back().length += original.size();
      } else {
        r.literal.push_back({r.text.size(), original.size()});
      }
      r.text.append(original);
    } else {
      end = i + kReservedBytes;
    }
    i = copied = end;
  }
  r.text.append(rendered.substr(copied));
  return r;
}

}  // namespace valet::chat
