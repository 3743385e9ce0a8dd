// The valet CLI's commands. Each takes the arguments after its name and
// returns the process exit code: 0 on success, 2 on bad input, 1 otherwise.
#pragma once

#include <span>
#include <string>

#include "valet/status.h"

namespace valet::cli {

int RunGenerate(std::span<char* const> args);
int RunInfo(std::span<char* const> args);
int RunTokenize(std::span<char* const> args);
int RunBenchEngine(std::span<char* const> args);
int RunSynthModel(std::span<char* const> args);
int RunBenchResume(std::span<char* const> args);
int RunBenchContention(std::span<char* const> args);
int RunDemo(std::span<char* const> args);
int RunTemplate(std::span<char* const> args);
int RunServe(std::span<char* const> args);
int RunBenchServe(std::span<char* const> args);
int RunPack(std::span<char* const> args);
int RunBenchTrim(std::span<char* const> args);
int RunBenchJank(std::span<char* const> args);
int RunBenchConstraint(std::span<char* const> args);

// The built-in bench model, synthesized into the user's cache the first time
// (or, without one, into `scratch`); its path.
Result<std::string> DefaultBenchModel(const std::string& scratch);

// Shared by bench-contention and demo: their defaults differ, nothing else.
struct ContentionDefaults {
  int turns = 30;
  double think_min_s = 0.6;
  double think_max_s = 1.6;
  double background_s = 3.0;
  std::string svg;   // empty: no file unless --svg
  std::string json;  // empty: no file unless --json
  bool seed_comparison = false;
};
int RunContention(const char* command, std::span<char* const> args, const ContentionDefaults& defaults);

// Prints "valet <command>: error: <message>" and returns the exit code for it.
int Fail(const char* command, const Status& status);

}  // namespace valet::cli
