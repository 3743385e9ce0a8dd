// The engine against llama.cpp's reference outputs in ../shared/golden/:
// prompt tokens, teacher-forced logits at every step, greedy continuation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "engine/engine.h"
#include "common/json_value.h"

namespace valet {
namespace {

struct GoldenModel {
  const char* golden;      // file under golden/
  double tolerance;        // max |Δlogit| / std(reference logits), per step
};

// Tolerances of ../shared/golden/README.md.
constexpr GoldenModel kModels[] = {
    {"stories260K.json", 1e-4},       {"synth-tiny-f32.json", 1e-4},  {"synth-tiny-f16.json", 1e-2},
    {"llama2-tiny-random.json", 1e-2}, {"synth-tiny-q8_0.json", 0.15}, {"synth-tiny-q4_0.json", 0.15},
    {"synth-tiny-q4_k_m.json", 0.15}, {"synth-tiny-q6_k.json", 0.15},
};

std::string SharedPath(const std::string& rel) { return std::string(VALET_SHARED_DIR) + "/" + rel; }

double Stddev(const std::vector<float>& v) {
  double mean = 0, sq = 0;
  for (float x : v) mean += x;
  mean /= v.size();
  for (float x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / v.size());
}

std::vector<float> Floats(const JsonValue& a) {
  std::vector<float> out;
  out.reserve(a.size());
  for (const JsonValue& x : a.items()) out.push_back(static_cast<float>(x.AsNumber()));
  return out;
}

std::vector<int32_t> Ints(const JsonValue& a) {
  std::vector<int32_t> out;
  for (const JsonValue& x : a.items()) out.push_back(static_cast<int32_t>(x.AsNumber()));
  return out;
}

int32_t ArgMax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

class GoldenTest : public ::testing::TestWithParam<GoldenModel> {
 protected:
  void SetUp() override {
    const std::string path = SharedPath(std::string("golden/") + GetParam().golden);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
    Result<JsonValue> golden = ReadJsonFile(path);
    ASSERT_TRUE(golden.ok()) << golden.status().ToString();
    golden_ = std::move(golden).value();
    EngineOptions o;
    o.model_path = SharedPath("models/" + golden_.Find("model")->AsString());
    o.n_threads = 2;
    o.kv_capacity_bytes = 64u << 20;
    Result<std::unique_ptr<Engine>> e = Engine::Open(o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
  }

  JsonValue golden_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(GoldenTest, PromptTokensMatch) {
  for (const JsonValue& c : golden_.Find("cases")->items()) {
    EXPECT_EQ(engine_->tokenizer().Encode(c.Find("prompt")->AsString()), Ints(*c.Find("prompt_tokens")))
        << "prompt: " << c.Find("prompt")->AsString();
  }
}

// Feeds prompt + reference tokens as one batch and compares the logits at
// every position from the last prompt token on.
TEST_P(GoldenTest, TeacherForcedLogitsWithinTolerance) {
  const int32_t n_vocab = engine_->model().config().n_vocab;
  ASSERT_EQ(n_vocab, static_cast<int32_t>(golden_.Find("n_vocab")->AsNumber()));
  double worst = 0;
  for (const JsonValue& c : golden_.Find("cases")->items()) {
    std::vector<int32_t> tokens = Ints(*c.Find("prompt_tokens"));
    const size_t n_prompt = tokens.size();
    const JsonValue& steps = *c.Find("steps");
    for (size_t i = 0; i + 1 < steps.size(); ++i) tokens.push_back(static_cast<int32_t>(steps[i].Find("token")->AsNumber()));

    KvSequence seq(engine_->kv_pool());
    std::vector<float> logits;
    BatchItem item{&seq, tokens, LogitsMode::kAll};
    ASSERT_TRUE(engine_->context().Forward({&item, 1}, logits).ok());
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::vector<float> ref = Floats(*steps[i].Find("logits"));
      const float* got = logits.data() + (n_prompt - 1 + i) * n_vocab;
      double max_diff = 0;
      for (int32_t v = 0; v < n_vocab; ++v) max_diff = std::max(max_diff, std::abs(double{got[v]} - ref[v]));
      const double rel = max_diff / Stddev(ref);
      worst = std::max(worst, rel);
      ASSERT_LE(rel, GetParam().tolerance) << "step " << i << " of prompt '" << c.Find("prompt")->AsString() << "'";
    }
  }
  RecordProperty("worst_relative_logit_error", std::to_string(worst));
  std::printf("[ golden   ] %s: worst max|dlogit|/std = %.3g (tolerance %.3g)\n", GetParam().golden, worst,
              GetParam().tolerance);
}

// Greedy decoding one token at a time reproduces the reference tokens up to
// the first step where the reference itself had a near-tie.
TEST_P(GoldenTest, GreedyContinuationMatchesUpToFirstNearTie) {
  const int32_t n_vocab = engine_->model().config().n_vocab;
  for (const JsonValue& c : golden_.Find("cases")->items()) {
    const std::vector<int32_t> prompt = Ints(*c.Find("prompt_tokens"));
    KvSequence seq(engine_->kv_pool());
    std::vector<float> logits;
    BatchItem item{&seq, prompt, LogitsMode::kLast};
    ASSERT_TRUE(engine_->context().Forward({&item, 1}, logits).ok());
    const JsonValue& steps = *c.Find("steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::vector<float> ref = Floats(*steps[i].Find("logits"));
      if (steps[i].Find("margin")->AsNumber() < 0.15 * Stddev(ref)) break;  // near-tie: may part here
      const int32_t token = ArgMax({logits.data(), static_cast<size_t>(n_vocab)});
      ASSERT_EQ(token, static_cast<int32_t>(steps[i].Find("token")->AsNumber()))
          << "step " << i << " of prompt '" << c.Find("prompt")->AsString() << "'";
      BatchItem next{&seq, {&token, 1}, LogitsMode::kLast};
      ASSERT_TRUE(engine_->context().Forward({&next, 1}, logits).ok());
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
