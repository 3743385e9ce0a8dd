// The engine against llama.cpp's reference outputs in ../shared/golden/, and
// in tests/model/golden/ for families whose models valet synthesizes (the
// test writes the model, llama-golden wrote the reference from the same
// bytes): prompt tokens, teacher-forced logits at every step, greedy
// continuation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "common/json.h"
#include "engine/engine.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

struct GoldenModel {
  const char* golden;      // file under golden/
  double tolerance;        // max |Δlogit| / std(reference logits), per step
  // A synthesized model (preset tiny, seed 42): the golden is the repository's
  // and the model is written by the test. nullptr: both are ../shared's.
  const char* synth_arch = nullptr;
  GgmlType synth_type = GgmlType::kF32;
  const char* vocab = nullptr;  // synthesized with this real vocabulary (--vocab), else the built-in one
};

// Every file in ../shared/golden/, with the tolerances of its README (F32 1e-4,
// F16 1e-2, quantized 0.15). EveryGoldenFileIsListed keeps the list complete.
constexpr GoldenModel kModels[] = {
    {"stories260K.json", 1e-4},        {"synth-tiny-f32.json", 1e-4},    {"synth-tiny-f16.json", 1e-2},
    {"llama2-tiny-random.json", 1e-2}, {"synth-tiny-q8_0.json", 0.15},   {"synth-tiny-q4_0.json", 0.15},
    {"synth-tiny-q4_k_m.json", 0.15},  {"synth-tiny-q6_k.json", 0.15},   {"synth-tiny-q4_1.json", 0.15},
    {"synth-tiny-q5_0.json", 0.15},    {"synth-tiny-q5_1.json", 0.15},   {"synth-tiny-q5_k_m.json", 0.15},
    {"synth-tiny-q3_k_m.json", 0.15},  {"synth-tiny-q2_k.json", 0.15},   {"synth-tiny-iq4_nl.json", 0.15},
    {"synth-tiny-iq4_xs.json", 0.15},  {"llama3-bpe-q4_k_m.json", 0.15}, {"qwen2-q4_0.json", 0.15},
    {"qwen3-q4_k_m.json", 0.15},       {"phi3-q4_0.json", 0.15},
    // Made by: valet synth-model --preset tiny --arch A --type T -o A-tiny-T.gguf, then
    // ../shared/peer/bin/llama-golden A-tiny-T.gguf PROMPTS 32 32 with the prompts of synth-tiny-f32.json.
    {"gemma2-tiny-f32.json", 1e-4, "gemma2", GgmlType::kF32},
    {"gemma2-tiny-q8_0.json", 0.15, "gemma2", GgmlType::kQ8_0},
    {"gemma2-tiny-q4_0.json", 0.15, "gemma2", GgmlType::kQ4_0},
    {"gemma2-tiny-q4_k_m.json", 0.15, "gemma2", GgmlType::kQ4_K},
    {"gemma3-tiny-f32.json", 1e-4, "gemma3", GgmlType::kF32},
    {"gemma3-tiny-q8_0.json", 0.15, "gemma3", GgmlType::kQ8_0},
    {"gemma3-tiny-q4_0.json", 0.15, "gemma3", GgmlType::kQ4_0},
    {"gemma3-tiny-q4_k_m.json", 0.15, "gemma3", GgmlType::kQ4_K},
    // --vocab with tests/tokenizer/gemma2's or gemma3's vocabulary; chat-formatted prompts (16 steps,
    // sparse logits: llama-golden M PROMPTS 16 32), the same prompts for both.
    {"gemma2-tiny-vocab-q8_0.json", 0.15, "gemma2", GgmlType::kQ8_0, VALET_GEMMA2_VOCAB},
    {"gemma3-tiny-vocab-q8_0.json", 0.15, "gemma3", GgmlType::kQ8_0, VALET_GEMMA3_VOCAB},
};

std::string SharedPath(const std::string& rel) { return std::string(VALET_SHARED_DIR) + "/" + rel; }

