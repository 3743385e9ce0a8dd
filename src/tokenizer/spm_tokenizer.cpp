#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cassert>
#include <queue>
#include <utility>

namespace valet {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// Length of the UTF-8 sequence a lead byte announces; stray continuation bytes
// count as one-byte characters so any byte string splits deterministically.
size_t Utf8Length(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// A run of the input: raw text to tokenize, or one special token matched in it.
struct Fragment {
  size_t begin = 0;
  size_t length = 0;
  int32_t token = Vocabulary::kNoToken;
};

// Splits special-token texts out of `text`, longest token first, each one cut
// out of every raw fragment left by the previous ones.
std::vector<Fragment> Partition(const Vocabulary& vocab, std::string_view text,
                                bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({0, text.size(), Vocabulary::kNoToken});
  std::vector<Fragment> next;
  for (int32_t id : vocab.SplittingTokens()) {
    const TokenType type = vocab.Type(id);
    if (!parse_special && type != TokenType::kUserDefined) continue;
    const std::string& special = vocab.TokenText(id);
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token != Vocabulary::kNoToken) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(f.begin, f.length);
      size_t pos = 0;
      for (size_t hit = raw.find(special); hit != std::string_view::npos;
           hit = raw.find(special, pos)) {
        if (hit > pos) next.push_back({f.begin + pos, hit - pos, Vocabulary::kNoToken});
        next.push_back({f.begin + hit, special.size(), id});
        pos = hit + special.size();
      }
      if (pos < raw.size()) next.push_back({f.begin + pos, raw.size() - pos, Vocabulary::kNoToken});
    }
    fragments.swap(next);
  }
  return fragments;
}

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
          std::min(Utf8Length(static_cast<uint8_t>(text_[offset])), text_.size() - offset);
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

SpmTokenizer::SpmTokenizer(std::shared_ptr<const Vocabulary> vocab) : vocab_(std::move(vocab)) {
  assert(vocab_ != nullptr && vocab_->model() == "llama");
}

std::vector<int32_t> SpmTokenizer::Encode(std::string_view text, EncodeOptions opts) const {
  const Vocabulary& vocab = *vocab_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 2 + 2);
  if (opts.add_bos && vocab.add_bos() && vocab.bos_id() != Vocabulary::kNoToken) {
    out.push_back(vocab.bos_id());
  }
  // The input start counts as "after a special token", so it gets the prefix too.
  bool after_special = true;
  for (const Fragment& f : Partition(vocab, text, opts.parse_special)) {
    if (f.token != Vocabulary::kNoToken) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    EncodeFragment(text.substr(f.begin, f.length), after_special && vocab.add_space_prefix(), out);
    after_special = false;
  }
  if (opts.add_eos && vocab.add_eos() && vocab.eos_id() != Vocabulary::kNoToken) {
    out.push_back(vocab.eos_id());
  }
  return out;
}

void SpmTokenizer::EncodeFragment(std::string_view raw, bool prefix_space,
                                  std::vector<int32_t>& out) const {
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
  SpmMerger(*vocab_, escaped).Run(out);
}

std::string SpmTokenizer::TokenToPiece(int32_t id, DecodeOptions opts) const {
  std::string piece;
  AppendPiece(id, opts, /*strip_space=*/false, piece);
  return piece;
}

void SpmTokenizer::AppendPiece(int32_t id, DecodeOptions opts, bool strip_space,
                               std::string& out) const {
  const Vocabulary& vocab = *vocab_;
  if (!vocab.Contains(id)) return;
  const std::string& text = vocab.TokenText(id);
  const size_t mark = out.size();
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
  if (strip_space && out.size() > mark && out[mark] == ' ') out.erase(mark, 1);
}

std::string SpmTokenizer::Decode(std::span<const int32_t> ids, DecodeOptions opts) const {
  const Vocabulary& vocab = *vocab_;
  bool strip_space = vocab.add_space_prefix();
  if (opts.remove_special && vocab.add_bos() && !ids.empty() && ids.front() == vocab.bos_id()) {
    ids = ids.subspan(1);
    strip_space = false;
  }
  if (opts.remove_special && vocab.add_eos() && !ids.empty() && ids.back() == vocab.eos_id()) {
    ids = ids.first(ids.size() - 1);
  }
  std::string out;
  out.reserve(ids.size() * 4);
  for (int32_t id : ids) {
    AppendPiece(id, opts, strip_space, out);
    strip_space = false;
  }
  return out;
}

}  // namespace valet
