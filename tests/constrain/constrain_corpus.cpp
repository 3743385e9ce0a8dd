// Generates under each JSON Schema in a directory with a real model and prints
// one JSON line per schema (file, text, stop reason): the outputs that
// node/ajv_corpus_test.mjs checks with an independent validator.
// Usage: constrain_corpus MODEL SCHEMA_DIR SEED MAX_TOKENS
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/json.h"
#include "engine/generator.h"

int main(int argc, char** argv) {
  using namespace valet;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL SCHEMA_DIR SEED MAX_TOKENS\n", argv[0]);
    return 2;
  }
  EngineOptions eo;
  eo.model_path = argv[1];
  eo.n_threads = 1;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(eo);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 1;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(argv[2])) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  for (size_t i = 0; i < files.size(); ++i) {
    std::stringstream text;
    text << std::ifstream(files[i]).rdbuf();
    GenerateOptions o;
    o.max_tokens = std::atoi(argv[4]);
    o.sampling.temperature = 1.0f;
    o.sampling.top_k = 0;
    o.sampling.top_p = 1.0f;
    o.sampling.min_p = 0.0f;
    o.sampling.seed = seed + i;
    o.constraint = {ConstraintKind::kJsonSchema, text.str()};
    Result<Generation> g = Generate(**engine, "Answer in JSON:", o, nullptr);
    Json line{{"file", files[i].filename().string()}};
    if (g.ok()) {
      line["text"] = g->text;
      line["stop_reason"] = StopReasonName(g->stop_reason);
      line["tokens"] = g->tokens.size();
    } else {
      line["error"] = g.status().ToString();
    }
    std::printf("%s\n", DumpJson(line).c_str());
    std::fflush(stdout);
  }
  return 0;
}
