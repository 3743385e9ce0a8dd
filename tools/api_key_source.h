// Where `valet serve` takes its API key from. The command line is the worst
// place: every local user reads it in ps and /proc/PID/cmdline. So the key
// may come from a file only its owner can read (--api-key-file) or from the
// environment (VALET_API_KEY, which /proc shows to its owner alone), and
// --api-key still works but warns. Exactly one source may be given: two are
// an error naming both, never a silent precedence, so a key left in the
// environment cannot quietly replace (or be replaced by) the one a flag
// names.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "valet/status.h"

namespace valet::cli {

inline constexpr const char* kApiKeyEnv = "VALET_API_KEY";
// A key file is one short line; anything longer is not one.
inline constexpr size_t kMaxApiKeyFileBytes = 4096;

struct ApiKeySources {
  std::optional<std::string> flag;       // --api-key KEY
  std::optional<std::string> file_path;  // --api-key-file PATH
  std::optional<std::string> env;        // VALET_API_KEY, when set (even to "")
};

struct ApiKey {
  std::string key;  // empty: no source, no key
  bool from_command_line = false;
};

// The key in `path`: a regular file (a symlink counts as what it points to)
// that group and others have no permission on, up to kMaxApiKeyFileBytes,
// one trailing newline dropped, not empty. InvalidArgument naming the path
// otherwise.
[[nodiscard]] Result<std::string> ReadApiKeyFile(const std::string& path);

// A key must fit an HTTP header: not empty, no control character, no space
// or tab at either end (a header value is trimmed, so such a key could never
// match). `source` names where it came from in the error.
[[nodiscard]] Status CheckApiKey(std::string_view key, const std::string& source);

// The one key `sources` give, if any.
[[nodiscard]] Result<ApiKey> ResolveApiKey(const ApiKeySources& sources);

// Overwrites the value after `flag` in the process's own arguments, so ps
// and /proc/PID/cmdline stop showing it (they did until now: the warning
// still stands). Values must have been copied out before.
void HideFlagValue(std::span<char* const> argv, std::string_view flag);

}  // namespace valet::cli
