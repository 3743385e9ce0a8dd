#include "server/openai_logprobs.h"

#include <cmath>

namespace valet {

namespace {

using nlohmann::json;

double Logprob(float logprob) { return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0; }

json Bytes(const std::string& piece) {
  json bytes = json::array();
  for (char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

json ChatEntry(const TokenLogprob& t) {
  return {{"token", t.piece}, {"logprob", Logprob(t.logprob)}, {"bytes", Bytes(t.piece)}};
}

}  // namespace

json ChatLogprobs(std::span<const TokenLogprobs> tokens) {
  json content = json::array();
  for (const TokenLogprobs& t : tokens) {
    json entry = ChatEntry(t.sampled);
    json top = json::array();
    for (const TokenLogprob& alt : t.top) top.push_back(ChatEntry(alt));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

json CompletionLogprobs(std::span<const TokenLogprobs> tokens, size_t text_offset) {
  json pieces = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenLogprobs& t : tokens) {
    pieces.push_back(t.sampled.piece);
    logprobs.push_back(Logprob(t.sampled.logprob));
    json top = json::object();
    for (const TokenLogprob& alt : t.top) top[alt.piece] = Logprob(alt.logprob);
    top[t.sampled.piece] = Logprob(t.sampled.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += t.sampled.piece.size();
  }
  return {{"tokens", std::move(pieces)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

size_t PieceBytes(std::span<const TokenLogprobs> tokens) {
  size_t n = 0;
  for (const TokenLogprobs& t : tokens) n += t.sampled.piece.size();
  return n;
}

}  // namespace valet
