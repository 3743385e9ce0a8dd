// Packed weights as a file: a load with a cache path makes the cache and
// maps it, later loads map it without repacking (the load report's counters),
// the logits are the same bits as an uncached load's for every packed type
// (under whichever kernel table this CPU or emulator chose), and a torn,
// truncated, foreign or tampered cache, a planted link or a kill before the
// rename never gets used: the load repacks and writes it anew.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/private_files.h"
#include "kernels/weight_pack.h"
#include "model/llama_context.h"
#include "testing/model/synthetic_model.h"

namespace valet {
using namespace valet::testing;
namespace {

namespace fs = std::filesystem;

constexpr int32_t kPromptTokens = 12;

// n_embd and n_ff multiples of 256, so K-quant files keep their K-quants.
std::string WriteModel(const std::string& dir, GgmlType type, uint64_t seed = 1) {
  SynthModelOptions o;
  o.type = type;
  o.seed = seed;
  // n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx
  o.shape = SynthShape{256, 2, 2, 1, 512, 384, 64};
  const std::string path = dir + "/model-" + SynthTypeName(type) + "-" + std::to_string(seed) + ".gguf";
  EXPECT_TRUE(WriteSyntheticModel(o, path).ok());
  return path;
}

WeightsCacheOptions At(const std::string& path) {
  WeightsCacheOptions o;
  o.path = path;
  return o;
}

std::shared_ptr<const LlamaModel> Load(const std::string& path, const WeightsCacheOptions& cache = {}) {
  ModelLoadOptions options;
  options.weights_cache = cache;
  Result<std::shared_ptr<const LlamaModel>> model = LlamaModel::Load(path, options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : nullptr;
}

// Logits of every prompt token, in one step.
std::vector<float> Logits(const std::shared_ptr<const LlamaModel>& model) {
  const ModelConfig& c = model->config();
  KvPoolOptions po;
  po.layout = KvLayout{c.n_layer, c.n_head_kv, c.head_dim, 16};
  po.capacity_bytes = 1u << 20;
  std::unique_ptr<KvPool> pool = std::move(KvPool::Create(po)).value();
  std::unique_ptr<LlamaContext> ctx = std::move(LlamaContext::Create(model, ContextOptions{})).value();
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < kPromptTokens; ++i) prompt.push_back((i * 37 + 11) % c.n_vocab);
  KvSequence seq(*pool);
  std::vector<float> logits;
  BatchItem item{&seq, prompt, LogitsMode::kAll};
  EXPECT_TRUE(ctx->Forward({&item, 1}, logits).ok());
  return logits;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class WeightsCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> dir = MakeScratchDirectory("valet-weights-cache-");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    caches_ = dir_ + "/caches/";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The one cache file in caches_.
  std::string CacheFile() const {
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(caches_)) {
      if (e.path().extension() == ".weights") found.push_back(e.path().string());
    }
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? std::string() : found[0];
  }

  std::string dir_;
  std::string caches_;
};

class WeightsCacheTypeTest : public WeightsCacheTest, public ::testing::WithParamInterface<GgmlType> {};

TEST_P(WeightsCacheTypeTest, MadeOnceMappedAfterAndTheSameLogits) {
  const std::string model = WriteModel(dir_, GetParam());
  const std::shared_ptr<const LlamaModel> plain = Load(model);
  ASSERT_NE(plain, nullptr);
  const int32_t packed = plain->load_report().matrices_packed;
  if (packed == 0) GTEST_SKIP() << "this CPU's kernel table packs no " << SynthTypeName(GetParam()) << " matrix";
  EXPECT_EQ(plain->weight_memory().anonymous > 0, true);
  EXPECT_TRUE(plain->load_report().cache_path.empty());

  const std::shared_ptr<const LlamaModel> first = Load(model, At(caches_));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->load_report().matrices_packed, packed);
  EXPECT_EQ(first->load_report().matrices_mapped, packed);
  EXPECT_TRUE(first->load_report().cache_written);
  EXPECT_EQ(first->load_report().cache_path, CacheFile());
  EXPECT_EQ(first->weight_memory().anonymous, 0u);

