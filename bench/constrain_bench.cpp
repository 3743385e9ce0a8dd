// Next-token mask cost per decode step, on the real vocabularies in
// ../shared (Qwen3: 151,669 tokens; Llama 3: 128,256), for the JSON grammar
// at characteristic positions of a document. Run e.g.
//   build/bench/valet_constrain_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "constrain/gbnf_parser.h"
#include "constrain/token_mask.h"
#include "constrain/token_trie.h"
#include "gguf/gguf_file.h"
#include "test_grammars.h"
#include "tokenizer/tokenizer.h"

namespace valet {
namespace {

std::shared_ptr<const TokenTrie> LoadTrie(const std::string& model) {
  static std::map<std::string, std::shared_ptr<const TokenTrie>> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  const std::string path = std::string(VALET_SHARED_DIR) + "/models/" + model;
  std::shared_ptr<const TokenTrie> trie;
  if (std::filesystem::exists(path)) {
    Result<GgufFile> file = GgufFile::Open(path);
    Result<Vocabulary> vocab = file.ok() ? Vocabulary::FromGguf(*file) : Result<Vocabulary>(file.status());
    if (vocab.ok()) {
      auto tok = Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab).value()));
      if (tok.ok()) {
        auto built = TokenTrie::FromTokenizer(**tok);
        if (built.ok()) trie = *built;
      }
    }
  }
  cache[model] = trie;
  return trie;
}

// Positions in a JSON document, from strict (few tokens fit) to permissive
// (inside a string, where most of the vocabulary fits).
const char* const kPrefixes[] = {
    "",                              // start: a value
    "{\"",                           // inside a key
    "{\"name\": \"Ada",              // inside a string value
    "{\"name\": \"Ada\"",            // after a value: ',' '}' or whitespace
    "{\"n\": 12",                    // inside a number
    "[[{\"a\": [1, ",                // nested, before a value
};
const char* const kPrefixNames[] = {"start", "key", "string", "after_value", "number", "nested"};

void BM_Mask(benchmark::State& state, const char* model) {
  std::shared_ptr<const TokenTrie> trie = LoadTrie(model);
  if (trie == nullptr) {
    state.SkipWithError("../shared/models vocabulary absent");
    return;
  }
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(ParseGbnf(test::kJsonGbnf).value());
  compiled->trie = trie;
  GrammarMatcher matcher = GrammarMatcher::Create(compiled).value();
  const auto index = static_cast<size_t>(state.range(0));
  if (!matcher.AcceptBytes(kPrefixes[index])) {
    state.SkipWithError("prefix refused");
    return;
  }
  TokenMasker masker;
  TokenMask mask;
  for (auto _ : state) {
    Status s = masker.Compute(matcher, mask);
    benchmark::DoNotOptimize(s);
  }
  state.SetLabel(std::string(kPrefixNames[index]) + ", " + std::to_string(mask.Count()) + " of " +
                 std::to_string(trie->vocab_size()) + " allowed");
}

void BM_TrieBuild(benchmark::State& state, const char* model) {
  std::shared_ptr<const TokenTrie> trie = LoadTrie(model);
  if (trie == nullptr) {
    state.SkipWithError("../shared/models vocabulary absent");
    return;
  }
  std::vector<std::string> texts;
  std::vector<TokenClass> classes;
  for (int32_t id = 0; id < trie->vocab_size(); ++id) {
    texts.push_back(trie->bytes(id));
    classes.push_back(trie->token_class(id));
  }
  for (auto _ : state) {
    auto built = TokenTrie::Build(texts, classes);
    benchmark::DoNotOptimize(built);
  }
  state.SetLabel(std::to_string(trie->nodes().size()) + " trie nodes");
}

void BM_Compile(benchmark::State& state) {
  for (auto _ : state) {
    auto g = ParseGbnf(test::kJsonGbnf);
    benchmark::DoNotOptimize(g);
  }
}

BENCHMARK_CAPTURE(BM_Mask, qwen3, "qwen3-q4_k_m.gguf")->DenseRange(0, 5)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Mask, llama3, "llama3-bpe-q4_k_m.gguf")->DenseRange(0, 5)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TrieBuild, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Compile)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace valet

BENCHMARK_MAIN();
