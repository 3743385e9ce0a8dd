// Files that hold users' conversations (KV snapshots today): created 0600 in
// directories valet creates 0700, never through a symbolic link an attacker
// planted, and scratch directories with unpredictable names (mkdtemp), so a
// shared temporary directory or a permissive umask exposes nothing.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "valet/status.h"

namespace valet {

// Creates `path` (and missing parents) if absent; every directory created here
// is 0700 whatever the umask. An existing directory keeps its mode: it is the
// app's (a cache directory it chose).
Status MakePrivateDirectory(const std::string& path);

// Whether a write must reach the storage device before it returns. A process
// kill (Android's low-memory killer) loses nothing the kernel has accepted, so
// only what must also survive a power loss or a kernel crash pays for kFsync.
enum class FileSync { kNone, kFsync };

// A new directory "<system temp>/<prefix>XXXXXX" (mkdtemp: unique, 0700).
Result<std::string> MakeScratchDirectory(std::string_view prefix);

// Writes `bytes` to `path` through a new 0600 file at `path + ".tmp"`
// (O_CREAT | O_EXCL | O_NOFOLLOW: a file or link already there is removed,
// never followed) renamed into place, so `path` holds either its old content
// or all of the new. kFsync also flushes the file before the rename and the
// directory after it, so the new content survives a power loss once this returns.
// `before_rename` runs once the temporary file is complete (the kill soak's
// fault switch dies there).
Status WritePrivateFileAtomically(const std::string& path, std::span<const uint8_t> bytes,
                                  FileSync sync = FileSync::kNone,
                                  const std::function<void()>& before_rename = {});

// Flushes the entries of the directory holding `file` (the file created,
// renamed or removed there).
Status SyncDirectoryOf(const std::string& file);

// Opens `path` for reading without following a final symbolic link; -1 and errno on failure.
int OpenNoFollow(const std::string& path);

// Opens an existing file `path` for appending (O_APPEND: every write lands at
// the end) without following a final symbolic link; -1 and errno on failure.
int OpenForAppendNoFollow(const std::string& path);

}  // namespace valet
