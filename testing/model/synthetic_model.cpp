#include "testing/model/synthetic_model.h"

#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/kernel_table.h"
#include "model/arch.h"

namespace valet::testing {
namespace {

// ---------------------------------------------------------------------------
// Presets: the one table to edit when tuning the models' sizes.

struct PresetInfo {
  SynthPreset preset;
  const char* name;
  SynthShape shape;
};

// bench: sized so that the idle prefill of a 40-token prompt takes roughly
// 100-200 ms on the project's 2-core reference machine.
// clang-format off
constexpr PresetInfo kPresets[] = {
    // shape: {n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx, head_dim, n_swa}
    {SynthPreset::kTiny,     "tiny",     {128,     4,    4,    2,   384,   512,  512, 0, 16}},
    {SynthPreset::kBench,    "bench",    {1024,    8,   16,    4,  2816,  4096, 2048}},
    {SynthPreset::k3bShape,  "3b-shape", {3072,   28,   24,    8,  8192,  4096, 4096}},
};
// clang-format on

struct TypeInfo {
  GgmlType type;
  const char* name;
  uint32_t file_type;  // general.file_type as llama.cpp numbers its ftypes
};

// q4_k files have every matrix in Q4_K and output.weight in Q6_K, which is
// llama.cpp's "Q4_K - Small" (14) apart from its few Q5_K layers. The other
// K types are likewise their "Small" ftype, every matrix in the one type.
constexpr TypeInfo kTypes[] = {
    {GgmlType::kF32, "f32", 0},      {GgmlType::kF16, "f16", 1},      {GgmlType::kQ8_0, "q8_0", 7},
    {GgmlType::kQ4_0, "q4_0", 2},    {GgmlType::kQ4_K, "q4_k", 14},   {GgmlType::kQ4_1, "q4_1", 3},
    {GgmlType::kQ5_0, "q5_0", 8},    {GgmlType::kQ5_1, "q5_1", 9},    {GgmlType::kQ2_K, "q2_k", 10},
    {GgmlType::kQ3_K, "q3_k", 11},   {GgmlType::kQ5_K, "q5_k", 16},   {GgmlType::kIQ4_NL, "iq4_nl", 25},
    {GgmlType::kIQ4_XS, "iq4_xs", 30},
};

const TypeInfo* FindType(GgmlType type) {
  for (const TypeInfo& t : kTypes) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

constexpr float kRopeBase = 10000.0f;
constexpr float kRopeBaseGlobal = 1e6f;  // full-attention layers of windowed families
constexpr float kRopeScaling = 8.0f;
constexpr float kRmsEps = 1e-5f;
constexpr uint32_t kAlignment = 32;
// Specials, 256 byte tokens, "▁" and the 94 printable ASCII characters, plus room for words.
constexpr int32_t kMinVocab = 384;
// The filler pieces run out a little above 20,000 tokens.
constexpr int32_t kMaxVocab = 16384;

// ---------------------------------------------------------------------------
// Deterministic random numbers: splitmix64, one independent stream per
// (seed, tensor, row), so the bytes do not depend on how rows are split
// across threads.

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t HashName(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

class RowRng {
 public:
  RowRng(uint64_t seed, uint64_t tensor_hash, int64_t row)
      : state_(Mix64(Mix64(seed ^ tensor_hash) + static_cast<uint64_t>(row))) {}

  // Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall),
  // recentred and scaled to unit variance. Bounded at +-3.46, which is harmless.
  float Normal() {
    state_ += 0x9E3779B97F4A7C15ull;
    const uint64_t r = Mix64(state_);
    const uint32_t sum = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
    constexpr float kScale = 1.7320508f / 65536.0f;  // sqrt(12 / 4) per unit uniform
    return (static_cast<float>(sum) - 2.0f * 65535.0f) * kScale;
  }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------
// Vocabulary: byte-fallback SentencePiece. Every piece's prefixes (at UTF-8
// boundaries) come before it, so SPM's pairwise merging can always grow a
// word from its characters: the first symbol of a word is a prefix and
// joining it to the next one gives a longer prefix, so a word in the
// vocabulary always ends up as one token.

// Common English words, roughly by frequency; the first ones win in small vocabularies.
constexpr std::string_view kWords =
    R"(the of and to a in is it you that The he was for on are with as I his they be at one
have this from or had by not but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them would
like so these her long make thing see him two has look more day could go come did
no most people my over know water than call first who may down side been now find any
new work part take get place made live where after back little only man year came show
every good me give our under name very through just form great think say help line turn
much mean before move right boy old too same tell does set three want air well also play
small end put home read hand large even land here must big high such follow act why ask
men change went light kind off need house try us again animal point mother world near
build self earth father head stand own page should country found answer school grow study
still learn plant food sun four between state keep eye never last let thought city tree
cross farm hard start might story saw far sea draw left late run don't while press close
night real life few north open seem together next white children begin got walk example
paper group always music those both mark often letter until river car feet care second
book carry took science eat room friend began idea fish mountain stop once base hear horse
cut sure watch color face wood main enough girl young ready above ever red list though
feel talk bird soon body dog family leave song door black short class wind question
happen complete ship area half rock order fire south problem piece told knew pass since
top whole king space heard best hour better true during hundred five remember step early
hold west ground interest reach fast sing listen six table travel less morning ten simple
several toward war lay against slow center love person money serve appear road map rain
rule pull cold notice voice power town fine certain fly fall lead cry dark machine note
wait plan figure star box field rest correct able done beauty drive stood front teach
week final gave green oh quick ocean warm free minute strong special mind behind clear
tail fact street nothing course stay wheel full force blue object decide deep moon island
foot system busy test record boat common gold possible dry wonder laugh thousand ago ran
check game shape hot miss brought heat snow bring yes fill east paint language among ball
yet wave drop heart am present heavy dance arm wide size speak weight general ice matter
circle pair include felt perhaps pick sudden count square reason length art subject
energy hunt bed brother egg ride cell believe forest sit race window store summer train
sleep prove leg wall catch wish sky board joy winter sat written wild kept glass grass
cow job edge sign visit past soft fun bright weather month million bear finish happy hope
flower strange gone jump baby eight village meet root buy raise metal whether push seven
third shall held hair cook floor either result burn hill safe cat century consider type
law bit coast copy silent tall sand soil roll finger value fight lie beat natural view
sense ear else quite broke case middle kill son lake moment loud spring child straight
nation milk speed method pay age section dress cloud surprise quiet stone tiny climb cool
poor lot bottom key iron single stick flat twenty skin smile hole trade trip office
receive row mouth exact die least trouble shout except wrote seed join suggest clean
break lady yard rise bad blow oil blood touch grew mix team cost lost brown wear garden
equal sent choose fell fit flow fair bank save control gentle woman captain practice
doctor please protect whose ring caught period radio spoke human history effect expect
modern hit student corner party supply bone imagine provide agree thus chair danger fruit
rich thick soldier guess sharp wing create wash rather crowd compare poem bell depend
meat famous fear sight thin planet hurry chief clock tie enter major fresh search send
yellow allow print dead spot suit current lift rose continue block hat sell success
company event deal swim wife shoe spread camp born nine truck noise level chance gather
shop throw shine wrong gray repeat require prepare salt nose anger claim sugar death
pretty skill women season silver thank branch afraid huge sister steel forward similar
guide experience apple bought coat card band win dream evening condition feed tool total
smell valley seat arrive master track parent shore sheet favor spend glad share station
dad bread charge offer market dear enemy reply drink support speech nature path meant
teeth shell neck into because its being around something going really things used
however another without also want made)";

// Sub-words that let unknown words split into a stem and an ending.
constexpr std::string_view kSuffixes =
    "s ed ing er ly es 's n't 'll 're 've 'm 'd est en al ion tion ness ment ful less able ity ous "
    "ive "
    "ers ings y ies ied ish ward";

std::vector<std::string> SplitWords(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
    if (j > i) out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// llama.cpp's token types (as in tokenizer.ggml.token_type).
enum : int32_t { kNormalToken = 1, kUnknownToken = 2, kControlToken = 3, kByteToken = 6 };

struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

class VocabBuilder {
 public:
  explicit VocabBuilder(size_t capacity) : capacity_(capacity) {}

  bool full() const { return vocab_.tokens.size() >= capacity_; }

  void AddSpecial(std::string text, int32_t type) {
    if (full() || !seen_.insert(text).second) return;
    vocab_.tokens.push_back(std::move(text));
    vocab_.scores.push_back(0.0f);
    vocab_.types.push_back(type);
  }

  // Adds `piece` after whichever of its prefixes are missing; earlier pieces
  // score higher, so SPM prefers them when merging.
  void AddPiece(std::string_view piece) {
    for (size_t k = 1; k <= piece.size(); ++k) {
      const bool boundary =
          k == piece.size() || (static_cast<unsigned char>(piece[k]) & 0xC0) != 0x80;
      if (boundary) AddNormal(std::string(piece.substr(0, k)));
    }
  }

  SynthVocab Take() { return std::move(vocab_); }

 private:
  void AddNormal(std::string text) {
    if (full() || !seen_.insert(text).second) return;
    vocab_.tokens.push_back(std::move(text));
    vocab_.scores.push_back(-static_cast<float>(n_normal_++));
    vocab_.types.push_back(kNormalToken);
  }

  size_t capacity_;
  SynthVocab vocab_;
  std::unordered_set<std::string> seen_;
  int32_t n_normal_ = 0;
};

std::string Capitalized(std::string w) {
  if (!w.empty() && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 'a' + 'A');
  return w;
}

// Letter pairs and triples: filler that keeps any vocabulary size exact.
void AddFiller(VocabBuilder& b) {
  for (char x = 'a'; x <= 'z' && !b.full(); ++x) {
    for (char y = 'a'; y <= 'z'; ++y) {
      b.AddPiece(std::string(kSpace) + x + y);
      b.AddPiece(std::string{x, y});
    }
  }
  for (char x = 'a'; x <= 'z' && !b.full(); ++x) {
    for (char y = 'a'; y <= 'z' && !b.full(); ++y) {
      for (char z = 'a'; z <= 'z'; ++z) b.AddPiece(std::string{x, y, z});
    }
  }
}

SynthVocab BuildVocabulary(int32_t n_vocab) {
  VocabBuilder b(static_cast<size_t>(n_vocab));
  b.AddSpecial("<unk>", kUnknownToken);
  b.AddSpecial("<s>", kControlToken);
  b.AddSpecial("</s>", kControlToken);
  for (int byte = 0; byte < 256; ++byte) {
    char text[8];
    std::snprintf(text, sizeof(text), "<0x%02X>", byte);
    b.AddSpecial(text, kByteToken);
  }
  b.AddPiece(kSpace);
  for (char c = '!'; c <= '~'; ++c) b.AddPiece(std::string(1, c));
  const std::vector<std::string> words = SplitWords(kWords);
  for (const std::string& w : words) b.AddPiece(std::string(kSpace) + w);
  for (const std::string& s : SplitWords(kSuffixes)) b.AddPiece(s);
  for (const std::string& w : words) b.AddPiece(std::string(kSpace) + Capitalized(w));
  for (const std::string& w : words) b.AddPiece(w);
  AddFiller(b);
  return b.Take();
}

// ---------------------------------------------------------------------------
// The tensor plan: names, shapes, types and how to fill each one.

struct TensorSpec {
  std::string name;
  GgmlType type = GgmlType::kF32;
  int n_dims = 2;
  int64_t ne[2] = {1, 1};  // {row length, rows}
  float mean = 0.0f;
  float stddev = 1.0f;

  int64_t rows() const { return n_dims == 1 ? 1 : ne[1]; }
  size_t row_bytes() const { return GgmlRowSize(type, ne[0]); }
  size_t nbytes() const { return row_bytes() * static_cast<size_t>(rows()); }
};

struct ModelPlan {
  std::string name;  // general.name
  std::shared_ptr<const GgufFile> vocab;  // SynthModelOptions::vocab_path, opened
  const ArchSpec* arch = nullptr;
  SynthShape shape;
  const TypeInfo* type = nullptr;
  uint64_t seed = 0;
  std::vector<TensorSpec> tensors;
};

// Scale of each matrix: ~1/sqrt(n_in) keeps every projection's output near
// unit RMS, so activations stay well-conditioned through the layers; the
// larger output gain gives logits a standard deviation of about 3. Embedding
// rows have unit RMS, like one layer's contribution to the residual stream.
constexpr float kEmbeddingStd = 1.0f;
constexpr float kOutputGain = 3.0f;
constexpr float kNormJitter = 0.1f;

TensorSpec Norm(std::string name, int64_t n) {
  TensorSpec t{std::move(name), GgmlType::kF32, 1, {n, 1}, 1.0f, kNormJitter};
  return t;
}

// Small biases, as trained Q/K/V biases are next to the projections' unit outputs.
TensorSpec Bias(std::string name, int64_t n) {
  TensorSpec t{std::move(name), GgmlType::kF32, 1, {n, 1}, 0.0f, kNormJitter};
  return t;
}

TensorSpec Matrix(std::string name, GgmlType file_type, int64_t n_in, int64_t n_out, float gain,
                  bool is_output = false) {
  const float stddev = gain / std::sqrt(static_cast<float>(n_in));
  TensorSpec t{std::move(name), SynthMatrixType(file_type, is_output, n_in), 2, {n_in, n_out}, 0.0f,
               stddev};
  return t;
}

TensorSpec Embedding(GgmlType file_type, int64_t n_embd, int64_t n_vocab) {
  TensorSpec t = Matrix("token_embd.weight", file_type, n_embd, n_vocab, 1.0f);
  t.stddev = kEmbeddingStd;
  return t;
}

// A vocabulary from a file may have any size; the built-in one has bounds.
Status ValidateShape(const SynthShape& s, bool vocab_from_file) {
  const bool positive =
      s.n_embd > 0 && s.n_layer > 0 && s.n_head > 0 && s.n_head_kv > 0 && s.n_ff > 0 && s.n_ctx > 0;
  if (!positive) return InvalidArgument("synthetic model: every dimension must be positive");
  if ((s.head_dim == 0 && s.n_embd % s.n_head != 0) || s.n_head % s.n_head_kv != 0 ||
      s.HeadDim() % 2 != 0 || s.head_dim < 0) {
    return InvalidArgument(
        "synthetic model: the head size must be even (n_embd / n_head unless given) and n_head "
        "must split into groups of KV heads");
  }
  if (s.n_embd % 32 != 0 || s.n_ff % 32 != 0 || s.HeadDim() * s.n_head % 32 != 0) {
    return InvalidArgument(
        "synthetic model: n_embd and n_ff must be multiples of 32 (the quant block)");
  }
  if (!vocab_from_file && (s.n_vocab < kMinVocab || s.n_vocab > kMaxVocab)) {
    return InvalidArgument("synthetic model: n_vocab must be between " + std::to_string(kMinVocab) +
                           " and " + std::to_string(kMaxVocab));
  }
  return Status::Ok();
}

// One decoder layer's tensors as the architecture stores them.
void AddLayer(ModelPlan& plan, GgmlType t, const std::string& b) {
  const SynthShape& s = plan.shape;
  const ArchSpec& arch = *plan.arch;
  const int64_t q_dim = int64_t{s.HeadDim()} * s.n_head;
  const int64_t kv_dim = int64_t{s.HeadDim()} * s.n_head_kv;
  std::vector<TensorSpec>& v = plan.tensors;
  v.push_back(Norm(b + "attn_norm.weight", s.n_embd));
  if (arch.qkv == TensorLayout::kFused) {
    v.push_back(Matrix(b + "attn_qkv.weight", t, s.n_embd, q_dim + 2 * kv_dim, 1.0f));
  } else {
    v.push_back(Matrix(b + "attn_q.weight", t, s.n_embd, q_dim, 1.0f));
    v.push_back(Matrix(b + "attn_k.weight", t, s.n_embd, kv_dim, 1.0f));
    v.push_back(Matrix(b + "attn_v.weight", t, s.n_embd, kv_dim, 1.0f));
  }
  if (arch.qkv_bias) {
    v.push_back(Bias(b + "attn_q.bias", q_dim));
    v.push_back(Bias(b + "attn_k.bias", kv_dim));
    v.push_back(Bias(b + "attn_v.bias", kv_dim));
  }
  if (arch.qk_norm) {
    v.push_back(Norm(b + "attn_q_norm.weight", s.HeadDim()));
    v.push_back(Norm(b + "attn_k_norm.weight", s.HeadDim()));
  }
  v.push_back(Matrix(b + "attn_output.weight", t, q_dim, s.n_embd, 1.0f));
  if (arch.post_norms) v.push_back(Norm(b + "post_attention_norm.weight", s.n_embd));
  v.push_back(Norm(b + "ffn_norm.weight", s.n_embd));
  if (arch.gate_up == TensorLayout::kFused) {
    v.push_back(Matrix(b + "ffn_up.weight", t, s.n_embd, 2 * int64_t{s.n_ff}, 1.0f));
  } else {
    v.push_back(Matrix(b + "ffn_gate.weight", t, s.n_embd, s.n_ff, 1.0f));
    v.push_back(Matrix(b + "ffn_up.weight", t, s.n_embd, s.n_ff, 1.0f));
  }
  v.push_back(Matrix(b + "ffn_down.weight", t, s.n_ff, s.n_embd, 1.0f));
  if (arch.post_norms) v.push_back(Norm(b + "post_ffw_norm.weight", s.n_embd));
}

Result<ModelPlan> MakePlan(const SynthModelOptions& options) {
  ModelPlan plan;
  plan.type = FindType(options.type);
  if (plan.type == nullptr) {
    return InvalidArgument(std::string("synthetic model: unsupported type ") +
                           GgmlTypeName(options.type) +
                           " (use f32, f16, q8_0, q4_*, q5_*, q2_k, q3_k, iq4_nl or iq4_xs)");
  }
  plan.shape = options.shape ? *options.shape : SynthPresetShape(options.preset);
  if (!options.vocab_path.empty()) {
    VALET_ASSIGN_OR_RETURN(GgufFile vocab, GgufFile::Open(options.vocab_path));
    const GgufValue* tokens = vocab.Find("tokenizer.ggml.tokens");
    if (tokens == nullptr || tokens->elem_type != GgufValueType::kString || tokens->count == 0 ||
        tokens->count > static_cast<uint64_t>(INT32_MAX)) {
      return InvalidArgument("synthetic model: " + options.vocab_path + " has no tokenizer.ggml.tokens strings");
    }
    plan.shape.n_vocab = static_cast<int32_t>(tokens->count);
    plan.vocab = std::make_shared<const GgufFile>(std::move(vocab));
  }
  VALET_RETURN_IF_ERROR(ValidateShape(plan.shape, plan.vocab != nullptr));
  plan.name =
      std::string("valet-synth-") + (options.shape ? "custom" : SynthPresetName(options.preset));
  plan.seed = options.seed;

  plan.arch = FindArch(options.arch);
  if (plan.arch == nullptr) {
    return InvalidArgument("synthetic model: unknown architecture '" + options.arch +
                           "' (use llama, qwen2, qwen3, phi3, gemma2 or gemma3)");
  }
  if (const int32_t period = plan.arch->swa_period; period > 0) {
    plan.shape.n_layer = (plan.shape.n_layer + period - 1) / period * period;
  }
  std::vector<TensorSpec>& v = plan.tensors;
  v.push_back(Embedding(options.type, plan.shape.n_embd, plan.shape.n_vocab));
  for (int32_t i = 0; i < plan.shape.n_layer; ++i) {
    AddLayer(plan, options.type, "blk." + std::to_string(i) + ".");
  }
  v.push_back(Norm("output_norm.weight", plan.shape.n_embd));
  if (plan.arch->swa_period == 0) {
    v.push_back(Matrix("output.weight", options.type, plan.shape.n_embd, plan.shape.n_vocab, kOutputGain,
                       /*is_output=*/true));
  }
  return plan;
}

// ---------------------------------------------------------------------------
// Materialising tensors and metadata.

// Fills the tensor row by row: random floats, then the scalar reference
// quantizer (portable, so the bytes are the same on every CPU).
std::vector<uint8_t> Materialize(const TensorSpec& spec, uint64_t seed, ThreadPool& pool) {
  std::vector<uint8_t> bytes(spec.nbytes());
  const from_float_fn quantize = ScalarKernels()[spec.type].from_float;
  const uint64_t tensor_hash = HashName(spec.name);
  pool.Run([&](int ith, int nth) {
    const Range r = SplitRange(spec.rows(), ith, nth);
    std::vector<float> row(static_cast<size_t>(spec.ne[0]));
    for (int64_t i = r.begin; i < r.end; ++i) {
      RowRng rng(seed, tensor_hash, i);
      for (float& x : row) x = spec.mean + spec.stddev * rng.Normal();
      quantize(row.data(), bytes.data() + static_cast<size_t>(i) * spec.row_bytes(), spec.ne[0]);
    }
  });
  return bytes;
}

template <typename T>
GgufArray PackedArray(const GgufValue& v) {
  std::vector<T> items(static_cast<size_t>(v.count));
  std::memcpy(items.data(), v.raw, items.size() * sizeof(T));  // little-endian, possibly unaligned in the file
  return GgufArray::Of(std::span<const T>(items));
}

// One metadata value of another file, re-encoded: the scalar and array types
// vocabularies use (strings, 32-bit numbers, bools); anything else is skipped.
void CopyValue(const std::string& key, const GgufValue& v, GgufWriter& w) {
  switch (v.type) {
    case GgufValueType::kString: return w.SetString(key, v.str);
    case GgufValueType::kUint32: return w.SetUint32(key, static_cast<uint32_t>(*v.AsUint()));
    case GgufValueType::kInt32: return w.SetInt32(key, static_cast<int32_t>(*v.AsInt()));
    case GgufValueType::kFloat32: return w.SetFloat32(key, static_cast<float>(*v.AsDouble()));
    case GgufValueType::kBool: return w.SetBool(key, v.scalar_bits != 0);
    case GgufValueType::kArray:
      switch (v.elem_type) {
        case GgufValueType::kString: return w.SetArray(key, GgufArray::OfStrings(std::span(v.strings)));
        case GgufValueType::kFloat32: return w.SetArray(key, PackedArray<float>(v));
        case GgufValueType::kInt32: return w.SetArray(key, PackedArray<int32_t>(v));
        case GgufValueType::kUint32: return w.SetArray(key, PackedArray<uint32_t>(v));
        default: return;
      }
    default: return;
  }
}

// All metadata. general.alignment comes first so that WriteStreaming can
// locate the end of the key-value section (see there).
GgufWriter MetadataWriter(const ModelPlan& plan) {
  GgufWriter w;
  Status s = w.SetAlignment(kAlignment);
  assert(s.ok());
  (void)s;
  const SynthShape& sh = plan.shape;
  const std::string a(plan.arch->name);
  w.SetString("general.architecture", a);
  w.SetString("general.name", plan.name);
  w.SetUint32("general.file_type", plan.type->file_type);
  w.SetUint32("general.quantization_version", 2);
  w.SetUint32(a + ".context_length", static_cast<uint32_t>(sh.n_ctx));
  w.SetUint32(a + ".embedding_length", static_cast<uint32_t>(sh.n_embd));
  w.SetUint32(a + ".block_count", static_cast<uint32_t>(sh.n_layer));
  w.SetUint32(a + ".feed_forward_length", static_cast<uint32_t>(sh.n_ff));
  w.SetUint32(a + ".attention.head_count", static_cast<uint32_t>(sh.n_head));
  w.SetUint32(a + ".attention.head_count_kv", static_cast<uint32_t>(sh.n_head_kv));
  if (sh.head_dim != 0) {
    w.SetUint32(a + ".attention.key_length", static_cast<uint32_t>(sh.head_dim));
    w.SetUint32(a + ".attention.value_length", static_cast<uint32_t>(sh.head_dim));
  }
  const ArchSpec& arch = *plan.arch;
  if (arch.swa_rope_base > 0.0f) {  // windowed layers with their own RoPE: the global ones scaled
    w.SetFloat32(a + ".rope.freq_base", kRopeBaseGlobal);
    w.SetString(a + ".rope.scaling.type", "linear");
    w.SetFloat32(a + ".rope.scaling.factor", kRopeScaling);
  } else {
    w.SetFloat32(a + ".rope.freq_base", kRopeBase);
  }
  if (arch.swa_period > 0) w.SetUint32(a + ".attention.sliding_window", static_cast<uint32_t>(sh.Window()));
  if (arch.attn_softcap > 0.0f) w.SetFloat32(a + ".attn_logit_softcapping", arch.attn_softcap);
  if (arch.final_softcap > 0.0f) w.SetFloat32(a + ".final_logit_softcapping", arch.final_softcap);
  w.SetUint32(a + ".rope.dimension_count", static_cast<uint32_t>(sh.HeadDim()));
  w.SetFloat32(a + ".attention.layer_norm_rms_epsilon", kRmsEps);
  w.SetUint32(a + ".vocab_size", static_cast<uint32_t>(sh.n_vocab));

  if (plan.vocab != nullptr) {
    for (const GgufKeyValue& kv : plan.vocab->metadata()) {
      if (kv.key.starts_with("tokenizer.")) CopyValue(std::string(kv.key), kv.value, w);
    }
    return w;
  }
  const SynthVocab vocab = BuildVocabulary(sh.n_vocab);
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetArray("tokenizer.ggml.tokens",
             GgufArray::OfStrings(std::span<const std::string>(vocab.tokens)));
  w.SetArray("tokenizer.ggml.scores", GgufArray::Of(std::span<const float>(vocab.scores)));
  w.SetArray("tokenizer.ggml.token_type", GgufArray::Of(std::span<const int32_t>(vocab.types)));
  w.SetUint32("tokenizer.ggml.bos_token_id", 1);
  w.SetUint32("tokenizer.ggml.eos_token_id", 2);
  w.SetUint32("tokenizer.ggml.unknown_token_id", 0);
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  w.SetBool("tokenizer.ggml.add_eos_token", false);
  w.SetBool("tokenizer.ggml.add_space_prefix", true);
  return w;
}

template <typename T>
void AppendPod(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // little-endian, like GGUF
}

size_t PaddingAfter(size_t n) { return (kAlignment - n % kAlignment) % kAlignment; }

// The header GgufWriter would produce for `meta` plus `tensors`, without
// needing the tensors' bytes. GgufWriter has no streaming interface, so the
// key-value section is taken from it: serialised with alignment 1 (no padding)
// it ends exactly where the tensor directory must begin; general.alignment is
// the first key, so changing its value keeps that length.
std::vector<uint8_t> EncodeStreamingHeader(const GgufWriter& meta,
                                           const std::vector<TensorSpec>& tensors) {
  GgufWriter probe = meta;
  Status s = probe.SetAlignment(1);
  assert(s.ok());
  (void)s;
  const size_t kv_end = probe.Serialize().size();
  std::vector<uint8_t> out = meta.Serialize();
  out.resize(kv_end);
  const uint64_t n_tensors = tensors.size();
  std::memcpy(out.data() + 8, &n_tensors, sizeof(n_tensors));  // after magic and version
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    AppendPod<uint64_t>(out, t.name.size());
    out.insert(out.end(), t.name.begin(), t.name.end());
    AppendPod<uint32_t>(out, static_cast<uint32_t>(t.n_dims));
    for (int d = 0; d < t.n_dims; ++d) AppendPod<uint64_t>(out, static_cast<uint64_t>(t.ne[d]));
    AppendPod<uint32_t>(out, static_cast<uint32_t>(t.type));
    AppendPod<uint64_t>(out, offset);
    offset += t.nbytes() + PaddingAfter(t.nbytes());
  }
  out.resize(out.size() + PaddingAfter(out.size()), 0);
  return out;
}

Status WriteAll(std::FILE* f, std::span<const uint8_t> bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    return IoError(std::string("write failed: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Status StreamTensors(std::FILE* f, const ModelPlan& plan) {
  VALET_RETURN_IF_ERROR(WriteAll(f, EncodeStreamingHeader(MetadataWriter(plan), plan.tensors)));
  ThreadPool pool(ThreadPool::DefaultThreadCount());
  const std::vector<uint8_t> zeros(kAlignment, 0);
  for (const TensorSpec& t : plan.tensors) {
    const std::vector<uint8_t> bytes = Materialize(t, plan.seed, pool);
    VALET_RETURN_IF_ERROR(WriteAll(f, bytes));
    VALET_RETURN_IF_ERROR(WriteAll(f, std::span(zeros).first(PaddingAfter(bytes.size()))));
  }
  return Status::Ok();
}

}  // namespace

Result<SynthPreset> ParseSynthPreset(std::string_view name) {
  for (const PresetInfo& p : kPresets) {
    if (name == p.name) return p.preset;
  }
  return InvalidArgument("unknown synthetic-model preset '" + std::string(name) +
                         "' (use tiny, bench or 3b-shape)");
}

const char* SynthPresetName(SynthPreset preset) {
  for (const PresetInfo& p : kPresets) {
    if (p.preset == preset) return p.name;
  }
  return "unknown";
}

const SynthShape& SynthPresetShape(SynthPreset preset) {
  for (const PresetInfo& p : kPresets) {
    if (p.preset == preset) return p.shape;
  }
  assert(false && "every SynthPreset has a row in kPresets");
  return kPresets[0].shape;
}

Result<GgmlType> ParseSynthType(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (name == t.name) return t.type;
  }
  // The name users know from llama.cpp's files; valet's q4_k is that mix.
  if (name == "q4_k_m") return GgmlType::kQ4_K;
  return InvalidArgument("unknown synthetic-model type '" + std::string(name) +
                         "' (use f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, "
                         "iq4_nl or iq4_xs)");
}

const char* SynthTypeName(GgmlType type) {
  const TypeInfo* t = FindType(type);
  return t != nullptr ? t->name : "unsupported";
}

GgmlType SynthMatrixType(GgmlType type, bool is_output, int64_t n_in) {
  GgmlType t = type;
  if (is_output && (type == GgmlType::kQ4_0 || type == GgmlType::kQ4_K)) t = GgmlType::kQ6_K;
  if (n_in % GetGgmlTypeTraits(t).block_size != 0) {
    if (t == GgmlType::kQ6_K) t = GgmlType::kQ8_0;
    if (t == GgmlType::kQ4_K || t == GgmlType::kQ2_K || t == GgmlType::kQ3_K) t = GgmlType::kQ4_0;
    if (t == GgmlType::kQ5_K) t = GgmlType::kQ5_0;
    if (t == GgmlType::kIQ4_XS) t = GgmlType::kIQ4_NL;
  }
  return t;
}

int64_t SynthParamCount(const SynthShape& s) {
  const int64_t q_dim = int64_t{s.HeadDim()} * s.n_head;
  const int64_t kv_dim = int64_t{s.HeadDim()} * s.n_head_kv;
  const int64_t per_layer = 2 * int64_t{s.n_embd} * q_dim + 2 * int64_t{s.n_embd} * kv_dim +
                            3 * int64_t{s.n_embd} * s.n_ff + 2 * int64_t{s.n_embd};
  return s.n_layer * per_layer + 2 * int64_t{s.n_embd} * s.n_vocab + s.n_embd;
}

Result<GgufWriter> BuildSyntheticModel(const SynthModelOptions& options) {
  VALET_ASSIGN_OR_RETURN(ModelPlan plan, MakePlan(options));
  GgufWriter w = MetadataWriter(plan);
  ThreadPool pool(ThreadPool::DefaultThreadCount());
  for (const TensorSpec& t : plan.tensors) {
    const std::vector<uint8_t> bytes = Materialize(t, plan.seed, pool);
    VALET_RETURN_IF_ERROR(
        w.AddTensor(t.name, t.type, std::span<const int64_t>(t.ne, t.n_dims), bytes));
  }
  return w;
}

Status WriteSyntheticModel(const SynthModelOptions& options, const std::string& path) {
  VALET_ASSIGN_OR_RETURN(ModelPlan plan, MakePlan(options));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  Status s = StreamTensors(f, plan);
  if (std::fclose(f) != 0 && s.ok())
    s = IoError(std::string("close failed: ") + std::strerror(errno));
  if (!s.ok()) {
    std::remove(tmp.c_str());
    return Status(s.code(), path + ": " + s.message());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status err =
        IoError(path + ": cannot rename " + tmp + " into place: " + std::strerror(errno));
    std::remove(tmp.c_str());
    return err;
  }
  return Status::Ok();
}

}  // namespace valet::testing
