#include "common/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace valet {

namespace {

std::string Errno() { return std::strerror(errno); }

}  // namespace

Status MakePrivateDirectory(const std::string& path) {
  const std::filesystem::path dir(path);
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return Status::Ok();
  // One component at a time, so missing parents are 0700 too (create_directories
  // would make them 0777 minus the umask, world-readable under umask 0).
  std::filesystem::path partial;
  for (const std::filesystem::path& part : dir) {
    partial /= part;
    if (part.empty() || std::filesystem::is_directory(partial, ec)) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return IoError("cannot create " + partial.string() + ": " + Errno());
    }
    if (!std::filesystem::is_directory(partial, ec)) {
      return IoError(partial.string() + " is not a directory");
    }
  }
  return Status::Ok();
}

Result<std::string> MakeScratchDirectory(std::string_view prefix) {
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / prefix).string() + "XXXXXX";
  if (ec) return IoError("no temporary directory: " + ec.message());
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return IoError("cannot create a directory like " + pattern + ": " + Errno());
  return std::string(buf.data());
}

Status WritePrivateFileAtomically(const std::string& path, std::span<const uint8_t> bytes,
                                  FileSync sync, const std::function<void()>& before_rename) {
  const std::string tmp = path + ".tmp";
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(tmp.c_str(), kFlags, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left by a crash, or planted: unlink removes a link itself, never its target.
    ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), kFlags, 0600);
  }
  if (fd < 0) return IoError("cannot create " + tmp + ": " + Errno());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? Errno() : "no progress";
      ::close(fd);
      ::unlink(tmp.c_str());
      return IoError("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (sync == FileSync::kFsync && ::fsync(fd) != 0) {
    const std::string why = Errno();
    ::close(fd);
    ::unlink(tmp.c_str());
    return IoError("cannot sync " + tmp + ": " + why);
  }
  if (::close(fd) != 0) {
    const std::string why = Errno();
    ::unlink(tmp.c_str());
    return IoError("cannot write " + tmp + ": " + why);
  }
  if (before_rename) before_rename();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = Errno();
    ::unlink(tmp.c_str());
    return IoError("cannot rename " + tmp + ": " + why);
  }
  return sync == FileSync::kFsync ? SyncDirectoryOf(path) : Status::Ok();
}

Status SyncDirectoryOf(const std::string& file) {
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  const std::string path = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open directory " + path + ": " + Errno());
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? Errno() : std::string();
  ::close(fd);
  if (rc != 0) return IoError("cannot sync directory " + path + ": " + why);
  return Status::Ok();
}

int OpenNoFollow(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); }

int OpenForAppendNoFollow(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
}

}  // namespace valet
