// Next-token mask cost per decode step, on the real vocabularies in
// ../shared (Qwen3: 151,669 tokens; Llama 3: 128,256) and Gemma 3's
// (262,144, from tests/tokenizer/gemma3), for the JSON grammar
// at characteristic positions of a document. Run e.g.
//   build/bench/valet_constrain_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "constrain/constraint_grammar.h"
#include "constrain/gbnf_parser.h"
#include "constrain/grammar_cache.h"
#include "constrain/position_masks.h"
#include "constrain/sequence_constraint.h"
#include "constrain/token_mask.h"
#include "constrain/token_trie.h"
#include "gguf/gguf_file.h"
#include "test_grammars.h"
#include "tokenizer/tokenizer.h"

namespace valet {
namespace {

struct Loaded {
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const TokenTrie> trie;
};

const Loaded& Load(const std::string& model) {
  static std::map<std::string, Loaded> cache;
  auto it = cache.find(model);
  if (it != cache.end()) return it->second;
  // A bare file name is one of ../shared/models; a path is taken as it is.
  const std::string path = model.find('/') != std::string::npos ? model
                                                                  : std::string(VALET_SHARED_DIR) + "/models/" + model;
  Loaded loaded;
  if (std::filesystem::exists(path)) {
    Result<GgufFile> file = GgufFile::Open(path);
    Result<Vocabulary> vocab = file.ok() ? Vocabulary::FromGguf(*file) : Result<Vocabulary>(file.status());
    if (vocab.ok()) {
      auto tok = Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab).value()));
      if (tok.ok()) {
        auto built = TokenTrie::FromTokenizer(**tok);
        if (built.ok()) loaded.trie = *built;
        loaded.tokenizer = std::move(tok).value();
      }
    }
  }
  return cache[model] = std::move(loaded);
}

std::shared_ptr<const TokenTrie> LoadTrie(const std::string& model) { return Load(model).trie; }

