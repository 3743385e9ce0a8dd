// The synthetic-model generator: reproducible bytes, a well-formed Llama GGUF
// for every type, a usable vocabulary, and weights whose logits behave.
#include "testing/model/synthetic_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/kernel_table.h"
#include "kv/kv_pool.h"
#include "model/llama_context.h"
#include "model/llama_model.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet {
using namespace valet::testing;
namespace {

constexpr GgmlType kAllTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kQ8_0, GgmlType::kQ4_0,   GgmlType::kQ4_K,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K,   GgmlType::kQ3_K,
    GgmlType::kQ5_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

constexpr const char* kSentence =
    "The people of the world want to have a good time with their family and friends, and they "
    "think that it would be great to live in a small house near the water.";

// Rows that K-quant blocks divide, so a q4_k file really holds Q4_K and Q6_K.
SynthShape KQuantShape() {
  return {.n_embd = 256,
          .n_layer = 2,
          .n_head = 4,
          .n_head_kv = 2,
          .n_ff = 512,
          .n_vocab = 512,
          .n_ctx = 256};
}

SynthModelOptions Tiny(GgmlType type, uint64_t seed = 42) {
  SynthModelOptions o;
  o.preset = SynthPreset::kTiny;
  o.type = type;
  o.seed = seed;
  return o;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "synthetic_model_test_" + name;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

GgufFile Serialized(const SynthModelOptions& options) {
  Result<GgufWriter> w = BuildSyntheticModel(options);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  Result<GgufFile> f = GgufFile::FromBuffer(w->Serialize(), "synth");
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return std::move(f).value();
}

std::vector<float> Dequantize(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.element_count()));
  ScalarKernels()[t.type].to_float(t.data, out.data(), t.element_count());
  return out;
}

struct Moments {
  double mean = 0, stddev = 0;
};

Moments MomentsOf(const std::vector<float>& v) {
  double sum = 0, sq = 0;
  for (float x : v) sum += x;
  const double mean = sum / v.size();
  for (float x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / v.size())};
}

TEST(SyntheticModelTest, ParsesPresetAndTypeNames) {
  EXPECT_EQ(*ParseSynthPreset("tiny"), SynthPreset::kTiny);
  EXPECT_EQ(*ParseSynthPreset("bench"), SynthPreset::kBench);
  EXPECT_EQ(*ParseSynthPreset("3b-shape"), SynthPreset::k3bShape);
  EXPECT_FALSE(ParseSynthPreset("huge").ok());
  EXPECT_FALSE(ParseSynthPreset("").ok());
  for (GgmlType t : kAllTypes) EXPECT_EQ(*ParseSynthType(SynthTypeName(t)), t);
  EXPECT_EQ(*ParseSynthType("q4_k"), GgmlType::kQ4_K);
  EXPECT_FALSE(ParseSynthType("q6_k").ok());
  EXPECT_FALSE(ParseSynthType("Q8_0").ok());
  EXPECT_EQ(ParseSynthType("bf16").status().code(), StatusCode::kInvalidArgument);
}

