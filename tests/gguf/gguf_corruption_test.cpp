// Malformed files must produce a one-line error naming the file, never a crash
// or an out-of-bounds read (run under ASan to check the latter).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf_test_util.h"
#include "testing/gguf/gguf_writer.h"

namespace valet {
using namespace valet::testing;
namespace {

using gguf_testing::RawGguf;

constexpr char kName[] = "/data/corrupt-input.gguf";
constexpr uint32_t kF32 = 0, kQ8_0 = 8, kQ4_1 = 3;

void ExpectErrorWithPath(const Status& s) {
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(kName), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
}

Status ParseStatus(std::vector<uint8_t> bytes) {
  Result<GgufFile> f = GgufFile::FromBuffer(std::move(bytes), kName);
  return f.ok() ? Status::Ok() : f.status();
}

// A valid base for the table: metadata and two F32 tensors of 32 bytes each.
RawGguf Base() {
  RawGguf g;
  g.KeyString("general.architecture", "llama");
  g.KeyU32("llama.block_count", 1);
  g.Tensor("a", {8}, kF32, 0);
  g.Tensor("b", {4, 2}, kF32, 32);
  g.data.assign(64, 0x11);
  return g;
}

struct Case {
  const char* name;
  std::function<void(RawGguf&)> mutate;
  StatusCode code;
  const char* needle;  // must appear in the message
};

std::vector<Case> Cases() {
  const uint64_t kHuge = uint64_t{1} << 60;
  return {
      {"bad magic",
       [](RawGguf& g) {
         g.magic = {'G', 'G', 'M', 'L'};
       },
       StatusCode::kCorrupt, "magic"},
      {"version 1", [](RawGguf& g) { g.version = 1; }, StatusCode::kUnsupported, "v1"},
      {"version 0", [](RawGguf& g) { g.version = 0; }, StatusCode::kUnsupported, "version 0"},
      {"version 4", [](RawGguf& g) { g.version = 4; }, StatusCode::kUnsupported, "version 4"},
      {"big-endian v3", [](RawGguf& g) { g.version = 0x03000000; }, StatusCode::kUnsupported,
       "big-endian"},
      {"huge kv count", [=](RawGguf& g) { g.kv_count = kHuge; }, StatusCode::kCorrupt,
       "cannot fit"},
      {"huge tensor count", [=](RawGguf& g) { g.tensor_count = kHuge; }, StatusCode::kCorrupt,
       "cannot fit"},
      {"kv count one too many", [](RawGguf& g) { g.kv_count = 3; }, StatusCode::kCorrupt, ""},
      {"tensor count one too many", [](RawGguf& g) { g.tensor_count = 3; }, StatusCode::kCorrupt,
       ""},
      {"key length past end",
       [](RawGguf& g) {
         RawGguf::Pod<uint64_t>(g.kvs, 1u << 20);
         ++g.n_kv;
       },
       StatusCode::kCorrupt, "past the end"},
      {"string value length past end",
       [](RawGguf& g) { RawGguf::Pod<uint64_t>(g.Key("s", 8), ~uint64_t{0}); },
       StatusCode::kCorrupt, "past the end"},
      {"unknown value type", [](RawGguf& g) { RawGguf::Pod<uint32_t>(g.Key("x", 13), 0); },
       StatusCode::kCorrupt, "unknown value type 13"},
      {"array of unknown type",
       [](RawGguf& g) {
         auto& kv = g.Key("arr", 9);
         RawGguf::Pod<uint32_t>(kv, 99);
         RawGguf::Pod<uint64_t>(kv, 0);
       },
       StatusCode::kCorrupt, "unknown value type 99"},
      {"huge array count",
       [=](RawGguf& g) {
         auto& kv = g.Key("arr", 9);
         RawGguf::Pod<uint32_t>(kv, 8);
         RawGguf::Pod<uint64_t>(kv, kHuge);
       },
       StatusCode::kCorrupt, "cannot fit"},
      {"arrays nested too deep",
       [](RawGguf& g) {
         auto& kv = g.Key("deep", 9);
         for (int i = 0; i < 5; ++i) {
           RawGguf::Pod<uint32_t>(kv, 9);
           RawGguf::Pod<uint64_t>(kv, 1);
         }
         RawGguf::Pod<uint32_t>(kv, 0);
         RawGguf::Pod<uint64_t>(kv, 0);
       },
       StatusCode::kCorrupt, "nests arrays"},
      {"duplicate key", [](RawGguf& g) { g.KeyU32("llama.block_count", 2); }, StatusCode::kCorrupt,
       "duplicate"},
      {"alignment zero", [](RawGguf& g) { g.KeyU32("general.alignment", 0); }, StatusCode::kCorrupt,
       "general.alignment"},
      {"alignment not a power of two", [](RawGguf& g) { g.KeyU32("general.alignment", 48); },
       StatusCode::kCorrupt, "general.alignment"},
      {"alignment a string", [](RawGguf& g) { g.KeyString("general.alignment", "32"); },
       StatusCode::kCorrupt, "general.alignment"},
      {"zero dims", [](RawGguf& g) { g.Tensor("c", 0, {}, kF32, 64); }, StatusCode::kCorrupt,
       "dimensions"},
      {"five dims",
       [](RawGguf& g) {
         g.Tensor("c", {1, 1, 1, 1, 1}, kF32, 64);
       },
       StatusCode::kCorrupt, "dimensions"},
      {"negative dim",
       [](RawGguf& g) {
         g.Tensor("c", {8, ~uint64_t{0}}, kF32, 64);
       },
       StatusCode::kCorrupt, "negative"},
      {"element count overflow",
       [](RawGguf& g) {
         g.Tensor("c", {1ull << 32, 1ull << 32}, kF32, 64);
       },
       StatusCode::kCorrupt, "overflows"},
      {"byte size overflow",
       [](RawGguf& g) {
         g.Tensor("c", {1ull << 62, 2}, kF32, 64);
       },
       StatusCode::kCorrupt, "overflows"},
      {"row not a block multiple", [](RawGguf& g) { g.Tensor("c", {33}, kQ8_0, 64); },
       StatusCode::kCorrupt, "block size"},
      {"unknown small type id", [](RawGguf& g) { g.Tensor("c", {8}, 33, 64); },
       StatusCode::kUnsupported, "type id 33"},
      {"garbage type id", [](RawGguf& g) { g.Tensor("c", {8}, 100000, 64); }, StatusCode::kCorrupt,
       "type id 100000"},
      {"duplicate tensor name", [](RawGguf& g) { g.Tensor("a", {8}, kF32, 64); },
       StatusCode::kCorrupt, "duplicate tensor"},
      {"misaligned offset", [](RawGguf& g) { g.Tensor("c", {1}, kF32, 68); }, StatusCode::kCorrupt,
       "alignment"},
      {"offset past the end", [](RawGguf& g) { g.Tensor("c", {8}, kF32, 64); },
       StatusCode::kCorrupt, "outside"},
      {"offset plus size overflows",
       [](RawGguf& g) { g.Tensor("c", {8}, kF32, std::numeric_limits<uint64_t>::max() - 31); },
       StatusCode::kCorrupt, "outside"},
      {"overlapping tensors", [](RawGguf& g) { g.Tensor("c", {16}, kF32, 0); },
       StatusCode::kCorrupt, "overlaps"},
      {"data section truncated", [](RawGguf& g) { g.data.resize(40); }, StatusCode::kCorrupt,
       "outside"},
  };
}

TEST(GgufCorruption, BaseFileIsValid) {
  Result<GgufFile> f = GgufFile::FromBuffer(Base().Bytes(), kName);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->tensors().size(), 2u);
}

TEST(GgufCorruption, TableOfMalformedFiles) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    RawGguf g = Base();
    c.mutate(g);
    const Status s = ParseStatus(g.Bytes());
    ExpectErrorWithPath(s);
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
  }
}

