// GgufWriter -> GgufFile round trips: every value type, nested arrays,
// tensors of several types, alignment, and the typed getters' errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "testing/gguf/gguf_writer.h"

namespace valet {
using namespace valet::testing;
namespace {

using namespace std::string_view_literals;

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

GgufFile MustParse(std::vector<uint8_t> bytes, const std::string& name = "mem.gguf") {
  Result<GgufFile> f = GgufFile::FromBuffer(std::move(bytes), name);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return std::move(f).value();
}

TEST(GgufRoundTrip, EveryScalarType) {
  GgufWriter w;
  w.SetUint8("u8", 250);
  w.SetInt8("i8", -128);
  w.SetUint16("u16", 65535);
  w.SetInt16("i16", -32768);
  w.SetUint32("u32", 4000000000u);
  w.SetInt32("i32", -2000000000);
  w.SetUint64("u64", std::numeric_limits<uint64_t>::max());
  w.SetInt64("i64", std::numeric_limits<int64_t>::min());
  w.SetFloat32("f32", 3.25f);
  w.SetFloat64("f64", 1e300);
  w.SetBool("yes", true);
  w.SetBool("no", false);
  w.SetString("s", "h\xC3\xA9llo");
  w.SetString("empty", "");
  w.SetString("nul", std::string_view("a\0b", 3));
  GgufFile f = MustParse(w.Serialize());

  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.metadata_count(), 15u);
  EXPECT_EQ(f.metadata()[0].key, "u8");
  EXPECT_EQ(f.metadata()[14].key, "nul");
  EXPECT_EQ(f.Find("u8")->type, GgufValueType::kUint8);
  EXPECT_EQ(f.Find("i8")->type, GgufValueType::kInt8);
  EXPECT_EQ(f.Find("u16")->type, GgufValueType::kUint16);
  EXPECT_EQ(f.Find("i16")->type, GgufValueType::kInt16);
  EXPECT_EQ(f.Find("u32")->type, GgufValueType::kUint32);
  EXPECT_EQ(f.Find("i32")->type, GgufValueType::kInt32);
  EXPECT_EQ(f.Find("u64")->type, GgufValueType::kUint64);
  EXPECT_EQ(f.Find("i64")->type, GgufValueType::kInt64);
  EXPECT_EQ(f.Find("f32")->type, GgufValueType::kFloat32);
  EXPECT_EQ(f.Find("f64")->type, GgufValueType::kFloat64);
  EXPECT_EQ(f.Find("yes")->type, GgufValueType::kBool);
  EXPECT_EQ(f.Find("s")->type, GgufValueType::kString);