TEST(SyntheticModelTest, RejectsUnsupportedTypeAndBadShape) {
  SynthModelOptions o = Tiny(GgmlType::kQ6_K);
  EXPECT_EQ(BuildSyntheticModel(o).status().code(), StatusCode::kInvalidArgument);
  o = Tiny(GgmlType::kF32);
  o.shape = KQuantShape();
  o.shape->n_head = 3;  // 256 does not split into 3 heads
  EXPECT_EQ(BuildSyntheticModel(o).status().code(), StatusCode::kInvalidArgument);
  o.shape = KQuantShape();
  o.shape->n_vocab = 100;  // smaller than the byte tokens
  EXPECT_EQ(BuildSyntheticModel(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(SyntheticModelTest, SameOptionsGiveIdenticalBytes) {
  for (GgmlType t : kAllTypes) {
    Result<GgufWriter> a = BuildSyntheticModel(Tiny(t));
    Result<GgufWriter> b = BuildSyntheticModel(Tiny(t));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->Serialize(), b->Serialize()) << SynthTypeName(t);
  }
}

TEST(SyntheticModelTest, StreamedFileEqualsInMemoryBuild) {
  for (GgmlType t : kAllTypes) {
    const std::string path = TempPath(std::string("stream_") + SynthTypeName(t) + ".gguf");
    ASSERT_TRUE(WriteSyntheticModel(Tiny(t), path).ok());
    Result<GgufWriter> w = BuildSyntheticModel(Tiny(t));
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(ReadBytes(path), w->Serialize()) << SynthTypeName(t);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    std::remove(path.c_str());
  }
}

TEST(SyntheticModelTest, DifferentSeedGivesDifferentWeightsSameLayout) {
  GgufFile a = Serialized(Tiny(GgmlType::kF32, 1));
  GgufFile b = Serialized(Tiny(GgmlType::kF32, 2));
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  EXPECT_EQ(*a.GetStringArray("tokenizer.ggml.tokens"), *b.GetStringArray("tokenizer.ggml.tokens"));
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensorInfo& ta = a.tensors()[i];
    const GgufTensorInfo& tb = b.tensors()[i];
    ASSERT_EQ(ta.name, tb.name);
    ASSERT_EQ(ta.nbytes, tb.nbytes);
    EXPECT_NE(0, std::memcmp(ta.data, tb.data, ta.nbytes)) << ta.name;
  }
}

TEST(SyntheticModelTest, WritesLlamaMetadata) {
  const GgufFile f = Serialized(Tiny(GgmlType::kQ8_0));
  const SynthShape& s = SynthPresetShape(SynthPreset::kTiny);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetString("general.name"), "valet-synth-tiny");
  EXPECT_EQ(*f.GetUint("general.file_type"), 7u);  // llama.cpp's MOSTLY_Q8_0
  EXPECT_EQ(*f.GetUint("llama.embedding_length"), 128u);
  EXPECT_EQ(*f.GetUint("llama.block_count"), 4u);
  EXPECT_EQ(*f.GetUint("llama.attention.head_count"), 4u);
  EXPECT_EQ(*f.GetUint("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(*f.GetUint("llama.feed_forward_length"), 384u);
  EXPECT_EQ(*f.GetUint("llama.context_length"), 512u);
  EXPECT_EQ(*f.GetUint("llama.rope.dimension_count"), 32u);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.GetFloat("llama.rope.freq_base")), 10000.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(f.GetStringArray("tokenizer.ggml.tokens")->size(), static_cast<size_t>(s.n_vocab));
  Result<GgufFile> q4k =
      GgufFile::FromBuffer(BuildSyntheticModel(Tiny(GgmlType::kQ4_K))->Serialize(), "q4k");
  EXPECT_EQ(*q4k->GetUint("general.file_type"), 14u);  // MOSTLY_Q4_K_S
}

// Expected tensors of a model of `shape` in `type`, derived from the layout rules.
void ExpectTensors(const GgufFile& f, const SynthShape& s, GgmlType type) {
  const int64_t kv = s.n_embd / s.n_head * s.n_head_kv;
  auto expect = [&](const std::string& name, GgmlType t, std::vector<int64_t> ne) {
    const GgufTensorInfo* info = f.FindTensor(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->type, t) << name << " in " << SynthTypeName(type);
    ASSERT_EQ(info->n_dims, static_cast<int>(ne.size())) << name;
    for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(info->ne[d], ne[d]) << name;
  };
  const bool kquant_output = type == GgmlType::kQ4_0 || type == GgmlType::kQ4_K;
  // Rows that are not whole super-blocks take a 32-element type of about the same size.
  auto small_blocks = [type](int64_t n_in) {
    if (n_in % 256 == 0) return type;
    switch (type) {
      case GgmlType::kQ2_K:
      case GgmlType::kQ3_K:
      case GgmlType::kQ4_K:
        return GgmlType::kQ4_0;
      case GgmlType::kQ5_K:
        return GgmlType::kQ5_0;
      case GgmlType::kIQ4_XS:
        return GgmlType::kIQ4_NL;
      default:
        return type;
    }
  };
  const GgmlType matrix = small_blocks(s.n_embd);
  const GgmlType down = small_blocks(s.n_ff);
  GgmlType output = small_blocks(s.n_embd);
  if (kquant_output) output = s.n_embd % 256 == 0 ? GgmlType::kQ6_K : GgmlType::kQ8_0;
  EXPECT_EQ(f.tensors().size(), 3u + 9u * s.n_layer);
  expect("token_embd.weight", matrix, {s.n_embd, s.n_vocab});
  expect("output_norm.weight", GgmlType::kF32, {s.n_embd});
  expect("output.weight", output, {s.n_embd, s.n_vocab});
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    expect(b + "attn_norm.weight", GgmlType::kF32, {s.n_embd});
    expect(b + "ffn_norm.weight", GgmlType::kF32, {s.n_embd});
    expect(b + "attn_q.weight", matrix, {s.n_embd, s.n_embd});
    expect(b + "attn_k.weight", matrix, {s.n_embd, kv});
    expect(b + "attn_v.weight", matrix, {s.n_embd, kv});
    expect(b + "attn_output.weight", matrix, {s.n_embd, s.n_embd});
    expect(b + "ffn_gate.weight", matrix, {s.n_embd, s.n_ff});
    expect(b + "ffn_up.weight", matrix, {s.n_embd, s.n_ff});
    expect(b + "ffn_down.weight", down, {s.n_ff, s.n_embd});
  }
}