  const std::shared_ptr<const LlamaModel> again = Load(model, At(caches_));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->load_report().matrices_packed, 0);  // nothing repacked
  EXPECT_EQ(again->load_report().matrices_mapped, packed);
  EXPECT_FALSE(again->load_report().cache_written);
  EXPECT_TRUE(again->load_report().cache_note.empty()) << again->load_report().cache_note;
  EXPECT_EQ(again->weight_memory().anonymous, 0u);
  EXPECT_EQ(again->weight_memory().file_backed, first->weight_memory().file_backed);
  EXPECT_EQ(again->fingerprint(), plain->fingerprint());

  const std::vector<float> expected = Logits(plain);
  EXPECT_TRUE(SameBits(Logits(first), expected));
  EXPECT_TRUE(SameBits(Logits(again), expected));
  // Weights given back to the OS (onTrimMemory) come back on the next touch, the same bits.
  for (WeightsAdvice advice : {WeightsAdvice::kCold, WeightsAdvice::kPageOut}) {
    EXPECT_GT(again->AdviseWeights(advice), again->weight_memory().file_backed / 2);
    EXPECT_TRUE(SameBits(Logits(again), expected));
    (void)plain->AdviseWeights(advice);
    EXPECT_TRUE(SameBits(Logits(plain), expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, WeightsCacheTypeTest,
                         ::testing::Values(GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                           GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kQ2_K, GgmlType::kQ3_K,
                                           GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kIQ4_XS),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(SynthTypeName(info.param));
                         });

// A float model has nothing to pack: no cache is made.
TEST_F(WeightsCacheTest, AFloatModelNeedsNone) {
  const std::shared_ptr<const LlamaModel> m = Load(WriteModel(dir_, GgmlType::kF32), At(caches_));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->load_report().matrices_packed + m->load_report().matrices_mapped, 0);
  EXPECT_FALSE(fs::exists(caches_));
}

// Each way a cache can be wrong: the load says why, repacks, and replaces it
// with one the next load maps.
class WeightsCacheDamageTest : public WeightsCacheTest {
 protected:
  void SetUp() override {
    WeightsCacheTest::SetUp();
    model_ = WriteModel(dir_, GgmlType::kQ4_0);
    const std::shared_ptr<const LlamaModel> made = Load(model_, At(caches_));
    ASSERT_NE(made, nullptr);
    packed_ = made->load_report().matrices_packed;
    if (packed_ == 0) GTEST_SKIP() << "this CPU's kernel table packs no Q4_0 matrix";
    file_ = CacheFile();
    expected_ = Logits(made);
  }

  // Loads over the damaged cache: refused with `why`, rebuilt, then mapped.
  void ExpectRebuilt(const std::string& why) {
    const std::shared_ptr<const LlamaModel> m = Load(model_, At(caches_));
    ASSERT_NE(m, nullptr);
    EXPECT_NE(m->load_report().cache_note.find(why), std::string::npos) << m->load_report().cache_note;
    EXPECT_EQ(m->load_report().matrices_packed, packed_);
    EXPECT_TRUE(m->load_report().cache_written);
    EXPECT_TRUE(SameBits(Logits(m), expected_));
    const std::shared_ptr<const LlamaModel> next = Load(model_, At(caches_));
    ASSERT_NE(next, nullptr);
    EXPECT_EQ(next->load_report().matrices_packed, 0);
    EXPECT_EQ(next->load_report().matrices_mapped, packed_);
  }

