// The OpenAI- and Anthropic-compatible APIs over the HTTP layer: routes, authentication, the
// drain, translation of request bodies into scheduler requests and of scheduler updates into
// responses or SSE events (through the responders). It talks to the scheduler only (never to the
// backend), and to the client only through HttpExchange.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "chat/tool_calls.h"
#include "engine/rerank.h"
#include "registry/registry.h"
#include "scheduler/scheduler.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/http_exchange.h"
#include "server/metrics.h"
#include "tokenizer/tokenizer.h"

namespace kipp::server {

struct ApiConfig {
  // The names requests may give as `model`, all listed by /v1/models; responses (and /metrics)
  // use the first. Several because clients are configured with different spellings: the
  // operator's --served-model-name aliases, the registry id, the Hugging Face repository.
  std::vector<std::string> model_names;
  Variant variant = Variant::base;
  // The served registry entry: its role decides which endpoints answer (generation, or
  // /v1/embeddings, or /v1/rerank); null serves generation. A rerank checkpoint's "yes" and "no"
  // head rows come with it.
  const Checkpoint* checkpoint = nullptr;
  std::shared_ptr<const RerankHead> rerank_head;
  uint32_t context = 0;
  uint32_t pool_positions = 0;  // the shared KV pool's size: a default max_tokens must fit it
  std::optional<std::string>
      api_key;                // when set, every /v1 route needs "Authorization: Bearer KEY" or "x-api-key: KEY"
  std::string chat_template;  // the artifact's, for GET /props
  bool ignore_unknown_fields = false;                     // --ignore-unknown-fields: see ApiLimits
  bool refuse_long_max_tokens = false;                    // --refuse-long-max-tokens: see ServingLimits
  std::optional<uint32_t> default_max_tokens;             // --default-max-tokens: see ServingLimits
  grammar::JsonForm json_form = grammar::JsonForm::tidy;  // --json-form: see ApiLimits
  uint32_t max_sequences = 0;                             // evaluated together, for GET /props
  uint32_t max_waiting = 0;                               // the queue's room, for the agent's load
  // Threads that read and tokenize request bodies.
  unsigned workers = 2;
  // Threads that compile constraints (schemas, grammars, forced calls), apart from the workers so
  // that a request without one never waits behind a costly compile.
  unsigned compile_workers = 2;
};

class ApiServer {
 public:
  ApiServer(const ApiConfig& config, const Tokenizer& tokenizer, Scheduler& scheduler);
  // Answers what is still queued for the workers with 503 and joins them; destroy before the scheduler.
  ~ApiServer();
  // The HttpHandler: answers one request. Completions are read, tokenized and submitted on the
  // worker threads, so a large body never holds up the I/O thread (and the other connections);
  // their constraints are compiled on the compile threads.
  void handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange);

  // Graceful shutdown: /health turns 503 "draining" and requests are refused with 503 (a router
  // retries them elsewhere), while those already taken run to their end. Thread-safe.
  void drain();
  // Whether every request taken has been answered (its last byte handed to the HTTP layer).
  bool idle() const { return *active_ == 0; }
  // The HAProxy agent's line for this replica (agent_port.h).
  std::string agent_reply() const;

 private:
  // Work that reads a body (completions, tokenizing) runs on the worker thread.
  enum class Route {
    completions,
    chat,
    messages,
    count_tokens,
    responses,
    input_tokens,
    tokenize,
    detokenize,
    embeddings,
    rerank
  };
  struct RouteEntry {
    std::string_view path;
    std::string_view method;
    void (ApiServer::*answer)(const std::shared_ptr<HttpExchange>&);  // at once, or else
    Route queued;                                                     // read on a worker
  };
  static std::span<const RouteEntry> routes();
  static bool needs_key(std::string_view path);
  void answer_health(const std::shared_ptr<HttpExchange>& exchange);
  void answer_metrics(const std::shared_ptr<HttpExchange>& exchange);
  void answer_models(const std::shared_ptr<HttpExchange>& exchange);
  void answer_props(const std::shared_ptr<HttpExchange>& exchange);
  // Held from the moment a request is taken until nothing of it is left (its scheduler request
  // included), so that idle() means what it says.
  class Taken {
   public:
    explicit Taken(std::shared_ptr<std::atomic<unsigned>> active) : active_(std::move(active)) { ++*active_; }
    ~Taken() { --*active_; }
    Taken(const Taken&) = delete;
    Taken& operator=(const Taken&) = delete;

   private:
    std::shared_ptr<std::atomic<unsigned>> active_;
  };
  // A body read, with its prompts tokenized; its constraint not yet compiled.
  struct ReadBody {
    ApiRequest request;
    std::vector<std::vector<uint32_t>> prompts;
  };
  struct Pending {
    Route route;
    HttpRequest request;
    std::shared_ptr<HttpExchange> exchange;
    std::shared_ptr<Taken> taken;
    std::unique_ptr<ReadBody> read;  // set once read, when its constraint waits for a compile thread
  };
  struct Queue {
    std::deque<Pending> jobs;
    std::condition_variable ready;
  };
  void work(Queue& queue);
  // POST /v1/embeddings and /v1/rerank (retrieval_routes.h).
  void retrieval(Pending& pending);
  // A generation endpoint on a checkpoint of another role: the refusal, naming both roles.
  std::optional<ApiError> generation_refusal(const std::string& path) const;
  // A request taken from a queue: read on a worker, compiled on a compile thread, then answered.
  void serve(Pending pending);
  void completion(Endpoint endpoint, ReadBody& read, const std::shared_ptr<HttpExchange>& exchange,
                  const std::shared_ptr<Taken>& taken);
  // What a completion asks of the scheduler, all but the prompt: the request's fields as a
  // CompletionAsk, planned by plan_completion (the serving policy), and a refusal as this API's
  // error with the field at fault. `longest`: the longest of its prompts, in tokens.
  ApiResult<CompletionRequest> work_for(Endpoint endpoint, const ApiRequest& request, size_t longest) const;
  ApiResult<std::unique_ptr<ReadBody>> read_request(Endpoint endpoint, const HttpRequest& http, bool count_only) const;
  // The prompts' token ids: the rendered conversation (chat), or each prompt (completions).
  ApiResult<std::vector<std::vector<uint32_t>>> prompts_for(ApiRequest& request) const;
  void reject(const std::shared_ptr<HttpExchange>& exchange, const ApiError& error, HttpHeaders headers = {},
              ApiDialect dialect = ApiDialect::openai);
  bool authorized(const HttpRequest& request) const;

  const ApiConfig config_;
  const Tokenizer& tokenizer_;
  Scheduler& scheduler_;
  ApiLimits limits_;
  std::mutex rejected_mutex_;
  RejectionCounts rejected_;
  const Result<CallTokens> call_tokens_;  // an error when the tokenizer has no call tokens: tools are refused
  ToolCallCounts tool_counts_;

  // Requests taken and not yet answered; shared with the scheduler's callbacks, which may outlive this.
  const std::shared_ptr<std::atomic<unsigned>> active_ = std::make_shared<std::atomic<unsigned>>(0);
  std::atomic<bool> draining_{false};
  std::mutex pending_mutex_;  // guards both queues and stopping_
  Queue to_read_;             // taken by the workers
  Queue to_compile_;          // taken by the compile threads
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // both kinds
};

// Answers while the model loads: /health and /healthz say 503 "loading", everything else 503.
void answer_while_loading(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange);

}  // namespace kipp::server
