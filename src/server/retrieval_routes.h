// POST /v1/embeddings (OpenAI's shape) and POST /v1/rerank and /rerank (Jina's and Cohere's):
// each input, or each document's prompt, is a hidden-row request of the scheduler
// (hidden_row_batch.h); the vectors and scores are made from the rows as `kipp embed` and
// `kipp rerank` make them (engine/embedding.h, engine/rerank.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/rerank.h"
#include "registry/registry.h"
#include "scheduler/scheduler.h"
#include "server/api_error.h"
#include "server/http_exchange.h"
#include "server/retrieval_request.h"
#include "tokenizer/tokenizer.h"

namespace kipp::server {

struct RetrievalServing {
  const Checkpoint& checkpoint;
  const Tokenizer& tokenizer;
  Scheduler& scheduler;
  const RerankHead* head;                       // a rerank checkpoint's "yes" and "no" rows
  const std::vector<std::string>& model_names;  // the first is what responses name
  uint32_t context;                             // the longest prompt a sequence may hold
};

// Answers `exchange` (or returns the refusal to answer with, before anything is submitted), on a
// checkpoint of the endpoint's role. `keep` is held until the answer is sent.
std::optional<ApiError> serve_embeddings(const RetrievalServing& serving, const EmbeddingsRequest& request,
                                         const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<void> keep);
std::optional<ApiError> serve_rerank(const RetrievalServing& serving, const RerankRequest& request,
                                     const std::shared_ptr<HttpExchange>& exchange, std::shared_ptr<void> keep);

}  // namespace kipp::server
