#include "server/api_server.h"

#include <algorithm>
#include <cstdio>

#include "chat/reasoning_split.h"
#include "chat/tool_calls.h"
#include "scheduler/completion_plan.h"
#include "server/agent_port.h"
#include "server/anthropic_request.h"
#include "server/anthropic_responder.h"
#include "server/api_response.h"
#include "server/openai_responder.h"
#include "server/responses_request.h"
#include "server/responses_responder.h"
#include "server/retrieval_routes.h"
#include "server/token_routes.h"
#include "util/sha256.h"

namespace kipp::server {
namespace {

// The request fields that hold the prompt and the output limit, as each endpoint names them.
const char* prompt_field(Endpoint endpoint) {
  return endpoint == Endpoint::completions ? "prompt" : endpoint == Endpoint::responses ? "input" : "messages";
}
const char* limit_field(Endpoint endpoint) {
  return endpoint == Endpoint::responses ? "max_output_tokens" : "max_tokens";
}

// A refusal of the serving policy as the API's error: the field at fault, and OpenAI's code for a
// context overflow.
ApiError refusal_error(const CompletionRefusal& refusal, Endpoint endpoint) {
  switch (refusal.reason) {
    case CompletionRefusal::Reason::prompt_too_long:
      return {400, refusal.message, prompt_field(endpoint), "invalid_request_error", "context_length_exceeded"};
    case CompletionRefusal::Reason::answer_too_long:
      return {400, refusal.message, limit_field(endpoint), "invalid_request_error", "context_length_exceeded"};
    case CompletionRefusal::Reason::invalid_sampling: break;
  }
  return {400, refusal.message, ""};  // the sampling settings: the message names the one out of range
}

// One prompt's report folded into those of all the prompts of a response: counts add up, times are
// the longest, the first error stands.
void add_report(RequestReport& all, const RequestReport& part) {
  if (!all.error) all.error = part.error;
  all.cancelled = all.cancelled || part.cancelled;
  all.prompt_tokens += part.prompt_tokens;
  all.cached_tokens += part.cached_tokens;
  all.completion_tokens += part.completion_tokens;
  all.draft_tokens += part.draft_tokens;
  all.accepted_draft_tokens += part.accepted_draft_tokens;
  all.queue_seconds = std::max(all.queue_seconds, part.queue_seconds);
  all.prompt_seconds = std::max(all.prompt_seconds, part.prompt_seconds);
  all.decode_seconds = std::max(all.decode_seconds, part.decode_seconds);
}

}  // namespace

void answer_while_loading(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) {
  if (request.path == "/health" || request.path == "/healthz")
    return exchange->respond(json_response(503, {{"status", "loading"}}, {{"Retry-After", "1"}}));
  const ApiError loading{503, "the model is still loading", "", "server_error", "loading"};
  exchange->respond(error_response(ApiDialect::openai, loading, {{"Retry-After", "1"}}));
}

ApiServer::ApiServer(const ApiConfig& config, const Tokenizer& tokenizer, Scheduler& scheduler)
    : config_(config), tokenizer_(tokenizer), scheduler_(scheduler), call_tokens_(find_call_tokens(tokenizer)) {
  limits_.vocab = uint32_t(tokenizer.vocab_size());
  limits_.ignore_unknown_fields = config.ignore_unknown_fields;
  limits_.json_form = config.json_form;
  limits_.call_syntax = call_syntax(config.variant);
  for (unsigned i = 0; i < std::max(1u, config.workers); ++i) workers_.emplace_back([this] { work(to_read_); });
  for (unsigned i = 0; i < std::max(1u, config.compile_workers); ++i)
    workers_.emplace_back([this] { work(to_compile_); });
}

ApiServer::~ApiServer() {
  {
    std::lock_guard lock(pending_mutex_);
    stopping_ = true;
  }
  to_read_.ready.notify_all();
  to_compile_.ready.notify_all();
  for (std::thread& worker : workers_) worker.join();
  for (Queue* queue : {&to_read_, &to_compile_})
    for (Pending& pending : queue->jobs)
      pending.exchange->respond(
          error_response(dialect_of(pending.request.path), {503, "the server is stopping", "", "server_error"}));
}

void ApiServer::work(Queue& queue) {
  while (true) {
    Pending next;
    {
      std::unique_lock lock(pending_mutex_);
      queue.ready.wait(lock, [&] { return stopping_ || !queue.jobs.empty(); });
      if (stopping_) return;
      next = std::move(queue.jobs.front());
      queue.jobs.pop_front();
    }
    serve(std::move(next));
  }
}

void ApiServer::serve(Pending pending) {
  if (pending.route == Route::tokenize || pending.route == Route::detokenize) {
    const RouteAnswer answer = pending.route == Route::tokenize ? tokenize_route(tokenizer_, pending.request.body)
                                                                : detokenize_route(tokenizer_, pending.request.body);
    return pending.exchange->respond(json_response(answer.status, answer.body));
  }
  if (pending.route == Route::embeddings || pending.route == Route::rerank) return retrieval(pending);
  if (std::optional<ApiError> refusal = generation_refusal(pending.request.path))
    return reject(pending.exchange, *refusal, {}, dialect_of(pending.request.path));
  const Endpoint endpoint = pending.route == Route::completions ? Endpoint::completions
                            : pending.route == Route::chat      ? Endpoint::chat
                            : pending.route == Route::responses || pending.route == Route::input_tokens
                                ? Endpoint::responses
                                : Endpoint::messages;
  const ApiDialect dialect = endpoint == Endpoint::messages ? ApiDialect::anthropic : ApiDialect::openai;
  const bool count_only = pending.route == Route::count_tokens || pending.route == Route::input_tokens;
  if (!pending.read) {
    auto read = read_request(endpoint, pending.request, count_only);
    if (!read.ok()) return reject(pending.exchange, read.error(), {}, dialect);
    pending.read = std::move(read.value());
    if (has_constraints(pending.read->request)) {
      {
        std::lock_guard lock(pending_mutex_);
        to_compile_.jobs.push_back(std::move(pending));
      }
      to_compile_.ready.notify_one();
      return;
    }
  } else if (auto compiled = compile_constraints(pending.read->request); !compiled.ok()) {
    return reject(pending.exchange, compiled.error(), {}, dialect);
  }
  if (pending.route == Route::count_tokens)
    return pending.exchange->respond(json_response(200, {{"input_tokens", pending.read->prompts.front().size()}}));
  if (pending.route == Route::input_tokens)
    return pending.exchange->respond(json_response(200, {{"object", "response.input_tokens"},
                                                         {"input_tokens", pending.read->prompts.front().size()}}));
  completion(endpoint, *pending.read, pending.exchange, pending.taken);
}

std::optional<ApiError> ApiServer::generation_refusal(const std::string& path) const {
  if (!config_.checkpoint || config_.checkpoint->role == Role::generate) return std::nullopt;
  return ApiError{400, role_refusal(*config_.checkpoint, Role::generate, path), "model", "invalid_request_error",
                  "model_role"};
}

void ApiServer::retrieval(Pending& pending) {
  const auto refuse = [&](const ApiError& error) {
    HttpHeaders headers;
    if (error.status == 503) headers.push_back({"Retry-After", "1"});
    reject(pending.exchange, error, std::move(headers));
  };
  // The role first: a route this checkpoint does not serve is refused whatever the body says.
  const Role wanted = pending.route == Route::embeddings ? Role::embed : Role::rerank;
  if (!config_.checkpoint || config_.checkpoint->role != wanted) {
    const std::string refusal = config_.checkpoint
                                    ? role_refusal(*config_.checkpoint, wanted, pending.request.path)
                                    : pending.request.path + " serves the role " + std::string(role_name(wanted)) +
                                          "; this server generates text";
    return refuse({400, refusal, "model", "invalid_request_error", "model_role"});
  }
  const RetrievalServing serving{*config_.checkpoint,       tokenizer_,          scheduler_,
                                 config_.rerank_head.get(), config_.model_names, config_.context};
  std::optional<ApiError> refused;
  std::vector<std::string> ignored;
  if (pending.route == Route::embeddings) {
    auto request = read_embeddings_request(pending.request.body, limits_);
    if (!request) return refuse(request.error());
    ignored = request->ignored_fields;
    refused = serve_embeddings(serving, *request, pending.exchange, pending.taken);
  } else {
    auto request = read_rerank_request(pending.request.body, limits_);
    if (!request) return refuse(request.error());
    ignored = request->ignored_fields;
    refused = serve_rerank(serving, *request, pending.exchange, pending.taken);
  }
  if (!ignored.empty()) {
    std::string listed;
    for (const std::string& field : ignored) listed += " " + field;
    std::fprintf(stderr, "kipp serve: %s accepted with fields it does not honour:%s\n", pending.request.path.c_str(),
                 listed.c_str());
  }
  if (refused) refuse(*refused);
}

// The key as OpenAI clients send it (Authorization: Bearer) or as Anthropic's do (x-api-key).
bool ApiServer::authorized(const HttpRequest& request) const {
  if (!config_.api_key) return true;
  const std::string anthropic = request.header("x-api-key");
  if (!anthropic.empty()) return same_secret(anthropic, *config_.api_key);
  const std::string header = request.header("authorization");
  constexpr std::string_view scheme = "Bearer ";
  if (header.size() <= scheme.size() || header.compare(0, scheme.size(), scheme) != 0) return false;
  return same_secret(std::string_view(header).substr(scheme.size()), *config_.api_key);
}

void ApiServer::reject(const std::shared_ptr<HttpExchange>& exchange, const ApiError& error, HttpHeaders headers,
                       ApiDialect dialect) {
  {
    std::lock_guard lock(rejected_mutex_);
    if (error.status == 401) ++rejected_.unauthorized;
    else if (error.status == 503) ++rejected_.overloaded;
    else ++rejected_.invalid;
  }
  exchange->respond(error_response(dialect, error, std::move(headers)));
}

// Every route, in one place: its path, its method, and what answers it. The answers that read
// nothing run at once on the I/O thread; the others are queued for the workers.
std::span<const ApiServer::RouteEntry> ApiServer::routes() {
  static constexpr RouteEntry kRoutes[] = {
      {"/health", "GET", &ApiServer::answer_health, {}},
      {"/healthz", "GET", &ApiServer::answer_health, {}},
      {"/metrics", "GET", &ApiServer::answer_metrics, {}},
      {"/v1/models", "GET", &ApiServer::answer_models, {}},
      {"/props", "GET", &ApiServer::answer_props, {}},
      {"/v1/completions", "POST", nullptr, Route::completions},
      {"/v1/chat/completions", "POST", nullptr, Route::chat},
      {"/v1/messages", "POST", nullptr, Route::messages},
      {"/v1/messages/count_tokens", "POST", nullptr, Route::count_tokens},
      {"/v1/responses", "POST", nullptr, Route::responses},
      {"/v1/responses/input_tokens", "POST", nullptr, Route::input_tokens},
      {"/tokenize", "POST", nullptr, Route::tokenize},
      {"/detokenize", "POST", nullptr, Route::detokenize},
      {"/v1/embeddings", "POST", nullptr, Route::embeddings},
      {"/v1/rerank", "POST", nullptr, Route::rerank},
      {"/rerank", "POST", nullptr, Route::rerank},
  };
  return kRoutes;
}

// The API key guards the APIs and what describes the model; health and metrics stay open to
// the router's checks and the scraper, which carry none. Any other /v1 path needs the key too,
// so that a client without it learns nothing of which routes exist.
bool ApiServer::needs_key(std::string_view path) {
  return path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize" || path == "/props" ||
         path == "/rerank";
}

void ApiServer::handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
  const std::string& path = request.path;
  const ApiDialect dialect = dialect_of(path);
  if (needs_key(path) && !authorized(request))
    return reject(exchange,
                  {401, "a valid API key is needed: send \"Authorization: Bearer KEY\" or \"x-api-key: KEY\"", "",
                   "authentication_error", "invalid_api_key"},
                  {{"WWW-Authenticate", "Bearer"}}, dialect);
  const std::span<const RouteEntry> table = routes();
  const auto entry = std::find_if(table.begin(), table.end(), [&](const RouteEntry& e) { return e.path == path; });
  if (entry == table.end())
    return reject(exchange, {404, "no route " + request.method + " " + path, "", "invalid_request_error", "not_found"},
                  {}, dialect);
  if (request.method != entry->method)
    return reject(exchange, {405, "use " + std::string(entry->method) + " " + path, "", "invalid_request_error"},
                  {{"Allow", std::string(entry->method)}}, dialect);
  if (entry->answer) return (this->*entry->answer)(exchange);
  if (draining_)
    return reject(exchange,
                  {503, "the server is shutting down: send the request to another replica", "", "server_error",
                   "draining"},
                  {{"Retry-After", "1"}}, dialect);
  auto taken = std::make_shared<Taken>(active_);
  {
    std::lock_guard lock(pending_mutex_);
    to_read_.jobs.push_back({entry->queued, std::move(request), std::move(exchange), std::move(taken), nullptr});
  }
  to_read_.ready.notify_one();
}

