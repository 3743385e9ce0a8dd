#include "server/durable_store.h"

#include <sys/stat.h>

#include "sampling/stop_condition.h"

namespace valet {

Result<std::unique_ptr<const DurableStore>> DurableStore::Open(const EngineInterface& vocab,
                                                               const DurableServerOptions& options) {
  Result<PrivateDir> dir = PrivateDir::Open(options.dir);
  if (!dir.ok()) return Status(dir.status().code(), "durable tasks' directory: " + dir.status().message());
  return std::unique_ptr<const DurableStore>(new DurableStore(vocab, options, std::move(dir).value()));
}

DurableStore::DurableStore(const EngineInterface& vocab, const DurableServerOptions& options, PrivateDir dir)
    : vocab_(vocab),
      dir_(std::move(dir)),
      // The scheduler's, from the same inputs: a journal it wrote reads back here.
      identity_(SchedulerJournalIdentity(vocab, options.model_fingerprint, options.parse_special_in_messages)),
      preparer_(vocab, ChatRendererOptions{!options.parse_special_in_messages}) {}

Result<JournalContents> DurableStore::Read(const std::string& key) const {
  return ReadJournal(dir_, key, identity_);
}

int64_t DurableStore::WrittenAt(const std::string& key) const {
  if (!CheckTaskKey(key).ok()) return 0;
  Result<struct stat> st = dir_.Stat(JournalFileName(key));
  return st.ok() ? static_cast<int64_t>(st->st_mtime) : 0;
}

Result<int32_t> DurableStore::CountPromptTokens(const TaskRequest& request) const {
  VALET_ASSIGN_OR_RETURN(PreparedTask prepared, preparer_.Prepare(request));
  return static_cast<int32_t>(prepared.prompt_tokens());
}

std::string DurableStore::Text(const std::vector<std::string>& stop, std::span<const int32_t> tokens,
                               bool ended) const {
  StopOptions options;
  options.eos_token_ids = vocab_.eog_tokens();
  options.stop_strings = stop;
  Result<StopChecker> checker = StopChecker::Create(std::move(options));
  if (!checker.ok()) return {};  // the scheduler accepted these stop strings, so never
  std::string text;
  for (int32_t token : tokens) {
    const StopDecision decision = checker->Feed(token, vocab_.TokenPiece(token));
    text += decision.text;
    if (decision.stopped()) return text;
  }
  // Ended by its token budget or the context: the scheduler's last Feed (at
  // max_tokens) released what was held back.
  if (ended) text += checker->Flush();
  return text;
}

Endpoint EndpointOf(const TaskRequest& request) {
  return request.messages.empty() ? Endpoint::kCompletions : Endpoint::kChatCompletions;
}

}  // namespace valet
