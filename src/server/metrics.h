// GET /metrics: the scheduler's counters, gauges and histograms in the Prometheus text format,
// under kipp_* names, plus what routers and dashboards built for vLLM read, under vLLM's names
// and label (model_name): vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc (and the older vllm:gpu_cache_usage_perc), vllm:cache_config_info,
// vllm:prefix_cache_queries_total / _hits_total (tokens), vllm:time_to_first_token_seconds and
// vllm:e2e_request_latency_seconds.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "scheduler/scheduler.h"

namespace kipp::server {

// Requests the API layer answered with an error before they reached the scheduler.
struct RejectionCounts {
  uint64_t invalid = 0;       // 4xx: malformed, out of range, too long, unknown model
  uint64_t overloaded = 0;    // 503: the queue was full
  uint64_t unauthorized = 0;  // 401
};

// Tool calls found in answers (updated on the scheduler thread, read by /metrics).
struct ToolCallCounts {
  std::atomic<uint64_t> returned{0};  // returned as tool_calls
  std::atomic<uint64_t> unparsed{0};  // their JSON did not read (or the answer cut them off): returned as content
  std::atomic<uint64_t> dropped{0};   // beyond the first, with parallel_tool_calls: false
};

std::string prometheus_text(const SchedulerStats& stats, const RejectionCounts& rejected, const ToolCallCounts& tools,
                            const std::string& model);

}  // namespace kipp::server
