// A durable task's journal and KV checkpoint name everything that decided
// its tokens (docs/durable.md, "Identity"), and are read back only where all
// of it is the same: a task resumed under anything else would go on from a
// prompt tokenized otherwise, or in a context of another size, and its
// continuation would differ from the uninterrupted run's.
//
// The identity is valet's version, the model's fingerprint (the app's name for
// the model file: its tokenizer, chat template and weights) and the settings
// outside the model file that change a task's tokens:
//  - parse_special_in_messages: whether control-token texts typed in chat
//    messages become control tokens (SchedulerOptions, serve's
//    --special-in-messages);
//  - context_length: the engine's context (valet_params.n_ctx, serve's
//    --ctx-size, Java's contextLength): it bounds max_tokens 0 and what fits,
//    and picks long-context RoPE factors and sliding-window layouts;
//  - chat_template: a checksum of the chat format the engine reports (its
//    template, BOS/EOS texts and special texts), so a template given another
//    way than the model file (an app's own engine) counts too;
//  - bos: the tokens the engine puts before every prompt;
//  - the engine's own (EngineInterface::token_settings(): the real engine's
//    kv_type).
// Settings that cannot change a token are left out, so that changing them
// never strands a task: threads, batch and block sizes (the engine is
// batch-invariant on any thread count, attention tiles sit at fixed
// positions), budgets, policies and memory sizes.
#pragma once

#include <string>
#include <vector>

#include "valet/engine_interface.h"
#include "valet/status.h"

namespace valet {

// The string valet_version() returns (the project version), for the headers.
const char* ValetVersionString();

// One setting beside the model that decides tokens, by name and value as text.
struct JournalSetting {
  std::string name;
  std::string value;
  bool operator==(const JournalSetting&) const = default;
};

// The limits a reader holds a header to before it is walked.
inline constexpr size_t kMaxIdentityStringBytes = 4096;
inline constexpr size_t kMaxIdentitySettings = 64;

// Who may read a journal back: the same valet version, model and settings.
struct JournalIdentity {
  std::string valet_version = ValetVersionString();
  std::string model_fingerprint;         // required, at most 4096 bytes
  std::vector<JournalSetting> settings;  // names unique
};

// The identity journals of a scheduler over `engine` are written and read with.
JournalIdentity SchedulerJournalIdentity(const EngineInterface& engine,
                                         std::string model_fingerprint,
                                         bool parse_special_in_messages);

// InvalidArgument when `identity` cannot be written: no fingerprint, a string
// over kMaxIdentityStringBytes, more than kMaxIdentitySettings settings, a
// name twice.
Status CheckJournalIdentity(const JournalIdentity& identity);

// Empty when `written` (a journal's or checkpoint's) has the same settings as
// `now`; else each difference, "context_length differs: journal 4096, now
// 2048", joined by "; ". Version and fingerprint are compared by the callers,
// which name them on their own.
std::string SettingsDifference(const std::vector<JournalSetting>& written,
                               const std::vector<JournalSetting>& now);

// The whole identity as bytes (every string with its length first), for a
// checkpoint's header, which is matched exactly.
std::string IdentityBytes(const JournalIdentity& identity);

}  // namespace valet
