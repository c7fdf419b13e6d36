// `kipp serve --model FILE [--host 127.0.0.1] [--port 8080] [--kv-pool-mib N] [--max-batch N]
// [--api-key KEY] [--agent-port P] [--drain-timeout S] [--spec] [--backend B] [--threads N] ...`: the OpenAI- and
// Anthropic-compatible server. The socket is
// bound first, so /health answers 503 while the model loads; SIGINT or SIGTERM drain it (running
// requests finish, new ones are refused), a second signal stops it at once.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "backend/kv_store.h"
#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/constraint_flags.h"
#include "cli/report.h"
#include "pull/local_models.h"
#include "pull/pull.h"
#include "grammar/json_schema.h"
#include "model/model_file.h"
#include "scheduler/scheduler.h"
#include "server/agent_port.h"
#include "server/api_server.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace kipp::cli {
namespace {

struct ServeArgs {
  std::string model, models_dir = pull::kDefaultModelsDir, host = "127.0.0.1", api_key;
  std::vector<std::string> served_model_names;
  std::vector<std::string> cors_origins;
  bool ignore_unknown_fields = false;
  bool refuse_long_max_tokens = false;
  std::optional<uint32_t> default_max_tokens;
  grammar::JsonForm json_form = grammar::JsonForm::tidy;
  uint16_t port = 8080;
  std::optional<uint16_t> agent_port;
  uint32_t kv_pool_mib = 0;  // 0: enough for the context, at most 4 GiB
  uint32_t max_batch = 16, max_waiting = 64, step_tokens = 512;
  unsigned request_workers = 2;
  unsigned compile_workers = 2;
  unsigned max_connections = 256;
  uint64_t max_body_bytes = 8 << 20;
  uint64_t max_queued_bytes = 4 << 20;
  double request_timeout = 30, idle_timeout = 60, write_timeout = 30;
  double drain_timeout = 30;
  bool speculate = false;
  BackendFlags backend;
};

// The model, the tokenizer, the backend and the scheduler, in the order they must be destroyed.
struct LoadedModel {
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<BackendModel> backend;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<server::ApiServer> api;
};

uint32_t pool_blocks_for(const Checkpoint& c, KvFormat format, uint32_t mib) {
  const uint64_t block_bytes = kv_bytes_per_token(c, format) * kKvBlockTokens;
  const uint64_t context_blocks = kv_blocks_for(c.context);
  if (mib > 0) return uint32_t(std::max<uint64_t>(1, (uint64_t(mib) << 20) / block_bytes));
  return uint32_t(std::min<uint64_t>(context_blocks, std::max<uint64_t>(1, (uint64_t(4096) << 20) / block_bytes)));
}

Result<LoadedModel> load(const ServeArgs& args) {
  LoadedModel loaded;
  KIPP_ASSIGN(const std::string path, pull::resolve_model(args.model, args.models_dir));
  KIPP_ASSIGN(loaded.file, ModelFile::open(path));
  KIPP_ASSIGN(Tokenizer tokenizer, Tokenizer::create(loaded.file->tokenizer()));
  loaded.tokenizer = std::make_unique<Tokenizer>(std::move(tokenizer));
  KIPP_ASSIGN(loaded.backend, args.backend.create(*loaded.file));
  const Checkpoint& c = loaded.file->checkpoint();
  SchedulerOptions options;
  options.pool_blocks = pool_blocks_for(c, args.backend.kv_cache(), args.kv_pool_mib);
  options.max_sequences = args.max_batch;
  options.max_waiting = args.max_waiting;
  options.step_tokens = args.step_tokens;
  options.speculate = args.speculate;
  options.hidden = c.hidden;
  KIPP_ASSIGN(loaded.scheduler,
              Scheduler::create(*loaded.backend, *loaded.tokenizer, c.stop_ids(), c.context, options));
  server::ApiConfig config;
  // The operator's names first (responses use the first, as vLLM does), then the two every
  // client may know the model by.
  config.model_names = args.served_model_names;
  for (std::string_view name : {c.id, c.repository})
    if (std::find(config.model_names.begin(), config.model_names.end(), name) == config.model_names.end())
      config.model_names.emplace_back(name);
  config.variant = c.variant;
  config.checkpoint = &c;
  if (c.role == Role::rerank) {
    KIPP_ASSIGN(RerankHead head, RerankHead::of(*loaded.file));
    config.rerank_head = std::make_shared<const RerankHead>(std::move(head));
  }
  config.chat_template = std::string(loaded.file->tokenizer().chat_template);
  config.max_sequences = options.max_sequences;
  config.max_waiting = options.max_waiting;
  config.workers = args.request_workers;
  config.compile_workers = args.compile_workers;
  config.ignore_unknown_fields = args.ignore_unknown_fields;
  config.refuse_long_max_tokens = args.refuse_long_max_tokens;
  config.default_max_tokens = args.default_max_tokens;
  config.json_form = args.json_form;
  config.context = c.context;
  config.pool_positions = options.pool_blocks * kKvBlockTokens;
  if (!args.api_key.empty()) config.api_key = args.api_key;
  loaded.api = std::make_unique<server::ApiServer>(config, *loaded.tokenizer, *loaded.scheduler);
  std::fprintf(stderr, "kipp serve: %s on %s, KV pool %u blocks (%.0f MiB), up to %u sequences per step\n",
               std::string(c.id).c_str(), loaded.backend->describe().c_str(), options.pool_blocks,
               double(options.pool_blocks) * kv_bytes_per_token(c, args.backend.kv_cache()) * kKvBlockTokens /
                   (1 << 20),
               options.max_sequences);
  return loaded;
}

std::chrono::milliseconds millis(double seconds) { return std::chrono::milliseconds(int64_t(seconds * 1000)); }

// SIGINT and SIGTERM are taken by one thread that stops the server; every other thread blocks
// them (they inherit this mask). A client gone mid-write must not kill the process.
sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

server::HttpServerOptions http_options_of(const ServeArgs& args) {
  server::HttpServerOptions http_options;
  http_options.limits.max_connections = args.max_connections;
  http_options.limits.max_body_bytes = args.max_body_bytes;
  http_options.limits.request_timeout = millis(args.request_timeout);
  http_options.limits.idle_timeout = millis(args.idle_timeout);
  http_options.limits.write_timeout = millis(args.write_timeout);
  http_options.limits.max_queued_bytes = args.max_queued_bytes;
  http_options.error_format = server::http_error_response;
  return http_options;
}

// The agent port, when --agent-port asks for one (null otherwise).
Result<std::unique_ptr<server::AgentPort>> start_agent_port(const ServeArgs& args,
                                                            const std::atomic<server::ApiServer*>& api) {
  if (!args.agent_port) return std::unique_ptr<server::AgentPort>();
  auto ready_line = [&api] {
    const server::ApiServer* serving = api.load();
    return serving ? serving->agent_reply() : std::string("down #loading\n");
  };
  KIPP_ASSIGN(std::unique_ptr<server::AgentPort> agent,
              server::AgentPort::create(args.host, *args.agent_port, ready_line));
  std::fprintf(stderr, "kipp serve: agent port %s:%u\n", args.host.c_str(), unsigned(agent->port()));
  return agent;
}

// The signal thread's work. The first SIGTERM or SIGINT drains: /health turns 503 "draining", new
// requests are refused (a router retries them elsewhere), the running ones finish and their
// responses go out; then the server stops. A second signal, or --drain-timeout, stops it at once
// (what is still running ends as cancelled). While the model loads there is nothing to drain.
void stop_on_signal(const sigset_t& stop_signals, const std::atomic<server::ApiServer*>& api,
                    const std::atomic<bool>& finished, server::HttpServer& http, double drain_timeout) {
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server::ApiServer* serving = api.load();
  if (!serving || finished) return http.stop();
  std::fprintf(stderr, "kipp serve: draining (a second signal stops at once)\n");
  serving->drain();
  http.drain();
  const auto deadline = std::chrono::steady_clock::now() + millis(drain_timeout);
  const timespec poll{0, 20'000'000};
  while (!finished && !(serving->idle() && http.open_connections() == 0)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "kipp serve: --drain-timeout passed; stopping what still runs\n");
      break;
    }
    if (sigtimedwait(&stop_signals, nullptr, &poll) > 0) break;  // a second signal
  }
  http.stop();
}