TEST(SyntheticModelTest, EveryTypeHasTheExpectedTensors) {
  for (GgmlType t : kAllTypes) {
    SCOPED_TRACE(SynthTypeName(t));
    ExpectTensors(Serialized(Tiny(t)), SynthPresetShape(SynthPreset::kTiny), t);
    SynthModelOptions o = Tiny(t);
    o.shape = KQuantShape();
    ExpectTensors(Serialized(o), KQuantShape(), t);
  }
}

TEST(SyntheticModelTest, WeightScalesFollowTheLayer) {
  const GgufFile f = Serialized(Tiny(GgmlType::kF32));
  const Moments q = MomentsOf(Dequantize(*f.FindTensor("blk.1.attn_q.weight")));
  EXPECT_NEAR(q.mean, 0.0, 0.01);
  EXPECT_NEAR(q.stddev, 1.0 / std::sqrt(128.0), 0.1 / std::sqrt(128.0));
  const Moments down = MomentsOf(Dequantize(*f.FindTensor("blk.1.ffn_down.weight")));
  EXPECT_NEAR(down.stddev, 1.0 / std::sqrt(384.0), 0.1 / std::sqrt(384.0));
  const Moments norm = MomentsOf(Dequantize(*f.FindTensor("blk.1.attn_norm.weight")));
  EXPECT_NEAR(norm.mean, 1.0, 0.05);
  EXPECT_LT(norm.stddev, 0.3);
}

TEST(SyntheticModelTest, TinyF32FileIsSmall) {
  Result<GgufWriter> w = BuildSyntheticModel(Tiny(GgmlType::kF32));
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> bytes = w->Serialize();
  EXPECT_LT(bytes.size(), 5u << 20);
  Result<GgufFile> f = GgufFile::FromBuffer(std::move(bytes), "tiny");
  ASSERT_TRUE(f.ok());
  int64_t n_elements = 0;
  for (const GgufTensorInfo& t : f->tensors()) n_elements += t.element_count();
  EXPECT_EQ(SynthParamCount(SynthPresetShape(SynthPreset::kTiny)), n_elements);
}

std::shared_ptr<const Vocabulary> LoadVocab(const GgufFile& f) {
  Result<Vocabulary> v = Vocabulary::FromGguf(f);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return std::make_shared<const Vocabulary>(std::move(v).value());
}

int CountWords(const std::string& text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (letter && !in_word) ++words;
    in_word = letter;
  }
  return words;
}

