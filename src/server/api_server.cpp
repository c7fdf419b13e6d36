#include "server/api_server.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "engine/reasoning_split.h"
#include "engine/tool_calls.h"
#include "server/api_response.h"
#include "server/token_routes.h"

namespace kipp::server {
namespace {

HttpResponse json_response(int status, const Json& body, HttpHeaders headers = {}) {
  HttpResponse response;
  response.status = status;
  response.body = json_text(body);
  response.headers = std::move(headers);
  return response;
}

// Compares without stopping at the first difference, so the time taken says nothing of the key.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) difference |= uint8_t(a[i] ^ (i < b.size() ? b[i] : 0));
  return difference == 0;
}

// The thinking layout of a chat answer, from the checkpoint's variant and the request.
ReasoningSplitter::Start reasoning_start(Variant variant, bool enable_thinking) {
  switch (variant) {
    case Variant::instruct: return enable_thinking ? ReasoningSplitter::Start::maybe_think : ReasoningSplitter::Start::content;
    case Variant::thinking_2507: return ReasoningSplitter::Start::reasoning;
    default: return ReasoningSplitter::Start::content;
  }
}

// Everything one request produces, turned into a response or SSE chunks. Its methods run on the
// scheduler thread (updates, done) and, for start(), on the I/O thread; the mutex orders them.
class Responder : public std::enable_shared_from_this<Responder> {
 public:
  // `tool_tokens`: find tool calls in the answers (null when the request offers no tools, or
  // tool_choice is "none"); `tool_counts` counts them for /metrics.
  Responder(ResponseHeader header, const ApiRequest& request, const Tokenizer& tokenizer,
            std::shared_ptr<HttpExchange> exchange, ReasoningSplitter::Start thinking,
            const ToolCallTokens* tool_tokens, ToolCallCounts& tool_counts, uint32_t choice_count,
            std::optional<uint32_t> think_close)
      : header_(std::move(header)),
        stream_(request.stream),
        include_usage_(request.include_usage),
        logprobs_(request.logprobs),
        parallel_tool_calls_(request.parallel_tool_calls),
        think_close_(think_close),
        tokenizer_(tokenizer),
        exchange_(std::move(exchange)),
        tool_counts_(tool_counts),
        call_ids_(std::random_device{}()) {
    if (request.structured && !request.structured->unenforced.empty()) {
      unenforced_ = Json::array();
      std::string listed;
      for (const grammar::Unenforced& u : request.structured->unenforced) {
        unenforced_.push_back({{"keyword", u.keyword}, {"pointer", u.pointer}});
        listed += (listed.empty() ? "" : ", ") + u.keyword + " at " + (u.pointer.empty() ? "/" : u.pointer);
      }
      headers_.push_back({"x-kipp-unenforced", listed});
    }
    if (!request.ignored_fields.empty()) {
      std::string listed;
      for (const std::string& field : request.ignored_fields) listed += (listed.empty() ? "" : ", ") + field;
      headers_.push_back({"x-kipp-ignored-fields", listed});
    }
    choices_.reserve(choice_count);
    for (uint32_t i = 0; i < choice_count; ++i) {
      choices_.emplace_back(thinking);
      if (tool_tokens) choices_.back().extractor.emplace(*tool_tokens);
    }
  }

  // Sends the stream's headers and whatever the scheduler produced before they went out.
  void start() {
    std::lock_guard lock(mutex_);
    if (!stream_) return;
    exchange_->start_stream(200, "text/event-stream", headers_);
    started_ = true;
    for (std::string& event : pending_) exchange_->write(std::move(event));
    pending_.clear();
  }

