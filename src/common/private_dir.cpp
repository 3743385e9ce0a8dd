#include "common/private_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

namespace valet {
namespace {

std::string Errno() { return std::strerror(errno); }

std::string ModeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool ValidName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

Status CheckName(std::string_view name) {
  if (ValidName(name)) return Status::Ok();
  std::string message(name);
  message += " is not a file name inside a directory";
  return InvalidArgument(std::move(message));
}

int OpenDirectoryNoFollow(const std::string& path) {
  return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Missing parents of `path`, one component at a time and 0700 each
// (create_directories would make them 0777 minus the umask, world-readable
// under umask 0). Existing parents are followed, links included: they are
// the app's own layout.
Status MakeParents(const std::string& path) {
  std::filesystem::path partial;
  for (const std::filesystem::path& part : std::filesystem::path(path).parent_path()) {
    partial /= part;
    struct stat st {};
    if (part.empty() || ::stat(partial.c_str(), &st) == 0) continue;
    if (::mkdir(partial.c_str(), 0700) == 0) {
      // The umask may have taken bits mkdir was given (even the owner's).
      (void)::chmod(partial.c_str(), 0700);
    } else if (errno != EEXIST) {
      return IoError("cannot create " + partial.string() + ": " + Errno());
    }
  }
  return Status::Ok();
}

// Why `path` could not be opened as a directory (open failed with `err`).
Status NotOpened(const std::string& path, int err) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return InvalidArgument(path + " is a symbolic link");
    if (!S_ISDIR(st.st_mode)) return InvalidArgument(path + " is not a directory");
  }
  return IoError("cannot open directory " + path + ": " + std::strerror(err));
}

// Empty when the directory `st` describes may hold this user's data.
std::string WhyNotPrivate(const std::string& path, const struct stat& st) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me) {
    return path + " is owned by uid " + std::to_string(st.st_uid) + ", not " + std::to_string(me) +
           " (this process's user)";
  }
  const bool others = (st.st_mode & S_IWOTH) != 0;
  const bool group = (st.st_mode & S_IWGRP) != 0;
  // A group whose id is the user's is the user's private group: nobody else
  // is in it (Android gives every app one, and its data directories are 0771).
  const bool private_group = st.st_gid == static_cast<gid_t>(me);
  if (!others && (!group || private_group)) return {};
  const char* who = others && group ? "its group and others" : others ? "others" : "its group";
  return path + " is writable by " + who + " (mode " + ModeText(st.st_mode) + ")";
}

}  // namespace