  void Rewrite(const std::vector<char>& bytes) const {
    fs::remove(file_);  // the mapping of a loaded model keeps the old inode
    std::ofstream(file_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::vector<char> Bytes() const {
    std::ifstream in(file_, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  }

  std::string model_;
  std::string file_;
  int32_t packed_ = 0;
  std::vector<float> expected_;
};

TEST_F(WeightsCacheDamageTest, TruncatedData) {
  std::vector<char> bytes = Bytes();
  bytes.resize(bytes.size() - 4096);
  Rewrite(bytes);
  ExpectRebuilt("bytes where its header says");
}

TEST_F(WeightsCacheDamageTest, TornHeader) {
  std::vector<char> bytes = Bytes();
  bytes.resize(40);
  Rewrite(bytes);
  ExpectRebuilt("torn header");
}

TEST_F(WeightsCacheDamageTest, AByteOfTheIndexFlipped) {
  std::vector<char> bytes = Bytes();
  bytes[200] ^= 0x10;  // inside the matrix index (the strings end before byte 100)
  Rewrite(bytes);
  ExpectRebuilt("checksum does not match");
}

TEST_F(WeightsCacheDamageTest, NotACache) {
  Rewrite(std::vector<char>(100, 'x'));
  ExpectRebuilt("not a valet weights cache");
}

TEST_F(WeightsCacheDamageTest, AnotherModelsCacheUnderItsName) {
  const std::string other = WriteModel(dir_, GgmlType::kQ4_0, /*seed=*/2);
  const std::string other_caches = dir_ + "/other/";
  ASSERT_NE(Load(other, At(other_caches)), nullptr);
  fs::remove(file_);
  fs::copy_file(fs::directory_iterator(other_caches)->path(), file_);
  ExpectRebuilt("made for another model");
}

// What a cache holds must match what the load asks for, all of it: valet's
// version, the model, the row-group layout and every matrix's entry.
TEST_F(WeightsCacheTest, AnyDifferenceInTheKeyOrTheMatricesRefusesIt) {
  Result<PrivateDir> dir = PrivateDir::Open(caches_);
  ASSERT_TRUE(dir.ok());
  const WeightsCacheKey key{"1.2.3", "gguf-0123456789abcdef-4096", kPackFormat};
  const std::vector<PackedMatrixEntry> entries = {{4096, GgmlType::kQ4_0, 64, 8, 0, 288},
                                                  {8192, GgmlType::kQ8_0, 64, 16, 320, 1088}};
  std::vector<uint8_t> data(1408);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(WeightsCache::Write(*dir, "c.weights", key, entries, data.data()).ok());
  Result<WeightsCache> mapped = WeightsCache::Map(*dir, "c.weights", key, entries);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_EQ(std::memcmp(mapped->data(), data.data(), data.size()), 0);
  EXPECT_EQ(mapped->file_bytes(), WeightsCache::FileBytes(key, entries));
  // On pages of its own: cache lines for the kernels, and the header's page apart.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped->data()) % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), 0u);

  auto refused = [&](const WeightsCacheKey& k, const std::vector<PackedMatrixEntry>& e) {
    Result<WeightsCache> m = WeightsCache::Map(*dir, "c.weights", k, e);
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kCorrupt);
    return m.ok() ? std::string() : m.status().message();
  };
  WeightsCacheKey other = key;
  other.valet_version = "1.2.4";
  EXPECT_NE(refused(other, entries).find("written by valet 1.2.3, this is 1.2.4"), std::string::npos);
  other = key;
  other.model_fingerprint = "gguf-fedcba9876543210-4096";
  EXPECT_NE(refused(other, entries).find("made for another model"), std::string::npos);
  other = key;
  other.pack_format = kPackFormat + 1;
  EXPECT_NE(refused(other, entries).find("row-group layout"), std::string::npos);
  std::vector<PackedMatrixEntry> moved = entries;
  moved[1].source_offset += 64;
  EXPECT_NE(refused(key, moved).find("not the ones this load packs"), std::string::npos);
  EXPECT_NE(refused(key, {entries[0]}).find("not the ones this load packs"), std::string::npos);
  const Result<WeightsCache> absent = WeightsCache::Map(*dir, "none.weights", key, entries);
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
}

TEST_F(WeightsCacheDamageTest, APlantedLinkIsNotFollowed) {
  const std::string elsewhere = dir_ + "/elsewhere.weights";
  fs::copy_file(file_, elsewhere);
  fs::remove(file_);
  fs::create_symlink(elsewhere, file_);
  ExpectRebuilt("cannot open");
  EXPECT_FALSE(fs::is_symlink(file_));
  EXPECT_EQ(fs::file_size(elsewhere), fs::file_size(file_));
}

// A kill once the new cache is written but before its rename leaves no
// cache the next load accepts; that load makes it.
TEST_F(WeightsCacheDamageTest, AKillBeforeTheRenameLeavesNoCache) {
  fs::remove(file_);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    WeightsCacheOptions cache = At(caches_);
    cache.before_publish = [] { ::raise(SIGKILL); };
    ModelLoadOptions options;
    options.weights_cache = cache;
    (void)LlamaModel::Load(model_, options);
    ::_exit(0);  // not reached when the seam ran
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_FALSE(fs::exists(file_));
  EXPECT_TRUE(fs::exists(file_ + ".tmp"));
  const std::shared_ptr<const LlamaModel> m = Load(model_, At(caches_));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->load_report().matrices_packed, packed_);
  EXPECT_TRUE(m->load_report().cache_written);
  EXPECT_TRUE(m->load_report().cache_note.empty()) << m->load_report().cache_note;
  EXPECT_FALSE(fs::exists(file_ + ".tmp"));
}

// Over its budget a cache is not written (the load packs in memory); in a
// directory of caches, older caches of other models make room first.
TEST_F(WeightsCacheDamageTest, TheBudget) {
  const uint64_t size = fs::file_size(file_);
  const std::string other = WriteModel(dir_, GgmlType::kQ4_0, /*seed=*/3);
  WeightsCacheOptions tight = At(caches_);
  tight.budget_bytes = size - 1;
  const std::shared_ptr<const LlamaModel> refused = Load(other, tight);
  ASSERT_NE(refused, nullptr);
  EXPECT_NE(refused->load_report().cache_note.find("does not fit the budget"), std::string::npos);
  EXPECT_EQ(refused->load_report().matrices_mapped, 0);
  EXPECT_GT(refused->weight_memory().anonymous, 0u);
  EXPECT_TRUE(fs::exists(file_));  // removing it would not have made room either

  WeightsCacheOptions one = At(caches_);
  one.budget_bytes = size + size / 2;
  const std::shared_ptr<const LlamaModel> replaced = Load(other, one);
  ASSERT_NE(replaced, nullptr);
  EXPECT_TRUE(replaced->load_report().cache_written);
  EXPECT_FALSE(fs::exists(file_));  // the older model's cache made room
  EXPECT_EQ(CacheFile(), replaced->load_report().cache_path);
}

// The cache may be a file the app names; RemoveWeightsCaches removes it, or
// every cache in a directory.
TEST_F(WeightsCacheDamageTest, AFileOfItsOwnAndRemoval) {
  const std::string named = dir_ + "/shipped/model.weights";
  fs::create_directories(fs::path(named).parent_path());
  fs::permissions(fs::path(named).parent_path(), fs::perms::owner_all);
  const std::shared_ptr<const LlamaModel> made = Load(model_, At(named));
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(made->load_report().cache_path, named);
  EXPECT_TRUE(made->load_report().cache_written);
  EXPECT_EQ(Load(model_, At(named))->load_report().matrices_packed, 0);
  EXPECT_TRUE(RemoveWeightsCaches(named).ok());
  EXPECT_FALSE(fs::exists(named));
  EXPECT_TRUE(RemoveWeightsCaches(caches_).ok());
  EXPECT_FALSE(fs::exists(file_));
  EXPECT_TRUE(RemoveWeightsCaches(caches_).ok());  // nothing there: not an error
}

}  // namespace
}  // namespace valet