int run_serve(const ServeArgs& args) {
  const sigset_t stop_signals = block_stop_signals();
  std::atomic<server::ApiServer*> api{nullptr};
  auto handler = server::with_cors({args.cors_origins},
                                   [&api](server::HttpRequest request, std::shared_ptr<server::HttpExchange> exchange) {
                                     if (server::ApiServer* ready = api.load())
                                       return ready->handle(std::move(request), std::move(exchange));
                                     server::answer_while_loading(request, exchange);
                                   });
  auto http = server::HttpServer::create(args.host, args.port, http_options_of(args), handler);
  if (!http) return report(http.error());
  std::fprintf(stderr, "kipp serve: listening on http://%s:%u\n", args.host.c_str(), unsigned((*http)->port()));
  auto started_agent = start_agent_port(args, api);
  if (!started_agent) return report(started_agent.error());
  std::unique_ptr<server::AgentPort> agent = std::move(*started_agent);

  std::atomic<bool> finished{false};
  std::thread signals([&] { stop_on_signal(stop_signals, api, finished, **http, args.drain_timeout); });
  std::optional<Error> load_error;
  LoadedModel loaded;
  std::thread loader([&] {
    auto model = load(args);
    if (!model) {
      load_error = model.error();
      (*http)->stop();
      return;
    }
    loaded = std::move(*model);
    api.store(loaded.api.get());
    std::fprintf(stderr, "kipp serve: ready\n");
  });
  (*http)->run();
  loader.join();
  finished = true;
  pthread_kill(signals.native_handle(), SIGTERM);  // releases the signal thread if no signal came
  signals.join();
  agent.reset();
  api.store(nullptr);
  loaded.api.reset();        // stops taking requests to the scheduler
  loaded.scheduler.reset();  // cancels what is left before the backend goes
  if (load_error) return report(*load_error);
  std::fprintf(stderr, "kipp serve: stopped\n");
  return 0;
}
}  // namespace