TEST(SyntheticModelTest, VocabularyIsByteFallbackSpm) {
  const GgufFile f = Serialized(Tiny(GgmlType::kF32));
  const std::shared_ptr<const Vocabulary> v = LoadVocab(f);
  ASSERT_EQ(v->size(), 512);
  EXPECT_EQ(v->unk_id(), 0);
  EXPECT_EQ(v->bos_id(), 1);
  EXPECT_EQ(v->eos_id(), 2);
  EXPECT_EQ(v->Type(0), TokenType::kUnknown);
  EXPECT_EQ(v->Type(1), TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    ASSERT_EQ(v->ByteToken(static_cast<uint8_t>(b)), 3 + b);
    EXPECT_EQ(v->Type(3 + b), TokenType::kByte);
  }
  EXPECT_TRUE(v->add_bos());
  EXPECT_TRUE(v->add_space_prefix());
  EXPECT_NE(v->Lookup("\xE2\x96\x81the"), Vocabulary::kNoToken);
  for (int32_t id = 259; id < v->size(); ++id) EXPECT_EQ(v->Type(id), TokenType::kNormal);
  for (int32_t id = 260; id < v->size(); ++id) EXPECT_LT(v->Score(id), v->Score(id - 1));
}

TEST(SyntheticModelTest, TokenizerRoundTripsEnglish) {
  const std::string text = kSentence;
  const std::string odd = "Zebras & naïve café-goers: 42 × 7 ≠ 3!\nNew line\ttab";
  for (int32_t n_vocab : {512, 4096}) {
    SCOPED_TRACE(n_vocab);
    SynthModelOptions o = Tiny(GgmlType::kF32);
    o.shape = SynthPresetShape(SynthPreset::kTiny);
    o.shape->n_vocab = n_vocab;
    const SpmTokenizer tok(LoadVocab(Serialized(o)));
    for (const std::string& s : {text, odd}) {
      EXPECT_EQ(tok.Encode(s)[0], 1);  // BOS
      const std::vector<int32_t> ids = tok.Encode(s, {.add_bos = false});
      EXPECT_EQ(tok.Decode(ids), s);
    }
    const size_t n_tokens = tok.Encode(text).size() - 1;
    EXPECT_LT(n_tokens, text.size() * 6 / 10);  // far fewer tokens than bytes
    if (n_vocab >= 4096) {
      // Common words are single pieces: about one token per word, plus punctuation.
      EXPECT_LE(n_tokens, static_cast<size_t>(CountWords(text)) + 4);
    }
  }
}

TEST(SyntheticModelTest, BenchVocabularyIsTheLargeOne) {
  EXPECT_GE(SynthPresetShape(SynthPreset::kBench).n_vocab, 2048);
  EXPECT_EQ(SynthPresetShape(SynthPreset::k3bShape).n_embd, 3072);
  EXPECT_EQ(SynthPresetShape(SynthPreset::k3bShape).n_layer, 28);
}

// ---------------------------------------------------------------------------
// Running the models.

std::vector<float> LastLogits(const std::string& path, const std::string& prompt) {
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return {};
  const ModelConfig& c = (*model)->config();
  const SpmTokenizer tok(LoadVocab((*model)->file()));
  const std::vector<int32_t> ids = tok.Encode(prompt);
  KvPoolOptions po;
  po.layout = KvLayout{c.n_layer, c.n_head_kv, c.head_dim, 16};
  po.capacity_bytes = 16u << 20;
  Result<std::unique_ptr<KvPool>> pool = KvPool::Create(po);
  ContextOptions co;
  co.n_threads = 2;
  co.n_ctx = 128;
  co.max_batch_tokens = 128;
  Result<std::unique_ptr<LlamaContext>> ctx = LlamaContext::Create(*model, co);
  EXPECT_TRUE(pool.ok() && ctx.ok());
  if (!pool.ok() || !ctx.ok()) return {};
  KvSequence seq(**pool);
  const BatchItem item{&seq, ids, LogitsMode::kLast};
  std::vector<float> logits;
  const Status s = (*ctx)->Forward(std::span(&item, 1), logits);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(logits.size(), static_cast<size_t>(c.n_vocab));
  return logits;
}

double RmsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) sq += (static_cast<double>(a[i]) - b[i]) * (a[i] - b[i]);
  return std::sqrt(sq / a.size());
}

// RMS of (logit - F32 logit) / std(F32 logits) allowed per type. Rounding
// Gaussian weights to 4 bits perturbs each matrix by ~9% RMS, which compounds
// over the layers into a visible but bounded change; F16 and Q8_0 barely
// move the logits.
double Tolerance(GgmlType t) {
  switch (t) {
    case GgmlType::kF16:
      return 0.01;
    case GgmlType::kQ8_0:
      return 0.05;
    case GgmlType::kQ2_K:  // 4 levels: ~30% RMS per matrix, near the optimum for Gaussians
      return 0.8;
    default:
      return 0.4;
  }
}

void CheckLogitsAcrossTypes(const SynthModelOptions& base, const std::string& tag) {
  std::vector<float> reference;
  double ref_std = 0;
  for (GgmlType t : kAllTypes) {
    SCOPED_TRACE(std::string(tag) + " " + SynthTypeName(t));
    SynthModelOptions o = base;
    o.type = t;
    const std::string path = TempPath(tag + "_" + SynthTypeName(t) + ".gguf");
    ASSERT_TRUE(WriteSyntheticModel(o, path).ok());
    const std::vector<float> logits = LastLogits(path, kSentence);
    std::remove(path.c_str());
    ASSERT_FALSE(logits.empty());
    for (float x : logits) ASSERT_TRUE(std::isfinite(x));
    const double sd = MomentsOf(logits).stddev;
    EXPECT_GT(sd, 0.5);
    EXPECT_LT(sd, 20.0);
    if (t == GgmlType::kF32) {
      reference = logits;
      ref_std = sd;
      continue;
    }
    const double rel = RmsDiff(logits, reference) / ref_std;
    std::printf("  %s %-5s logits std %.3f, rms diff / std(f32) = %.4f\n", tag.c_str(),
                SynthTypeName(t), sd, rel);
    EXPECT_LT(rel, Tolerance(t));
  }
}

TEST(SyntheticModelTest, TinyModelsGiveSaneLogitsCloseToF32) {
  CheckLogitsAcrossTypes(Tiny(GgmlType::kF32), "tiny");
}

TEST(SyntheticModelTest, KQuantModelsGiveSaneLogitsCloseToF32) {
  SynthModelOptions o = Tiny(GgmlType::kF32);
  o.shape = KQuantShape();
  CheckLogitsAcrossTypes(o, "kshape");
}

// --vocab: the tokenizer.* keys of another file (Gemma 3's 262,144 pieces,
// chat template included) replace the built-in vocabulary and set n_vocab.
TEST(SyntheticModelTest, VocabularyFromAFileReplacesTheBuiltInOne) {
  Result<GgufFile> source = GgufFile::Open(VALET_GEMMA3_VOCAB);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  SynthModelOptions o = Tiny(GgmlType::kQ8_0);
  o.arch = "gemma3";
  o.vocab_path = VALET_GEMMA3_VOCAB;
  Result<GgufWriter> w = BuildSyntheticModel(o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  Result<GgufFile> f = GgufFile::FromBuffer(w->Serialize(), "gemma3 with a file's vocabulary");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const GgufKeyValue& kv : source->metadata()) {
    if (!kv.key.starts_with("tokenizer.")) continue;
    const GgufValue* copied = f->Find(kv.key);
    ASSERT_NE(copied, nullptr) << kv.key;
    EXPECT_EQ(GgufValueToString(*copied, 1u << 20), GgufValueToString(kv.value, 1u << 20)) << kv.key;
  }
  EXPECT_EQ(f->FindTensor("token_embd.weight")->ne[1], 262144);
  std::shared_ptr<const Vocabulary> vocab = LoadVocab(*f);
  EXPECT_EQ(vocab->size(), 262144);

  o.vocab_path = "/nonexistent/vocab.gguf";
  EXPECT_FALSE(BuildSyntheticModel(o).ok());
}

}  // namespace
}  // namespace valet
