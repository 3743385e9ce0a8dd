#include "common/private_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace valet {

Result<std::string> MakeScratchDirectory(std::string_view prefix) {
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / prefix).string() + "XXXXXX";
  if (ec) return IoError("no temporary directory: " + ec.message());
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    return IoError("cannot create a directory like " + pattern + ": " + std::strerror(errno));
  }
  return std::string(buf.data());
}

int OpenNoFollow(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); }

}  // namespace valet