Command add_serve_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "serve", "Serve the OpenAI- and Anthropic-compatible APIs (completions, chat, responses, messages, metrics)");
  auto args = std::make_shared<ServeArgs>();
  sub->add_option("--model", args->model,
                  "A Kipp .gguf artifact, or a registry id whose one artifact is in --models-dir (`kipp list`)")
      ->required();
  sub->add_option("--models-dir", args->models_dir,
                  "Where a registry id given as --model is looked for; default ./models");
  sub->add_option("--served-model-name", args->served_model_names,
                  "A name requests may give as `model` (repeatable; responses use the first). The registry id and "
                  "the Hugging Face repository are always accepted");
  sub->add_flag("--ignore-unknown-fields", args->ignore_unknown_fields,
                "Accept request fields Kipp does not know or implement instead of answering 400; each is logged "
                "and listed in the x-kipp-ignored-fields response header");
  sub->add_flag("--refuse-long-max-tokens", args->refuse_long_max_tokens,
                "Answer a max_tokens past the room left in the context with 400 context_length_exceeded instead of "
                "cutting it to that room");
  sub->add_option("--default-max-tokens", args->default_max_tokens,
                  "The output limit of a request that sets none (max_tokens, max_completion_tokens, "
                  "max_output_tokens): agents such as Codex send none (default: the room left in the context; 16 "
                  "for /v1/completions)")
      ->check(CLI::Range(1, INT32_MAX));
  sub->add_option("--json-form", args->json_form,
                  "The JSON form of structured output and forced calls when a request names none (its json_form "
                  "field): tidy (default: no member or item the schema does not list unless it needs one, "
                  "json.dumps spacing) or exact (every instance the schema accepts); docs/STRUCTURED.md")
      ->transform(json_form_words());
  sub->add_option("--cors-origin", args->cors_origins,
                  "Let web pages from this origin call the server (repeatable; * for any). Off by default: see "
                  "docs/SERVER.md");
  sub->add_option("--host", args->host, "Address to bind (default 127.0.0.1: this machine only)");
  sub->add_option("--port", args->port, "Port (default 8080; 0 picks a free one)");
  sub->add_option("--kv-pool-mib", args->kv_pool_mib,
                  "Size of the shared KV pool in MiB (default: the whole context, at most 4096)");
  sub->add_option("--max-batch", args->max_batch, "Most sequences evaluated together (default 16)")
      ->check(CLI::Range(1, 256));
  sub->add_option("--max-waiting", args->max_waiting, "Most queued requests before 503 (default 64)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--request-workers", args->request_workers, "Threads that read and tokenize requests (default 2)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--compile-workers", args->compile_workers,
                  "Threads that compile schemas, grammars and forced calls (default 2): requests without one never "
                  "wait behind them")
      ->check(CLI::Range(1, 64));
  sub->add_option("--step-tokens", args->step_tokens,
                  "Tokens evaluated per step: the decoding sequences' first, prompt chunks shared evenly in the "
                  "rest (default 512)")
      ->check(CLI::Range(1, 65536));
  sub->add_flag("--spec", args->speculate,
                "Greedy requests draft by prompt lookup and verify the draft in the same step: the same answer, "
                "faster where the answer repeats its context (docs/SERVER.md)");
  sub->add_option("--api-key", args->api_key,
                  "Require the key on /v1 routes (as \"Authorization: Bearer KEY\" or \"x-api-key: KEY\")")
      ->envname("KIPP_API_KEY");
  sub->add_option("--agent-port", args->agent_port,
                  "Answer HAProxy's agent check on this port (0 picks one): up N% by load, drain, or down");
  sub->add_option("--drain-timeout", args->drain_timeout,
                  "Seconds the first SIGTERM/SIGINT waits for running requests before stopping (default 30)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--max-connections", args->max_connections, "Open connections at once (default 256)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--max-body-bytes", args->max_body_bytes, "Largest request body (default 8 MiB)")
      ->check(CLI::Range(1024, 1 << 30));
  sub->add_option("--request-timeout", args->request_timeout, "Seconds for a whole request to arrive (default 30)")
      ->check(CLI::Range(0.05, 3600.0));
  sub->add_option("--idle-timeout", args->idle_timeout, "Seconds an idle keep-alive connection stays (default 60)")
      ->check(CLI::Range(0.05, 3600.0));
  sub->add_option("--write-timeout", args->write_timeout,
                  "Seconds a client may stop reading before it is dropped (default 30)")
      ->check(CLI::Range(0.05, 3600.0));
  sub->add_option("--max-queued-bytes", args->max_queued_bytes,
                  "Bytes of a streamed answer waiting for a slow client before it is dropped (default 4 MiB)")
      ->check(CLI::Range(uint64_t(4096), uint64_t(1) << 32));
  args->backend.add_to(*sub);
  return {sub, [args] { return run_serve(*args); }};
}

}  // namespace kipp::cli
