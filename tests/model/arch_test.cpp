// Architectures from metadata alone: every supported family loads from a
// synthetic file and runs, fused tensors bind as row views, a decoupled head
// size works, and an unknown family is refused with one line naming it. The
// numerics of each family against llama.cpp are golden_test's job.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "model/arch.h"
#include "model/llama_context.h"
#include "model/llama_model.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

std::string TempPath(const std::string& tag) {
  return ::testing::TempDir() + "valet_arch_test_" + tag + "_" + std::to_string(getpid()) + ".gguf";
}

class TempModel {
 public:
  explicit TempModel(const SynthModelOptions& o) : path_(TempPath(o.arch)) {
    Status s = WriteSyntheticModel(o, path_);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  ~TempModel() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

SynthModelOptions Tiny(const std::string& arch) {
  SynthModelOptions o;
  o.arch = arch;
  o.type = GgmlType::kQ8_0;
  return o;
}

// Loads the tiny model of `arch` with its metadata changed by `edit`.
Result<std::shared_ptr<const LlamaModel>> LoadEdited(const std::string& arch, const std::string& tag,
                                                     const std::function<void(GgufWriter&)>& edit) {
  Result<GgufWriter> w = BuildSyntheticModel(Tiny(arch));
  if (!w.ok()) return w.status();
  edit(*w);
  const std::string path = TempPath(tag);
  VALET_RETURN_IF_ERROR(w->WriteFile(path));
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(path);
  std::filesystem::remove(path);
  return model;
}

// Logits after a short prompt, on a fresh context and pool.
std::vector<float> Logits(std::shared_ptr<const LlamaModel> model) {
  const ModelConfig& c = model->config();
  KvPoolOptions po;
  po.layout = KvLayout{c.n_layer, c.n_head_kv, c.head_dim, 16};
  po.capacity_bytes = 4u << 20;
  std::unique_ptr<KvPool> pool = std::move(KvPool::Create(po)).value();
  ContextOptions co;
  co.n_threads = 2;
  std::unique_ptr<LlamaContext> ctx = std::move(LlamaContext::Create(model, co)).value();
  const std::vector<int32_t> prompt = {1, 300, 301, 302, 303, 304, 305};
  KvSequence seq(*pool);
  BatchItem item{&seq, prompt, LogitsMode::kLast};
  std::vector<float> logits;
  Status s = ctx->Forward({&item, 1}, logits);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return logits;
}

TEST(ArchTest, EverySupportedFamilyLoadsAndRuns) {
  for (const ArchSpec& arch : SupportedArchs()) {
    SCOPED_TRACE(std::string(arch.name));
    TempModel file(Tiny(std::string(arch.name)));
    Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(file.path());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const ModelConfig& c = (*model)->config();
    EXPECT_EQ(c.architecture, arch.name);
    EXPECT_EQ(c.rope_style, arch.rope);
    const LlamaLayer& l = (*model)->layers().front();
    EXPECT_EQ(l.bq != nullptr && l.bk != nullptr && l.bv != nullptr, arch.qkv_bias);
    EXPECT_EQ(l.q_norm != nullptr && l.k_norm != nullptr, arch.qk_norm);
    const std::vector<float> logits = Logits(*model);
    ASSERT_EQ(logits.size(), static_cast<size_t>(c.n_vocab));
    double sum_sq = 0;
    for (float x : logits) {
      ASSERT_TRUE(std::isfinite(x));
      sum_sq += double{x} * x;
    }
    EXPECT_GT(sum_sq, 0.0);
  }
}

TEST(ArchTest, FamiliesDifferInTheirLogits) {
  // Same seed and shapes: only the family's rotation, biases and norms differ,
  // so identical logits would mean a family's description had no effect.
  std::vector<std::vector<float>> all;
  for (const ArchSpec& arch : SupportedArchs()) {
    TempModel file(Tiny(std::string(arch.name)));
    all.push_back(Logits(std::move(LlamaModel::Load(file.path())).value()));
  }
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i], all[j]) << i << " vs " << j;
  }
}

