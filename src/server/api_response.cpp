#include "server/api_response.h"

#include <chrono>
#include <random>

namespace kipp::server {
namespace {

std::string random_hex(size_t digits) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string out(digits, '0');
  for (char& c : out) c = hex[rng() & 15];
  return out;
}

Json token_bytes_json(std::string_view bytes) {
  Json out = Json::array();
  for (unsigned char c : bytes) out.push_back(int(c));
  return out;
}

std::string token_text(const Tokenizer& tokenizer, uint32_t token) {
  auto text = tokenizer.decode(std::span(&token, 1));
  return text ? *text : std::string();
}

// Unicode characters (code points) in UTF-8 text: what text_offset counts, as in OpenAI's API.
size_t characters_in(std::string_view text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

double per_second(uint32_t count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

}  // namespace

ResponseHeader new_response_header(Endpoint endpoint, const std::string& model) {
  ResponseHeader header;
  header.endpoint = endpoint;
  header.id = (endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-") + random_hex(24);
  header.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  header.model = model;
  return header;
}

const char* finish_reason_text(FinishReason reason) { return reason == FinishReason::length ? "length" : "stop"; }

Json usage_json(const RequestReport& report, std::optional<uint32_t> reasoning_tokens) {
  Json usage = {{"prompt_tokens", report.prompt_tokens},
                {"completion_tokens", report.completion_tokens},
                {"total_tokens", report.prompt_tokens + report.completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", report.cached_tokens}}}};
  if (reasoning_tokens) usage["completion_tokens_details"] = {{"reasoning_tokens", *reasoning_tokens}};
  return usage;
}

Json timings_json(const RequestReport& report) {
  const uint32_t evaluated = report.prompt_tokens - report.cached_tokens;
  Json timings = {{"cache_n", report.cached_tokens},
                  {"prompt_n", evaluated},
                  {"prompt_ms", report.prompt_seconds * 1e3},
                  {"prompt_per_token_ms", evaluated ? report.prompt_seconds * 1e3 / evaluated : 0.0},
                  {"prompt_per_second", per_second(evaluated, report.prompt_seconds)},
                  {"predicted_n", report.completion_tokens},
                  {"predicted_ms", report.decode_seconds * 1e3},
                  {"predicted_per_token_ms",
                   report.completion_tokens ? report.decode_seconds * 1e3 / report.completion_tokens : 0.0},
                  {"predicted_per_second", per_second(report.completion_tokens, report.decode_seconds)},
                  {"queue_ms", report.queue_seconds * 1e3}};
  // llama-server's names for what speculation drafted and kept (only when it drafted).
  if (report.draft_tokens > 0) {
    timings["draft_n"] = report.draft_tokens;
    timings["draft_n_accepted"] = report.accepted_draft_tokens;
  }
  return timings;
}

Json completion_logprobs_json(const std::vector<TokenReport>& tokens, const Tokenizer& tokenizer, size_t text_offset) {
  Json out = {{"tokens", Json::array()},
              {"token_logprobs", Json::array()},
              {"top_logprobs", Json::array()},
              {"text_offset", Json::array()}};
  for (const TokenReport& token : tokens) {
    out["tokens"].push_back(token.text);
    out["token_logprobs"].push_back(token.logprobs.chosen.logprob);
    Json top = Json::object();
    for (const TokenLogprob& alternative : token.logprobs.top)
      top[token_text(tokenizer, alternative.token)] = alternative.logprob;
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(text_offset);
    text_offset += characters_in(token.text);
  }
  return out;
}

Json chat_logprobs_json(const std::vector<TokenReport>& tokens, const Tokenizer& tokenizer) {
  Json content = Json::array();
  for (const TokenReport& token : tokens) {
    Json top = Json::array();
    for (const TokenLogprob& alternative : token.logprobs.top)
      top.push_back({{"token", token_text(tokenizer, alternative.token)},
                     {"logprob", alternative.logprob},
                     {"bytes", token_bytes_json(tokenizer.token_bytes(alternative.token))}});
    content.push_back({{"token", token.text},
                       {"logprob", token.logprobs.chosen.logprob},
                       {"bytes", token_bytes_json(token.text)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

Json response_envelope(const ResponseHeader& header, bool chunk) {
  const bool chat = header.endpoint == Endpoint::chat;
  return {{"id", header.id},
          {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array()}};
}

std::string json_text(const Json& data) { return data.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string sse_event(const Json& data) { return "data: " + json_text(data) + "\n\n"; }

std::string named_sse_event(std::string_view name, const Json& data) {
  return "event: " + std::string(name) + "\n" + sse_event(data);
}

HttpResponse json_response(int status, const Json& body, HttpHeaders headers) {
  HttpResponse response;
  response.status = status;
  response.body = json_text(body);
  response.headers = std::move(headers);
  return response;
}

Json error_json(const ApiError& error) {
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", error.param.empty() ? Json(nullptr) : Json(error.param)},
            {"code", error.code.empty() ? Json(nullptr) : Json(error.code)}}}};
}

// Anthropic names its error types by what went wrong; the status says the same.
Json anthropic_error_json(const ApiError& error) {
  const char* type = "invalid_request_error";
  switch (error.status) {
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503:
    case 529: type = "overloaded_error"; break;
    default:
      if (error.status >= 500) type = "api_error";
  }
  return {{"type", "error"}, {"error", {{"type", type}, {"message", error.message}}}};
}

Json error_body(ApiDialect dialect, const ApiError& error) {
  return dialect == ApiDialect::anthropic ? anthropic_error_json(error) : error_json(error);
}

HttpResponse error_response(ApiDialect dialect, const ApiError& error, HttpHeaders headers) {
  return json_response(error.status, error_body(dialect, error), std::move(headers));
}

ApiError generation_error(const Error& error, const std::string& server_type) {
  if (error.over_limit) return {400, "the request went over a limit while generating: " + error.message, ""};
  return {500, "generation failed: " + error.message, "", server_type};
}

ApiDialect dialect_of(std::string_view path) {
  return path.starts_with("/v1/messages") ? ApiDialect::anthropic : ApiDialect::openai;
}

// The layer sends no type of its own: a server fault or the client's, as the status says
// (anthropic_error_json names Anthropic's types by the status alone).
HttpResponse http_error_response(const HttpError& error) {
  const char* type = error.status >= 500 ? "server_error" : "invalid_request_error";
  return error_response(dialect_of(error.path), {error.status, error.message, "", type, error.code});
}

std::string random_id(std::string_view prefix, size_t digits) { return std::string(prefix) + random_hex(digits); }

}  // namespace kipp::server
