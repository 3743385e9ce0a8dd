#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cassert>
#include <queue>
#include <utility>

#include "tokenizer/unicode.h"

namespace valet {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// One SentencePiece merge pass over a single escaped fragment. Symbols form a
// doubly linked list over the text; candidate merges sit in a max-heap and are
// dropped lazily once either side has changed, so the pass is O(n log n).
class SpmMerger {
 public:
  SpmMerger(const Vocabulary& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

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
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = c.left;
      TryQueue(left.prev, c.left);
      TryQueue(c.left, left.next);
    }
    for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[i].next)
      Emit(symbols_[i], out);
  }

 private:
  struct Symbol {
    int32_t prev;
    int32_t next;
    size_t begin;
    size_t length;
  };
  // 16 bytes: the heap is the hot data structure. `length` is the text length
  // of a vocabulary token, so it fits.
  struct Candidate {
    float score;
    int32_t left;
    int32_t right;
    uint32_t length;
  };
  // Max-heap order: higher score first, then the leftmost pair.
  struct Lower {
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.score != b.score) return a.score < b.score;
      return a.left > b.left;
    }
  };

  void SplitCharacters() {
    symbols_.reserve(text_.size());
    for (size_t offset = 0; offset < text_.size();) {
      const size_t length =
          std::min(Utf8SequenceLength(static_cast<uint8_t>(text_[offset])), text_.size() - offset);
      const auto index = static_cast<int32_t>(symbols_.size());
      const bool last = offset + length == text_.size();
      symbols_.push_back({index - 1, last ? -1 : index + 1, offset, length});
      offset += length;
    }
  }

  void TryQueue(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const size_t length = l.length + symbols_[right].length;
    const int32_t id = vocab_.Lookup(text_.substr(l.begin, length));
    if (id == Vocabulary::kNoToken) return;
    queue_.push({vocab_.Score(id), left, right, static_cast<uint32_t>(length)});
  }

  // A final symbol is either a vocabulary token (every merge produced one) or a
  // single character the vocabulary lacks: that one goes out as byte tokens.
  void Emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view piece = text_.substr(s.begin, s.length);
    const int32_t id = vocab_.Lookup(piece);
    if (id != Vocabulary::kNoToken) {
      out.push_back(id);
      return;
    }
    const size_t mark = out.size();
    for (char c : piece) {
      const int32_t byte_id = vocab_.ByteToken(static_cast<uint8_t>(c));
      if (byte_id == Vocabulary::kNoToken) {
        // No byte fallback: SentencePiece's answer is one unknown token per character.
        out.resize(mark);
        if (vocab_.unk_id() != Vocabulary::kNoToken) out.push_back(vocab_.unk_id());
        return;
      }
      out.push_back(byte_id);
    }
  }

  const Vocabulary& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> queue_;
};

}  // namespace

SpmTokenizer::SpmTokenizer(std::shared_ptr<const Vocabulary> vocab) : Tokenizer(std::move(vocab)) {
  assert(vocabulary().model() == "llama");
}

void SpmTokenizer::EncodeText(std::string_view raw, bool after_special,
                              std::vector<int32_t>& out) const {
  const bool prefix_space = after_special && vocabulary().add_space_prefix();
  std::string escaped;
  escaped.reserve(raw.size() + raw.size() / 2 + kSpaceMarker.size());
  if (prefix_space) escaped.append(kSpaceMarker);
  for (char c : raw) {
    if (c == ' ') {
      escaped.append(kSpaceMarker);
    } else {
      escaped.push_back(c);
    }
  }
  SpmMerger(vocabulary(), escaped).Run(out);
}

void SpmTokenizer::AppendPiece(int32_t id, DecodeOptions opts, std::string& out) const {
  const Vocabulary& vocab = vocabulary();
  if (!vocab.Contains(id)) return;
  const std::string& text = vocab.TokenText(id);
  switch (vocab.Type(id)) {
    case TokenType::kNormal:
      for (size_t i = 0; i < text.size();) {
        if (text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
          out.push_back(' ');
          i += kSpaceMarker.size();
        } else {
          out.push_back(text[i++]);
        }
      }
      break;
    case TokenType::kByte:
      out.push_back(static_cast<char>(vocab.ByteValue(id)));
      break;
    case TokenType::kUserDefined:
      out.append(text);
      break;
    case TokenType::kControl:
    case TokenType::kUnknown:
      if (opts.unparse_special) out.append(text);
      break;
    case TokenType::kUnused:
    case TokenType::kUndefined:
      break;
  }
}

}  // namespace valet