// Controls for the table: the limits themselves are accepted.
TEST(GgufCorruption, AcceptsEdgeCasesThatAreValid) {
  RawGguf nested = Base();
  auto& kv = nested.Key("deep", 9);
  for (int i = 0; i < GgufFile::kMaxArrayDepth - 1; ++i) {
    RawGguf::Pod<uint32_t>(kv, 9);
    RawGguf::Pod<uint64_t>(kv, 1);
  }
  RawGguf::Pod<uint32_t>(kv, 0);
  RawGguf::Pod<uint64_t>(kv, 0);
  EXPECT_TRUE(ParseStatus(nested.Bytes()).ok());

  RawGguf unsupported_type = Base();  // q4_1 has no kernels, but the loader decides
  unsupported_type.Tensor("c", {32}, kQ4_1, 64);
  unsupported_type.data.resize(64 + 20);
  EXPECT_TRUE(ParseStatus(unsupported_type.Bytes()).ok());

  RawGguf aligned64;
  aligned64.KeyU32("general.alignment", 64);
  aligned64.alignment = 64;
  aligned64.Tensor("a", {8}, kF32, 0);
  aligned64.Tensor("b", {8}, kF32, 64);
  aligned64.data.assign(96, 0x22);
  Result<GgufFile> f = GgufFile::FromBuffer(aligned64.Bytes(), kName);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);

  RawGguf v2 = Base();
  v2.version = 2;
  EXPECT_TRUE(ParseStatus(v2.Bytes()).ok());
}