double Stddev(const std::vector<float>& v) {
  double mean = 0, sq = 0;
  for (float x : v) mean += x;
  mean /= v.size();
  for (float x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / v.size());
}

std::vector<float> Floats(const Json& a) {
  std::vector<float> out;
  out.reserve(a.size());
  for (const Json& x : a) out.push_back(static_cast<float>(x.get<double>()));
  return out;
}

std::vector<int32_t> Ints(const Json& a) {
  std::vector<int32_t> out;
  for (const Json& x : a) out.push_back(static_cast<int32_t>(x.get<double>()));
  return out;
}

int32_t ArgMax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// One reference step's logits: all of them, or (large vocabularies, "logits_form":
// "sparse") the values at `ids` with the std of the full row given beside them.
struct RefLogits {
  std::vector<int32_t> ids;  // empty: logits[v] is token v
  std::vector<float> logits;
  double std = 0;

  explicit RefLogits(const Json& step) : logits(Floats(step.at("logits"))) {
    if (const Json* ids_json = FindMember(step, "logit_ids")) {
      ids = Ints(*ids_json);
      std = step.at("logit_std").get<double>();
    } else {
      std = Stddev(logits);
    }
  }
  // max |got - reference| over the reference's ids.
  double MaxDiff(const float* got) const {
    double d = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      const int32_t v = ids.empty() ? static_cast<int32_t>(i) : ids[i];
      d = std::max(d, std::abs(double{got[v]} - logits[i]));
    }
    return d;
  }
};

TEST(GoldenFiles, EveryGoldenFileIsListed) {
  const std::filesystem::path dir = SharedPath("golden");
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "shared data absent: " << dir;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().filename().string();
    const bool listed = std::any_of(std::begin(kModels), std::end(kModels),
                                    [&](const GoldenModel& m) { return name == m.golden && m.synth_arch == nullptr; });
    EXPECT_TRUE(listed) << name << " has no entry in kModels";
  }
}

// The model and a forward context, without a tokenizer: the logit tests feed
// the reference's own token ids.
class GoldenTest : public ::testing::TestWithParam<GoldenModel> {
 protected:
  void SetUp() override {
    const GoldenModel& m = GetParam();
    const std::string path = m.synth_arch != nullptr ? std::string(VALET_TEST_GOLDEN_DIR) + "/" + m.golden
                                                     : SharedPath(std::string("golden/") + m.golden);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
    Result<Json> golden = ReadJsonFile(path);
    ASSERT_TRUE(golden.ok()) << golden.status().ToString();
    golden_ = std::move(golden).value();
    if (m.synth_arch != nullptr) {
      model_path_ = (std::filesystem::temp_directory_path() / ("valet_golden_" + std::to_string(getpid()) + "_" +
                                                                golden_.at("model").get<std::string>()))
                        .string();
      SynthModelOptions o;
      o.arch = m.synth_arch;
      o.type = m.synth_type;
      if (m.vocab != nullptr) o.vocab_path = m.vocab;
      ASSERT_TRUE(WriteSyntheticModel(o, model_path_).ok());
    } else {
      model_path_ = SharedPath("models/" + golden_.at("model").get<std::string>());
    }
    Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(model_path_);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = *model;
    const ModelConfig& c = model_->config();
    KvPoolOptions po;
    // The tolerances (docs/testing.md) allow F16 KV for the quantized models only.
    const KvType kv_type = GetParam().tolerance >= 0.15 ? KvType::kF16 : KvType::kF32;
    // As the engine lays it out: Gemma's windowed layers keep only their window.
    po.layout = ModelKvLayout(c, c.n_ctx_train, 16, kv_type);
    po.capacity_bytes = 64u << 20;
    Result<std::unique_ptr<KvPool>> pool = KvPool::Create(po);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(pool).value();
    ContextOptions co;
    co.n_threads = 2;
    Result<std::unique_ptr<LlamaContext>> ctx = LlamaContext::Create(model_, co);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ctx_ = std::move(ctx).value();
  }