  void update(const ChoiceUpdate& update) {
    std::lock_guard lock(mutex_);
    Choice& choice = choices_[update.choice];
    std::string reasoning, content;
    ToolCallExtractor::Output found;
    if (choice.extractor) {
      choice.extractor->push(update.text, update.added, found);
      if (update.finish) choice.extractor->finish(found);
      tool_counts_.unparsed += found.unparsed;
    } else {
      found.text = update.text;
    }
    const size_t first_new_call = choice.calls.size();
    for (ChatToolCall& call : found.calls) {
      if (!parallel_tool_calls_ && !choice.calls.empty()) {
        ++tool_counts_.dropped;  // parallel_tool_calls: false returns the first call only
        continue;
      }
      ++tool_counts_.returned;
      choice.calls.push_back({new_call_id(), std::move(call)});
    }
    choice.splitter.push(found.text, reasoning, content);
    if (update.finish) {
      choice.splitter.finish(reasoning, content);
      choice.finish = *update.finish;
    }
    const size_t offset = choice.characters;
    choice.text += update.text;
    for (const TokenReport& token : update.tokens)
      for (unsigned char c : token.text) choice.characters += (c & 0xC0) != 0x80;
    choice.reasoning += reasoning;
    choice.content += content;
    // Reasoning tokens: those up to </think>; all of them when the answer never left its think
    // block (cut by max_tokens there, it stays reasoning).
    for (const AddedTokenMark& mark : update.added)
      if (think_close_ && mark.id == *think_close_ && !choice.reasoning_tokens) choice.reasoning_tokens = update.generated;
    if (update.finish && !choice.reasoning_tokens && !choice.reasoning.empty() && choice.content.empty() &&
        choice.calls.empty())
      choice.reasoning_tokens = update.generated;
    for (const TokenReport& token : update.tokens) choice.tokens.push_back(token);
    if (!stream_) return;
    if (header_.endpoint == Endpoint::chat)
      for (size_t k = first_new_call; k < choice.calls.size(); ++k) send_call(update.choice, choice, k);
    if (reasoning.empty() && content.empty() && update.tokens.empty()) return;  // a finish alone waits for done()
    Json chunk = response_envelope(header_, true);
    Json entry = {{"index", update.choice}, {"finish_reason", nullptr}};
    if (header_.endpoint == Endpoint::chat) {
      Json delta = Json::object();
      if (!choice.announced) delta["role"] = "assistant";
      choice.announced = true;
      if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
      delta["content"] = content;
      entry["delta"] = std::move(delta);
      entry["logprobs"] = logprobs_ ? chat_logprobs_json(update.tokens, tokenizer_) : Json(nullptr);
    } else {
      entry["text"] = update.text;
      entry["logprobs"] = logprobs_ ? completion_logprobs_json(update.tokens, tokenizer_, offset) : Json(nullptr);
    }
    chunk["choices"].push_back(std::move(entry));
    send(sse_event(chunk));
  }

  void done(const RequestReport& report) {
    std::lock_guard lock(mutex_);
    if (report.cancelled && !report.error) {  // the client is gone, or the server stops
      if (started_) exchange_->finish();
      return;
    }
    if (report.error) {
      const ApiError error{500, "generation failed: " + *report.error, "", "server_error"};
      if (!stream_) return exchange_->respond(json_response(500, error_json(error)));
      send(sse_event(error_json(error)));
      send("data: [DONE]\n\n");
      if (started_) exchange_->finish();
      return;
    }
    if (stream_) {
      for (uint32_t i = 0; i < choices_.size(); ++i) {
        Json chunk = response_envelope(header_, true);
        Json entry = {{"index", i}, {"finish_reason", choices_[i].finish_text()}, {"logprobs", nullptr}};
        if (header_.endpoint == Endpoint::chat)
          entry["delta"] = choices_[i].announced ? Json::object() : Json{{"role", "assistant"}, {"content", ""}};
        else
          entry["text"] = "";
        chunk["choices"].push_back(std::move(entry));
        if (i + 1 == choices_.size()) {
          chunk["timings"] = timings_json(report);
          if (!unenforced_.is_null()) chunk["x_kipp_unenforced"] = unenforced_;
        }
        send(sse_event(chunk));
      }
      if (include_usage_) {
        Json chunk = response_envelope(header_, true);
        chunk["usage"] = usage_json(report, reasoning_tokens());
        send(sse_event(chunk));
      }
      send("data: [DONE]\n\n");
      exchange_->finish();
      return;
    }
    Json body = response_envelope(header_, false);
    for (uint32_t i = 0; i < choices_.size(); ++i) {
      const Choice& choice = choices_[i];
      Json entry = {{"index", i}, {"finish_reason", choice.finish_text()}};
      if (header_.endpoint == Endpoint::chat) {
        // A turn that only calls has no content: null, as OpenAI answers it.
        Json message = {{"role", "assistant"},
                        {"content", choice.content.empty() && !choice.calls.empty() ? Json(nullptr) : Json(choice.content)}};
        if (!choice.reasoning.empty()) message["reasoning_content"] = choice.reasoning;
        if (!choice.calls.empty()) {
          message["tool_calls"] = Json::array();
          for (const IdentifiedCall& call : choice.calls)
            message["tool_calls"].push_back({{"id", call.id}, {"type", "function"},
                                             {"function", {{"name", call.call.name}, {"arguments", call.call.arguments}}}});
        }
        entry["message"] = std::move(message);
        entry["logprobs"] = logprobs_ ? chat_logprobs_json(choice.tokens, tokenizer_) : Json(nullptr);
      } else {
        entry["text"] = choice.text;
        entry["logprobs"] = logprobs_ ? completion_logprobs_json(choice.tokens, tokenizer_, 0) : Json(nullptr);
      }
      body["choices"].push_back(std::move(entry));
    }
    body["usage"] = usage_json(report, reasoning_tokens());
    body["timings"] = timings_json(report);
    if (!unenforced_.is_null()) body["x_kipp_unenforced"] = unenforced_;
    exchange_->respond(json_response(200, body, headers_));
  }