Result<PrivateDir> PrivateDir::Open(const std::string& given) {
  std::string path = given;
  // "dir/" would follow a link named dir: the slash makes it a parent.
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return InvalidArgument("a private directory needs a path");
  int fd = OpenDirectoryNoFollow(path);
  if (fd < 0 && errno == ENOENT) {
    VALET_RETURN_IF_ERROR(MakeParents(path));
    if (::mkdir(path.c_str(), 0700) == 0) {
      // Before it is opened: a umask that took the owner's bits would refuse that.
      // (Were the new directory swapped for a link meanwhile, the open below refuses it.)
      if (::chmod(path.c_str(), 0700) != 0) {
        return IoError("cannot make " + path + " private: " + Errno());
      }
    } else if (errno != EEXIST) {  // EEXIST: made meanwhile, or a dangling link (refused below)
      return IoError("cannot create " + path + ": " + Errno());
    }
    fd = OpenDirectoryNoFollow(path);
  }
  if (fd < 0) return NotOpened(path, errno);
  PrivateDir dir(path, fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return IoError("cannot stat " + path + ": " + Errno());
  if (std::string why = WhyNotPrivate(path, st); !why.empty()) return InvalidArgument(why);
  return dir;
}

PrivateDir::PrivateDir(PrivateDir&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

PrivateDir& PrivateDir::operator=(PrivateDir&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

PrivateDir::~PrivateDir() { Close(); }

void PrivateDir::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string PrivateDir::PathOf(std::string_view name) const {
  return path_ + (path_.ends_with('/') ? "" : "/") + std::string(name);
}

int PrivateDir::OpenRead(std::string_view name) const {
  if (!ValidName(name)) {
    errno = EINVAL;
    return -1;
  }
  return ::openat(fd_, std::string(name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

int PrivateDir::OpenAppend(std::string_view name) const {
  if (!ValidName(name)) {
    errno = EINVAL;
    return -1;
  }
  return ::openat(fd_, std::string(name).c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
}

Status PrivateDir::WriteAtomically(std::string_view name, std::span<const uint8_t> bytes, FileSync sync,
                                   const std::function<void()>& before_rename) const {
  const std::span<const uint8_t> parts[] = {bytes};
  return WriteAtomically(name, parts, sync, before_rename);
}

Status PrivateDir::WriteAtomically(std::string_view name, std::span<const std::span<const uint8_t>> parts,
                                   FileSync sync, const std::function<void()>& before_rename) const {
  VALET_RETURN_IF_ERROR(CheckName(name));
  const std::string final_name(name);
  const std::string tmp = final_name + ".tmp";
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(fd_, tmp.c_str(), kFlags, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left by a crash, or planted: unlinkat removes a link itself, never its target.
    (void)::unlinkat(fd_, tmp.c_str(), 0);
    fd = ::openat(fd_, tmp.c_str(), kFlags, 0600);
  }
  if (fd < 0) return IoError("cannot create " + PathOf(tmp) + ": " + Errno());
  const auto fail = [&](const std::string& what) {
    const std::string why = Errno();
    if (fd >= 0) ::close(fd);
    (void)::unlinkat(fd_, tmp.c_str(), 0);
    return IoError("cannot " + what + " " + PathOf(tmp) + ": " + why);
  };
  for (std::span<const uint8_t> bytes : parts) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail("write");
      if (n == 0) {
        errno = EIO;
        return fail("write");
      }
      done += static_cast<size_t>(n);
    }
  }
  if (sync == FileSync::kFsync && ::fsync(fd) != 0) return fail("sync");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail("write");
  if (before_rename) before_rename();
  if (::renameat(fd_, tmp.c_str(), fd_, final_name.c_str()) != 0) return fail("rename");
  return sync == FileSync::kFsync ? Sync() : Status::Ok();
}

Status PrivateDir::Remove(std::string_view name) const {
  VALET_RETURN_IF_ERROR(CheckName(name));
  if (::unlinkat(fd_, std::string(name).c_str(), 0) == 0) return Status::Ok();
  if (errno == ENOENT) return NotFound("no " + PathOf(name));
  return IoError("cannot remove " + PathOf(name) + ": " + Errno());
}

Result<struct stat> PrivateDir::Stat(std::string_view name) const {
  VALET_RETURN_IF_ERROR(CheckName(name));
  struct stat st {};
  if (::fstatat(fd_, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return st;
  if (errno == ENOENT) return NotFound("no " + PathOf(name));
  return IoError("cannot stat " + PathOf(name) + ": " + Errno());
}

Result<std::vector<std::string>> PrivateDir::List(size_t max_entries) const {
  // A descriptor of its own: readdir's position must not be shared with
  // another listing of the same directory.
  const int fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot list " + path_ + ": " + Errno());
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const std::string why = Errno();
    ::close(fd);
    return IoError("cannot list " + path_ + ": " + why);
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (names.size() == max_entries) {
      ::closedir(dir);
      return ResourceExhausted(path_ + " holds more than " + std::to_string(max_entries) +
                               " entries");
    }
    names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return IoError("cannot list " + path_ + ": " + std::strerror(err));
  std::sort(names.begin(), names.end());
  return names;
}

Status PrivateDir::Sync() const {
  if (::fsync(fd_) != 0) return IoError("cannot sync directory " + path_ + ": " + Errno());
  return Status::Ok();
}

}  // namespace valet
