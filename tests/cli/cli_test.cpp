// The valet CLI as a user meets it: every kind of bad input gives a one-line
// error and exit code 2; good input works end to end.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli_run.h"

namespace {

using valet::testing::CliRun;

CliRun Valet(const std::string& args) { return valet::testing::RunValet(args); }

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("valet_cli_test_" + name)).string();
}

const std::string kStories = std::string(VALET_SHARED_DIR) + "/models/stories260K.gguf";

void ExpectUsageError(const std::string& args, const std::string& needle) {
  CliRun r = Valet(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
  EXPECT_EQ(r.out.find("Segmentation"), std::string::npos);
}

TEST(CliTest, BadFlagsAreOneLineErrorsWithExitCode2) {
  ExpectUsageError("", "usage");
  ExpectUsageError("frobnicate", "unknown command");
  ExpectUsageError("generate -p hi", "--model is required");
  ExpectUsageError("generate -m x.gguf -p hi --temp abc", "not a number");
  ExpectUsageError("generate -m x.gguf -p hi -n 0", "--n-predict must be between");
  ExpectUsageError("generate -m x.gguf -p hi --top-p 1.5", "--top-p must be between");
  ExpectUsageError("generate -m x.gguf -p hi -t 0", "--threads must be between");
  ExpectUsageError("generate -m x.gguf -p hi --bogus", "unknown argument");
  ExpectUsageError("generate -m x.gguf -p", "needs a value");
  ExpectUsageError("synth-model --preset huge -o /tmp/x.gguf", "preset");
  ExpectUsageError("synth-model --preset tiny --arch mamba -o /tmp/x.gguf", "unknown architecture 'mamba'");
  ExpectUsageError("generate -m x.gguf -p hi --kv-type q4", "--kv-type must be f16, q8_0 or f32");
}

TEST(CliTest, BadModelFilesAreNamedInTheError) {
  ExpectUsageError("info -m /nonexistent/model.gguf", "/nonexistent/model.gguf");
  const std::string junk = TempPath("junk.gguf");
  std::ofstream(junk) << "this is not a gguf file at all";
  ExpectUsageError("info -m " + junk, junk);
  const std::string legacy = std::string(VALET_SHARED_DIR) + "/models/legacy-gguf-v1.gguf";
  if (std::filesystem::exists(legacy)) ExpectUsageError("info -m " + legacy, "v1");
}

TEST(CliTest, PromptLongerThanTheContextIsRejected) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "shared data absent: " << kStories;
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "once upon a time ";
  ExpectUsageError("generate -m " + kStories + " -c 32 -p '" + prompt + "'", "context");
}

TEST(CliTest, GenerateJsonIsGreedyAndDeterministic) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "shared data absent: " << kStories;
  const std::string args = "generate -m " + kStories + " -p 'Once upon a time' -n 8 --temp 0 --json --top-logits 2";
  CliRun a = Valet(args), b = Valet(args);
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  // The reference's prompt tokens (golden/stories260K.json) and the JSON shape.
  EXPECT_NE(a.out.find("\"prompt_tokens\":[1,403,407,261,378]"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("\"top_logits\":[[["), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("\"text\":\""), std::string::npos) << a.out;
}

TEST(CliTest, InfoReportsTensorsAndMemory) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "shared data absent: " << kStories;
  CliRun r = Valet("info -m " + kStories);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("token_embd.weight"), std::string::npos);
  EXPECT_NE(r.out.find("llama.embedding_length"), std::string::npos);
  EXPECT_NE(r.out.find("memory: weights"), std::string::npos);
  // 5 layers x (K, V) x 4 KV heads x head size 8 x 2 bytes = 640 bytes a token
  EXPECT_NE(r.out.find("KV cache: f16, 0.6 KiB per token"), std::string::npos) << r.out;
  CliRun f32 = Valet("info -m " + kStories + " --kv-type f32");
  EXPECT_NE(f32.out.find("KV cache: f32, 1.2 KiB per token"), std::string::npos) << f32.out;
  // head size 8 is not a whole Q8_0 block: refused with the reason.
  CliRun q8 = Valet("info -m " + kStories + " --kv-type q8_0");
  EXPECT_NE(q8.exit_code, 0);
  EXPECT_NE(q8.out.find("head_dim is 8"), std::string::npos) << q8.out;
}