TEST(GgufCorruption, TinyInputs) {
  ExpectErrorWithPath(ParseStatus({}));
  ExpectErrorWithPath(ParseStatus({'G', 'G', 'U'}));
  ExpectErrorWithPath(ParseStatus({'G', 'G', 'U', 'F'}));
  ExpectErrorWithPath(ParseStatus({'G', 'G', 'U', 'F', 3, 0, 0, 0}));
}

// A writer-made file with every kind of field, sized so that the last tensor
// ends exactly at the end of the file: then every truncation loses data.
std::vector<uint8_t> WriterSample() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", 2);
  w.SetFloat32("llama.rope.freq_base", 10000.f);
  const std::vector<std::string> toks = {"<unk>", "<s>", "hello"};
  w.SetArray("tokenizer.ggml.tokens", GgufArray::OfStrings(std::span<const std::string>(toks)));
  const std::vector<int32_t> ints = {1, 2, 3};
  const std::vector<GgufArray> inner = {GgufArray::Of(std::span<const int32_t>(ints))};
  w.SetArray("nested", GgufArray::OfArrays(inner));
  const std::vector<uint8_t> f32(8 * 4, 1), q8(34, 2), last(64, 3);
  EXPECT_TRUE(w.AddTensor("f32", GgmlType::kF32, std::vector<int64_t>{8}, f32).ok());
  EXPECT_TRUE(w.AddTensor("q8", GgmlType::kQ8_0, std::vector<int64_t>{32}, q8).ok());
  EXPECT_TRUE(w.AddTensor("last", GgmlType::kF16, std::vector<int64_t>{32}, last).ok());
  return w.Serialize();
}

TEST(GgufCorruption, EveryTruncationFails) {
  const std::vector<uint8_t> full = WriterSample();
  ASSERT_TRUE(ParseStatus(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE(n);
    const Status s = ParseStatus(std::vector<uint8_t>(full.begin(), full.begin() + n));
    ExpectErrorWithPath(s);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.ToString();
  }
}

TEST(GgufCorruption, EveryHeaderByteFlippedIsHandled) {
  const std::vector<uint8_t> full = WriterSample();
  Result<GgufFile> base = GgufFile::FromBuffer(full, kName);
  ASSERT_TRUE(base.ok());
  const size_t header_end = base->data_offset();
  int failures = 0;
  for (size_t i = 0; i < header_end; ++i) {
    for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x80}}) {
      SCOPED_TRACE(::testing::Message() << "byte " << i << " ^ " << int{mask});
      std::vector<uint8_t> bytes = full;
      bytes[i] ^= mask;
      const Status s = ParseStatus(std::move(bytes));
      if (!s.ok()) {
        ExpectErrorWithPath(s);
        ++failures;
      }
      // Magic, version and any large change to the counts must be caught;
      // version 3^1 = 2 is valid, and a count one lower can still describe a
      // valid (smaller) file.
      const bool still_plausible = mask == 0x01 && (i == 4 || i == 8 || i == 16);
      if (i < 24 && !still_plausible) {
        EXPECT_FALSE(s.ok());
      }
    }
  }
  EXPECT_GT(failures, 0);
}

}  // namespace
}  // namespace valet