void ApiServer::answer_health(const std::shared_ptr<HttpExchange>& exchange) {
  if (draining_) return exchange->respond(json_response(503, {{"status", "draining"}}));
  exchange->respond(json_response(200, {{"status", "ok"}}));
}

void ApiServer::answer_metrics(const std::shared_ptr<HttpExchange>& exchange) {
  RejectionCounts rejected;
  {
    std::lock_guard lock(rejected_mutex_);
    rejected = rejected_;
  }
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4";
  response.body = prometheus_text(scheduler_.stats(), rejected, tool_counts_, config_.model_names.front());
  exchange->respond(std::move(response));
}

// One list in both APIs' shapes at once (OpenAI's object/created/owned_by, Anthropic's
// type/display_name/created_at and paging fields): each client reads its own and skips the rest.
void ApiServer::answer_models(const std::shared_ptr<HttpExchange>& exchange) {
  Json models = Json::array();
  for (const std::string& name : config_.model_names)
    models.push_back({{"id", name},
                      {"object", "model"},
                      {"created", 0},
                      {"owned_by", "kipp"},
                      {"max_model_len", config_.context},
                      {"type", "model"},
                      {"display_name", name},
                      {"created_at", "1970-01-01T00:00:00Z"}});
  exchange->respond(json_response(200, {{"object", "list"},
                                        {"data", std::move(models)},
                                        {"has_more", false},
                                        {"first_id", config_.model_names.front()},
                                        {"last_id", config_.model_names.back()}}));
}

