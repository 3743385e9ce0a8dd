// A durable task's KV checkpoint (docs/durable.md): the engine's export of
// its sequence (EngineInterface::ExportSequence), kept beside the journal so
// that after a kill recovery brings the KV back instead of re-prefilling the
// prompt and every generated token.
//
// File "<dir>/<task key>.kv", 0600 in the journals' private directory, little-endian:
//   "VALETCKP" u32 format_version u32 n [n bytes: the journal identity,
//   IdentityBytes] u64 m [m bytes: the engine's export] u64 Checksum64(all before)
// It is written whole to "<path>.tmp" and renamed into place, so a kill
// leaves the old checkpoint, the new one or none, never a mix; a reader
// checks the identity, every length against the file's size and the checksum,
// and a checkpoint that fails any of them is not used (the task re-prefills).
// The journal stays the record of what the task generated; a checkpoint only
// saves computing KV, and may hold fewer tokens than the journal.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/private_dir.h"
#include "durable/task_journal.h"
#include "valet/status.h"

namespace valet {

// 2: the identity holds the settings that decide tokens (journal_identity.h).
inline constexpr uint32_t kCheckpointFormatVersion = 2;

// "<task key>.kv", and "<dir>/" before it (tests damage the file).
std::string CheckpointFileName(std::string_view task_key);
std::string CheckpointPath(const std::string& dir, const std::string& task_key);

// The task's checkpoint in `dir`, written whole and renamed into place;
// `before_rename` (DurableWriteHooks, valet/scheduler.h) runs between the two.
[[nodiscard]] Status WriteCheckpoint(const PrivateDir& dir, std::string_view task_key, const JournalIdentity& identity,
                                     std::span<const uint8_t> payload, FileSync sync,
                                     const std::function<void()>& before_rename = {});

// The payload, when the file is intact, of `identity` and at most
// `max_payload_bytes` long; NotFound when there is none, Corrupt otherwise.
Result<std::vector<uint8_t>> ReadCheckpoint(const PrivateDir& dir, std::string_view task_key,
                                            const JournalIdentity& identity, size_t max_payload_bytes);

// Removes the checkpoint and a temporary file a kill may have left; absent is fine.
[[nodiscard]] Status RemoveCheckpoint(const PrivateDir& dir, std::string_view task_key);

// Whether `file_name` is a checkpoint's (or its temporary file's): the
// journal scan passes over them.
bool IsCheckpointFileName(std::string_view file_name);

}  // namespace valet
