#include "constrain/token_trie.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet {

Result<std::shared_ptr<const TokenTrie>> TokenTrie::Build(std::vector<std::string> token_bytes,
                                                          std::vector<TokenClass> classes) {
  if (token_bytes.size() != classes.size()) {
    return InvalidArgument("token trie: " + std::to_string(token_bytes.size()) + " token texts for " +
                           std::to_string(classes.size()) + " token classes");
  }
  if (token_bytes.empty() || token_bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return InvalidArgument("token trie: vocabulary size out of range");
  }
  auto trie = std::shared_ptr<TokenTrie>(new TokenTrie());
  for (size_t id = 0; id < classes.size(); ++id) {
    if (classes[id] == TokenClass::kText && token_bytes[id].empty()) classes[id] = TokenClass::kSpecial;
    if (classes[id] == TokenClass::kEog) trie->eog_.push_back(static_cast<int32_t>(id));
  }
  trie->bytes_ = std::move(token_bytes);
  trie->classes_ = std::move(classes);
  trie->BuildNodes();
  return std::shared_ptr<const TokenTrie>(std::move(trie));
}

// Sorted texts make the trie in one pass: each text shares with the previous
// one exactly their common prefix, the path nodes past it are closed
// (subtree_end set), and new nodes are appended for the rest, in preorder.
void TokenTrie::BuildNodes() {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (classes_[static_cast<size_t>(id)] == TokenClass::kText) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [this](int32_t a, int32_t b) {
    return bytes(a) != bytes(b) ? bytes(a) < bytes(b) : a < b;
  });
  nodes_.push_back({0, 0, 0, 0, kNoSummary, 0, 0});
  std::vector<uint32_t> path = {0};  // path[d]: the node at depth d
  std::vector<uint32_t> parents = {0};
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& text = bytes(id);
    size_t common = 0;
    if (previous != nullptr) {
      const size_t n = std::min(previous->size(), text.size());
      while (common < n && (*previous)[common] == text[common]) ++common;
    }
    while (path.size() > common + 1) {
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < text.size(); ++d) {
      parents.push_back(path.back());
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({0, 0, 0, static_cast<uint32_t>(node_tokens_.size()), kNoSummary,
                        static_cast<uint32_t>(d + 1), static_cast<uint8_t>(text[d])});
    }
    TokenTrieNode& end = nodes_[path.back()];
    if (end.tokens_begin == end.tokens_end) end.tokens_begin = static_cast<uint32_t>(node_tokens_.size());
    node_tokens_.push_back(id);
    end.tokens_end = static_cast<uint32_t>(node_tokens_.size());
    previous = &text;
  }
  while (!path.empty()) {
    nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
    path.pop_back();
  }
  Summarize(parents);
  parents_ = std::move(parents);
}

// The bytes below each node, kept (deduplicated) only for subtrees of at
// least kMinSummarized nodes: those are the ones worth skipping whole.
void TokenTrie::Summarize(const std::vector<uint32_t>& parents) {
  constexpr uint32_t kMinSummarized = 2;
  std::vector<ByteSet> below(nodes_.size());
  for (size_t i = nodes_.size(); i-- > 1;) {  // children come after parents in preorder
    below[parents[i]].Merge(below[i]);
    below[parents[i]].Add(nodes_[i].byte);
  }
  std::map<ByteSet, uint32_t> ids;
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    if (nodes_[i].subtree_end - i < kMinSummarized) continue;
    auto [it, inserted] = ids.emplace(below[i], static_cast<uint32_t>(below_sets_.size()));
    if (inserted) below_sets_.push_back(below[i]);
    nodes_[i].below = it->second;
  }
}

Result<std::shared_ptr<const TokenTrie>> TokenTrie::FromTokenizer(const Tokenizer& tokenizer) {
  const Vocabulary& vocab = tokenizer.vocabulary();
  std::vector<std::string> texts(static_cast<size_t>(vocab.size()));
  std::vector<TokenClass> classes(static_cast<size_t>(vocab.size()), TokenClass::kText);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const auto i = static_cast<size_t>(id);
    const TokenType type = vocab.Type(id);
    if (vocab.IsEog(id)) {
      classes[i] = TokenClass::kEog;
    } else if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kUnused) {
      classes[i] = TokenClass::kSpecial;
    } else {
      texts[i] = tokenizer.TokenToPiece(id);
    }
  }
  return Build(std::move(texts), std::move(classes));
}

}  // namespace valet