void ApiServer::answer_props(const std::shared_ptr<HttpExchange>& exchange) {
  exchange->respond(json_response(200, props_json({config_.chat_template, config_.model_names, config_.context,
                                                   config_.max_sequences})));
}

ApiResult<std::vector<std::vector<uint32_t>>> ApiServer::prompts_for(ApiRequest& request) const {
  std::vector<std::vector<uint32_t>> prompts;
  std::vector<std::string> texts;  // to tokenize, with their field for errors
  std::vector<std::string> fields;
  if (request.endpoint != Endpoint::completions) {
    if (config_.variant == Variant::base)
      return ApiError{400, "this is a base checkpoint: it has no chat template; use /v1/completions", "messages"};
    ChatOptions options;
    options.enable_thinking = request.enable_thinking.value_or(true);
    if (!request.tools.empty() && !call_tokens_)
      return ApiError{400, "tools: " + call_tokens_.error().message, "tools"};
    for (const ChatTool& tool : request.tools) options.tools.push_back(tool.declaration);
    auto rendered = render_chat(config_.variant, request.messages, options);
    if (!rendered)
      return ApiError{400, std::string(prompt_field(request.endpoint)) + ": " + rendered.error().message,
                      prompt_field(request.endpoint)};
    prompts.emplace_back();
    texts.push_back(std::move(*rendered));
    fields.push_back(prompt_field(request.endpoint));
  } else {
    for (size_t i = 0; i < request.prompts.size(); ++i) {
      prompts.push_back(std::move(request.prompts[i].ids));
      texts.push_back(request.prompts[i].text.value_or(""));
      fields.push_back(request.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(i) + "]");
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!texts[i].empty()) {
      auto ids = tokenizer_.encode(texts[i]);
      if (!ids) return ApiError{400, fields[i] + " cannot be tokenized: " + ids.error().message, "prompt"};
      prompts[i] = std::move(*ids);
    }
    if (prompts[i].empty()) return ApiError{400, fields[i] + ": is empty (at least one token is needed)", "prompt"};
  }
  return prompts;
}

