// The OpenAI-compatible API over the HTTP layer: routes, authentication, translation of request
// bodies into scheduler requests and of scheduler updates into responses or SSE chunks. It talks
// to the scheduler only (never to the backend), and to the client only through HttpExchange.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/scheduler.h"
#include "registry/registry.h"
#include "server/api_request.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "tokenizer/tokenizer.h"

namespace kipp::server {

struct ApiConfig {
  std::string model_id;  // what /v1/models lists and requests must name
  Variant variant = Variant::base;
  uint32_t context = 0;
  uint32_t pool_positions = 0;  // the shared KV pool's size: a default max_tokens must fit it
  std::optional<std::string> api_key;  // when set, every /v1 route needs "Authorization: Bearer KEY"
};

class ApiServer {
 public:
  ApiServer(const ApiConfig& config, const Tokenizer& tokenizer, Scheduler& scheduler);
  // The HttpHandler: answers one request.
  void handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange);

 private:
  void completion(Endpoint endpoint, const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange);
  std::optional<ApiError> prompt_for(ApiRequest& request, std::vector<uint32_t>& prompt) const;
  void reject(const std::shared_ptr<HttpExchange>& exchange, const ApiError& error, HttpHeaders headers = {});
  bool authorized(const HttpRequest& request) const;

  const ApiConfig config_;
  const Tokenizer& tokenizer_;
  Scheduler& scheduler_;
  ApiLimits limits_;
  std::mutex rejected_mutex_;
  RejectionCounts rejected_;
};

// Answers while the model loads: /health and /healthz say 503 "loading", everything else 503.
void answer_while_loading(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange);

}  // namespace kipp::server
