#include "server/metrics.h"

#include <cstdio>
#include <sstream>

namespace kipp::server {
namespace {

class Exposition {
 public:
  // `label`: the name of the label that says which model (Kipp's `model`, vLLM's `model_name`).
  Exposition(const std::string& label, const std::string& model) : labels_(label + "=\"" + escape(model) + "\"") {}

  void metric(const char* name, const char* type, const char* help, double value, const std::string& extra = "") {
    header(name, type, help);
    sample(name, extra, value);
  }

  void header(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }

  void sample(const std::string& name, const std::string& extra, double value) {
    out_ << name << '{' << labels_ << (extra.empty() ? "" : ",") << extra << "} " << number(value) << '\n';
  }

  void histogram(const char* name, const char* help, const Histogram& histogram) {
    header(name, "histogram", help);
    for (size_t b = 0; b < histogram.bounds.size(); ++b)
      sample(std::string(name) + "_bucket", "le=\"" + number(histogram.bounds[b]) + "\"", double(histogram.counts[b]));
    sample(std::string(name) + "_bucket", "le=\"+Inf\"", double(histogram.count));
    sample(std::string(name) + "_sum", "", histogram.sum);
    sample(std::string(name) + "_count", "", double(histogram.count));
  }

  std::string text() const { return out_.str(); }

 private:
  static std::string number(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.10g", value);
    return buffer;
  }

  static std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out;
  }

  std::string labels_;
  std::ostringstream out_;
};

// What routers and dashboards built for vLLM read, under vLLM's names and its model_name label:
// the load gauges prefix-aware routers weigh replicas by (llm-d's endpoint picker reads the
// queue and the KV use), the cache's shape, the prefix cache in tokens, and the two latency
// histograms dashboards chart.
std::string vllm_text(const SchedulerStats& stats, const std::string& model, double used) {
  Exposition v("model_name", model);
  v.metric("vllm:num_requests_running", "gauge", "Requests being evaluated.", stats.running);
  v.metric("vllm:num_requests_waiting", "gauge", "Requests queued for admission.", stats.waiting);
  v.metric("vllm:kv_cache_usage_perc", "gauge", "Fraction of KV pool blocks held by requests (0..1).", used);
  v.metric("vllm:gpu_cache_usage_perc", "gauge", "The older name of vllm:kv_cache_usage_perc.", used);
  v.metric("vllm:cache_config_info", "gauge", "The KV cache's configuration, in labels.", 1,
           "block_size=\"" + std::to_string(kKvBlockTokens) + "\",num_gpu_blocks=\"" +
               std::to_string(stats.pool.total) + "\",enable_prefix_caching=\"True\"");
  v.metric("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
           double(stats.prompt_tokens));
  v.metric("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
           double(stats.prefix_tokens_reused));
  v.metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Tokens drafted by prompt lookup (--spec).",
           double(stats.draft_tokens));
  v.metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Drafted tokens the model confirmed.",
           double(stats.accepted_draft_tokens));
  v.histogram("vllm:time_to_first_token_seconds", "From arrival to the first generated token.",
              stats.first_token_seconds);
  v.histogram("vllm:e2e_request_latency_seconds", "From arrival to the end of finished requests.",
              stats.request_seconds);
  return v.text();
}

}  // namespace

std::string prometheus_text(const SchedulerStats& stats, const RejectionCounts& rejected, const ToolCallCounts& tools,
                            const std::string& model) {
  Exposition e("model", model);
  const double used = stats.pool.total ? double(stats.pool.total - stats.pool.free) / stats.pool.total : 0.0;
  e.metric("kipp_requests_running", "gauge", "Requests being evaluated.", stats.running);
  e.metric("kipp_requests_waiting", "gauge", "Requests queued for admission.", stats.waiting);
  e.header("kipp_requests_total", "counter", "Requests the scheduler ended, by outcome.");
  e.sample("kipp_requests_total", "outcome=\"finished\"", double(stats.finished));
  e.sample("kipp_requests_total", "outcome=\"cancelled\"", double(stats.cancelled));
  e.sample("kipp_requests_total", "outcome=\"failed\"", double(stats.failed));
  e.metric("kipp_requests_failed_total", "counter", "Requests that failed in the engine.", double(stats.failed));
  e.header("kipp_requests_rejected_total", "counter", "Requests refused before scheduling, by reason.");
  e.sample("kipp_requests_rejected_total", "reason=\"invalid\"", double(rejected.invalid));
  e.sample("kipp_requests_rejected_total", "reason=\"overloaded\"", double(rejected.overloaded));
  e.sample("kipp_requests_rejected_total", "reason=\"unauthorized\"", double(rejected.unauthorized));
  e.header("kipp_tool_calls_total", "counter", "Tool calls the model wrote, by what became of them.");
  e.sample("kipp_tool_calls_total", "outcome=\"returned\"", double(tools.returned.load()));
  e.sample("kipp_tool_calls_total", "outcome=\"unparsed\"", double(tools.unparsed.load()));
  e.sample("kipp_tool_calls_total", "outcome=\"dropped\"", double(tools.dropped.load()));
  e.metric("kipp_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", double(stats.prompt_tokens));
  e.metric("kipp_generation_tokens_total", "counter", "Tokens generated.", double(stats.generated_tokens));
  e.metric("kipp_prefix_tokens_reused_total", "counter", "Prompt tokens adopted from the KV pool instead of evaluated.",
           double(stats.prefix_tokens_reused));
  e.metric("kipp_draft_tokens_total", "counter", "Tokens drafted by prompt lookup (--spec).",
           double(stats.draft_tokens));
  e.metric("kipp_accepted_draft_tokens_total", "counter", "Drafted tokens the model confirmed.",
           double(stats.accepted_draft_tokens));
  e.metric("kipp_scheduler_steps_total", "counter", "Evaluation steps.", double(stats.steps));
  e.histogram("kipp_time_to_first_token_seconds", "From arrival to the first generated token.",
              stats.first_token_seconds);
  e.histogram("kipp_queue_wait_seconds", "From arrival to admission.", stats.queue_seconds);
  e.histogram("kipp_batch_size", "Sequences evaluated per step.", stats.batch_size);
  e.header("kipp_kv_pool_blocks", "gauge", "Blocks of the shared KV pool (32 positions each), by state.");
  e.sample("kipp_kv_pool_blocks", "state=\"total\"", stats.pool.total);
  e.sample("kipp_kv_pool_blocks", "state=\"free\"", stats.pool.free);
  e.sample("kipp_kv_pool_blocks", "state=\"cached\"", stats.pool.cached);
  e.sample("kipp_kv_pool_blocks", "state=\"reserved\"", stats.pool.reserved);
  e.metric("kipp_kv_pool_blocks_reused_total", "counter", "Published blocks adopted by a later request.",
           double(stats.pool.reused));
  e.metric("kipp_kv_pool_blocks_evicted_total", "counter", "Cached blocks reclaimed for new data.",
           double(stats.pool.evicted));
  return e.text() + vllm_text(stats, model, used);
}

}  // namespace kipp::server