// A request body read for its endpoint, the model it names checked, its prompts tokenized.
ApiResult<std::unique_ptr<ApiServer::ReadBody>> ApiServer::read_request(Endpoint endpoint, const HttpRequest& http,
                                                                        bool count_only) const {
  auto read = std::make_unique<ReadBody>();
  KIPP_ASSIGN(read->request, endpoint == Endpoint::messages    ? read_anthropic_request(http.body, limits_, count_only)
                             : endpoint == Endpoint::responses ? read_responses_request(http.body, limits_, count_only)
                                                               : read_api_request(endpoint, http.body, limits_));
  ApiRequest& request = read->request;
  if (!request.ignored_fields.empty()) {
    std::string listed;
    for (const std::string& field : request.ignored_fields) listed += " " + field;
    std::fprintf(stderr, "kipp serve: %s accepted with fields it does not honour:%s\n", http.path.c_str(),
                 listed.c_str());
  }
  if (std::find(config_.model_names.begin(), config_.model_names.end(), request.model) == config_.model_names.end()) {
    std::string names;
    for (const std::string& name : config_.model_names) names += (names.empty() ? "`" : ", `") + name + "`";
    return ApiError{404, "the model `" + request.model + "` does not exist; this server serves " + names, "model",
                    "invalid_request_error", "model_not_found"};
  }
  KIPP_ASSIGN(read->prompts, prompts_for(request));
  return read;
}