std::shared_ptr<const CompiledGrammar> CompileJson(std::shared_ptr<const TokenTrie> trie) {
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(ParseGbnf(test::kJsonGbnf).value());
  compiled->trie = std::move(trie);
  PrecomputePositionMasks(*compiled);
  return compiled;
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

// One uncached mask at each position: from the position masks (BM_Mask), or
// by the whole-trie walk they replace (BM_MaskWalk).
void MaskAt(benchmark::State& state, const char* model, bool positions) {
  std::shared_ptr<const TokenTrie> trie = LoadTrie(model);
  if (trie == nullptr) {
    state.SkipWithError("vocabulary absent (../shared/models, or gemma3 without the tests configured)");
    return;
  }
  auto compiled = std::const_pointer_cast<CompiledGrammar>(CompileJson(trie));
  if (!positions) compiled->positions = nullptr;
  GrammarMatcher matcher = GrammarMatcher::Create(compiled).value();
  const auto index = static_cast<size_t>(state.range(0));
  if (!matcher.AcceptBytes(kPrefixes[index])) {
    state.SkipWithError("prefix refused");
    return;
  }
  TokenMasker masker(0);  // the trie walk itself, no mask cache
  TokenMask mask;
  for (auto _ : state) {
    Status s = masker.Compute(matcher, mask);
    benchmark::DoNotOptimize(s);
  }
  state.SetLabel(std::string(kPrefixNames[index]) + ", " + std::to_string(mask.Count()) + " of " +
                 std::to_string(trie->vocab_size()) + " allowed" +
                 (positions && masker.counts().walked > 0 ? " (walked)" : ""));
}

void BM_Mask(benchmark::State& state, const char* model) { MaskAt(state, model, true); }
void BM_MaskWalk(benchmark::State& state, const char* model) { MaskAt(state, model, false); }

// The per-(grammar, vocabulary) precomputation GrammarCache makes once.
void BM_PositionMasks(benchmark::State& state, const char* model) {
  std::shared_ptr<const TokenTrie> trie = LoadTrie(model);
  if (trie == nullptr) {
    state.SkipWithError(
        "vocabulary absent (../shared/models, or gemma3 without the tests configured)");
    return;
  }
  const Grammar grammar = ParseGbnf(test::kJsonGbnf).value();
  std::shared_ptr<const PositionMasks> built;
  for (auto _ : state) {
    built = PositionMasks::Build(grammar, *trie, MatcherLimits{});
    benchmark::DoNotOptimize(built);
  }
  state.counters["positions"] = static_cast<double>(built->positions());
  state.counters["entries"] = static_cast<double>(built->entries());
  state.counters["KiB"] = static_cast<double>(built->memory_bytes()) / 1024.0;
  state.counters["steps"] = static_cast<double>(built->steps());
}

// A whole constrained generation: the model's own tokens for a JSON document
// (as if it had sampled them), with a mask computed before each, by one masker
// per sequence (its state cache starts empty). Counters: p50 and p99 of the
// per-step mask time (thread CPU time) over the document's tokens, in
// microseconds.
const char* const kDocument =
    R"({"id": 4172, "name": "Ada Lovelace", "email": "ada@example.org", "tags": ["math", "poetry", "engines"], )"
    R"("address": {"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH"}, )"
    R"("notes": "Wrote the first published algorithm for the Analytical Engine, in 1843.", "score": -12.5e3, )"
    R"("active": true, "manager": null, "history": [{"year": 1833, "event": "met Babbage"}, {"year": 1843, "event": "notes"}]})";

// A nested schema of the kind an app's background tier fills, and a compact
// document it admits (properties in its order).
const char* const kSchema = R"({"type":"object","properties":{
  "id":{"type":"integer","minimum":0},"name":{"type":"string","maxLength":64},
  "email":{"type":"string","format":"email"},
  "tags":{"type":"array","items":{"type":"string","maxLength":16},"maxItems":8},
  "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
    "zip":{"type":"string","pattern":"^[A-Z0-9 ]{3,10}$"}},"required":["street","city"],"additionalProperties":false},
  "score":{"type":"number"},"active":{"type":"boolean"},"level":{"enum":["junior","senior","lead"]},
  "history":{"type":"array","items":{"$ref":"#/$defs/event"},"maxItems":10}},
  "required":["id","name","tags","address","active","history"],"additionalProperties":false,
  "$defs":{"event":{"type":"object","properties":{"year":{"type":"integer","minimum":1800,"maximum":2100},
    "event":{"type":"string","maxLength":40}},"required":["year","event"],"additionalProperties":false}}})";
const char* const kSchemaDocument =
    R"({"id":4172,"name":"Ada Lovelace","email":"ada@example.org","tags":["math","poetry","engines"],)"
    R"("address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH"},"score":-12.5e3,)"
    R"("active":true,"level":"lead","history":[{"year":1833,"event":"met Babbage"},{"year":1843,"event":"notes"}]})";

// An "auto" tool answer in Qwen's syntax: free text, then a call from the
// marker on, its arguments under the tool's schema.
const char* const kToolSpec =
    R"({"call_prefix":"<tool_call>\n","call_suffix":"\n</tool_call>","separator":"\n","max_calls":8,)"
    R"("text_allowed":true,"tools":[{"name":"get_weather","parameters":{"type":"object","properties":)"
    R"({"city":{"type":"string","maxLength":32},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"],)"
    R"("additionalProperties":false}},{"name":"search","parameters":{"type":"object","properties":)"
    R"({"query":{"type":"string"}},"required":["query"]}}]})";
const char* const kToolDocument =
    "I can look that up. The forecast changes quickly in spring, so let me check the latest report "
    "for Oslo rather than guess: <tool> tags aside, here is the call.\n"
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\",\"unit\":\"celsius\"}}\n</tool_call>";

