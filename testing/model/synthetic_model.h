// Seeded random GGUF models of every supported architecture: valet's built-in test and
// benchmark models. They need no download, carry their own byte-fallback
// SentencePiece vocabulary, and are byte-for-byte reproducible from
// (preset, type, seed), so tests and benchmarks can regenerate them anywhere.
// Their text output is gibberish; their shapes and numerics are the point.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gguf/ggml_type.h"
#include "testing/gguf/gguf_writer.h"
#include "valet/status.h"

namespace valet::testing {

enum class SynthPreset {
  kTiny,     // ~1M parameters: unit tests (the F32 file is < 5 MB)
  kBench,    // ~100M parameters: scheduler benchmarks on a 2-core machine
  k3bShape,  // Llama-3.2-3B layer shapes with the small vocabulary
};

// The hyper-parameters a preset stands for.
struct SynthShape {
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t n_ff = 0;
  int32_t n_vocab = 0;
  int32_t n_ctx = 0;
  int32_t head_dim = 0;  // 0: n_embd / n_head; otherwise written as attention.key_length (Qwen3)
  int32_t n_swa = 0;     // families with windowed layers (Gemma 3): the window; 0: n_ctx / 4

  int32_t HeadDim() const { return head_dim != 0 ? head_dim : n_embd / n_head; }
  int32_t Window() const { return n_swa != 0 ? n_swa : n_ctx / 4; }
};

struct SynthModelOptions {
  SynthPreset preset = SynthPreset::kTiny;
  // A supported architecture (model/arch.h): its tensor names, fused tensors,
  // biases and norms; the vocabulary is valet's SPM one for every family. A
  // family with windowed layers gets at least one full-attention layer
  // (n_layer rounded up to its period) and no output.weight (tied to the
  // embeddings, as Gemma's files are); where windowed layers have their own
  // RoPE (Gemma 3), the global ones get a base of 1e6 and a linear scaling
  // factor of 8 (as Gemma 3 4B); soft caps are written out (Gemma 2).
  std::string arch = "llama";
  GgmlType type = GgmlType::kF32;  // one of the types ParseSynthType accepts
  uint64_t seed = 42;
  // A GGUF (a vocabulary-only one will do) whose tokenizer.* keys replace the
  // built-in vocabulary; its token count sets n_vocab. Empty: the built-in one.
  std::string vocab_path;
  // Replaces the preset's shape (tests, tuning experiments); the model is then
  // named "valet-synth-custom".
  std::optional<SynthShape> shape;
};

// "tiny", "bench", "3b-shape".
Result<SynthPreset> ParseSynthPreset(std::string_view name);
const char* SynthPresetName(SynthPreset preset);
const SynthShape& SynthPresetShape(SynthPreset preset);

// "f32", "f16", "q8_0", "q4_0", "q4_k".
Result<GgmlType> ParseSynthType(std::string_view name);
// The name ParseSynthType accepts for `type` ("q4_k"), or "unsupported".
const char* SynthTypeName(GgmlType type);

// The type a matrix with rows of n_in elements gets in a file of `type`:
// q4_0 and q4_k files keep output.weight in Q6_K, as llama.cpp does; a K-quant
// whose 256-element blocks do not divide the row falls back to a 32-element
// type (Q6_K -> Q8_0, Q4_K -> Q4_0) since valet has no Q5_0 kernels.
GgmlType SynthMatrixType(GgmlType type, bool is_output, int64_t n_in);

// Every tensor element of the model (embeddings, norms and output included).
int64_t SynthParamCount(const SynthShape& shape);

// Builds the whole GGUF (metadata, vocabulary, weights) in memory;
// deterministic for a given options value (independent of the thread count).
Result<GgufWriter> BuildSyntheticModel(const SynthModelOptions& options);

// Writes the same bytes as BuildSyntheticModel(options)->Serialize(), but
// streams tensor by tensor, so memory stays at one tensor however large the
// model (the 3b-shape F32 file is ~11 GB). Written through a temporary file
// renamed into place.
Status WriteSyntheticModel(const SynthModelOptions& options, const std::string& path);

}  // namespace valet::testing
