// Where the server reads durable tasks back from: their journals (the store;
// the server keeps no finished text in memory) and the model's tokenizer.
// Rebuilds what the completion endpoints answer from a journal's tokens
// exactly as the scheduler built it: the text through the same stop checker,
// the prompt's token count through the same renderer and tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/engine_interface.h"
#include "durable/task_journal.h"
#include "sched/task_preparer.h"
#include "server/completion_request.h"
#include "valet/status.h"

namespace valet {

struct DurableServerOptions {
  // The scheduler's SchedulerOptions::durable_dir; empty: durable requests
  // are refused with a 400.
  std::string dir;
  // The scheduler's model_fingerprint and parse_special_in_messages: with
  // the engine they make the journals' identity (durable/journal_identity.h),
  // and the latter counts a recovered task's prompt tokens as the scheduler did.
  std::string model_fingerprint;
  bool parse_special_in_messages = false;
  // Durable tasks kept at once (running, or ended and not yet deleted);
  // more are refused with 429 until clients DELETE theirs.
  size_t max_tasks = 1024;
};

class DurableStore {
 public:
  // Opens options.dir as the scheduler does (common/private_dir.h): a
  // directory that is not private, or cannot be made, fails the server's creation.
  static Result<std::unique_ptr<const DurableStore>> Open(const EngineInterface& vocab,
                                                          const DurableServerOptions& options);

  // NotFound when there is no journal under `key`; `key` must have passed
  // CheckTaskKey.
  Result<JournalContents> Read(const std::string& key) const;
  // Unix seconds of the journal's last write (its end, for an ended task).
  int64_t WrittenAt(const std::string& key) const;
  // The prompt's tokens (shared prefix included), as the scheduler counted them.
  Result<int32_t> CountPromptTokens(const TaskRequest& request) const;
  // The text `tokens` show: with `ended`, everything the task answered;
  // else what may be shown so far (bytes that may still become a stop
  // string are held back).
  std::string Text(const std::vector<std::string>& stop, std::span<const int32_t> tokens, bool ended) const;

 private:
  DurableStore(const EngineInterface& vocab, const DurableServerOptions& options, PrivateDir dir);

  const EngineInterface& vocab_;
  const PrivateDir dir_;
  const JournalIdentity identity_;
  const TaskPreparer preparer_;
};

// A journaled request's endpoint: chats have messages, completions a prompt.
Endpoint EndpointOf(const TaskRequest& request);

}  // namespace valet
