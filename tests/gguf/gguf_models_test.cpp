// Reads every GGUF under ../shared and cross-checks facts documented in
// shared/README.md against what the file's own tensors imply.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

fs::path SharedDir() { return fs::path(VALET_SHARED_DIR); }

std::vector<fs::path> GgufFilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".gguf") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

#define REQUIRE_SHARED()                                                                     \
  if (!fs::is_directory(SharedDir() / "models")) {                                           \
    GTEST_SKIP() << "shared test data not found at " << SharedDir() << " (models/ missing)"; \
  }

Result<GgufFile> OpenModel(const std::string& name) {
  return GgufFile::Open((SharedDir() / "models" / name).string());
}

// Structural facts every valid file from llama.cpp satisfies, computed from the file.
void CheckLayout(const GgufFile& f) {
  SCOPED_TRACE(f.path());
  EXPECT_TRUE(f.version() == 2 || f.version() == 3);
  EXPECT_EQ(f.data_offset() % f.alignment(), 0u);
  uint64_t max_end = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
    EXPECT_GE(t.n_dims, 1);
    max_end = std::max<uint64_t>(max_end, t.offset + t.nbytes);
    EXPECT_EQ(f.FindTensor(t.name), &t);
  }
  if (!f.tensors().empty()) {
    // llama.cpp's writer ends the file with the last tensor (plus padding), so
    // a wrong size computation shows up here.
    EXPECT_LE(f.data_offset() + max_end, f.file_size());
    EXPECT_LT(f.file_size() - (f.data_offset() + max_end), f.alignment());
  }
  for (const GgufKeyValue& kv : f.metadata()) {
    EXPECT_EQ(f.Find(kv.key), &kv.value);
    EXPECT_FALSE(GgufFile::ValueToString(kv.value).empty());
  }
}

TEST(GgufModels, EverySharedFileOpensExceptLegacyV1) {
  REQUIRE_SHARED();
  std::vector<fs::path> files = GgufFilesIn(SharedDir() / "models");
  const std::vector<fs::path> vocab = GgufFilesIn(SharedDir() / "vocab");
  files.insert(files.end(), vocab.begin(), vocab.end());
  ASSERT_GE(files.size(), 9u);
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.string());
    Result<GgufFile> f = GgufFile::Open(p.string());
    if (p.filename() == "legacy-gguf-v1.gguf") {
      ASSERT_FALSE(f.ok());
      EXPECT_EQ(f.status().code(), StatusCode::kUnsupported);
      EXPECT_NE(f.status().message().find("v1"), std::string::npos) << f.status().message();
      EXPECT_NE(f.status().message().find(p.string()), std::string::npos) << f.status().message();
      continue;
    }
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->file_size(), fs::file_size(p));
    CheckLayout(*f);
  }
}

struct LlamaFacts {
  const char* file;
  uint64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab;
};

// Values from shared/README.md.
const LlamaFacts kModels[] = {
    {"stories260K.gguf", 64, 5, 8, 4, 172, 512},
    {"synth-tiny-f32.gguf", 256, 4, 8, 2, 768, 512},
    {"synth-tiny-f16.gguf", 256, 4, 8, 2, 768, 512},
    {"synth-tiny-q8_0.gguf", 256, 4, 8, 2, 768, 512},
    {"synth-tiny-q4_0.gguf", 256, 4, 8, 2, 768, 512},
    {"synth-tiny-q4_k_m.gguf", 256, 4, 8, 2, 768, 512},
    {"synth-tiny-q6_k.gguf", 256, 4, 8, 2, 768, 512},
};

void ExpectShape(const GgufFile& f, const std::string& name, std::vector<int64_t> ne) {
  const GgufTensorInfo* t = f.FindTensor(name);
  ASSERT_NE(t, nullptr) << name;
  ASSERT_EQ(t->n_dims, static_cast<int>(ne.size())) << name;
  for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(t->ne[d], ne[d]) << name << " dim " << d;
}

