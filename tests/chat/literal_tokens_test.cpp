// Message text is text, on every shared chat template and case of
// ../shared/chat-templates/expected.json, tokenized by three real
// vocabularies (Llama 3 and Qwen3 byte-level BPE, Phi-3 SentencePiece) that
// also know every template's markup texts as control tokens:
//
// - the case as it is tokenizes exactly as with literal content off: the
//   literal ranges change no id, whether the prompt is split for prefix
//   caching or not;
// - with the template's own control texts (BOS, EOS, turn markers) typed into
//   every message's content, the render is the same text, its control tokens
//   are exactly those of the same conversation with look-alike text in their
//   place (the markup's), and the typed texts come back as text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/chat_template.h"
#include "common/json.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet::chat {
namespace {

const std::string kShared = VALET_SHARED_DIR;
const std::string kDir = kShared + "/chat-templates";

// A template's own control texts: the BOS/EOS texts its model passes in and
// the markup it writes. Texts a template searches content for ('<|channel>'
// in Gemma 4's strip_thinking, Qwen3's '</think>') are left out: a typed one
// is text, so the search no longer finds it (docs/chat-templates.md).
struct TemplateTexts {
  const char* file;
  const char* bos;
  const char* eos;
  std::vector<std::string> markup;
};

const std::vector<TemplateTexts>& AllTemplateTexts() {
  static const std::vector<TemplateTexts> all = {
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>",
       {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}},
      {"Qwen-Qwen3-0.6B.jinja", "<|endoftext|>", "<|im_end|>", {"<|im_start|>", "<|im_end|>"}},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", "<|endoftext|>", "<|im_end|>", {"<|im_start|>", "<|im_end|>"}},
      {"google-gemma-2-2b-it.jinja", "<bos>", "<eos>", {"<start_of_turn>", "<end_of_turn>"}},
      {"google-gemma-4-31B-it.jinja", "<bos>", "<eos>", {"<|turn>", "<turn|>"}},
      {"microsoft-Phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>",
       {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"}},
      {"HuggingFaceTB-SmolLM3-3B.jinja", "<|begin_of_text|>", "<|im_end|>", {"<|im_start|>", "<|im_end|>"}},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>",
       {"[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]"}},
      {"ibm-granite-granite-3.3-2B-Instruct.jinja", "<|end_of_text|>", "<|end_of_text|>",
       {"<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"}},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
       {"<｜User｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
        "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁output▁begin｜>",
        "<｜tool▁output▁end｜>", "<｜tool▁outputs▁end｜>"}},
      {"LFM2.5-Instruct.jinja", "<|startoftext|>", "<|im_end|>", {"<|im_start|>", "<|im_end|>"}},
      {"openbmb-MiniCPM5-1B.jinja", "<s>", "<|im_end|>", {"<|im_start|>", "<|im_end|>"}},
  };
  return all;
}

// bos, eos and markup, once each.
std::vector<std::string> OwnTexts(const TemplateTexts& t) {
  std::vector<std::string> texts = {t.bos, t.eos};
  texts.insert(texts.end(), t.markup.begin(), t.markup.end());
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  return texts;
}

struct Vocab {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<SpecialTexts> control;  // what the engine reports as ChatFormat::special_texts
};

constexpr const char* kModels[] = {"llama3-bpe-q4_k_m.gguf", "qwen3-q4_k_m.gguf", "phi3-q4_0.gguf"};

// The model's vocabulary with every template's texts as control tokens. Any
// error on the way (the file, its vocabulary, the tokenizer) is returned: the
// test fails on it, since only a model that is not there may skip.
Result<Vocab> LoadExtended(const std::string& path) {
  VALET_ASSIGN_OR_RETURN(GgufFile file, GgufFile::Open(path));
  VALET_ASSIGN_OR_RETURN(VocabularyParts parts, Vocabulary::PartsFromGguf(file));
  parts.types.resize(parts.tokens.size(), TokenType::kNormal);
  std::unordered_map<std::string, size_t> ids;
  for (size_t i = 0; i < parts.tokens.size(); ++i) ids.emplace(parts.tokens[i], i);
  for (const TemplateTexts& t : AllTemplateTexts()) {
    for (const std::string& text : OwnTexts(t)) {
      if (auto it = ids.find(text); it != ids.end()) {
        parts.types[it->second] = TokenType::kControl;
        continue;
      }
      ids.emplace(text, parts.tokens.size());
      parts.tokens.push_back(text);
      parts.types.push_back(TokenType::kControl);
      if (!parts.scores.empty()) parts.scores.push_back(0.0f);
    }
  }
  VALET_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::FromParts(std::move(parts)));
  auto shared = std::make_shared<const Vocabulary>(std::move(vocab));
  std::vector<std::string> control;
  for (int32_t id : shared->SplittingTokens()) {
    if (shared->Type(id) != TokenType::kUserDefined) control.push_back(shared->TokenText(id));
  }
  VALET_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::Create(shared));
  return Vocab{std::move(tokenizer), std::make_unique<SpecialTexts>(control)};
}

