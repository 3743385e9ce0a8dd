// Message content is text: a user who types "<|im_start|>system" must not get
// the control tokens the template's own markup is made of. The render itself
// cannot tell content from markup, so content goes through it disguised:
//
// 1. Escape: in every message's content, each special-token text (and each
//    reserved code point a user typed) is swapped for a placeholder made of
//    Unicode noncharacters, U+FDD0 <index as U+FDE0..U+FDEF hex digits> U+FDD1.
//    So are the partial texts at the content's edges that could complete a
//    special text with the markup or a neighbouring message ("<|im_" at the end).
// 2. The template renders as usual: placeholders survive concatenation,
//    trimming, splitting, case changes and tojson, since no template touches
//    noncharacters.
// 3. Restore: each placeholder becomes its original text again, and its byte
//    range in the prompt is reported so the tokenizer reads it as text
//    (EncodeOptions::literal). Stray reserved code points (a placeholder a
//    template cut in half) are dropped. Only content is escaped: the same
//    code points in other message fields or variables would be read as
//    placeholders too (the scheduler passes role and content only).
//
// Content without special texts renders as it did, so its prompt is byte for
// byte and token for token what it was. The price: a template that
// searches content for a special text ('<|im_end|>' in content) no longer
// finds one the user typed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/json.h"
#include "valet/byte_range.h"

namespace valet::chat {

// A set of texts (a vocabulary's control-token texts) matched at any position
// in time proportional to the longest text, through a byte trie.
class SpecialTexts {
 public:
  // Empty texts are ignored.
  explicit SpecialTexts(std::span<const std::string> texts);

  bool empty() const { return max_length_ == 0; }
  size_t max_length() const { return max_length_; }
  // The length of the longest text that `text` has at `pos`; 0 when none.
  size_t LongestMatchAt(std::string_view text, size_t pos) const;
  // The length of the longest suffix of `text` that begins some text.
  size_t LongestSuffixStartingOne(std::string_view text) const;
  // The length of the longest prefix of `text` that ends some text.
  size_t LongestPrefixEndingOne(std::string_view text) const;

 private:
  // Left-child, right-sibling: one allocation for the whole trie.
  struct Node {
    int32_t first_child = -1;
    int32_t next_sibling = -1;
    uint8_t byte = 0;
    bool terminal = false;
  };
  class Trie {
   public:
    Trie() : nodes_(1) {}
    void Insert(std::string_view text, bool reversed);
    int32_t Child(int32_t node, uint8_t byte) const;
    bool Terminal(int32_t node) const { return nodes_[static_cast<size_t>(node)].terminal; }

   private:
    std::vector<Node> nodes_;
  };

  Trie forward_;
  Trie backward_;  // the texts reversed, for prefixes of content that end one
  size_t max_length_ = 0;
};

// A rendered prompt with its placeholders restored.
struct LiteralText {
  std::string text;
  std::vector<ByteRange> literal;  // sorted, disjoint: where content's special texts are
};

// One conversation's escape table: escape every message, render, restore.
class ContentEscaper {
 public:
  explicit ContentEscaper(const SpecialTexts& texts) : texts_(texts) {}

  // `content` with its special texts and reserved code points as placeholders.
  std::string Escape(std::string_view content);
  // Every message's "content" escaped: a string, or the "text" of its parts.
  Json EscapeMessages(const Json& messages);
  // `rendered` with placeholders back to their originals; O(size).
  LiteralText Restore(std::string_view rendered) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<ByteRange> RangesToEscape(std::string_view content) const;
  void AppendPlaceholder(std::string_view original, std::string& out);
  // In place; the JSON's depth is bounded (common/json.h), and so is the recursion.
  void EscapeStrings(Json& value);

  const SpecialTexts& texts_;
  std::vector<std::string> originals_;  // by placeholder index
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> index_of_;
};

}  // namespace valet::chat
