#include "constrain/sequence_constraint.h"

#include <algorithm>

namespace valet {

Result<std::shared_ptr<const CompiledGrammar>> ConstraintCompiler::Compile(
    const Constraint& constraint) const {
  if (!constraint.active()) return InvalidArgument("no constraint to compile");
  std::call_once(trie_once_, [&] {
    Result<std::shared_ptr<const TokenTrie>> trie = make_trie_();
    if (trie.ok())
      trie_ = std::move(trie).value();
    else
      trie_status_ = trie.status();
  });
  VALET_RETURN_IF_ERROR(trie_status_);
  return cache_.Get(constraint, trie_);
}

Result<SequenceConstraint> SequenceConstraint::Create(
    std::shared_ptr<const CompiledGrammar> compiled, std::span<const int32_t> replay) {
  VALET_ASSIGN_OR_RETURN(GrammarMatcher matcher, GrammarMatcher::Create(std::move(compiled)));
  SequenceConstraint out(std::move(matcher));
  for (size_t i = 0; i < replay.size(); ++i) {
    if (Status s = out.Accept(replay[i]); !s.ok()) {
      return Corrupt("generated token " + std::to_string(i) + " (" + std::to_string(replay[i]) +
                     ") does not follow the task's constraint: " + s.message());
    }
  }
  return out;
}

Status SequenceConstraint::Accept(int32_t token) {
  if (!waiting_) return matcher_.AcceptToken(token);
  const CompiledGrammar& compiled = matcher_.compiled();
  if (compiled.trie == nullptr || token < 0 || token >= compiled.trie->vocab_size()) {
    return InvalidArgument("token " + std::to_string(token) + " is not in the constraint's vocabulary");
  }
  const std::string& bytes = compiled.trie->bytes(token);
  const GrammarTrigger::Scan scan = compiled.trigger->Run(trigger_state_, bytes);
  if (!scan.completed) {
    trigger_state_ = scan.state;
    return Status::Ok();
  }
  if (!matcher_.AcceptBytes(std::string_view(bytes).substr(scan.end))) {
    return InvalidArgument("token " + std::to_string(token) + " completes the trigger into bytes the grammar refuses");
  }
  waiting_ = false;
  return Status::Ok();
}

Status SequenceConstraint::PrepareMask() {
  if (waiting_) {
    if (matcher_.compiled().trie == nullptr) return InvalidArgument("the constraint has no vocabulary");
    // Free text: every token, but those that would start the grammar wrongly.
    mask_.Reset(matcher_.compiled().trie->vocab_size(), true);
    for (int32_t id : matcher_.compiled().trigger->refused(trigger_state_)) mask_.Disallow(id);
    return Status::Ok();
  }
  VALET_RETURN_IF_ERROR(masker_.Compute(matcher_, mask_));
  if (mask_.Count() == 0)
    return InvalidArgument("the constraint admits no token here (no token of the vocabulary fits)");
  return Status::Ok();
}

std::span<const float> SequenceConstraint::Apply(std::span<const float> logits) {
  masked_.assign(logits.begin(), logits.end());
  // Cannot fail: PrepareMask made a mask of the vocabulary's size that allows a token.
  (void)ApplyTokenMask(mask_, masked_);
  return masked_;
}

}  // namespace valet
