// The `logprobs` objects of OpenAI's answers, from the scheduler's per-token
// log-probabilities (the model's raw distribution, valet/sampling.h):
//  chat:        {"content": [{"token", "logprob", "bytes",
//                             "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}
//  completions: {"tokens": [...], "token_logprobs": [...],
//                "top_logprobs": [{token: logprob, ...}], "text_offset": [...]}
// A token's text is its vocabulary piece; a piece that is not valid UTF-8 on
// its own (part of a character) shows U+FFFD in "token", its exact bytes in
// "bytes". A log-probability of -inf is written as -9999.0, as OpenAI does.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>

#include "valet/sampling.h"

namespace valet {

nlohmann::json ChatLogprobs(std::span<const TokenLogprobs> tokens);
// `text_offset`: the byte offset of the first token's text in the completion
// (a stream's earlier chunks came before it). Completions' top_logprobs
// always include the sampled token, so an entry has up to logprobs + 1 keys.
nlohmann::json CompletionLogprobs(std::span<const TokenLogprobs> tokens, size_t text_offset);
// Bytes of the tokens' pieces: how far a stream's text_offset moves.
size_t PieceBytes(std::span<const TokenLogprobs> tokens);

}  // namespace valet