  void TearDown() override {
    if (GetParam().synth_arch != nullptr && !model_path_.empty()) std::filesystem::remove(model_path_);
  }

  Json golden_;
  std::string model_path_;
  std::shared_ptr<const LlamaModel> model_;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<LlamaContext> ctx_;
};

TEST_P(GoldenTest, PromptTokensMatch) {
  EngineOptions o;
  o.model_path = model_path_;
  o.n_threads = 1;
  o.kv_capacity_bytes = 1u << 20;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  for (const Json& c : golden_.at("cases")) {
    EXPECT_EQ((*engine)->tokenizer().Encode(c.at("prompt").get<std::string>(), {.parse_special = true}),
              Ints(c.at("prompt_tokens")))
        << "prompt: " << c.at("prompt").get<std::string>();
  }
}

// Feeds prompt + reference tokens as one batch and compares the logits at
// every position from the last prompt token on.
TEST_P(GoldenTest, TeacherForcedLogitsWithinTolerance) {
  const int32_t n_vocab = model_->config().n_vocab;
  ASSERT_EQ(n_vocab, static_cast<int32_t>(golden_.at("n_vocab").get<double>()));
  double worst = 0;
  for (const Json& c : golden_.at("cases")) {
    std::vector<int32_t> tokens = Ints(c.at("prompt_tokens"));
    const size_t n_prompt = tokens.size();
    const Json& steps = c.at("steps");
    for (size_t i = 0; i + 1 < steps.size(); ++i) tokens.push_back(static_cast<int32_t>(steps[i].at("token").get<double>()));

    KvSequence seq(*pool_);
    std::vector<float> logits;
    BatchItem item{&seq, tokens, LogitsMode::kAll};
    ASSERT_TRUE(ctx_->Forward({&item, 1}, logits).ok());
    for (size_t i = 0; i < steps.size(); ++i) {
      const RefLogits ref(steps[i]);
      const double rel = ref.MaxDiff(logits.data() + (n_prompt - 1 + i) * n_vocab) / ref.std;
      worst = std::max(worst, rel);
      ASSERT_LE(rel, GetParam().tolerance) << "step " << i << " of prompt '" << c.at("prompt").get<std::string>() << "'";
    }
  }
  RecordProperty("worst_relative_logit_error", std::to_string(worst));
  std::printf("[ golden   ] %s: worst max|dlogit|/std = %.3g (tolerance %.3g)\n", GetParam().golden, worst,
              GetParam().tolerance);
}

// Greedy decoding one token at a time reproduces the reference tokens up to
// the first step where the reference itself had a near-tie.
TEST_P(GoldenTest, GreedyContinuationMatchesUpToFirstNearTie) {
  const int32_t n_vocab = model_->config().n_vocab;
  for (const Json& c : golden_.at("cases")) {
    const std::vector<int32_t> prompt = Ints(c.at("prompt_tokens"));
    KvSequence seq(*pool_);
    std::vector<float> logits;
    BatchItem item{&seq, prompt, LogitsMode::kLast};
    ASSERT_TRUE(ctx_->Forward({&item, 1}, logits).ok());
    const Json& steps = c.at("steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].at("margin").get<double>() < 0.15 * RefLogits(steps[i]).std) break;  // near-tie: may part here
      const int32_t token = ArgMax({logits.data(), static_cast<size_t>(n_vocab)});
      ASSERT_EQ(token, static_cast<int32_t>(steps[i].at("token").get<double>()))
          << "step " << i << " of prompt '" << c.at("prompt").get<std::string>() << "'";
      BatchItem next{&seq, {&token, 1}, LogitsMode::kLast};
      ASSERT_TRUE(ctx_->Forward({&next, 1}, logits).ok());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<GoldenModel>& info) {
                           std::string name = info.param.golden;
                           name = name.substr(0, name.find(".json"));
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace valet
