// A vocabulary organised for the token mask: every token's bytes, what kind
// of token it is, and a byte trie of the text tokens, built once per
// vocabulary and shared read-only by every grammar and sequence using it.
//
// The trie is flat, in depth-first preorder: a node's subtree is the index
// range [node, subtree_end), so the mask walk is a forward scan that skips a
// whole subtree with one assignment when the grammar refuses its prefix, and
// tokens sharing a prefix have that prefix checked once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "constrain/grammar.h"
#include "valet/status.h"

namespace valet {

class Tokenizer;

enum class TokenClass : uint8_t {
  kText,     // judged by its bytes
  kEog,      // end of generation: allowed exactly when the grammar can end
  kSpecial,  // control, unused or empty: never allowed under a grammar
};

constexpr uint32_t kNoSummary = UINT32_MAX;

struct TokenTrieNode {
  uint32_t subtree_end;   // one past the last node of this subtree
  uint32_t tokens_begin;  // this node's tokens: range in TokenTrie::node_tokens()
  uint32_t tokens_end;
  uint32_t subtree_tokens_begin;  // the subtree's tokens start here (preorder keeps them together)
  uint32_t below;         // TokenTrie::below(): every byte under this node, or kNoSummary (small subtrees)
  uint32_t depth;         // bytes from the root
  uint8_t byte;           // the edge from the parent
};

class TokenTrie {
 public:
  // token_bytes[id] and classes[id] for every id; kText tokens with no bytes
  // become kSpecial (no grammar step can follow them).
  static Result<std::shared_ptr<const TokenTrie>> Build(std::vector<std::string> token_bytes,
                                                        std::vector<TokenClass> classes);
  // From a tokenizer: pieces as the tokenizer decodes them (byte tokens as their
  // byte, SentencePiece's U+2581 as a space); control, unknown and unused tokens
  // are kSpecial, the vocabulary's end-of-generation tokens kEog.
  static Result<std::shared_ptr<const TokenTrie>> FromTokenizer(const Tokenizer& tokenizer);

  int32_t vocab_size() const { return static_cast<int32_t>(classes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  TokenClass token_class(int32_t id) const { return classes_[static_cast<size_t>(id)]; }
  std::span<const int32_t> eog_tokens() const { return eog_; }

  std::span<const TokenTrieNode> nodes() const { return nodes_; }  // nodes()[0] is the root
  std::span<const int32_t> node_tokens() const { return node_tokens_; }
  uint32_t parent(uint32_t node) const { return parents_[node]; }  // the root's is itself
  // The tokens of node i's subtree, itself included.
  std::span<const int32_t> subtree_tokens(uint32_t i) const {
    const uint32_t end = nodes_[i].subtree_end < nodes_.size() ? nodes_[nodes_[i].subtree_end].subtree_tokens_begin
                                                                : static_cast<uint32_t>(node_tokens_.size());
    return std::span<const int32_t>(node_tokens_).subspan(nodes_[i].subtree_tokens_begin,
                                                          end - nodes_[i].subtree_tokens_begin);
  }
  // The bytes on the edges below a node (its summary), for skipping subtrees
  // whose every byte the grammar loops on.
  const ByteSet& below(uint32_t summary) const { return below_sets_[summary]; }

 private:
  TokenTrie() = default;
  void BuildNodes();
  void Summarize(const std::vector<uint32_t>& parents);

  std::vector<std::string> bytes_;
  std::vector<TokenClass> classes_;
  std::vector<int32_t> eog_;
  std::vector<TokenTrieNode> nodes_;
  std::vector<uint32_t> parents_;
  std::vector<int32_t> node_tokens_;
  std::vector<ByteSet> below_sets_;  // distinct summaries
};

}  // namespace valet
