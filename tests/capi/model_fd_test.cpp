// valet_params.model_fd: a model inside another file (an APK asset, a
// ParcelFileDescriptor) loads and generates exactly as the same file by path,
// at page-aligned, merely 4-aligned (mapped in place) and misaligned (read
// into memory) offsets, with the descriptor closed right after valet_create;
// bad descriptors and ranges are clear errors.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "valet/valet.h"

namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(VALET_SHARED_DIR) / "models";

struct Generated {
  std::vector<int32_t> tokens;
  std::string text;
  valet_task_state state = VALET_TASK_QUEUED;
};

void OnToken(void* user, valet_task_id, int32_t token, const char*) {
  static_cast<Generated*>(user)->tokens.push_back(token);
}

void OnDone(void* user, valet_task_id, const valet_task_result* r) {
  static_cast<Generated*>(user)->text = r->text;
  static_cast<Generated*>(user)->state = r->state;
}

valet_params SmallParams() {
  valet_params p = valet_default_params();
  p.n_threads = 1;
  p.kv_capacity_bytes = 4u << 20;
  return p;
}

// Greedy tokens of one prompt, or empty with the failure recorded.
Generated Generate(const valet_params& params) {
  valet_scheduler* s = nullptr;
  Generated out;
  if (valet_create(&params, &s) != VALET_OK) {
    ADD_FAILURE() << valet_last_error();
    return out;
  }
  if (params.model_fd >= 0) close(params.model_fd);  // the caller's to close; valet is done with it
  valet_task_params t = valet_default_task_params();
  t.prompt = "Once upon a time";
  t.max_tokens = 16;
  t.temperature = 0.0f;
  t.on_token = OnToken;
  t.on_done = OnDone;
  t.user_data = &out;
  valet_task_id id = 0;
  EXPECT_EQ(valet_submit(s, &t, &id), VALET_OK) << valet_last_error();
  EXPECT_EQ(valet_wait_idle(s), VALET_OK);
  valet_destroy(s);
  EXPECT_EQ(out.state, VALET_TASK_DONE);
  return out;
}

std::vector<char> ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An unlinked file of `lead` junk bytes, the model, then `trail` junk bytes.
int Embed(const std::vector<char>& model, size_t lead, size_t trail) {
  std::string path = (fs::temp_directory_path() / "valet-model-fd-XXXXXX").string();
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  unlink(path.c_str());
  std::vector<char> bytes(lead, 'j');
  bytes.insert(bytes.end(), model.begin(), model.end());
  bytes.insert(bytes.end(), trail, 'k');
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

class ModelFdTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelFdTest, AnyOffsetGeneratesWhatThePathDoes) {
  const fs::path path = kModels / GetParam();
  if (!fs::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
  const std::vector<char> model = ReadAll(path);
  valet_params by_path = SmallParams();
  const std::string path_string = path.string();
  by_path.model_path = path_string.c_str();
  const Generated expected = Generate(by_path);
  ASSERT_FALSE(expected.tokens.empty());
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Page-aligned and 4-aligned ranges are mapped in place; 4097 is read into memory.
  for (size_t lead : {page, page + 4, page + 32, page + 1}) {
    SCOPED_TRACE("offset " + std::to_string(lead));
    valet_params p = SmallParams();
    p.model_fd = Embed(model, lead, 100);
    p.model_offset = lead;
    p.model_size = model.size();
    const Generated got = Generate(p);
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_EQ(got.text, expected.text);
  }
  valet_params to_end = SmallParams();  // model_size 0: to the end of the file
  to_end.model_fd = Embed(model, 8, 0);
  to_end.model_offset = 8;
  EXPECT_EQ(Generate(to_end).tokens, expected.tokens);
}

// stories260K is F32; Q4_K_M's row groups are larger than its rows (a
// release of the repacked bytes must not reach the next tensor's).
INSTANTIATE_TEST_SUITE_P(Models, ModelFdTest, ::testing::Values("stories260K.gguf", "synth-tiny-q4_k_m.gguf"));

TEST(ModelFd, BadDescriptorsAndRangesAreClearErrors) {
  const fs::path path = kModels / "stories260K.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
  const std::vector<char> model = ReadAll(path);
  const int fd = Embed(model, 64, 0);
  valet_scheduler* s = nullptr;
  valet_params p = SmallParams();
  p.model_fd = -2;
  EXPECT_EQ(valet_create(&p, &s), VALET_INVALID_ARGUMENT);
  p.model_fd = -1;
  p.model_offset = 64;
  p.model_path = path.c_str();
  EXPECT_EQ(valet_create(&p, &s), VALET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(valet_last_error()).find("model_fd only"), std::string::npos);
  p.model_path = nullptr;
  p.model_fd = fd;
  p.model_offset = model.size() + 65;
  EXPECT_EQ(valet_create(&p, &s), VALET_OUT_OF_RANGE);
  EXPECT_NE(std::string(valet_last_error()).find("model_fd " + std::to_string(fd) + " at offset"), std::string::npos)
      << valet_last_error();
  p.model_offset = 64;
  p.model_size = model.size() + 1;
  EXPECT_EQ(valet_create(&p, &s), VALET_OUT_OF_RANGE);
  p.model_offset = 0;  // the junk: no GGUF there
  p.model_size = 0;
  p.model_path = "app.apk!/assets/model.gguf";
  EXPECT_EQ(valet_create(&p, &s), VALET_CORRUPT);
  EXPECT_NE(std::string(valet_last_error()).find("app.apk!/assets/model.gguf"), std::string::npos)
      << valet_last_error();
  // A caller built before model_fd existed: the fields are not read.
  p.model_path = path.c_str();
  p.struct_size = offsetof(valet_params, model_fd);
  ASSERT_EQ(valet_create(&p, &s), VALET_OK) << valet_last_error();
  valet_destroy(s);
  close(fd);
}

}  // namespace