TEST(CliTest, InfoReportsQ8_0KvBytes) {
  const std::string tiny = std::string(VALET_SHARED_DIR) + "/models/synth-tiny-q8_0.gguf";
  if (!std::filesystem::exists(tiny)) GTEST_SKIP() << "shared data absent: " << tiny;
  // 4 layers x (K, V) x 2 KV heads x one 34-byte block (head size 32) = 544 bytes a token
  CliRun r = Valet("info -m " + tiny + " --kv-type q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("KV cache: q8_0, 0.5 KiB per token"), std::string::npos) << r.out;
}

TEST(CliTest, GenerateChatUsesTheModelsTemplate) {
  const std::string qwen3 = std::string(VALET_SHARED_DIR) + "/models/qwen3-q4_k_m.gguf";
  if (!std::filesystem::exists(qwen3)) GTEST_SKIP() << "shared data absent: " << qwen3;
  CliRun r = Valet("generate -m " + qwen3 + " -p Hello --chat --system 'Be brief' -n 2 --temp 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // <|im_start|>system\n ... <|im_end|>: ChatML special tokens, parsed as one token each.
  EXPECT_NE(r.out.find("\"prompt_tokens\":[151644,8948,198"), std::string::npos) << r.out;
  ExpectUsageError("generate -m " + qwen3 + " -p Hello --system S", "--system needs --chat");
}

TEST(CliTest, SynthModelWritesEveryArchitectureAndInfoNamesIt) {
  for (const std::string arch : {"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"}) {
    const std::string path = TempPath("arch_" + arch + ".gguf");
    CliRun w = Valet("synth-model --preset tiny --arch " + arch + " --type q8_0 -o " + path);
    ASSERT_EQ(w.exit_code, 0) << w.out;
    CliRun r = Valet("info -m " + path);
    std::filesystem::remove(path);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("architecture: " + arch + ", RoPE"), std::string::npos) << r.out;
    const bool gemma = arch.starts_with("gemma");
    EXPECT_NE(r.out.find(gemma ? "(GeGLU)" : "(SwiGLU)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("attention: 5 of 6 layers see the last 16 positions") != std::string::npos,
              arch == "gemma3") << r.out;
    EXPECT_EQ(r.out.find("attention: 2 of 4 layers see the last 16 positions") != std::string::npos,
              arch == "gemma2") << r.out;
  }
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CliTest, TemplateRendersAFileWithVariablesExactly) {
  const std::string tmpl = WriteTemp("t.jinja",
                                     "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
                                     "{% if add_generation_prompt %}[assistant]{% endif %}{{ extra }}{{ eos_token }}\n");
  const std::string msgs = WriteTemp("m.json", R"({"messages": [{"role": "user", "content": "Hi"}], "extra": "X"})");
  CliRun r = Valet("template --file " + tmpl + " --messages " + msgs + " --add-generation-prompt --bos '<s>' --eos '</s>'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "<s>[user]Hi[assistant]X</s>");  // one trailing newline is not part of a Jinja template
  r = Valet("template --file " + tmpl + " --messages " + msgs);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "[user]HiX");
}

TEST(CliTest, TemplateUsesTheModelsTemplateOrFallsBackToChatMl) {
  const std::string qwen3 = std::string(VALET_SHARED_DIR) + "/models/qwen3-q4_k_m.gguf";
  if (!std::filesystem::exists(qwen3) || !std::filesystem::exists(kStories)) GTEST_SKIP() << "shared data absent";
  const std::string msgs = WriteTemp("m2.json", R"({"messages": [{"role": "user", "content": "Hi"}]})");
  const std::string chatml = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
  CliRun r = Valet("template -m " + qwen3 + " --messages " + msgs + " --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, chatml);  // Qwen3's own template writes ChatML for a plain user turn
  r = Valet("template -m " + kStories + " --messages " + msgs + " --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("has no tokenizer.chat_template; using the built-in chatml"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(chatml), std::string::npos) << r.out;
}

TEST(CliTest, TemplateErrorsAreOneLine) {
  const std::string msgs = WriteTemp("m3.json", R"({"messages": [{"role": "system", "content": "S"}]})");
  const std::string raising = WriteTemp("raise.jinja", "{{ raise_exception('System role not supported') }}");
  ExpectUsageError("template --file " + raising + " --messages " + msgs, "error: System role not supported");
  const std::string broken = WriteTemp("broken.jinja", "{% if x %}never closed");
  ExpectUsageError("template --file " + broken + " --messages " + msgs, "expected {% endif %}");
  ExpectUsageError("template --messages " + msgs, "exactly one of --model and --file");
  ExpectUsageError("template --file " + raising, "--messages is required");
  ExpectUsageError("template --file " + raising + " --messages " + raising, "invalid JSON at byte");
  const std::string no_messages = WriteTemp("m4.json", R"({"msgs": []})");
  ExpectUsageError("template --file " + raising + " --messages " + no_messages, "\"messages\" array");
}

// generate --grammar: whatever the sampler draws, the text is one the
// grammar accepts, and generation ends when the grammar does; bad grammars
// are one-line errors.
TEST(CliTest, GenerateFollowsAGrammar) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "shared data absent: " << kStories;
  const std::string grammar = TempPath("words.gbnf");
  std::ofstream(grammar) << "root ::= [a-z ]{1,20} \".\"\n";
  for (int seed = 1; seed <= 6; ++seed) {
    CliRun r = Valet("generate -m " + kStories + " -p 'Once upon a time' -n 40 --temp 1.5 --top-k 0 --top-p 1 " +
                     "--min-p 0 --json --seed " + std::to_string(seed) + " --grammar " + grammar);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const nlohmann::json g = nlohmann::json::parse(r.out);
    const std::string text = g["text"];
    EXPECT_EQ(g["stop_reason"], "eos") << r.out;
    ASSERT_GE(text.size(), 2u) << r.out;
    EXPECT_LE(text.size(), 21u) << r.out;
    EXPECT_EQ(text.back(), '.') << r.out;
    for (size_t i = 0; i + 1 < text.size(); ++i) EXPECT_TRUE(text[i] == ' ' || (text[i] >= 'a' && text[i] <= 'z')) << r.out;
  }
  std::ofstream(grammar) << "root ::= missing\n";
  ExpectUsageError("generate -m " + kStories + " -p hi --grammar " + grammar, "undefined rule 'missing'");
  ExpectUsageError("generate -m " + kStories + " -p hi --grammar /nonexistent.gbnf", "/nonexistent.gbnf");
  std::filesystem::remove(grammar);
}

// generate --json-schema / --json-object / --regex on a real vocabulary: the
// text parses and follows the schema whatever the sampler draws.
TEST(CliTest, GenerateFollowsAJsonSchemaOrRegex) {
  const std::string qwen2 = std::string(VALET_SHARED_DIR) + "/models/qwen2-q4_0.gguf";
  if (!std::filesystem::exists(qwen2)) GTEST_SKIP() << "shared data absent: " << qwen2;
  const std::string schema = WriteTemp("card.json", R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},
      "required":["name","age","tags"],"additionalProperties":false})");
  const std::string sampling = " -p 'JSON:' -n 200 --temp 1 --top-k 0 --top-p 1 --min-p 0 --json --seed ";
  for (int seed = 1; seed <= 4; ++seed) {
    CliRun r = Valet("generate -m " + qwen2 + sampling + std::to_string(seed) + " --json-schema " + schema);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const nlohmann::json g = nlohmann::json::parse(r.out);
    ASSERT_EQ(g["stop_reason"], "eos") << r.out;
    const nlohmann::ordered_json card = nlohmann::ordered_json::parse(g["text"].get<std::string>());
    ASSERT_EQ(card.size(), 3u) << r.out;
    EXPECT_EQ(card.begin().key(), "name");
    EXPECT_TRUE(card["age"].is_number_integer() && card["age"] >= 0 && card["age"] <= 120) << r.out;
    EXPECT_LE(card["tags"].size(), 2u) << r.out;
  }
  CliRun obj = Valet("generate -m " + qwen2 + sampling + "5 -n 400 --json-object");
  ASSERT_EQ(obj.exit_code, 0) << obj.out;
  const nlohmann::json g = nlohmann::json::parse(obj.out);
  if (g["stop_reason"] == "eos") EXPECT_TRUE(nlohmann::json::parse(g["text"].get<std::string>()).is_object()) << obj.out;
  else EXPECT_EQ(g["text"].get<std::string>().front(), '{') << obj.out;
  CliRun re = Valet("generate -m " + qwen2 + sampling + "6 --regex '[A-Z]{3}-[0-9]{2,4}'");
  ASSERT_EQ(re.exit_code, 0) << re.out;
  const std::string text = nlohmann::json::parse(re.out)["text"];
  ASSERT_GE(text.size(), 6u) << re.out;
  EXPECT_EQ(text[3], '-') << re.out;
  ExpectUsageError("generate -m " + qwen2 + " -p hi --json-object --regex a", "exclude each other");
  const std::string bad = WriteTemp("bad.json", R"({"type":"integer","multipleOf":2})");
  ExpectUsageError("generate -m " + qwen2 + " -p hi --json-schema " + bad, "keyword 'multipleOf' is not supported");
  ExpectUsageError("generate -m " + qwen2 + " -p hi --regex '(?=x)'", "lookaround");
}

// bench-jank runs its three arms and writes, per arm, what the issue asks
// for: the missed-frame rate, frame latency percentiles, background tokens
// per second (none in the idle arm, some in the others) and the chat turn's
// time to first token.
TEST(CliTest, BenchJankReportsEveryArm) {
  const std::string model = TempPath("jank-tiny.gguf");
  const std::string json = TempPath("jank.json");
  ASSERT_EQ(Valet("synth-model --preset tiny --type q8_0 -o " + model).exit_code, 0);
  CliRun r = Valet("bench-jank -m " + model + " -t 2 --seconds 1 --frame-work-ms 2 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| valet |"), std::string::npos) << r.out;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  for (const char* arm : {"idle", "plain", "valet"}) {
    ASSERT_TRUE(report["arms"].contains(arm)) << report.dump();
    const nlohmann::json& a = report["arms"][arm];
    EXPECT_GT(a["vsyncs"].get<int>(), 0) << arm;
    EXPECT_GE(a["missed_frame_rate"].get<double>(), 0.0) << arm;
    EXPECT_LE(a["missed_frame_rate"].get<double>(), 1.0) << arm;
    EXPECT_LE(a["frame_latency_ms"]["p50"].get<double>(), a["frame_latency_ms"]["p99"].get<double>()) << arm;
    EXPECT_GT(a["chat_ttft_ms"].get<double>(), 0.0) << arm;
    EXPECT_EQ(a["bg_tokens_per_s"].get<double>() > 0.0, std::string(arm) != "idle") << arm;
  }
  ExpectUsageError("bench-jank -m " + model + " --arms idle,fast", "unknown arm fast");
  std::filesystem::remove(model);
  std::filesystem::remove(json);
}

}  // namespace