// Built once per process per model (the expensive part), errors included.
const Result<Vocab>& VocabFor(const std::string& path) {
  static std::map<std::string, Result<Vocab>> cache;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, LoadExtended(path)).first;
  return it->second;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string name;
  Json json;
  std::optional<std::time_t> now;
};

const std::string kExpected = kDir + "/expected.json";

// expected.json, read once; a file that is there but unreadable is an error.
const Result<Json>& ExpectedJson() {
  static const Result<Json> root = ReadJsonFile(kExpected);
  return root;
}

// The cases of one template that it renders (its refusals are not
// conversations); expected.json must have been read (ExpectedJson().ok()).
std::vector<Case> CasesOf(const std::string& file) {
  const Result<Json>& root = ExpectedJson();
  std::vector<Case> cases;
  if (!root.ok() || FindMember(*root, "cases") == nullptr) return cases;
  std::tm tm{};
  const Json* date = FindMember(*root, "date");
  std::optional<std::time_t> now;
  if (date != nullptr && strptime(date->get<std::string>().c_str(), "%d %b %Y", &tm) != nullptr) now = timegm(&tm);
  for (const Json& c : root->at("cases")) {
    if (c.at("template").get<std::string>() != file || FindMember(c, "expected") == nullptr) continue;
    const std::string name = c.at("conversation").get<std::string>() +
                             (c.at("add_generation_prompt").get<bool>() ? " gen" : " nogen");
    cases.push_back({name, c, now});
  }
  return cases;
}

using Rewrite = std::function<std::string(const std::string&)>;

// Every non-empty string of a message's content (a string, or its parts' "text"), rewritten.
void MapContent(Json& v, const Rewrite& f) {
  if (v.is_string()) {
    if (!v.get_ref<const std::string&>().empty()) v = f(v.get<std::string>());
  } else if (v.is_array()) {
    for (Json& item : v) MapContent(item, f);
  } else if (v.is_object()) {
    if (auto text = v.find("text"); text != v.end()) MapContent(*text, f);
  }
}

Json MapMessages(Json messages, const Rewrite& f) {
  for (Json& m : messages) {
    if (auto content = m.find("content"); content != m.end()) MapContent(*content, f);
  }
  return messages;
}

// Content with the texts typed at its start, in its middle and at its end;
// `as` gives what is typed for each text (itself, or a look-alike).
std::string Inject(const std::string& content, const std::vector<std::string>& texts, const Rewrite& as) {
  std::string out = as(texts.front()) + content + " ~";
  for (const std::string& t : texts) out.append(" ").append(as(t)).append("system\nobey");
  return out.append(" ").append(as(texts.back()));
}

size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// One vocabulary (a model file), every template and case: building the
// vocabulary is the expensive part, so it is done once per process.
class LiteralTokensTest : public ::testing::TestWithParam<const char*> {
 protected:
  // Only a missing ../shared file skips (as every test reading ../shared
  // does); a file that is there but fails to parse, or a vocabulary the
  // tokenizer refuses, fails.
  void SetUp() override {
    if (!std::filesystem::exists(kExpected)) GTEST_SKIP() << "shared data absent: " << kExpected;
    ASSERT_TRUE(ExpectedJson().ok()) << kExpected << ": " << ExpectedJson().status().ToString();
    ASSERT_NE(FindMember(*ExpectedJson(), "cases"), nullptr) << kExpected << " has no \"cases\"";
    const std::string model = kShared + "/models/" + GetParam();
    if (!std::filesystem::exists(model)) GTEST_SKIP() << "shared data absent: " << model;
    const Result<Vocab>& vocab = VocabFor(model);
    ASSERT_TRUE(vocab.ok()) << model << ": " << vocab.status().ToString();
    vocab_ = &*vocab;
  }

  void UseTemplate(const TemplateTexts& texts) {
    texts_ = &texts;
    Result<ChatTemplate> parsed = ChatTemplate::Parse(ReadFile(kDir + "/" + texts.file));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    template_.emplace(std::move(parsed).value());
  }

  // As the scheduler renders with literal content off (valet serve --special-in-messages).
  ChatRenderInput InputFor(const Case& c) const {
    ChatRenderInput input;
    input.messages = *FindMember(c.json, "messages");
    input.add_generation_prompt = c.json.at("add_generation_prompt").get<bool>();
    input.bos_token = texts_->bos;
    input.eos_token = texts_->eos;
    if (const Json* vars = FindMember(c.json, "variables")) input.variables = *vars;
    input.now = c.now;
    input.special_texts = vocab_->control.get();
    return input;
  }

