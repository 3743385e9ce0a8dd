// Runs the valet binary the way a user's shell would, for the CLI tests.
// VALET_BIN is the built binary's path, defined by the test's CMake target.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace valet::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// `env`: NAME=VALUE words for the command's environment ("" for none).
inline CliRun RunValet(const std::string& args, const std::string& env = "") {
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(VALET_BIN) + " " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace valet::testing
