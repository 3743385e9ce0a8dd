#include "tokenizer/bpe_tokenizer.h"

#include <array>
#include <cassert>
#include <optional>
#include <queue>
#include <utility>

#include "tokenizer/unicode.h"

namespace valet {
namespace {

// GPT-2's byte-to-unicode table: printable Latin-1 bytes stand for themselves,
// the other 68 bytes take the code points from U+0100 on, in byte order.
constexpr bool IsPrintableByte(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}
constexpr int kShiftedBytes = 68;

constexpr std::array<char32_t, 256> kByteToCodepoint = [] {
  std::array<char32_t, 256> map{};
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) map[b] = IsPrintableByte(b) ? static_cast<char32_t>(b) : next++;
  return map;
}();

constexpr std::array<int16_t, 0x100 + kShiftedBytes> kCodepointToByte = [] {
  std::array<int16_t, 0x100 + kShiftedBytes> map{};
  map.fill(-1);
  for (int b = 0; b < 256; ++b) map[kByteToCodepoint[b]] = static_cast<int16_t>(b);
  return map;
}();

std::optional<uint8_t> CodepointToByte(char32_t cpt) {
  if (cpt >= kCodepointToByte.size() || kCodepointToByte[cpt] < 0) return std::nullopt;
  return static_cast<uint8_t>(kCodepointToByte[cpt]);
}

// The merge loop over one word. Symbols form a doubly linked list over the
// word; candidate merges sit in a min-heap by rank and are dropped lazily once
// either side has changed, so a word costs O(n log n).
class BpeMerger {
 public:
  BpeMerger(const Vocabulary& vocab, std::string_view word) : vocab_(vocab), word_(word) {}

  void Run(std::vector<int32_t>& out) {
    SplitCharacters();
    for (size_t i = 1; i < symbols_.size(); ++i) {
      TryQueue(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    while (!queue_.empty()) {
      const Candidate c = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[c.left];
      Symbol& right = symbols_[c.right];
      if (left.length == 0 || right.length == 0 || left.length + right.length != c.length) {
        continue;  // stale: one side merged since this candidate was queued
      }
      left.length += right.length;
      left.token = c.result;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = c.left;
      TryQueue(left.prev, c.left);
      TryQueue(c.left, left.next);
    }
    for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[i].next) {
      Emit(symbols_[i], out);
    }
  }

 private:
  struct Symbol {
    int32_t prev;
    int32_t next;
    uint32_t begin;
    uint32_t length;
    int32_t token;  // kNoToken: a character the vocabulary lacks
  };
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t result;
    uint32_t length;
  };
  // Min-heap order: lower rank first, then the leftmost pair.
  struct Later {
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.rank != b.rank) return a.rank > b.rank;
      return a.left > b.left;
    }
  };

  void SplitCharacters() {
    symbols_.reserve(word_.size());
    for (size_t offset = 0; offset < word_.size();) {
      const size_t length =
          std::min(Utf8SequenceLength(static_cast<uint8_t>(word_[offset])), word_.size() - offset);
      const auto index = static_cast<int32_t>(symbols_.size());
      const bool last = offset + length == word_.size();
      symbols_.push_back({index - 1, last ? -1 : index + 1, static_cast<uint32_t>(offset),
                          static_cast<uint32_t>(length),
                          vocab_.Lookup(word_.substr(offset, length))});
      offset += length;
    }
  }

  void TryQueue(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const BpeMerge* merge = vocab_.FindMerge(l.token, r.token);
    if (merge == nullptr) return;
    queue_.push({merge->rank, left, right, merge->result, l.length + r.length});
  }

  // A symbol no merge produced and the vocabulary lacks goes out byte by byte
  // where single-byte tokens exist, as llama.cpp does.
  void Emit(const Symbol& s, std::vector<int32_t>& out) const {
    if (s.token != Vocabulary::kNoToken) {
      out.push_back(s.token);
      return;
    }
    for (char c : word_.substr(s.begin, s.length)) {
      const int32_t id = vocab_.Lookup(std::string_view(&c, 1));
      if (id != Vocabulary::kNoToken) out.push_back(id);
    }
  }

  const Vocabulary& vocab_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Candidate, std::vector<Candidate>, Later> queue_;
};

}  // namespace

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Vocabulary> vocab, PreTokenizerInfo pre)
    : Tokenizer(std::move(vocab)), pre_(pre.kind), ignore_merges_(pre.ignore_merges) {
  assert(vocabulary().model() == "gpt2");
}

void BpeTokenizer::EncodeText(std::string_view raw, bool /*after_special*/,
                              std::vector<int32_t>& out) const {
  const std::vector<char32_t> cpts = DecodeUtf8(raw);
  std::string utf8;
  std::string word;
  size_t start = 0;
  for (size_t length : pre_.Split(cpts)) {
    word.clear();
    for (size_t i = start; i < start + length; ++i) {
      utf8.clear();
      AppendUtf8(cpts[i], utf8);
      for (char byte : utf8) AppendUtf8(kByteToCodepoint[static_cast<uint8_t>(byte)], word);
    }
    EncodeWord(word, out);
    start += length;
  }
}

void BpeTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    const int32_t whole = vocabulary().Lookup(word);
    if (whole != Vocabulary::kNoToken) {
      out.push_back(whole);
      return;
    }
  }
  BpeMerger(vocabulary(), word).Run(out);
}

void BpeTokenizer::AppendPiece(int32_t id, DecodeOptions opts, std::string& out) const {
  const Vocabulary& vocab = vocabulary();
  if (!vocab.Contains(id)) return;
  const std::string& text = vocab.TokenText(id);
  switch (vocab.Type(id)) {
    case TokenType::kNormal:
      for (char32_t cpt : DecodeUtf8(text)) {
        // A code point outside the byte table cannot come from GPT-2's mapping;
        // it is kept as text rather than lost.
        if (std::optional<uint8_t> byte = CodepointToByte(cpt)) {
          out.push_back(static_cast<char>(*byte));
        } else {
          AppendUtf8(cpt, out);
        }
      }
      break;
    case TokenType::kUserDefined:
      out.append(text);
      break;
    case TokenType::kControl:
    case TokenType::kUnknown:
      if (opts.unparse_special) out.append(text);
      break;
    case TokenType::kByte:
    case TokenType::kUnused:
    case TokenType::kUndefined:
      break;
  }
}

}  // namespace valet
