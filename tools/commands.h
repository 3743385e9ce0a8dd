// The valet CLI's commands. Each takes the arguments after its name and
// returns the process exit code: 0 on success, 2 on bad input, 1 otherwise.
#pragma once

#include <span>

#include "valet/status.h"

namespace valet::cli {

int RunGenerate(std::span<char* const> args);
int RunInfo(std::span<char* const> args);
int RunBenchEngine(std::span<char* const> args);
int RunSynthModel(std::span<char* const> args);
int RunBenchResume(std::span<char* const> args);

// Prints "valet <command>: error: <message>" and returns the exit code for it.
int Fail(const char* command, const Status& status);

}  // namespace valet::cli