void ApiServer::drain() { draining_ = true; }

std::string ApiServer::agent_reply() const {
  return server::agent_reply({scheduler_.stats(), config_.max_waiting, draining_});
}

ApiResult<CompletionRequest> ApiServer::work_for(Endpoint endpoint, const ApiRequest& request, size_t longest) const {
  CompletionAsk ask;
  ask.chat = endpoint != Endpoint::completions;
  ask.longest_prompt = longest;
  ask.max_tokens = request.max_tokens;
  ask.n = request.n;
  ask.sampling = sampling_for(request, recommended_sampling(config_.variant));
  ask.seeded = request.seed.has_value();
  ask.stop = request.stop;
  ask.logprobs = request.logprobs;
  ask.top_logprobs = request.top_logprobs;
  ask.thinking = request.enable_thinking.value_or(true);
  ask.thinking_budget = request.thinking_budget;
  if (request.structured) {
    ask.constraint = request.structured->automaton;
    ask.constraint_is_call = request.structured->tool_call;
    ask.calls_repeat = request.parallel_tool_calls && request.tool_choice == ToolChoice::required;
  }
  ask.calls_banned = request.tool_choice == ToolChoice::none;

  ServingLimits serving;
  serving.variant = config_.variant;
  serving.context = config_.context;
  serving.pool_positions = config_.pool_positions;
  serving.refuse_long_max_tokens = config_.refuse_long_max_tokens;
  serving.default_max_tokens = config_.default_max_tokens;
  serving.vocab = limits_.vocab;
  if (call_tokens_) serving.call_tokens = *call_tokens_;

  auto planned = plan_completion(ask, serving);
  if (!planned.ok()) return refusal_error(planned.error(), endpoint);
  return std::move(planned).value();
}