 private:
  struct IdentifiedCall {
    std::string id;
    ChatToolCall call;
  };
  struct Choice {
    explicit Choice(ReasoningSplitter::Start thinking) : splitter(thinking) {}
    // "tool_calls" when the answer called and ended by itself; a cut answer stays "length".
    const char* finish_text() const {
      return !calls.empty() && finish != FinishReason::length ? "tool_calls" : finish_reason_text(finish);
    }
    ReasoningSplitter splitter;
    std::optional<ToolCallExtractor> extractor;
    std::vector<IdentifiedCall> calls;
    std::optional<uint32_t> reasoning_tokens;  // set once the think block is closed (or never left)
    std::string text, reasoning, content;
    std::vector<TokenReport> tokens;
    size_t characters = 0;  // in the logprob tokens so far: where the next one's text_offset is
    FinishReason finish = FinishReason::length;
    bool announced = false;  // chat: the role went out with the first delta
  };

  // usage.completion_tokens_details.reasoning_tokens, for chat answers.
  std::optional<uint32_t> reasoning_tokens() const {
    if (header_.endpoint != Endpoint::chat) return std::nullopt;
    uint32_t total = 0;
    for (const Choice& choice : choices_) total += choice.reasoning_tokens.value_or(0);
    return total;
  }

  // OpenAI's ids look like call_ and 24 letters and digits; clients only echo them back.
  std::string new_call_id() {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlphabet[call_ids_() % (sizeof kAlphabet - 1)];
    return id;
  }

