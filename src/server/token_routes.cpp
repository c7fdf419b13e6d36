#include "server/token_routes.h"

#include "server/api_response.h"
#include "util/utf8.h"

namespace kipp::server {
namespace {

RouteAnswer bad_request(const std::string& param, const std::string& message) {
  return {400, error_json(ApiError{400, param.empty() ? message : param + ": " + message, param})};
}

// A body that must be a JSON object.
bool read_object(std::string_view body, Json& out) {
  out = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  return out.is_object();
}

}  // namespace

RouteAnswer tokenize_route(const Tokenizer& tokenizer, std::string_view body) {
  Json request;
  if (!read_object(body, request))
    return bad_request("", "the body must be a JSON object such as {\"content\": \"text\"}");
  if (!request.contains("content") || !request["content"].is_string())
    return bad_request("content", "must be a string");
  bool with_pieces = false;
  if (request.contains("with_pieces")) {
    if (!request["with_pieces"].is_boolean()) return bad_request("with_pieces", "must be true or false");
    with_pieces = request["with_pieces"].get<bool>();
  }
  auto ids = tokenizer.encode(request["content"].get_ref<const std::string&>());
  if (!ids) return bad_request("content", ids.error().message);
  Json tokens = Json::array();
  for (const TokenId id : *ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string_view piece = tokenizer.token_bytes(id);
    Json shown;
    if (utf8::validate(piece)) {
      shown = std::string(piece);
    } else {
      shown = Json::array();
      for (const unsigned char byte : piece) shown.push_back(byte);
    }
    tokens.push_back({{"id", id}, {"piece", std::move(shown)}});
  }
  return {200, {{"tokens", std::move(tokens)}}};
}

RouteAnswer detokenize_route(const Tokenizer& tokenizer, std::string_view body) {
  Json request;
  if (!read_object(body, request))
    return bad_request("", "the body must be a JSON object such as {\"tokens\": [1, 2]}");
  if (!request.contains("tokens") || !request["tokens"].is_array())
    return bad_request("tokens", "must be an array of token ids");
  std::vector<TokenId> ids;
  for (const Json& id : request["tokens"]) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= tokenizer.vocab_size())
      return bad_request("tokens", id.dump() + " is not a token id: the vocabulary has " +
                                       std::to_string(tokenizer.vocab_size()) + " tokens");
    ids.push_back(TokenId(id.get<uint64_t>()));
  }
  auto text = tokenizer.decode(ids);
  if (!text) return bad_request("tokens", text.error().message);
  // Text cut inside a character is shown with U+FFFD, so the answer is always valid JSON.
  std::string content;
  utf8::append_lossy(*text, content);
  return {200, {{"content", std::move(content)}}};
}

Json props_json(const PropsInfo& info) {
  const bool chat = !info.chat_template.empty();
  return {{"chat_template", info.chat_template},
          {"chat_template_caps",
           {{"supports_system_role", chat},
            {"supports_tools", chat},
            {"supports_tool_calls", chat},
            {"supports_parallel_tool_calls", chat},
            {"supports_preserve_reasoning", chat},
            {"supports_string_content", chat},
            {"supports_typed_content", false}}},
          {"model_alias", info.model_names.empty() ? std::string() : info.model_names.front()},
          {"model_names", info.model_names},
          {"n_ctx", info.context},
          {"total_slots", info.max_sequences},
          {"modalities", {{"vision", false}, {"audio", false}}}};
}

}  // namespace kipp::server