  EXPECT_EQ(*f.GetUint("u8"), 250u);
  EXPECT_EQ(*f.GetInt("i8"), -128);
  EXPECT_EQ(*f.GetUint("u16"), 65535u);
  EXPECT_EQ(*f.GetInt("i16"), -32768);
  EXPECT_EQ(*f.GetUint("u32"), 4000000000u);
  EXPECT_EQ(*f.GetInt("i32"), -2000000000);
  EXPECT_EQ(*f.GetUint("u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*f.GetInt("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f.GetFloat("f32"), 3.25);
  EXPECT_EQ(*f.GetFloat("f64"), 1e300);
  EXPECT_EQ(*f.GetFloat("i32"), -2000000000.0);
  EXPECT_TRUE(*f.GetBool("yes"));
  EXPECT_FALSE(*f.GetBool("no"));
  EXPECT_EQ(*f.GetString("s"), "h\xC3\xA9llo");
  EXPECT_EQ(*f.GetString("empty"), "");
  EXPECT_EQ(*f.GetString("nul"), std::string_view("a\0b", 3));
  EXPECT_EQ(f.Find("missing"), nullptr);
  EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufRoundTrip, ScalarAndStringArrays) {
  const std::vector<uint8_t> u8 = {0, 1, 255};
  const std::vector<int8_t> i8 = {-128, 0, 127};
  const std::vector<uint16_t> u16 = {1, 65535};
  const std::vector<int16_t> i16 = {-32768, 32767};
  const std::vector<uint32_t> u32 = {7, 4000000000u};
  const std::vector<int32_t> i32 = {-5, 0, 5, std::numeric_limits<int32_t>::min()};
  const std::vector<uint64_t> u64 = {std::numeric_limits<uint64_t>::max()};
  const std::vector<int64_t> i64 = {-1, 1ll << 40};
  const std::vector<float> f32 = {0.5f, -1.25f, 1e-3f};
  const std::vector<double> f64 = {2.5, -1e200};
  const bool bools[] = {true, false, true};
  std::vector<std::string> strs;
  for (int i = 0; i < 32000; ++i) strs.push_back("tok" + std::to_string(i));
  strs[5] = "";

  GgufWriter w;
  w.SetArray("u8", GgufArray::Of(std::span<const uint8_t>(u8)));
  w.SetArray("i8", GgufArray::Of(std::span<const int8_t>(i8)));
  w.SetArray("u16", GgufArray::Of(std::span<const uint16_t>(u16)));
  w.SetArray("i16", GgufArray::Of(std::span<const int16_t>(i16)));
  w.SetArray("u32", GgufArray::Of(std::span<const uint32_t>(u32)));
  w.SetArray("i32", GgufArray::Of(std::span<const int32_t>(i32)));
  w.SetArray("u64", GgufArray::Of(std::span<const uint64_t>(u64)));
  w.SetArray("i64", GgufArray::Of(std::span<const int64_t>(i64)));
  w.SetArray("f32", GgufArray::Of(std::span<const float>(f32)));
  w.SetArray("f64", GgufArray::Of(std::span<const double>(f64)));
  w.SetArray("bools", GgufArray::OfBools(bools));
  w.SetArray("strs", GgufArray::OfStrings(std::span<const std::string>(strs)));
  w.SetArray("empty", GgufArray::Of(std::span<const float>()));
  GgufFile f = MustParse(w.Serialize());

  EXPECT_EQ(*f.GetIntArray("u8"), (std::vector<int32_t>{0, 1, 255}));
  EXPECT_EQ(*f.GetIntArray("i8"), (std::vector<int32_t>{-128, 0, 127}));
  EXPECT_EQ(*f.GetIntArray("u16"), (std::vector<int32_t>{1, 65535}));
  EXPECT_EQ(*f.GetIntArray("i16"), (std::vector<int32_t>{-32768, 32767}));
  EXPECT_EQ(*f.GetIntArray("i32"), i32);
  EXPECT_EQ(*f.GetIntArray("i8"), (std::vector<int32_t>{-128, 0, 127}));
  EXPECT_EQ(*f.GetFloatArray("f32"), f32);
  EXPECT_EQ(*f.GetFloatArray("f64"), (std::vector<float>{2.5f, -INFINITY}));
  EXPECT_EQ(*f.GetFloatArray("i32"), (std::vector<float>{-5.f, 0.f, 5.f, -2147483648.f}));
  EXPECT_TRUE(f.GetFloatArray("empty")->empty());

  const GgufValue* u64v = f.Find("u64");
  ASSERT_NE(u64v, nullptr);
  EXPECT_EQ(u64v->elem_type, GgufValueType::kUint64);
  EXPECT_EQ(*u64v->Element(0).AsUint(), std::numeric_limits<uint64_t>::max());
  const GgufValue* i64v = f.Find("i64");
  EXPECT_EQ(*i64v->Element(0).AsInt(), -1);
  EXPECT_EQ(*i64v->Element(1).AsInt(), 1ll << 40);
  const GgufValue* u32v = f.Find("u32");
  EXPECT_EQ(*u32v->Element(1).AsUint(), 4000000000u);
  const GgufValue* bv = f.Find("bools");
  ASSERT_EQ(bv->count, 3u);
  EXPECT_EQ(bv->Element(0).scalar_bits, 1u);
  EXPECT_EQ(bv->Element(1).scalar_bits, 0u);

  Result<std::vector<std::string_view>> s = f.GetStringArray("strs");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), 32000u);
  for (size_t i = 0; i < strs.size(); ++i) ASSERT_EQ((*s)[i], strs[i]);

  // Out of int32 range and the wrong element type are errors, not wraps.
  EXPECT_EQ(f.GetIntArray("u32").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetIntArray("u64").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetIntArray("f32").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetStringArray("i32").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetFloatArray("strs").status().code(), StatusCode::kCorrupt);
}

GgufArray IntArray(std::vector<int32_t> v) { return GgufArray::Of(std::span<const int32_t>(v)); }