TEST(ArchTest, FusedTensorsBindAsRowViews) {
  TempModel file(Tiny("phi3"));
  std::shared_ptr<const LlamaModel> model = std::move(LlamaModel::Load(file.path())).value();
  const ModelConfig& c = model->config();
  const GgufTensorInfo* qkv = model->file().FindTensor("blk.0.attn_qkv.weight");
  const GgufTensorInfo* up = model->file().FindTensor("blk.0.ffn_up.weight");
  ASSERT_NE(qkv, nullptr);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(model->file().FindTensor("blk.0.attn_q.weight"), nullptr);
  const LlamaLayer& l = model->layers().front();
  // Views into one tensor's rows (the file's, or its repacked copy: row
  // groups keep whole rows' bytes together, so row offsets carry over).
  const auto* base = static_cast<const uint8_t*>(l.wq.data);
  EXPECT_EQ(l.wk.data, base + c.q_dim() * l.wq.row_bytes);
  EXPECT_EQ(l.wv.data, base + (c.q_dim() + c.kv_dim()) * l.wq.row_bytes);
  EXPECT_EQ(l.wq.n_out, c.q_dim());
  EXPECT_EQ(l.wv.n_out, c.kv_dim());
  EXPECT_EQ(l.w_up.data, static_cast<const uint8_t*>(l.w_gate.data) + c.n_ff * l.w_up.row_bytes);
  EXPECT_EQ(l.w_up.n_out, c.n_ff);
}

TEST(ArchTest, HeadSizeDecoupledFromEmbedding) {
  SynthModelOptions o = Tiny("qwen3");
  SynthShape s = SynthPresetShape(SynthPreset::kTiny);
  s.head_dim = 2 * s.n_embd / s.n_head;  // Qwen3-style: heads wider than n_embd / n_head
  o.shape = s;
  TempModel file(o);
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(file.path());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.head_dim, s.head_dim);
  EXPECT_EQ(c.q_dim(), 2 * c.n_embd);
  EXPECT_EQ(Logits(*model).size(), static_cast<size_t>(c.n_vocab));
}

TEST(ArchTest, UnknownFamilyIsRefusedByName) {
  Result<std::shared_ptr<const LlamaModel>> model =
      LoadEdited("llama", "gemma3n", [](GgufWriter& w) { w.SetString("general.architecture", "gemma3n"); });
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(model.status().message().find("unknown architecture 'gemma3n'"), std::string::npos)
      << model.status().message();
  EXPECT_NE(model.status().message().find("qwen3"), std::string::npos) << model.status().message();
}

// Gemma 3: five windowed layers to one global, the window and the global
// layers' position scaling read from the file, and a window of 0 refused.
TEST(ArchTest, WindowedLayersFollowTheFamilysPeriod) {
  TempModel file(Tiny("gemma3"));
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(file.path());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  ASSERT_EQ(c.n_layer, 6) << "the tiny preset's 4 layers round up to one period";
  for (int32_t il = 0; il < c.n_layer; ++il) EXPECT_EQ(c.sliding(il), il != 5) << il;
  EXPECT_EQ(c.n_swa, 16);
  EXPECT_EQ(c.rope_freq_scale, 1.0f / 8.0f);
  EXPECT_EQ(c.rope_base_swa, 10000.0f);
  EXPECT_EQ(c.rope_base, 1e6f);
  EXPECT_TRUE((*model)->tied_output());
  EXPECT_NE((*model)->layers()[0].post_attn_norm, nullptr);
  EXPECT_NE((*model)->layers()[0].post_ffn_norm, nullptr);

  Result<std::shared_ptr<const LlamaModel>> refused = LoadEdited(
      "gemma3", "gemma3_window0", [](GgufWriter& w) { w.SetUint32("gemma3.attention.sliding_window", 0); });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("gemma3.attention.sliding_window"), std::string::npos)
      << refused.status().message();
}

// Gemma 2: windowed and global layers alternate, both rotate alike, and the
// soft caps come from the file (the family's defaults when it names none).
TEST(ArchTest, Gemma2AlternatesWindowsAndCapsItsScores) {
  TempModel file(Tiny("gemma2"));
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(file.path());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  for (int32_t il = 0; il < c.n_layer; ++il) EXPECT_EQ(c.sliding(il), il % 2 == 0) << il;
  EXPECT_EQ(c.rope_base_swa, c.rope_base);
  EXPECT_EQ(c.rope_freq_scale_swa, c.rope_freq_scale);
  EXPECT_EQ(c.attn_softcap, 50.0f);
  EXPECT_EQ(c.final_softcap, 30.0f);

  Result<std::shared_ptr<const LlamaModel>> capped = LoadEdited(
      "gemma2", "gemma2_cap20", [](GgufWriter& w) { w.SetFloat32("gemma2.attn_logit_softcapping", 20.0f); });
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_EQ(capped->get()->config().attn_softcap, 20.0f);
  EXPECT_NE(Logits(*capped), Logits(*model)) << "the attention cap reaches the logits";
}

TEST(ArchTest, UnknownFamilyIsRefusedBySyntheticModels) {
  SynthModelOptions o = Tiny("mamba");
  EXPECT_EQ(BuildSyntheticModel(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace valet