// Per-step times are this thread's CPU time: on a shared machine wall time
// counts other processes' turns.
double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// A constraint as GrammarCache compiles it: translated, parsed, position masks.
std::shared_ptr<const CompiledGrammar> CompileConstraint(const Constraint& c, std::shared_ptr<const TokenTrie> trie) {
  ConstraintGrammar g = ConstraintToGbnf(c).value();
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(ParseGbnf(g.gbnf, g.limits).value());
  compiled->trie = std::move(trie);
  PrecomputePositionMasks(*compiled);
  return compiled;
}

enum class Case { kGbnf, kSchema, kJsonObject };

void ReportSteps(benchmark::State& state, std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  state.counters["p50_us"] = micros[micros.size() / 2];
  state.counters["p90_us"] = micros[micros.size() * 90 / 100];
  state.counters["p99_us"] = micros[micros.size() * 99 / 100];
  double sum = 0;
  for (double m : micros) sum += m;
  state.counters["mean_us"] = sum / static_cast<double>(micros.size());
}

// The model's vocabulary and its own tokens for `document` (no BOS or EOS);
// null, the benchmark skipped, without the vocabulary.
const Loaded* LoadDocument(benchmark::State& state, const char* model, const char* document,
                           std::vector<int32_t>* tokens) {
  const Loaded& loaded = Load(model);
  if (loaded.trie == nullptr) {
    state.SkipWithError("vocabulary absent (../shared/models, or gemma3 without the tests configured)");
    return nullptr;
  }
  EncodeOptions no_specials;
  no_specials.add_bos = false;
  no_specials.add_eos = false;
  *tokens = loaded.tokenizer->Encode(document, no_specials);
  return &loaded;
}

// The model's own tokens for a document, a mask computed before each by a
// fresh masker: the per-step mask cost of generating it.
void BM_Generation(benchmark::State& state, const char* model, Case which) {
  std::vector<int32_t> tokens;
  const Loaded* found = LoadDocument(state, model, which == Case::kGbnf ? kDocument : kSchemaDocument, &tokens);
  if (found == nullptr) return;
  const Loaded& loaded = *found;
  std::shared_ptr<const CompiledGrammar> compiled =
      which == Case::kGbnf     ? CompileJson(loaded.trie)
      : which == Case::kSchema ? CompileConstraint({ConstraintKind::kJsonSchema, kSchema}, loaded.trie)
                               : CompileConstraint({ConstraintKind::kJsonObject, ""}, loaded.trie);
  std::vector<double> micros;
  TokenMask mask;
  TokenMasker::Counts counts;
  for (auto _ : state) {
    GrammarMatcher matcher = GrammarMatcher::Create(compiled).value();
    TokenMasker masker;
    for (int32_t token : tokens) {
      const double start = ThreadCpuMicros();
      Status s = masker.Compute(matcher, mask);
      micros.push_back(ThreadCpuMicros() - start);
      if (!s.ok() || !mask.Allowed(token) || !matcher.AcceptToken(token).ok()) {
        state.SkipWithError("the document's token was refused");
        return;
      }
    }
    counts = masker.counts();
  }
  ReportSteps(state, std::move(micros));
  state.counters["steps"] = static_cast<double>(tokens.size());
  state.counters["walked"] =
      static_cast<double>(counts.walked);  // masks not from the positions or cache
}

void BM_JsonGeneration(benchmark::State& state, const char* model) { BM_Generation(state, model, Case::kGbnf); }
void BM_SchemaGeneration(benchmark::State& state, const char* model) { BM_Generation(state, model, Case::kSchema); }
void BM_JsonObjectGeneration(benchmark::State& state, const char* model) {
  BM_Generation(state, model, Case::kJsonObject);
}

