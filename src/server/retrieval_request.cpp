#include "server/retrieval_request.h"

#include <set>

#include "server/request_fields.h"

namespace kipp::server {
namespace {

using Json = nlohmann::ordered_json;

// A field the endpoint does not know: a 400, unless the operator accepts such fields.
ApiStatus unknown_field(const std::string& key, const ApiLimits& limits, std::vector<std::string>& ignored) {
  if (!limits.ignore_unknown_fields)
    return field_error(key, "is not a field of this endpoint (kipp serve --ignore-unknown-fields accepts it)");
  ignored.push_back(key);
  return {};
}

ApiResult<std::vector<uint32_t>> token_ids(const Json& array, const std::string& field, const ApiLimits& limits) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < array.size(); ++i) {
    KIPP_ASSIGN(const int64_t id,
                whole_number(array[i], field + "[" + std::to_string(i) + "]", 0, int64_t(limits.vocab) - 1));
    ids.push_back(uint32_t(id));
  }
  if (ids.empty()) return field_error(field, "is empty (at least one token is needed)");
  return ids;
}

ApiResult<EmbeddingsRequest::Input> text_input(const Json& value, const std::string& field) {
  const std::string text = value.get<std::string>();
  if (text.empty()) return field_error(field, "is an empty string (at least one character is needed)");
  return EmbeddingsRequest::Input{text, {}};
}

ApiStatus read_input(const Json& input, const ApiLimits& limits, std::vector<EmbeddingsRequest::Input>& out) {
  if (input.is_string()) {
    KIPP_ASSIGN(EmbeddingsRequest::Input one, text_input(input, "input"));
    out.push_back(std::move(one));
    return {};
  }
  if (!input.is_array() || input.empty())
    return field_error("input",
                       "must be a string, an array of strings, an array of token ids or an array of arrays "
                       "of token ids, with at least one element");
  if (input.size() > kMaxEmbeddingInputs)
    return field_error("input", "has " + std::to_string(input.size()) + " inputs; at most " +
                                    std::to_string(kMaxEmbeddingInputs) + " are allowed");
  if (input[0].is_number()) {  // one input of token ids
    KIPP_ASSIGN(std::vector<uint32_t> ids, token_ids(input, "input", limits));
    out.push_back({std::nullopt, std::move(ids)});
    return {};
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const std::string field = "input[" + std::to_string(i) + "]";
    if (input[i].is_string()) {
      KIPP_ASSIGN(EmbeddingsRequest::Input one, text_input(input[i], field));
      out.push_back(std::move(one));
    } else if (input[i].is_array()) {
      KIPP_ASSIGN(std::vector<uint32_t> ids, token_ids(input[i], field, limits));
      out.push_back({std::nullopt, std::move(ids)});
    } else {
      return field_error(field, "must be a string or an array of token ids");
    }
  }
  return {};
}

ApiResult<std::string> document_text(const Json& document, const std::string& field) {
  if (document.is_string()) return document.get<std::string>();
  if (document.is_object() && document.contains("text") && document["text"].is_string())
    return document["text"].get<std::string>();
  return field_error(field, "must be a string or an object with a string \"text\"");
}

// The body as a JSON object, within the server's limits.
ApiResult<Json> request_object(std::string_view body, const ApiLimits& limits) {
  KIPP_ASSIGN(Json json, parse_request_json(body, limits));
  if (!json.is_object()) return ApiError{400, "the request body must be a JSON object", ""};
  return json;
}

}  // namespace

ApiResult<EmbeddingsRequest> read_embeddings_request(std::string_view body, const ApiLimits& limits) {
  KIPP_ASSIGN(const Json json, request_object(body, limits));
  EmbeddingsRequest request;
  for (const auto& [key, value] : json.items()) {
    if (value.is_null() && key != "input" && key != "model") continue;  // null = absent
    if (key == "model") {
      if (!value.is_string()) return field_error("model", "must be a string");
      request.model = value.get<std::string>();
    } else if (key == "input") {
      KIPP_TRY(read_input(value, limits, request.inputs));
    } else if (key == "encoding_format") {
      if (value != "float" && value != "base64") return field_error(key, "must be \"float\" or \"base64\"");
      request.base64 = value == "base64";
    } else if (key == "dimensions") {
      KIPP_ASSIGN(const int64_t dimensions, whole_number(value, key, 1, 1 << 20));
      request.dimensions = uint32_t(dimensions);
    } else if (key == "user") {
      if (!value.is_string()) return field_error(key, "must be a string");
    } else {
      KIPP_TRY(unknown_field(key, limits, request.ignored_fields));
    }
  }
  if (!json.contains("model")) return field_error("model", "is required");
  if (!json.contains("input")) return field_error("input", "is required");
  return request;
}

ApiResult<RerankRequest> read_rerank_request(std::string_view body, const ApiLimits& limits) {
  KIPP_ASSIGN(const Json json, request_object(body, limits));
  RerankRequest request;
  for (const auto& [key, value] : json.items()) {
    if (value.is_null() && key != "query" && key != "documents") continue;  // null = absent
    if (key == "model") {
      if (!value.is_string()) return field_error(key, "must be a string");
      request.model = value.get<std::string>();
    } else if (key == "query") {
      if (!value.is_string() || value.get<std::string>().empty()) return field_error(key, "must be a non-empty string");
      request.query = value.get<std::string>();
    } else if (key == "documents") {
      if (!value.is_array() || value.empty()) return field_error(key, "must be a non-empty array");
      if (value.size() > kMaxRerankDocuments)
        return field_error(key, "has " + std::to_string(value.size()) + " documents; at most " +
                                    std::to_string(kMaxRerankDocuments) + " are allowed");
      for (size_t i = 0; i < value.size(); ++i) {
        KIPP_ASSIGN(std::string text, document_text(value[i], "documents[" + std::to_string(i) + "]"));
        request.documents.push_back(std::move(text));
      }
    } else if (key == "top_n") {
      KIPP_ASSIGN(const int64_t top_n, whole_number(value, key, 1, kMaxRerankDocuments));
      request.top_n = uint32_t(top_n);
    } else if (key == "return_documents") {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      request.return_documents = value.get<bool>();
    } else if (key == "instruction") {
      if (!value.is_string() || value.get<std::string>().empty()) return field_error(key, "must be a non-empty string");
      request.instruction = value.get<std::string>();
    } else {
      KIPP_TRY(unknown_field(key, limits, request.ignored_fields));
    }
  }
  if (!json.contains("query")) return field_error("query", "is required");
  if (!json.contains("documents")) return field_error("documents", "is required");
  return request;
}

}  // namespace kipp::server
