#include "constrain/grammar_matcher.h"

#include <string>
#include <utility>

namespace valet {
namespace {

// Step scratch per thread: a matcher stays small to copy, and steps allocate
// nothing once these have grown.
struct StepBuffers {
  StackScratch scratch;
  FrameArena arena;
  std::vector<MatcherStack> stacks;
  std::vector<MatcherStack> next;
};

StepBuffers& Buffers() {
  thread_local StepBuffers buffers;
  return buffers;
}

}  // namespace

Result<GrammarMatcher> GrammarMatcher::Create(std::shared_ptr<const CompiledGrammar> compiled) {
  if (compiled == nullptr || compiled->grammar == nullptr) return InvalidArgument("matcher: no grammar");
  GrammarMatcher m(std::move(compiled));
  StepBuffers& buf = Buffers();
  buf.arena.Assign({});
  const bool fits = InitialStacks(*m.compiled_->grammar, m.compiled_->limits, buf.arena, m.stacks_, buf.scratch);
  m.frames_ = buf.arena.frames();
  if (!fits) {
    return ResourceExhausted("matcher: the grammar's start exceeds the matcher's stack limits (max_stacks, "
                             "max_expansions)");
  }
  if (m.stacks_.empty()) {
    return ResourceExhausted("matcher: every path into the grammar nests deeper than max_depth (" +
                             std::to_string(m.compiled_->limits.max_depth) + ")");
  }
  m.frames_after_compact_ = m.frames_.size();
  return m;
}

bool GrammarMatcher::Accept(uint8_t byte) {
  const char c = static_cast<char>(byte);
  return Advance(std::string_view(&c, 1));
}

// All bytes or none, through the steps the mask's trie walk makes for a token
// with these bytes (the same arena contents, so the same frames and stacks).
bool GrammarMatcher::Advance(std::string_view bytes) {
  if (finished_) return false;
  StepBuffers& buf = Buffers();
  buf.arena.Assign(frames_);
  buf.stacks.assign(stacks_.begin(), stacks_.end());
  for (char c : bytes) {
    buf.next.clear();
    if (!StepStacks(*compiled_->grammar, compiled_->limits, buf.stacks, static_cast<uint8_t>(c), buf.arena,
                    buf.next, buf.scratch) ||
        buf.next.empty()) {
      return false;
    }
    buf.stacks.swap(buf.next);
  }
  stacks_.assign(buf.stacks.begin(), buf.stacks.end());
  frames_.assign(buf.arena.frames().begin(), buf.arena.frames().end());
  MaybeCompact();
  return true;
}

// Frames left behind by dead stacks are garbage; compacting when the arena has
// doubled keeps it proportional to the live stacks at amortized O(1) per byte.
void GrammarMatcher::MaybeCompact() {
  if (frames_.size() < 64 || frames_.size() < 2 * frames_after_compact_) return;
  CompactFrames(stacks_, frames_);
  frames_after_compact_ = frames_.size();
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) { return Advance(bytes); }

Status GrammarMatcher::AcceptToken(int32_t token) {
  const TokenTrie* trie = compiled_->trie.get();
  if (trie == nullptr) return InvalidArgument("matcher: no vocabulary to read tokens with");
  if (token < 0 || token >= trie->vocab_size()) {
    return InvalidArgument("matcher: token " + std::to_string(token) + " outside the vocabulary");
  }
  if (finished_) return InvalidArgument("matcher: token after the end of the grammar");
  switch (trie->token_class(token)) {
    case TokenClass::kEog:
      if (!CanEnd()) return InvalidArgument("matcher: end of generation before the grammar is complete");
      finished_ = true;
      return Status::Ok();
    case TokenClass::kSpecial:
      return InvalidArgument("matcher: special token " + std::to_string(token) + " inside a grammar");
    case TokenClass::kText:
      break;
  }
  if (!AcceptBytes(trie->bytes(token))) {
    return InvalidArgument("matcher: token " + std::to_string(token) + " does not fit the grammar here");
  }
  return Status::Ok();
}

}  // namespace valet
