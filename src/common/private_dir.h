// A directory valet keeps users' data in (the snapshot directory with KV
// snapshots and spilled prefixes, durable tasks' journals and checkpoints in
// its tasks/), opened once and checked instead of trusted by name:
//  - the path's last component is opened with O_NOFOLLOW | O_DIRECTORY, so a
//    symbolic link planted there (to a world-writable directory, say) is
//    refused rather than followed (links in the parents are the app's own
//    layout, Android's /data/user/0 among them, and are followed);
//  - it must be owned by this process's user and writable by no one else:
//    not by others, and not by its group unless that group is the user's own
//    private group (its id is the user's id: Android's per-app group, which
//    getNoBackupFilesDir() is 0771 for, and Debian's user private groups);
//  - a directory valet creates (missing parents too) is 0700 whatever the umask.
// Every file inside is then created, opened, renamed, removed and listed
// relative to the directory's descriptor (openat, renameat, unlinkat,
// fstatat), so once it is open no later change of the path (a rename, a link
// put in its place) can redirect what valet writes or reads.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/private_files.h"
#include "valet/status.h"

namespace valet {

class PrivateDir {
 public:
  // Opens `path`, creating it (and missing parents) 0700 if absent.
  // InvalidArgument, naming the path and what is wrong, when it is refused:
  // a symbolic link, not a directory, owned by another user, or writable by
  // its group or others (the message gives the mode). IoError when it cannot
  // be created or opened (a parent is a file, a read-only file system): the
  // callers that can go on without it (the snapshot store's disk tier) do.
  [[nodiscard]] static Result<PrivateDir> Open(const std::string& path);

  PrivateDir(PrivateDir&& other) noexcept;
  PrivateDir& operator=(PrivateDir&& other) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();

  // The path it was opened as: for messages only, never for I/O.
  const std::string& path() const { return path_; }
  // "<path>/<name>", for messages and tests.
  std::string PathOf(std::string_view name) const;

  // The calls below take a file name inside the directory: one component,
  // neither "." nor "..", without '/' or NUL (InvalidArgument otherwise; -1
  // with errno EINVAL for the descriptor calls). None follows a final link.

  // An existing file for reading; -1 and errno on failure.
  [[nodiscard]] int OpenRead(std::string_view name) const;
  // An existing file for appending (every write lands at the end); never creates.
  [[nodiscard]] int OpenAppend(std::string_view name) const;
  // Writes `bytes` through a new 0600 "<name>.tmp" (O_CREAT | O_EXCL: a file
  // or link already there is removed, never followed) renamed onto `name`,
  // so `name` holds its old content or all of the new. kFsync also flushes
  // the file before the rename and the directory after it. `before_rename`
  // runs once the temporary file is complete (the kill soak's fault switch).
  [[nodiscard]] Status WriteAtomically(std::string_view name, std::span<const uint8_t> bytes,
                                       FileSync sync = FileSync::kNone,
                                       const std::function<void()>& before_rename = {}) const;
  // The same for the concatenation of `parts` (a header and a large body
  // without copying them together).
  [[nodiscard]] Status WriteAtomically(std::string_view name, std::span<const std::span<const uint8_t>> parts,
                                       FileSync sync = FileSync::kNone,
                                       const std::function<void()>& before_rename = {}) const;
  // Unlinks `name` (a link itself, never its target); NotFound when absent.
  [[nodiscard]] Status Remove(std::string_view name) const;
  // The entry itself (lstat): NotFound when absent.
  [[nodiscard]] Result<struct stat> Stat(std::string_view name) const;
  // The names of the entries, sorted; at most `max_entries`, else
  // ResourceExhausted (a directory of millions of files is nobody's journals).
  [[nodiscard]] Result<std::vector<std::string>> List(size_t max_entries) const;
  // Flushes the directory's entries (files created, renamed or removed).
  [[nodiscard]] Status Sync() const;

 private:
  PrivateDir(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  void Close();

  std::string path_;
  int fd_ = -1;
};

}  // namespace valet