// An "auto" tool answer as a sequence generates it (SequenceConstraint, the
// constraint compiled as GrammarCache does): free text waiting for the marker,
// then the call under its schema.
void BM_ToolAutoGeneration(benchmark::State& state, const char* model) {
  std::vector<int32_t> tokens;
  const Loaded* loaded = LoadDocument(state, model, kToolDocument, &tokens);
  if (loaded == nullptr) return;
  GrammarCache cache;
  std::shared_ptr<const CompiledGrammar> compiled =
      cache.Get({ConstraintKind::kToolCall, kToolSpec}, loaded->trie).value();
  std::vector<double> micros;
  for (auto _ : state) {
    SequenceConstraint sequence = SequenceConstraint::Create(compiled).value();
    for (int32_t token : tokens) {
      const double start = ThreadCpuMicros();
      Status s = sequence.PrepareMask();
      micros.push_back(ThreadCpuMicros() - start);
      if (!s.ok() || !sequence.Allows(token) || !sequence.Accept(token).ok()) {
        state.SkipWithError("the document's token was refused");
        return;
      }
    }
  }
  ReportSteps(state, std::move(micros));
  state.counters["steps"] = static_cast<double>(tokens.size());
}

// Compile time per schema, everything GrammarCache does on a miss.
void BM_SchemaCompile(benchmark::State& state, const char* model) {
  std::shared_ptr<const TokenTrie> trie = LoadTrie(model);
  if (trie == nullptr) {
    state.SkipWithError("vocabulary absent (../shared/models, or gemma3 without the tests configured)");
    return;
  }
  std::shared_ptr<const CompiledGrammar> compiled;
  for (auto _ : state) {
    compiled = CompileConstraint({ConstraintKind::kJsonSchema, kSchema}, trie);
    benchmark::DoNotOptimize(compiled);
  }
  // How far the position masks' budget went over the schema's grammar.
  state.counters["positions"] = static_cast<double>(compiled->positions->positions());
  state.counters["entries"] = static_cast<double>(compiled->positions->entries());
  state.counters["kib"] = static_cast<double>(compiled->positions->memory_bytes()) / 1024.0;
  state.counters["work"] = static_cast<double>(compiled->positions->steps());
}

void BM_TrieBuild(benchmark::State& state, const char* model) {
  std::shared_ptr<const TokenTrie> trie = LoadTrie(model);
  if (trie == nullptr) {
    state.SkipWithError("vocabulary absent (../shared/models, or gemma3 without the tests configured)");
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
BENCHMARK_CAPTURE(BM_JsonGeneration, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_JsonGeneration, llama3, "llama3-bpe-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
// Gemma 3's 262k vocabulary, unpacked by the test suite's configure
// (tests/tokenizer/gemma3) when tests are built.
BENCHMARK_CAPTURE(BM_Mask, gemma3, VALET_GEMMA3_VOCAB)->DenseRange(0, 5)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_JsonGeneration, gemma3, VALET_GEMMA3_VOCAB)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskWalk, qwen3, "qwen3-q4_k_m.gguf")
    ->DenseRange(0, 5)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaskWalk, llama3, "llama3-bpe-q4_k_m.gguf")
    ->DenseRange(0, 5)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaskWalk, gemma3, VALET_GEMMA3_VOCAB)
    ->DenseRange(0, 5)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PositionMasks, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PositionMasks, llama3, "llama3-bpe-q4_k_m.gguf")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PositionMasks, gemma3, VALET_GEMMA3_VOCAB)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrieBuild, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaGeneration, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaGeneration, gemma3, VALET_GEMMA3_VOCAB)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_JsonObjectGeneration, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_JsonObjectGeneration, gemma3, VALET_GEMMA3_VOCAB)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ToolAutoGeneration, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ToolAutoGeneration, gemma3, VALET_GEMMA3_VOCAB)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaCompile, qwen3, "qwen3-q4_k_m.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchemaCompile, gemma3, VALET_GEMMA3_VOCAB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Compile)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace valet

BENCHMARK_MAIN();
