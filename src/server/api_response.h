// The pieces of response shapes: OpenAI envelopes, usage (with the exact reused prefix in
// prompt_tokens_details), a llama.cpp-style timings object and logprobs in each endpoint's native
// shape; SSE events (named, for Anthropic); JSON responses; both APIs' error bodies and error
// responses, the HTTP layer's own errors included; response ids.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/answer_decoder.h"
#include "scheduler/scheduler.h"
#include "server/api_request.h"
#include "server/http_exchange.h"
#include "tokenizer/tokenizer.h"

namespace kipp::server {

using Json = nlohmann::ordered_json;  // fields in the order OpenAI writes them; top logprobs by rank

// What identifies one response and its chunks.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::completions;
  std::string id;       // cmpl-… or chatcmpl-…
  int64_t created = 0;  // Unix seconds
  std::string model;
};

ResponseHeader new_response_header(Endpoint endpoint, const std::string& model);

// "stop" or "length" (a cancelled choice is never reported: its client is gone).
const char* finish_reason_text(FinishReason reason);

// `reasoning_tokens` (chat): sampled inside think blocks, over all choices.
Json usage_json(const RequestReport& report, std::optional<uint32_t> reasoning_tokens = std::nullopt);
Json timings_json(const RequestReport& report);

// Logprobs of `tokens` in the endpoint's shape; `text_offset` is where the first token's text
// starts within the choice's text, in characters (completions only).
Json completion_logprobs_json(const std::vector<TokenReport>& tokens, const Tokenizer& tokenizer, size_t text_offset);
Json chat_logprobs_json(const std::vector<TokenReport>& tokens, const Tokenizer& tokenizer);

// The envelope of a whole response or of one chunk, with `choices` filled in by the caller.
Json response_envelope(const ResponseHeader& header, bool chunk);

// One server-sent event, invalid UTF-8 replaced (token pieces may end mid-character).
std::string sse_event(const Json& data);
// The same with an `event:` line (Anthropic's streams name every event).
std::string named_sse_event(std::string_view name, const Json& data);
std::string json_text(const Json& data);
HttpResponse json_response(int status, const Json& body, HttpHeaders headers = {});

// The API whose shapes an answer takes.
enum class ApiDialect { openai, anthropic };
// Anthropic's under /v1/messages (count_tokens included); OpenAI's everywhere else.
ApiDialect dialect_of(std::string_view path);

// {"error": {"message", "type", "param", "code"}}: the one place OpenAI's error shape is built.
Json error_json(const ApiError& error);
// {"type": "error", "error": {"type", "message"}}, the type from the status.
Json anthropic_error_json(const ApiError& error);
Json error_body(ApiDialect dialect, const ApiError& error);
// A whole response refusing a request, with the error's status, in the dialect's shape.
HttpResponse error_response(ApiDialect dialect, const ApiError& error, HttpHeaders headers = {});
// A request that failed while generating: a 400 when it went over a limit on what one request may
// cost (the constraint's matcher steps: the client's to change), else a 500 of `server_type`.
ApiError generation_error(const Error& error, const std::string& server_type);
// The HTTP layer's own errors (limits, malformed requests, refused connections, failed handlers)
// in the shape of the route's API (OpenAI's when the path is not known):
// HttpServerOptions::error_format for `kipp serve`.
HttpResponse http_error_response(const HttpError& error);

// `prefix` and `digits` random hex digits: response ids.
std::string random_id(std::string_view prefix, size_t digits);

}  // namespace kipp::server