void ApiServer::completion(Endpoint endpoint, ReadBody& read, const std::shared_ptr<HttpExchange>& exchange,
                           const std::shared_ptr<Taken>& taken) {
  const ApiDialect dialect = endpoint == Endpoint::messages ? ApiDialect::anthropic : ApiDialect::openai;
  const auto refuse = [&](const ApiError& error, HttpHeaders headers = {}) {
    reject(exchange, error, std::move(headers), dialect);
  };
  const ApiRequest& request = read.request;
  std::vector<std::vector<uint32_t>>& prompts = read.prompts;
  size_t longest = 0;
  for (const std::vector<uint32_t>& prompt : prompts) longest = std::max(longest, prompt.size());
  ApiResult<CompletionRequest> planned = work_for(endpoint, request, longest);
  if (!planned.ok()) return refuse(planned.error());
  const CompletionRequest& work = planned.value();

  const bool calls_possible = !request.tools.empty() && request.tool_choice != ToolChoice::none;
  AnswerOptions answer;
  answer.find_calls = calls_possible;
  if (calls_possible) answer.read_call = call_reader(call_syntax(config_.variant), request.tools);
  answer.parallel_calls = request.parallel_tool_calls;
  std::shared_ptr<Responder> responder;
  if (endpoint == Endpoint::messages) {
    answer.call_id_prefix = "toolu_";
    responder = make_anthropic_responder(request, config_.model_names.front(), exchange, answer, tool_counts_,
                                         uint32_t(longest));
  } else if (endpoint == Endpoint::responses) {
    responder = make_responses_responder(request, config_.model_names.front(), exchange, answer, tool_counts_);
  } else {
    responder = make_openai_responder(new_response_header(endpoint, config_.model_names.front()), request, tokenizer_,
                                      exchange, answer, tool_counts_, uint32_t(prompts.size() * request.n));
  }
  // Several prompts are several scheduler requests, scheduled together; their choices are
  // numbered prompt by prompt (choice i of prompt p is index p * n + i, sampled with seed + that
  // index), and the response is done when all of them are.
  struct Gathered {
    std::mutex mutex;
    size_t remaining;
    RequestReport report;
  };
  auto gathered = std::make_shared<Gathered>();
  gathered->remaining = prompts.size();
  std::vector<std::shared_ptr<RequestTicket>> tickets;
  for (size_t p = 0; p < prompts.size(); ++p) {
    CompletionRequest part = work;
    part.prompt = std::move(prompts[p]);
    const uint32_t first_choice = uint32_t(p) * request.n;
    part.sampling.seed = work.sampling.seed + first_choice;
    part.on_update = [responder, first_choice](const ChoiceUpdate& update) {
      if (first_choice == 0) return responder->update(update);
      ChoiceUpdate renumbered = update;
      renumbered.choice += first_choice;
      responder->update(renumbered);
    };
    part.on_done = [responder, gathered, taken](const RequestReport& report) {
      std::lock_guard lock(gathered->mutex);
      add_report(gathered->report, report);
      if (--gathered->remaining == 0) responder->done(gathered->report);
    };
    Submission submission = scheduler_.submit(std::move(part));
    if (submission.verdict != Verdict::queued) {
      for (const auto& ticket : tickets) ticket->cancel();  // their on_done sends nothing: the reject answers
      if (submission.verdict == Verdict::too_large)
        return refuse(
            {400, submission.reason, limit_field(endpoint), "invalid_request_error", "context_length_exceeded"});
      return refuse({503, submission.reason, "", "server_error", "overloaded"}, {{"Retry-After", "1"}});
    }
    tickets.push_back(submission.ticket);
  }
  exchange->on_disconnect([tickets] {
    for (const auto& ticket : tickets) ticket->cancel();
  });
  responder->start();
}

}  // namespace kipp::server