TEST(GgufRoundTrip, NestedArrays) {
  const std::vector<std::string> words = {"a", "bc"};
  const std::vector<GgufArray> inner = {
      IntArray({1, 2, 3}), GgufArray::OfStrings(std::span<const std::string>(words)), IntArray({})};
  const std::vector<GgufArray> deeper = {GgufArray::OfArrays(inner), IntArray({9})};
  const std::vector<GgufArray> depth4 = {GgufArray::OfArrays(deeper)};
  GgufWriter w;
  w.SetArray("nested", GgufArray::OfArrays(inner));
  w.SetArray("deep", GgufArray::OfArrays(depth4));
  GgufFile f = MustParse(w.Serialize());

  const GgufValue* n = f.Find("nested");
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->elem_type, GgufValueType::kArray);
  ASSERT_EQ(n->count, 3u);
  ASSERT_EQ(n->items.size(), 3u);
  EXPECT_EQ(n->items[0].elem_type, GgufValueType::kInt32);
  EXPECT_EQ(n->items[0].count, 3u);
  EXPECT_EQ(*n->items[0].Element(2).AsInt(), 3);
  EXPECT_EQ(n->items[1].elem_type, GgufValueType::kString);
  EXPECT_EQ(n->items[1].strings[1], "bc");
  EXPECT_EQ(n->items[2].count, 0u);
  EXPECT_EQ(GgufFile::ValueToString(*n), "[[1, 2, 3], [\"a\", \"bc\"], []]");

  const GgufValue* d = f.Find("deep");
  ASSERT_EQ(d->items.size(), 1u);
  ASSERT_EQ(d->items[0].items.size(), 2u);
  EXPECT_EQ(d->items[0].items[0].items[1].strings[0], "a");
  EXPECT_EQ(*d->items[0].items[1].Element(0).AsInt(), 9);
  EXPECT_EQ(f.GetStringArray("nested").status().code(), StatusCode::kCorrupt);
}

struct TensorCase {
  const char* name;
  GgmlType type;
  std::vector<int64_t> ne;
  size_t nbytes;  // from the published block layouts, not from the traits table
};

TEST(GgufRoundTrip, TensorsOfSeveralTypesAreAligned) {
  const std::vector<TensorCase> cases = {
      {"f32", GgmlType::kF32, {3, 2}, 3 * 2 * 4},
      {"f16", GgmlType::kF16, {5}, 10},
      {"q8_0", GgmlType::kQ8_0, {64, 2}, 4 * 34},
      {"q4_0", GgmlType::kQ4_0, {32, 1, 3}, 3 * 18},
      {"q4_k", GgmlType::kQ4_K, {256, 2}, 2 * 144},
      {"q6_k", GgmlType::kQ6_K, {256, 1, 1, 2}, 2 * 210},
      {"bf16", GgmlType::kBF16, {7}, 14},
  };
  for (uint32_t alignment : {32u, 64u, 1u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w;
    ASSERT_TRUE(w.SetAlignment(alignment).ok());
    w.SetString("general.architecture", "test");
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t i = 0; i < cases.size(); ++i) {
      payloads.push_back(Pattern(cases[i].nbytes, static_cast<uint8_t>(i)));
      ASSERT_TRUE(w.AddTensor(cases[i].name, cases[i].type, cases[i].ne, payloads.back()).ok());
    }
    std::vector<uint8_t> bytes = w.Serialize();
    GgufFile f = MustParse(bytes);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(*f.GetUint("general.alignment"), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      const GgufTensorInfo& t = f.tensors()[i];
      EXPECT_EQ(t.name, cases[i].name);
      EXPECT_EQ(t.type, cases[i].type);
      EXPECT_EQ(t.n_dims, static_cast<int>(cases[i].ne.size()));
      for (int d = 0; d < 4; ++d) {
        const int64_t want = d < static_cast<int>(cases[i].ne.size()) ? cases[i].ne[d] : 1;
        EXPECT_EQ(t.ne[d], want) << t.name << " dim " << d;
      }
      EXPECT_EQ(t.nbytes, cases[i].nbytes);
      EXPECT_EQ(t.offset % alignment, 0u);
      // The bytes sit where the header says, in the file image.
      const size_t at = f.data_offset() + t.offset;
      ASSERT_LE(at + t.nbytes, bytes.size());
      EXPECT_EQ(0, std::memcmp(bytes.data() + at, payloads[i].data(), t.nbytes));
      EXPECT_EQ(0, std::memcmp(t.data, payloads[i].data(), t.nbytes));
      EXPECT_EQ(f.FindTensor(cases[i].name), &t);
    }
    EXPECT_EQ(f.FindTensor("nope"), nullptr);
  }
}

