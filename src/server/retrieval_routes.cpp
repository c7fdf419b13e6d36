#include "server/retrieval_routes.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "engine/embedding.h"
#include "server/api_response.h"
#include "server/hidden_row_batch.h"
#include "util/base64.h"

namespace kipp::server {
namespace {

// A request's `model`, when it names one, must be one this server serves.
std::optional<ApiError> check_model(const RetrievalServing& serving, const std::string& model) {
  const auto& names = serving.model_names;
  if (std::find(names.begin(), names.end(), model) != names.end()) return std::nullopt;
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "`" : ", `") + name + "`";
  return ApiError{404, "the model `" + model + "` does not exist; this server serves " + listed, "model",
                  "invalid_request_error", "model_not_found"};
}

// Runs the prompts and answers with what `answer` makes of their rows.
std::optional<ApiError> run_batch(const RetrievalServing& serving, std::vector<std::vector<uint32_t>> prompts,
                                  const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<void> keep,
                                  std::function<Json(HiddenRowBatch::Outcome&)> answer) {
  auto batch = HiddenRowBatch::create(
      serving.scheduler, std::move(prompts),
      [exchange, answer = std::move(answer)](HiddenRowBatch::Outcome outcome) {
        if (outcome.error) return exchange->respond(error_response(ApiDialect::openai, *outcome.error));
        exchange->respond(json_response(200, answer(outcome)));
      },
      std::move(keep));
  if (std::optional<ApiError> refused = batch->start()) return refused;
  exchange->on_disconnect([batch] { batch->cancel(); });
  return std::nullopt;
}

Json embedding_value(const std::vector<float>& vector, bool base64) {
  if (!base64) return vector;
  std::vector<uint8_t> bytes(vector.size() * sizeof(float));  // little-endian FP32, as the SDKs decode it
  std::memcpy(bytes.data(), vector.data(), bytes.size());
  return base64_encode(bytes);
}

}  // namespace

std::optional<ApiError> serve_embeddings(const RetrievalServing& serving, const EmbeddingsRequest& request,
                                         const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<void> keep) {
  if (auto wrong = check_model(serving, request.model)) return wrong;
  auto width = embedding_width(serving.checkpoint, request.dimensions);
  if (!width) return ApiError{400, width.error().message, "dimensions"};
  std::vector<std::vector<uint32_t>> prompts;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const std::string field = request.inputs.size() == 1 ? "input" : "input[" + std::to_string(i) + "]";
    std::vector<uint32_t> ids = request.inputs[i].ids;  // token ids are used as given
    if (request.inputs[i].text) {
      auto encoded = embedding_tokens(serving.tokenizer, serving.checkpoint, *request.inputs[i].text);
      if (!encoded) return ApiError{400, field + " cannot be tokenized: " + encoded.error().message, "input"};
      ids = std::move(*encoded);
    }
    if (ids.size() > serving.context)
      return ApiError{400,
                      field + " has " + std::to_string(ids.size()) + " tokens; this server's context is " +
                          std::to_string(serving.context),
                      "input", "invalid_request_error", "context_length_exceeded"};
    prompts.push_back(std::move(ids));
  }
  const bool base64 = request.base64;
  const std::string model = serving.model_names.front();
  const uint32_t dimensions = *width;
  return run_batch(
      serving, std::move(prompts), exchange, std::move(keep),
      [base64, model, dimensions](HiddenRowBatch::Outcome& outcome) {
        Json data = Json::array();
        for (size_t i = 0; i < outcome.rows.size(); ++i)
          data.push_back({{"object", "embedding"},
                          {"index", i},
                          {"embedding", embedding_value(normalized_prefix(outcome.rows[i], dimensions), base64)}});
        return Json{{"object", "list"},
                    {"data", std::move(data)},
                    {"model", model},
                    {"usage", {{"prompt_tokens", outcome.prompt_tokens}, {"total_tokens", outcome.prompt_tokens}}}};
      });
}

std::optional<ApiError> serve_rerank(const RetrievalServing& serving, const RerankRequest& request,
                                     const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<void> keep) {
  if (request.model)
    if (auto wrong = check_model(serving, *request.model)) return wrong;
  const std::string instruction = request.instruction.value_or(std::string(kDefaultRerankInstruction));
  std::vector<std::vector<uint32_t>> prompts;
  std::vector<uint32_t> dropped;
  for (size_t i = 0; i < request.documents.size(); ++i) {
    auto prompt = rerank_prompt(serving.tokenizer, instruction, request.query, request.documents[i], serving.context);
    if (!prompt)
      return ApiError{400, "documents[" + std::to_string(i) + "]: " + prompt.error().message, "query",
                      "invalid_request_error", "context_length_exceeded"};
    dropped.push_back(prompt->document_tokens_dropped);
    prompts.push_back(std::move(prompt->tokens));
  }
  const RerankHead* head = serving.head;
  const std::string model = serving.model_names.front();
  const size_t top_n =
      std::min<size_t>(request.top_n.value_or(uint32_t(request.documents.size())), request.documents.size());
  const bool return_documents = request.return_documents;
  std::vector<std::string> documents = return_documents ? request.documents : std::vector<std::string>();
  return run_batch(
      serving, std::move(prompts), exchange, std::move(keep),
      [head, model, top_n, return_documents, documents = std::move(documents),
       dropped = std::move(dropped)](HiddenRowBatch::Outcome& outcome) {
        std::vector<double> scores;
        for (const std::vector<float>& row : outcome.rows) scores.push_back(head->score(row));
        std::vector<size_t> order(scores.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
        Json results = Json::array();
        for (size_t rank = 0; rank < top_n; ++rank) {
          const size_t i = order[rank];
          Json result = {{"index", i}, {"relevance_score", scores[i]}};
          if (return_documents) result["document"] = {{"text", documents[i]}};
          if (dropped[i]) result["truncated_tokens"] = dropped[i];  // cut from the document's end
          results.push_back(std::move(result));
        }
        return Json{{"model", model},
                    {"object", "list"},
                    {"results", std::move(results)},
                    {"usage", {{"prompt_tokens", outcome.prompt_tokens}, {"total_tokens", outcome.prompt_tokens}}}};
      });
}

}  // namespace kipp::server
