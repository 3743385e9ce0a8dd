#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <string>

#include "tokenizer/unicode.h"

namespace valet {
namespace {

using Piece = std::span<const char32_t>;

// A match of one expression inside a piece; length 0 means none at or after the start.
struct Match {
  size_t begin = 0;
  size_t length = 0;
};
using Search = Match (*)(Piece, size_t from);
using Predicate = bool (*)(char32_t);

size_t Run(Piece p, size_t i, Predicate pred) {
  size_t n = 0;
  while (i + n < p.size() && pred(p[i + n])) ++n;
  return n;
}

bool IsNewline(char32_t c) { return c == '\r' || c == '\n'; }
// [^\s\p{L}\p{N}]
bool IsSymbolLike(char32_t c) {
  const CharClass cls = ClassOf(c);
  return cls != CharClass::kLetter && cls != CharClass::kNumber && !IsWhitespace(c);
}
bool IsAsciiDigit(char32_t c) { return c >= '0' && c <= '9'; }

// llama.cpp runs expressions with explicit non-ASCII ranges through std::wregex
// after replacing non-ASCII whitespace by '\v', so such a character only ever
// matches \s, even when a range covers it (U+3000 in DeepSeek's punctuation).
bool IsSubstitutedSpace(char32_t c) { return c > 0x7F && IsWhitespace(c); }

struct Range {
  char32_t first;
  char32_t last;
};

template <size_t N>
bool InRanges(const std::array<Range, N>& ranges, char32_t c) {
  if (IsSubstitutedSpace(c)) return false;
  return std::any_of(ranges.begin(), ranges.end(),
                     [c](const Range& r) { return c >= r.first && c <= r.last; });
}

// DeepSeek LLM's letter class, as written in its tokenizer.json (cased scripts).
constexpr std::array<Range, 95> kDeepseekLetters = {{
    {'A', 'Z'},         {'a', 'z'},         {0xB5, 0xB5},       {0xC0, 0xD6},
    {0xD8, 0xF6},       {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},
    {0x295, 0x2AF},     {0x370, 0x373},     {0x376, 0x377},     {0x37B, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},
    {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr std::array<Range, 6> kDeepseekPunctuation = {{
    {0x21, 0x2F},
    {0x3A, 0x7E},
    {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E},
    {0x2018, 0x201F},
    {0x3000, 0x3002},
}};
// [一-龥ࠀ-一가-퟿]
constexpr std::array<Range, 3> kCjk = {{{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}}};

bool IsDeepseekLetter(char32_t c) { return InRanges(kDeepseekLetters, c); }
bool IsDeepseekPunctuation(char32_t c) { return InRanges(kDeepseekPunctuation, c); }
bool IsCjk(char32_t c) { return InRanges(kCjk, c); }
// [\p{P}\$\+<=>\^~\|]
bool IsPunctOrMathAscii(char32_t c) {
  return IsPunctuation(c) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
         c == '~' || c == '|';
}
bool IsFalconPunct(char32_t c) { return IsPunctOrMathAscii(c) || c == '`'; }

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive.
size_t Contraction(Piece p, size_t i, bool any_case) {
  if (p[i] != '\'' || i + 1 >= p.size()) return 0;
  auto fold = [any_case](char32_t c) { return any_case && c >= 'A' && c <= 'Z' ? c + 32 : c; };
  const char32_t c1 = fold(p[i + 1]);
  const char32_t c2 = i + 2 < p.size() ? fold(p[i + 2]) : 0;
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// \s+(?!\S) followed, when `fallback` is set, by \s+: a whitespace run leaves its
// last character to the word after it unless the run ends the piece.
size_t TrailingSpaces(Piece p, size_t i, bool fallback) {
  const size_t k = Run(p, i, IsWhitespace);
  if (k == 0 || i + k == p.size()) return k;
  if (k > 1) return k - 1;
  return fallback ? k : 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t Gpt2At(Piece p, size_t i) {
  if (size_t n = Contraction(p, i, /*any_case=*/false)) return n;
  const size_t q = i + (p[i] == ' ' ? 1 : 0);
  if (q < p.size()) {
    for (Predicate pred : {IsLetter, IsNumber, IsSymbolLike}) {
      if (pred(p[q])) return q - i + Run(p, q, pred);
    }
  }
  return TrailingSpaces(p, i, /*fallback=*/false);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t Llama3LikeAt(Piece p, size_t i, size_t max_digits) {
  if (size_t n = Contraction(p, i, /*any_case=*/true)) return n;
  const char32_t c = p[i];
  if (IsLetter(c)) return Run(p, i, IsLetter);
  if (!IsNewline(c) && !IsNumber(c) && i + 1 < p.size() && IsLetter(p[i + 1])) {
    return 1 + Run(p, i + 1, IsLetter);
  }
  if (IsNumber(c)) return std::min(max_digits, Run(p, i, IsNumber));
  const size_t q = i + (c == ' ' ? 1 : 0);
  if (q < p.size() && IsSymbolLike(p[q])) {
    size_t end = q + Run(p, q, IsSymbolLike);
    end += Run(p, end, IsNewline);
    return end - i;
  }
  const size_t k = Run(p, i, IsWhitespace);
  for (size_t end = i + k; end > i; --end) {
    if (IsNewline(p[end - 1])) return end - i;  // \s*[\r\n]+ backtracks to the last newline
  }
  return TrailingSpaces(p, i, /*fallback=*/true);
}

size_t Llama3At(Piece p, size_t i) { return Llama3LikeAt(p, i, 3); }
size_t Qwen2At(Piece p, size_t i) { return Llama3LikeAt(p, i, 1); }

template <Predicate pred>
size_t OneAt(Piece p, size_t i) {
  return pred(p[i]) ? 1 : 0;
}
template <Predicate pred>
size_t RunAt(Piece p, size_t i) {
  return Run(p, i, pred);
}
// \s?X+
template <Predicate pred>
size_t SpacedRunAt(Piece p, size_t i) {
  if (IsWhitespace(p[i]) && i + 1 < p.size() && pred(p[i + 1])) return 1 + Run(p, i + 1, pred);
  return Run(p, i, pred);
}
// [0-9][0-9][0-9]
size_t ThreeDigitsAt(Piece p, size_t i) {
  const bool three =
      i + 3 <= p.size() && IsAsciiDigit(p[i]) && IsAsciiDigit(p[i + 1]) && IsAsciiDigit(p[i + 2]);
  return three ? 3 : 0;
}

// Leftmost match, as a regex iterator finds it.
template <size_t (*match_at)(Piece, size_t)>
Match SearchFrom(Piece p, size_t from) {
  for (size_t i = from; i < p.size(); ++i) {
    if (size_t n = match_at(p, i)) return {i, n};
  }
  return {p.size(), 0};
}

// \s+$
Match SearchSpacesAtEnd(Piece p, size_t from) {
  size_t begin = p.size();
  while (begin > from && IsWhitespace(p[begin - 1])) --begin;
  return {begin, p.size() - begin};
}

constexpr Search kGpt2 = SearchFrom<Gpt2At>;
constexpr std::array kDefaultSearches = {SearchFrom<RunAt<IsPunctOrMathAscii>>, kGpt2,
                                         SearchFrom<RunAt<IsNumber>>, SearchFrom<ThreeDigitsAt>};
constexpr std::array kGpt2Searches = {kGpt2};
constexpr std::array kLlama3Searches = {SearchFrom<Llama3At>};
constexpr std::array kQwen2Searches = {SearchFrom<Qwen2At>};
constexpr std::array kStarcoderSearches = {SearchFrom<OneAt<IsNumber>>, kGpt2};
constexpr std::array kFalconSearches = {SearchFrom<RunAt<IsFalconPunct>>, kGpt2,
                                        SearchFrom<ThreeDigitsAt>};
constexpr std::array kDeepseekLlmSearches = {SearchFrom<OneAt<IsNewline>>,
                                             SearchFrom<SpacedRunAt<IsDeepseekLetter>>,
                                             SearchFrom<SpacedRunAt<IsDeepseekPunctuation>>,
                                             SearchSpacesAtEnd,
                                             SearchFrom<RunAt<IsCjk>>,
                                             SearchFrom<RunAt<IsNumber>>};
constexpr std::array kDeepseekCoderSearches = {
    SearchFrom<OneAt<IsNewline>>, SearchFrom<SpacedRunAt<IsLetter>>,
    SearchFrom<SpacedRunAt<IsPunctuation>>, SearchFrom<RunAt<IsCjk>>, SearchFrom<OneAt<IsNumber>>};

std::span<const Search> SearchesFor(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kDefault:
      return kDefaultSearches;
    case PreTokenizerKind::kGpt2:
      return kGpt2Searches;
    case PreTokenizerKind::kLlama3:
      return kLlama3Searches;
    case PreTokenizerKind::kQwen2:
      return kQwen2Searches;
    case PreTokenizerKind::kStarcoder:
      return kStarcoderSearches;
    case PreTokenizerKind::kFalcon:
      return kFalconSearches;
    case PreTokenizerKind::kDeepseekLlm:
      return kDeepseekLlmSearches;
    case PreTokenizerKind::kDeepseekCoder:
      return kDeepseekCoderSearches;
  }
  return kDefaultSearches;
}

// One expression over one piece: matches and the text between them become pieces.
void SplitPiece(Search search, Piece p, std::vector<size_t>& out) {
  size_t pos = 0;
  while (pos < p.size()) {
    const Match m = search(p, pos);
    if (m.length == 0) break;
    if (m.begin > pos) out.push_back(m.begin - pos);
    out.push_back(m.length);
    pos = m.begin + m.length;
  }
  if (pos < p.size()) out.push_back(p.size() - pos);
}

struct NamedPreTokenizer {
  std::string_view name;
  PreTokenizerInfo info;
};

// tokenizer.ggml.pre names llama.cpp maps onto these expressions.
constexpr PreTokenizerInfo kLlama3Info{PreTokenizerKind::kLlama3, true, true};
constexpr PreTokenizerInfo kLlama3RegexOnly{PreTokenizerKind::kLlama3, false, false};
constexpr PreTokenizerInfo kGpt2Info{PreTokenizerKind::kGpt2, false, false};
constexpr PreTokenizerInfo kQwen2Info{PreTokenizerKind::kQwen2, false, false};
constexpr PreTokenizerInfo kStarcoderInfo{PreTokenizerKind::kStarcoder, false, false};
constexpr NamedPreTokenizer kNames[] = {
    {"default", {PreTokenizerKind::kDefault, false, false}},
    {"llama3", kLlama3Info},
    {"llama-v3", kLlama3Info},
    {"llama-bpe", kLlama3Info},
    {"falcon3", kLlama3Info},
    {"falcon-h1", kLlama3Info},
    {"pixtral", kLlama3Info},
    {"midm-2.0", kLlama3Info},
    {"lfm2", kLlama3Info},
    {"dbrx", kLlama3RegexOnly},
    {"smaug-bpe", kLlama3RegexOnly},
    {"gpt-2", kGpt2Info},
    {"phi-2", kGpt2Info},
    {"mpt", kGpt2Info},
    {"olmo", kGpt2Info},
    {"jais", kGpt2Info},
    {"trillion", kGpt2Info},
    {"jina-es", kGpt2Info},
    {"jina-de", kGpt2Info},
    {"jina-v2-es", kGpt2Info},
    {"jina-v2-de", kGpt2Info},
    {"jina-v1-en", kGpt2Info},
    {"jina-v2-code", kGpt2Info},
    {"roberta-bpe", kGpt2Info},
    {"gigachat", kGpt2Info},
    {"a.x-4.0", kGpt2Info},
    {"mellum", kGpt2Info},
    {"qwen2", kQwen2Info},
    {"deepseek-r1-qwen", kQwen2Info},
    {"megrez", kQwen2Info},
    {"stablelm2", kQwen2Info},
    {"hunyuan", kQwen2Info},
    {"starcoder", kStarcoderInfo},
    {"refact", kStarcoderInfo},
    {"command-r", kStarcoderInfo},
    {"smollm", kStarcoderInfo},
    {"codeshell", kStarcoderInfo},
    {"exaone", kStarcoderInfo},
    {"minerva-7b", kStarcoderInfo},
    {"falcon", {PreTokenizerKind::kFalcon, false, false}},
    {"deepseek-llm", {PreTokenizerKind::kDeepseekLlm, false, false}},
    {"deepseek-coder", {PreTokenizerKind::kDeepseekCoder, false, false}},
};

}  // namespace

Result<PreTokenizerInfo> PreTokenizerForName(std::string_view name) {
  if (name.empty()) return PreTokenizerInfo{};
  for (const NamedPreTokenizer& n : kNames) {
    if (n.name == name) return n.info;
  }
  return Unsupported("BPE pre-tokenizer '" + std::string(name) +
                     "' (tokenizer.ggml.pre) is not supported");
}

std::vector<size_t> PreTokenizer::Split(std::span<const char32_t> cpts) const {
  std::vector<size_t> pieces;
  if (cpts.empty()) return pieces;
  pieces.push_back(cpts.size());
  std::vector<size_t> next;
  for (Search search : SearchesFor(kind_)) {
    next.clear();
    size_t start = 0;
    for (size_t length : pieces) {
      SplitPiece(search, cpts.subspan(start, length), next);
      start += length;
    }
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace valet