TEST(GgufRoundTrip, WriteFileThenOpenViaMmap) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", 2);
  const std::vector<uint8_t> payload = Pattern(34 * 2, 3);
  ASSERT_TRUE(w.AddTensor("w", GgmlType::kQ8_0, std::vector<int64_t>{32, 2}, payload).ok());
  const std::string path = ::testing::TempDir() + "gguf_rt_" + std::to_string(getpid()) + ".gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  Result<GgufFile> opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  // Moving the file object keeps tensor pointers valid (the mapping moves along).
  GgufFile f = std::move(opened).value();
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.file_size(), w.Serialize().size());
  ASSERT_NE(f.FindTensor("w"), nullptr);
  EXPECT_EQ(0, std::memcmp(f.FindTensor("w")->data, payload.data(), payload.size()));
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, DuplicateKeyReplacesInPlace) {
  GgufWriter w;
  w.SetUint32("a", 1);
  w.SetString("b", "x");
  w.SetString("a", "now a string");
  ASSERT_EQ(w.metadata_count(), 2u);
  GgufFile f = MustParse(w.Serialize());
  EXPECT_EQ(f.metadata()[0].key, "a");
  EXPECT_EQ(*f.GetString("a"), "now a string");
}

TEST(GgufWriterTest, RejectsBadTensorsAndAlignment) {
  GgufWriter w;
  const std::vector<uint8_t> b16 = Pattern(16, 0);
  EXPECT_EQ(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{3}, b16).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.AddTensor("a", GgmlType::kQ8_0, std::vector<int64_t>{16}, b16).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{}, b16).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{1, 1, 1, 1, 4}, b16).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{-4, -1}, b16).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{4}, b16).ok());
  EXPECT_EQ(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{2, 2}, b16).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w.SetAlignment(0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.SetAlignment(48).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.tensor_count(), 1u);
}

TEST(GgufGetters, ErrorsNameFileAndKey) {
  GgufWriter w;
  w.SetInt32("neg", -3);
  w.SetString("str", "x");
  w.SetUint64("big", std::numeric_limits<uint64_t>::max());
  GgufFile f = MustParse(w.Serialize(), "/models/some.gguf");

  Status s = f.GetUint("absent.key").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/models/some.gguf"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("absent.key"), std::string::npos) << s.message();

  s = f.GetUint("str").status();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("/models/some.gguf"), std::string::npos);
  EXPECT_NE(s.message().find("'str'"), std::string::npos) << s.message();

  EXPECT_EQ(f.GetUint("neg").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(*f.GetInt("neg"), -3);
  EXPECT_EQ(f.GetInt("big").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetString("neg").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetBool("neg").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetFloat("str").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetStringArray("str").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(f.GetStringArray("absent").status().code(), StatusCode::kNotFound);
}

TEST(GgufValueToString, RendersAndAbbreviates) {
  std::vector<int32_t> v(20);
  std::iota(v.begin(), v.end(), 0);
  GgufWriter w;
  w.SetArray("a", IntArray(v));
  w.SetString("s", "say \"hi\"\n");
  w.SetFloat32("f", 0.5f);
  w.SetInt8("i", -7);
  w.SetBool("b", true);
  GgufFile f = MustParse(w.Serialize());
  EXPECT_EQ(GgufFile::ValueToString(*f.Find("a"), 3), "[0, 1, 2, ... (20 total)]");
  EXPECT_EQ(GgufFile::ValueToString(*f.Find("s")), "\"say \\\"hi\\\"\\n\"");
  EXPECT_EQ(GgufFile::ValueToString(*f.Find("f")), "0.5");
  EXPECT_EQ(GgufFile::ValueToString(*f.Find("i")), "-7");
  EXPECT_EQ(GgufFile::ValueToString(*f.Find("b")), "true");
}

}  // namespace
}  // namespace valet
