// Writes small valid GGUF files into a directory, as the fuzzer's seed corpus.
// Generated at run time so no binaries live in the repository.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "testing/gguf/gguf_writer.h"

namespace {

using valet::GgmlType;
using valet::testing::GgufArray;
using valet::testing::GgufWriter;

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed * 31 + i);
  return v;
}

GgufWriter MetadataOnly() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("general.name", "seed");
  w.SetUint32("llama.block_count", 2);
  w.SetUint64("llama.context_length", 2048);
  w.SetFloat32("llama.rope.freq_base", 10000.f);
  w.SetFloat64("f64", -0.25);
  w.SetBool("flag", true);
  w.SetInt8("i8", -3);
  w.SetUint8("u8", 3);
  w.SetInt16("i16", -300);
  w.SetUint16("u16", 300);
  w.SetInt32("i32", -70000);
  w.SetInt64("i64", -5000000000);
  const std::vector<std::string> toks = {"<unk>", "<s>", "</s>", "a", "b"};
  w.SetArray("tokenizer.ggml.tokens", GgufArray::OfStrings(std::span<const std::string>(toks)));
  const std::vector<float> scores = {0.f, -1.f, -2.f, -3.f, -4.f};
  w.SetArray("tokenizer.ggml.scores", GgufArray::Of(std::span<const float>(scores)));
  const std::vector<int32_t> types = {2, 3, 3, 1, 1};
  w.SetArray("tokenizer.ggml.token_type", GgufArray::Of(std::span<const int32_t>(types)));
  const std::vector<GgufArray> inner = {GgufArray::Of(std::span<const int32_t>(types)),
                                        GgufArray::OfStrings(std::span<const std::string>(toks))};
  w.SetArray("nested", GgufArray::OfArrays(inner));
  return w;
}

GgufWriter WithTensors(uint32_t alignment) {
  GgufWriter w = MetadataOnly();
  if (!w.SetAlignment(alignment).ok()) std::abort();
  struct T {
    const char* name;
    GgmlType type;
    std::vector<int64_t> ne;
    size_t nbytes;
  };
  const T tensors[] = {
      {"f32", GgmlType::kF32, {4, 2}, 32},        {"f16", GgmlType::kF16, {8}, 16},
      {"q8_0", GgmlType::kQ8_0, {32, 2}, 68},     {"q4_0", GgmlType::kQ4_0, {32}, 18},
      {"q4_k", GgmlType::kQ4_K, {256}, 144},      {"q6_k", GgmlType::kQ6_K, {256}, 210},
      {"bf16", GgmlType::kBF16, {2, 1, 1, 2}, 8},
  };
  uint8_t seed = 1;
  for (const T& t : tensors) {
    if (!w.AddTensor(t.name, t.type, t.ne, Bytes(t.nbytes, seed++)).ok()) std::abort();
  }
  return w;
}

bool Write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<uint8_t> v2 = WithTensors(32).Serialize();
  v2[4] = 2;  // the v2 layout is identical apart from the version field
  const bool ok = Write(dir + "/seed-metadata.gguf", MetadataOnly().Serialize()) &&
                  Write(dir + "/seed-tensors-a32.gguf", WithTensors(32).Serialize()) &&
                  Write(dir + "/seed-tensors-a8.gguf", WithTensors(8).Serialize()) &&
                  Write(dir + "/seed-v2.gguf", v2) &&
                  Write(dir + "/seed-empty.gguf", GgufWriter().Serialize());
  if (!ok) {
    std::perror(dir.c_str());
    return 1;
  }
  return 0;
}
