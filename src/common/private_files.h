// Files that hold users' conversations (KV snapshots, durable tasks'
// journals): created 0600 in private directories (common/private_dir.h,
// which checks and opens them), never through a symbolic link an attacker
// planted, and scratch directories with unpredictable names (mkdtemp), so a
// shared temporary directory or a permissive umask exposes nothing.
#pragma once

#include <string>
#include <string_view>

#include "valet/status.h"

namespace valet {

// Whether a write must reach the storage device before it returns. A process
// kill (Android's low-memory killer) loses nothing the kernel has accepted, so
// only what must also survive a power loss or a kernel crash pays for kFsync.
enum class FileSync { kNone, kFsync };

// A new directory "<system temp>/<prefix>XXXXXX" (mkdtemp: unique, 0700).
Result<std::string> MakeScratchDirectory(std::string_view prefix);

// Opens `path` for reading without following a final symbolic link; -1 and errno on failure.
int OpenNoFollow(const std::string& path);

}  // namespace valet