TEST(GgufModels, LlamaHyperparametersMatchTensorShapes) {
  REQUIRE_SHARED();
  for (const LlamaFacts& m : kModels) {
    SCOPED_TRACE(m.file);
    Result<GgufFile> r = OpenModel(m.file);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const GgufFile& f = *r;
    EXPECT_EQ(*f.GetString("general.architecture"), "llama");
    EXPECT_EQ(*f.GetUint("llama.embedding_length"), m.n_embd);
    EXPECT_EQ(*f.GetUint("llama.block_count"), m.n_layer);
    EXPECT_EQ(*f.GetUint("llama.attention.head_count"), m.n_head);
    EXPECT_EQ(*f.GetUint("llama.attention.head_count_kv"), m.n_head_kv);
    EXPECT_EQ(*f.GetUint("llama.feed_forward_length"), m.n_ff);
    Result<std::vector<std::string_view>> tokens = f.GetStringArray("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
    EXPECT_EQ(tokens->size(), m.n_vocab);
    EXPECT_EQ(f.GetFloatArray("tokenizer.ggml.scores")->size(), m.n_vocab);
    EXPECT_EQ(f.GetIntArray("tokenizer.ggml.token_type")->size(), m.n_vocab);

    const int64_t embd = static_cast<int64_t>(m.n_embd);
    const int64_t kv_dim =
        embd / static_cast<int64_t>(m.n_head) * static_cast<int64_t>(m.n_head_kv);
    const int64_t ff = static_cast<int64_t>(m.n_ff);
    ExpectShape(f, "token_embd.weight", {embd, static_cast<int64_t>(m.n_vocab)});
    ExpectShape(f, "output_norm.weight", {embd});
    for (uint64_t l = 0; l < m.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      ExpectShape(f, b + "attn_q.weight", {embd, embd});
      ExpectShape(f, b + "attn_k.weight", {embd, kv_dim});
      ExpectShape(f, b + "attn_v.weight", {embd, kv_dim});
      ExpectShape(f, b + "attn_output.weight", {embd, embd});
      ExpectShape(f, b + "ffn_gate.weight", {embd, ff});
      ExpectShape(f, b + "ffn_down.weight", {ff, embd});
      ExpectShape(f, b + "ffn_up.weight", {embd, ff});
    }
    EXPECT_EQ(f.FindTensor("blk." + std::to_string(m.n_layer) + ".attn_q.weight"), nullptr);
  }
}

TEST(GgufModels, Stories260KFacts) {
  REQUIRE_SHARED();
  Result<GgufFile> r = OpenModel("stories260K.gguf");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufTensorInfo* emb = r->FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, GgmlType::kF32);
  EXPECT_EQ(emb->nbytes, 64u * 512u * 4u);
  // SentencePiece vocabularies start with <unk>, <s>, </s>.
  std::vector<std::string_view> tokens = *r->GetStringArray("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  for (const GgufTensorInfo& t : r->tensors()) EXPECT_EQ(t.type, GgmlType::kF32) << t.name;
}

std::set<GgmlType> TypesOf(const GgufFile& f) {
  std::set<GgmlType> s;
  for (const GgufTensorInfo& t : f.tensors()) s.insert(t.type);
  return s;
}

TEST(GgufModels, QuantizedFilesHoldTheDocumentedTypes) {
  REQUIRE_SHARED();
  Result<GgufFile> q40 = OpenModel("synth-tiny-q4_0.gguf");
  ASSERT_TRUE(q40.ok());
  EXPECT_EQ(q40->FindTensor("output.weight")->type, GgmlType::kQ6_K);
  EXPECT_EQ(q40->FindTensor("blk.0.attn_q.weight")->type, GgmlType::kQ4_0);
  Result<GgufFile> q4km = OpenModel("synth-tiny-q4_k_m.gguf");
  ASSERT_TRUE(q4km.ok());
  EXPECT_TRUE(TypesOf(*q4km).count(GgmlType::kQ4_K));
  EXPECT_TRUE(TypesOf(*q4km).count(GgmlType::kQ6_K));
  Result<GgufFile> f16 = OpenModel("synth-tiny-f16.gguf");
  ASSERT_TRUE(f16.ok());
  EXPECT_TRUE(TypesOf(*f16).count(GgmlType::kF16));
  Result<GgufFile> q80 = OpenModel("synth-tiny-q8_0.gguf");
  ASSERT_TRUE(q80.ok());
  const GgufTensorInfo* q = q80->FindTensor("blk.0.attn_q.weight");
  EXPECT_EQ(q->type, GgmlType::kQ8_0);
  EXPECT_EQ(q->nbytes, 256u / 32u * 34u * 256u);  // 34-byte blocks of 32
}

TEST(GgufModels, Llama2TinyRandomHasFullVocab) {
  REQUIRE_SHARED();
  Result<GgufFile> r = OpenModel("llama2-tiny-random.gguf");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetStringArray("tokenizer.ggml.tokens")->size(), 32000u);
  EXPECT_EQ(*r->GetUint("llama.embedding_length"), 8u);
  EXPECT_EQ(*r->GetUint("llama.block_count"), 1u);
  ExpectShape(*r, "token_embd.weight", {8, 32000});
  EXPECT_NE(GgufFile::ValueToString(*r->Find("tokenizer.ggml.tokens")).find("(32000 total)"),
            std::string::npos);
}

TEST(GgufModels, MissingFileIsNotFoundWithPath) {
  Result<GgufFile> r = GgufFile::Open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace valet