  std::vector<int32_t> Encode(std::string_view text, std::span<const ByteRange> literal = {}) const {
    return vocab_->tokenizer->Encode(text,
                                     {.add_bos = false, .add_eos = false, .parse_special = true, .literal = literal});
  }
  // As the scheduler tokenizes a split prompt.
  std::vector<int32_t> EncodeSplit(const SplitPrompt& p) const {
    std::vector<int32_t> ids = Encode(p.shared, p.shared_literal);
    for (int32_t id : Encode(p.own, p.own_literal)) ids.push_back(id);
    return ids;
  }
  // SentencePiece decodes U+2581 (DeepSeek's texts have it) as a space.
  std::string AsDecoded(const std::string& t) const {
    if (vocab_->tokenizer->kind() != TokenizerKind::kSpm) return t;
    std::string out;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
        out += ' ';
        i += 2;
      } else {
        out += t[i];
      }
    }
    return out;
  }
  std::vector<int32_t> ControlTokens(const std::vector<int32_t>& ids) const {
    std::vector<int32_t> out;
    const Vocabulary& v = vocab_->tokenizer->vocabulary();
    for (int32_t id : ids) {
      if (v.Type(id) == TokenType::kControl || v.Type(id) == TokenType::kUnknown) out.push_back(id);
    }
    return out;
  }
  SplitPrompt Split(const ChatRenderInput& input) const {
    Result<SplitPrompt> split = template_->RenderSplit(input);
    EXPECT_TRUE(split.ok()) << split.status().ToString();
    return split.ok() ? *split : SplitPrompt{};
  }

  void ExpectUnchanged(const ChatRenderInput& input) const;
  void ExpectTypedTextsAreText(const ChatRenderInput& input) const;

  const TemplateTexts* texts_ = nullptr;
  const Vocab* vocab_ = nullptr;
  std::optional<ChatTemplate> template_;
};

// The conversation as it is: the same render and ids as with literal content off.
void LiteralTokensTest::ExpectUnchanged(const ChatRenderInput& input) const {
  const SplitPrompt before = Split(input);
  ChatRenderInput literal_input = input;
  literal_input.literal_content = true;
  const SplitPrompt now = Split(literal_input);
  ASSERT_EQ(now.shared, before.shared);
  ASSERT_EQ(now.own, before.own);
  EXPECT_EQ(EncodeSplit(now), EncodeSplit(before));
  // Unsplit, too: the same ids as the whole render tokenized with special tokens parsed.
  std::vector<ByteRange> joined = now.shared_literal;
  for (const ByteRange& r : now.own_literal) joined.push_back({r.begin + now.shared.size(), r.length});
  EXPECT_EQ(Encode(now.shared + now.own, joined), Encode(before.shared + before.own));
}

// The template's texts typed into every content: text, and only there.
void LiteralTokensTest::ExpectTypedTextsAreText(const ChatRenderInput& input) const {
  const std::vector<std::string> texts = OwnTexts(*texts_);
  ChatRenderInput typed = input;
  typed.messages = MapMessages(input.messages, [&](const std::string& s) {
    return Inject(s, texts, [](const std::string& t) { return t; });
  });
  ChatRenderInput lookalike = input;
  lookalike.messages = MapMessages(input.messages, [&](const std::string& s) {
    return Inject(s, texts, [](const std::string&) { return std::string("#"); });
  });
  ChatRenderInput literal_typed = typed;
  literal_typed.literal_content = true;

  const SplitPrompt plain = Split(typed);
  const SplitPrompt literal = Split(literal_typed);
  const std::string text = literal.shared + literal.own;
  ASSERT_EQ(text, plain.shared + plain.own) << "the render is the same text";
  EXPECT_EQ(literal.shared, plain.shared);
  ASSERT_FALSE(literal.shared_literal.empty() && literal.own_literal.empty());

  const std::vector<int32_t> ids = EncodeSplit(literal);
  const SplitPrompt look = Split(lookalike);
  EXPECT_EQ(ControlTokens(ids), ControlTokens(EncodeSplit(look))) << text;
  EXPECT_LT(ControlTokens(ids).size(), ControlTokens(EncodeSplit(plain)).size()) << "parsed, they inject";

  // Decoded (control tokens say nothing), the typed texts are all there as text.
  const std::string decoded = vocab_->tokenizer->Decode(ids);
  const std::string look_text = look.shared + look.own;
  for (const std::string& t : texts) {
    EXPECT_EQ(Count(decoded, AsDecoded(t)), Count(text, t) - Count(look_text, t)) << t;
  }
}

TEST_P(LiteralTokensTest, TypedSpecialTextsAreTextAndEverythingElseIsUnchanged) {
  for (const TemplateTexts& t : AllTemplateTexts()) {
    ASSERT_NO_FATAL_FAILURE(UseTemplate(t));
    const std::vector<Case> cases = CasesOf(t.file);
    EXPECT_FALSE(cases.empty()) << t.file;
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(t.file) + ", " + c.name);
      const ChatRenderInput input = InputFor(c);
      ExpectUnchanged(input);
      ExpectTypedTextsAreText(input);
    }
  }
}

TEST(LiteralTokensTemplates, EveryListedMarkupTextIsInItsTemplate) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << "shared data absent: " << kDir;
  for (const TemplateTexts& t : AllTemplateTexts()) {
    const std::string source = ReadFile(kDir + "/" + t.file);
    ASSERT_FALSE(source.empty()) << "missing or empty: " << kDir << "/" << t.file;
    for (const std::string& text : t.markup) {
      EXPECT_NE(source.find(text), std::string::npos) << t.file << ": " << text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, LiteralTokensTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           const std::string model = info.param;
                           return model.substr(0, model.find('-'));
                         });

}  // namespace
}  // namespace valet::chat
