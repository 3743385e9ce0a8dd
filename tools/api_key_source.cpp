#include "api_key_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace valet::cli {

namespace {

std::string Mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Closes the descriptor on every way out of ReadApiKeyFile.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Result<std::string> ReadApiKeyFile(const std::string& path) {
  const std::string what = "--api-key-file " + path;
  // O_NONBLOCK: a FIFO planted at the path must not hang the start; it is
  // refused below as not a regular file.
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) return InvalidArgument(what + ": cannot open: " + std::strerror(errno));
  // The checks are on the opened file, so a path swapped after them changes nothing.
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return InvalidArgument(what + ": cannot stat: " + std::strerror(errno));
  struct stat link {};
  const bool symlink = lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  const std::string target = symlink ? " (a symlink to a file" : " (a file";
  if (!S_ISREG(st.st_mode)) return InvalidArgument(what + ": not a regular file");
  if ((st.st_mode & 077) != 0) {
    return InvalidArgument(what + target + " with mode " + Mode(st.st_mode) +
                           "): group and others must have no permission on a key file; chmod 600 it");
  }
  if (st.st_size > static_cast<off_t>(kMaxApiKeyFileBytes)) {
    return InvalidArgument(what + ": " + std::to_string(st.st_size) + " bytes is not a key (at most " +
                           std::to_string(kMaxApiKeyFileBytes) + ")");
  }
  // Read one byte past the limit, so a file that grew since fstat is caught too.
  std::string key(kMaxApiKeyFileBytes + 1, '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = read(fd.get(), key.data() + got, key.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgument(what + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxApiKeyFileBytes) {
    return InvalidArgument(what + ": longer than " + std::to_string(kMaxApiKeyFileBytes) + " bytes is not a key");
  }
  key.resize(got);
  // Editors and `echo KEY > file` end the line; the newline is not the key's.
  if (!key.empty() && key.back() == '\n') key.pop_back();
  if (!key.empty() && key.back() == '\r') key.pop_back();
  VALET_RETURN_IF_ERROR(CheckApiKey(key, what));
  return key;
}

Status CheckApiKey(std::string_view key, const std::string& source) {
  if (key.empty()) return InvalidArgument(source + ": the API key is empty");
  for (char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      return InvalidArgument(source + ": the API key holds a control character (a line break?); it must fit on one "
                             "HTTP header line");
    }
  }
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (blank(key.front()) || blank(key.back())) {
    return InvalidArgument(source + ": the API key starts or ends with a space, which no HTTP header can carry");
  }
  return Status::Ok();
}

Result<ApiKey> ResolveApiKey(const ApiKeySources& sources) {
  std::vector<std::string> given;
  if (sources.file_path) given.push_back("--api-key-file");
  if (sources.env) given.push_back(std::string(kApiKeyEnv) + " (environment)");
  if (sources.flag) given.push_back("--api-key");
  if (given.size() > 1) {
    std::string list = given[0];
    for (size_t i = 1; i < given.size(); ++i) list += (i + 1 == given.size() ? " and " : ", ") + given[i];
    return InvalidArgument("the API key is given by " + list + ": give it one way only");
  }
  ApiKey out;
  if (sources.file_path) {
    VALET_ASSIGN_OR_RETURN(out.key, ReadApiKeyFile(*sources.file_path));
  } else if (sources.env) {
    if (sources.env->empty()) {
      return InvalidArgument(std::string(kApiKeyEnv) + " is set but empty; unset it to serve without a key");
    }
    VALET_RETURN_IF_ERROR(CheckApiKey(*sources.env, kApiKeyEnv));
    out.key = *sources.env;
  } else if (sources.flag) {
    VALET_RETURN_IF_ERROR(CheckApiKey(*sources.flag, "--api-key"));
    out.key = *sources.flag;
    out.from_command_line = true;
  }
  return out;
}

void HideFlagValue(std::span<char* const> argv, std::string_view flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (flag != argv[i]) continue;
    std::memset(argv[i + 1], 'x', std::strlen(argv[i + 1]));
    ++i;
  }
}

}  // namespace valet::cli