  // A call streams as OpenAI streams one: its index, id and name first, then its arguments. Kipp
  // sends the call once its closing token has come and its JSON has been read, so a call that
  // turns out unreadable is never half sent (it arrives as content instead).
  void send_call(uint32_t index, Choice& choice, size_t k) {
    const IdentifiedCall& call = choice.calls[k];
    Json opening = {{"index", k}, {"id", call.id}, {"type", "function"},
                    {"function", {{"name", call.call.name}, {"arguments", ""}}}};
    Json pieces = {{"index", k}, {"function", {{"arguments", call.call.arguments}}}};
    for (Json* part : {&opening, &pieces}) {
      Json delta = {{"tool_calls", Json::array({std::move(*part)})}};
      if (!choice.announced) delta["role"] = "assistant";
      choice.announced = true;
      Json chunk = response_envelope(header_, true);
      chunk["choices"].push_back({{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
      send(sse_event(chunk));
    }
  }

  void send(std::string event) {
    if (started_)
      exchange_->write(std::move(event));
    else
      pending_.push_back(std::move(event));
  }

  const ResponseHeader header_;
  const bool stream_, include_usage_, logprobs_, parallel_tool_calls_;
  const std::optional<uint32_t> think_close_;  // the </think> token, when the tokenizer has one
  // What a non-strict schema left unenforced: the x-kipp-unenforced header and a body field.
  Json unenforced_;
  HttpHeaders headers_;
  const Tokenizer& tokenizer_;
  std::shared_ptr<HttpExchange> exchange_;
  ToolCallCounts& tool_counts_;
  std::mt19937_64 call_ids_;
  std::mutex mutex_;
  bool started_ = false;
  std::vector<std::string> pending_;
  std::vector<Choice> choices_;
};

}  // namespace

void answer_while_loading(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) {
  if (request.path == "/health" || request.path == "/healthz")
    return exchange->respond(json_response(503, {{"status", "loading"}}, {{"Retry-After", "1"}}));
  exchange->respond(json_response(503, error_json({503, "the model is still loading", "", "server_error", "loading"}),
                                  {{"Retry-After", "1"}}));
}

ApiServer::ApiServer(const ApiConfig& config, const Tokenizer& tokenizer, Scheduler& scheduler)
    : config_(config), tokenizer_(tokenizer), scheduler_(scheduler), tool_tokens_(find_tool_call_tokens(tokenizer)),
      think_tokens_(find_think_tokens(tokenizer)) {
  limits_.vocab = uint32_t(tokenizer.vocab_size());
  limits_.ignore_unknown_fields = config.ignore_unknown_fields;
  worker_ = std::thread([this] { work(); });
}

ApiServer::~ApiServer() {
  {
    std::lock_guard lock(pending_mutex_);
    stopping_ = true;
  }
  pending_ready_.notify_all();
  worker_.join();
  for (Pending& pending : pending_)
    pending.exchange->respond(json_response(503, error_json({503, "the server is stopping", "", "server_error"})));
}

void ApiServer::work() {
  while (true) {
    Pending next;
    {
      std::unique_lock lock(pending_mutex_);
      pending_ready_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      next = std::move(pending_.front());
      pending_.pop_front();
    }
    switch (next.route) {
      case Route::completions: completion(Endpoint::completions, next.request, next.exchange); break;
      case Route::chat: completion(Endpoint::chat, next.request, next.exchange); break;
      case Route::tokenize:
      case Route::detokenize: {
        const RouteAnswer answer = next.route == Route::tokenize ? tokenize_route(tokenizer_, next.request.body)
                                                                 : detokenize_route(tokenizer_, next.request.body);
        next.exchange->respond(json_response(answer.status, answer.body));
        break;
      }
    }
  }
}

bool ApiServer::authorized(const HttpRequest& request) const {
  if (!config_.api_key) return true;
  const std::string header = request.header("authorization");
  constexpr std::string_view scheme = "Bearer ";
  if (header.size() <= scheme.size() || header.compare(0, scheme.size(), scheme) != 0) return false;
  return same_secret(std::string_view(header).substr(scheme.size()), *config_.api_key);
}

void ApiServer::reject(const std::shared_ptr<HttpExchange>& exchange, const ApiError& error, HttpHeaders headers) {
  {
    std::lock_guard lock(rejected_mutex_);
    if (error.status == 401)
      ++rejected_.unauthorized;
    else if (error.status == 503)
      ++rejected_.overloaded;
    else
      ++rejected_.invalid;
  }
  exchange->respond(json_response(error.status, error_json(error), std::move(headers)));
}

void ApiServer::handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
  const std::string& path = request.path;
  const bool get = request.method == "GET", post = request.method == "POST";
  if (path == "/health" || path == "/healthz") {
    if (!get) return reject(exchange, {405, "use GET " + path, "", "invalid_request_error"}, {{"Allow", "GET"}});
    return exchange->respond(json_response(200, {{"status", "ok"}}));
  }
  if (path == "/metrics") {
    if (!get) return reject(exchange, {405, "use GET /metrics", "", "invalid_request_error"}, {{"Allow", "GET"}});
    RejectionCounts rejected;
    {
      std::lock_guard lock(rejected_mutex_);
      rejected = rejected_;
    }
    HttpResponse response;
    response.content_type = "text/plain; version=0.0.4";
    response.body = prometheus_text(scheduler_.stats(), rejected, tool_counts_, config_.model_names.front());
    return exchange->respond(std::move(response));
  }
  const bool guarded = path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize" || path == "/props";
  if (guarded && !authorized(request))
    return reject(exchange, {401, "a valid API key is needed: send \"Authorization: Bearer KEY\"", "",
                             "authentication_error", "invalid_api_key"},
                  {{"WWW-Authenticate", "Bearer"}});
  if (path == "/v1/models") {
    if (!get) return reject(exchange, {405, "use GET /v1/models", "", "invalid_request_error"}, {{"Allow", "GET"}});
    Json models = Json::array();
    for (const std::string& name : config_.model_names)
      models.push_back({{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "kipp"},
                        {"max_model_len", config_.context}});
    return exchange->respond(json_response(200, {{"object", "list"}, {"data", std::move(models)}}));
  }
  if (path == "/props") {
    if (!get) return reject(exchange, {405, "use GET /props", "", "invalid_request_error"}, {{"Allow", "GET"}});
    return exchange->respond(json_response(
        200, props_json({config_.chat_template, config_.model_names, config_.context, config_.max_sequences})));
  }
  std::optional<Route> route;
  if (path == "/v1/completions") route = Route::completions;
  if (path == "/v1/chat/completions") route = Route::chat;
  if (path == "/tokenize") route = Route::tokenize;
  if (path == "/detokenize") route = Route::detokenize;
  if (route) {
    if (!post) return reject(exchange, {405, "use POST " + path, "", "invalid_request_error"}, {{"Allow", "POST"}});
    {
      std::lock_guard lock(pending_mutex_);
      pending_.push_back({*route, std::move(request), std::move(exchange)});
    }
    pending_ready_.notify_one();
    return;
  }
  reject(exchange, {404, "no route " + request.method + " " + path, "", "invalid_request_error", "not_found"});
}

std::optional<ApiError> ApiServer::prompts_for(ApiRequest& request, std::vector<std::vector<uint32_t>>& prompts) const {
  std::vector<std::string> texts;  // to tokenize, with their field for errors
  std::vector<std::string> fields;
  if (request.endpoint == Endpoint::chat) {
    if (config_.variant == Variant::base)
      return ApiError{400, "this is a base checkpoint: it has no chat template; use /v1/completions", "messages"};
    ChatOptions options;
    options.enable_thinking = request.enable_thinking.value_or(true);
    if (!request.tools.empty() && !tool_tokens_)
      return ApiError{400, "tools: " + tool_tokens_.error().message, "tools"};
    for (const ChatTool& tool : request.tools) options.tools.push_back(tool.line);
    auto rendered = render_chat(config_.variant, request.messages, options);
    if (!rendered) return ApiError{400, "messages: " + rendered.error().message, "messages"};
    prompts.emplace_back();
    texts.push_back(std::move(*rendered));
    fields.push_back("messages");
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
  return std::nullopt;
}

void ApiServer::completion(Endpoint endpoint, const HttpRequest& http, const std::shared_ptr<HttpExchange>& exchange) {
  auto parsed = parse_api_request(endpoint, http.body, limits_);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reject(exchange, *error);
  ApiRequest& request = std::get<ApiRequest>(parsed);
  if (!request.ignored_fields.empty()) {
    std::string listed;
    for (const std::string& field : request.ignored_fields) listed += " " + field;
    std::fprintf(stderr, "kipp serve: %s accepted with fields it does not honour:%s\n", http.path.c_str(), listed.c_str());
  }
  if (std::find(config_.model_names.begin(), config_.model_names.end(), request.model) == config_.model_names.end()) {
    std::string names;
    for (const std::string& name : config_.model_names) names += (names.empty() ? "`" : ", `") + name + "`";
    return reject(exchange, {404, "the model `" + request.model + "` does not exist; this server serves " + names,
                             "model", "invalid_request_error", "model_not_found"});
  }
  std::vector<std::vector<uint32_t>> prompts;
  if (auto error = prompts_for(request, prompts)) return reject(exchange, *error);

  const uint32_t context = config_.context;
  size_t longest = 0;
  for (const std::vector<uint32_t>& prompt : prompts) longest = std::max(longest, prompt.size());
  if (longest >= context)
    return reject(exchange, {400,
                             "the prompt has " + std::to_string(longest) + " tokens; the context holds " +
                                 std::to_string(context) + " (n_prompt_tokens " + std::to_string(longest) +
                                 ", n_ctx " + std::to_string(context) + ")",
                             endpoint == Endpoint::chat ? "messages" : "prompt", "invalid_request_error",
                             "context_length_exceeded"});
  // OpenAI's defaults: 16 tokens for completions; for chat, the rest of the context, or of the
  // KV pool when that is smaller (a request must fit the pool to be admitted at all).
  const uint32_t room = std::min(context, config_.pool_positions);
  const uint32_t max_tokens = request.max_tokens.value_or(
      endpoint == Endpoint::chat ? (room > longest ? room - uint32_t(longest) : 1) : 16);
  if (longest + uint64_t(max_tokens) > context)
    return reject(exchange, {400,
                             "the prompt (" + std::to_string(longest) + " tokens) plus max_tokens (" +
                                 std::to_string(max_tokens) + ") exceeds the context of " + std::to_string(context) +
                                 " tokens",
                             "max_tokens", "invalid_request_error", "context_length_exceeded"});

  CompletionRequest work;
  work.max_tokens = max_tokens;
  work.n = request.n;
  work.sampling = sampling_for(request, recommended_sampling(config_.variant));
  if (!request.seed) work.sampling.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  if (auto ok = validate(work.sampling, limits_.vocab); !ok) return reject(exchange, {400, ok.error().message, ""});
  work.stop = request.stop;
  work.logprobs = request.logprobs;
  work.top_logprobs = request.top_logprobs;

  const auto thinking =
      endpoint == Endpoint::chat ? reasoning_start(config_.variant, request.enable_thinking.value_or(true))
                                 : ReasoningSplitter::Start::content;
  if (request.structured) {
    work.grammar = request.structured->grammar;
    work.answer_start = endpoint == Endpoint::chat
                             ? chat_answer_start(config_.variant, request.enable_thinking.value_or(true))
                             : ConstraintStart::at_once;
    if (request.structured->tool_call)
      work.grammar_frame = TokenFrame{tool_tokens_->open, tool_tokens_->close,
                                      request.parallel_tool_calls && request.tool_choice == ToolChoice::required};
  }
  // tool_choice "none": the tools are shown, but the token that opens a call is never sampled.
  const bool calls_possible = !request.tools.empty() && request.tool_choice != ToolChoice::none;
  if (request.tool_choice == ToolChoice::none && tool_tokens_) work.sampling.banned.push_back(tool_tokens_->open);
  auto responder = std::make_shared<Responder>(new_response_header(endpoint, config_.model_names.front()), request, tokenizer_,
                                               exchange, thinking, calls_possible ? &tool_tokens_.value() : nullptr, tool_counts_,
                                               uint32_t(prompts.size() * request.n),
                                               think_tokens_ ? std::optional<uint32_t>(think_tokens_->close) : std::nullopt);
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
    part.on_done = [responder, gathered](const RequestReport& report) {
      std::lock_guard lock(gathered->mutex);
      RequestReport& all = gathered->report;
      if (!all.error) all.error = report.error;
      all.cancelled = all.cancelled || report.cancelled;
      all.prompt_tokens += report.prompt_tokens;
      all.cached_tokens += report.cached_tokens;
      all.completion_tokens += report.completion_tokens;
      all.queue_seconds = std::max(all.queue_seconds, report.queue_seconds);
      all.prompt_seconds = std::max(all.prompt_seconds, report.prompt_seconds);
      all.decode_seconds = std::max(all.decode_seconds, report.decode_seconds);
      if (--gathered->remaining == 0) responder->done(all);
    };
    Submission submission = scheduler_.submit(std::move(part));
    if (submission.verdict != Verdict::queued) {
      for (const auto& ticket : tickets) ticket->cancel();  // their on_done sends nothing: the reject answers
      if (submission.verdict == Verdict::too_large)
        return reject(exchange, {400, submission.reason, "max_tokens", "invalid_request_error", "context_length_exceeded"});
      return reject(exchange, {503, submission.reason, "", "server_error", "overloaded"}, {{"Retry-After", "1"}});
    }
    tickets.push_back(submission.ticket);
  }
  exchange->on_disconnect([tickets] {
    for (const auto& ticket : tickets) ticket->cancel();
  });
  responder->start();
}

}  // namespace kipp::server
