// `kipp bench --model FILE [-p 512] [-n 128] [--depth D] [--threads N] [--reps R] [--backend B] [--json]`:
// load time, prefill and decode speed (and decode after D cached tokens), peak RSS and the memory
// the process uses beyond the mapped weights and the KV cache, and the decode roofline (measured
// read bandwidth / weight bytes per token). Every speed is the median of R runs with its range.
// Prompts are seeded random ids (speed does not depend on the values).
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/kv_store.h"
#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "cli/memory_bandwidth.h"
#include "model/model_file.h"
#include "util/files.h"
#include "util/stats.h"

namespace kipp::cli {
namespace {

struct BenchArgs {
  std::string model;
  BackendFlags backend;
  uint32_t prompt = 512, generate = 128, depth = 0, reps = 3;
  std::vector<uint32_t> batches;  // --batch: sequence counts decoded together
  bool json = false;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<uint32_t> random_ids(uint32_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> ids(count);
  for (uint32_t& id : ids) id = rng() % 151643;  // ordinary vocabulary ids
  return ids;
}

uint32_t argmax(const std::vector<float>& logits) {
  return uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// What one run of the benchmark measures on one model.
class Bench {
 public:
  Bench(BackendModel& backend, const Checkpoint& checkpoint) : backend_(backend), logits_(checkpoint.vocab()) {}

  // Tokens per second evaluating `ids` in one call (the last row's logits only).
  Result<double> prefill(BackendSession& session, std::span<const uint32_t> ids) {
    const auto start = Clock::now();
    KIPP_TRY(eval(session, ids));
    return double(ids.size()) / seconds_since(start);
  }

  // Tokens per second, all sessions together, generating `count` tokens in each of `sessions` at
  // once: every step is one eval call holding one token of every session (a server's decode step).
  Result<double> decode_together(std::span<const std::unique_ptr<BackendSession>> sessions, uint32_t count) {
    const size_t vocab = logits_.size();
    std::vector<float> logits(sessions.size() * vocab);
    std::vector<uint32_t> next(sessions.size());
    std::vector<EvalItem> items(sessions.size());
    const auto start = Clock::now();
    for (uint32_t i = 0; i < count; ++i) {
      for (size_t s = 0; s < sessions.size(); ++s) {
        const float* row = logits.data() + s * vocab;
        next[s] = uint32_t(std::max_element(row, row + vocab) - row);
        items[s] = {sessions[s].get(), std::span(&next[s], 1), sessions[s]->length(), 1, logits.data() + s * vocab,
                    {}};
      }
      KIPP_TRY(backend_.eval(items));
    }
    return double(count) * double(sessions.size()) / seconds_since(start);
  }

  // Tokens per second generating `count` tokens one at a time, each the argmax of the last.
  Result<double> decode(BackendSession& session, uint32_t count) {
    const auto start = Clock::now();
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t next = argmax(logits_);
      KIPP_TRY(eval(session, std::span(&next, 1)));
    }
    return double(count) / seconds_since(start);
  }

 private:
  Status eval(BackendSession& session, std::span<const uint32_t> ids) {
    EvalItem item{&session, ids, session.length(), 1, logits_.data(), {}};
    return backend_.eval(std::span(&item, 1));
  }

  BackendModel& backend_;
  std::vector<float> logits_;
};

Result<double> load_seconds(const BenchArgs& args) {
  const auto start = Clock::now();
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  return seconds_since(start);
}

std::string format(const Summary& s, const char* unit, double scale = 1) {
  char text[128];
  std::snprintf(text, sizeof text, "%9.2f %s  (%.2f – %.2f)", s.median * scale, unit, s.min * scale, s.max * scale);
  return text;
}

nlohmann::json summary_json(const std::vector<double>& samples) {
  const Summary s = summarize(samples);
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"samples", samples}};
}

Status run_bench(const BenchArgs& args) {
  if (args.reps == 0) return fail("--reps must be at least 1");
  if (args.prompt == 0) return fail("-p must be at least 1");
  for (const uint32_t batch : args.batches)
    if (batch == 0) return fail("--batch takes sequence counts of at least 1");
  std::vector<double> loads, prefills, decodes, deep_decodes;
  for (uint32_t rep = 0; rep < args.reps; ++rep) {
    KIPP_ASSIGN(double seconds, load_seconds(args));
    loads.push_back(seconds);
  }
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  const uint32_t capacity = std::max(args.prompt, args.depth) + args.generate;
  if (capacity > c.context)
    return fail("-p/--depth plus -n is ", capacity, " positions; ", c.id, " holds ", c.context);
  Bench bench(*backend, c);
  const std::vector<uint32_t> prompt = random_ids(args.prompt, 1);
  {
    // One untimed pass so that every weight page is resident before the first timed run.
    KIPP_ASSIGN(std::unique_ptr<BackendSession> warm, backend->create_session(args.prompt));
    KIPP_TRY(bench.prefill(*warm, std::span(prompt).first(std::min<uint32_t>(args.prompt, 16))));
  }
  KIPP_ASSIGN(std::unique_ptr<BackendSession> session, backend->create_session(capacity));
  for (uint32_t rep = 0; rep < args.reps; ++rep) {
    session->reset();
    KIPP_ASSIGN(double prefill, bench.prefill(*session, prompt));
    prefills.push_back(prefill);
    if (args.generate == 0) continue;
    // Decode starts from an empty context (one untimed token), as llama-bench's tg does; decode
    // after a context is what --depth measures.
    session->reset();
    KIPP_TRY(bench.prefill(*session, std::span(prompt).first(1)));
    KIPP_ASSIGN(double decode, bench.decode(*session, args.generate));
    decodes.push_back(decode);
  }
  double depth_fill = 0;
  uint64_t other_memory = 0;
  if (args.depth > 0 && args.generate > 0) {
    session->reset();
    const std::vector<uint32_t> context = random_ids(args.depth, 2);
    KIPP_ASSIGN(depth_fill, bench.prefill(*session, context));
    for (uint32_t rep = 0; rep < args.reps; ++rep) {
      KIPP_TRY(session->truncate(args.depth));
      KIPP_ASSIGN(double decode, bench.decode(*session, args.generate));
      deep_decodes.push_back(decode);
    }
  }
  std::map<uint32_t, std::vector<double>> batch_decodes;
  for (const uint32_t batch : args.batches) {
    if (args.generate == 0) break;
    // `batch` sessions, each started from its own first token, then decoded together.
    std::vector<std::unique_ptr<BackendSession>> sessions;
    for (uint32_t s = 0; s < batch; ++s) {
      KIPP_ASSIGN(std::unique_ptr<BackendSession> one, backend->create_session(1 + args.generate));
      sessions.push_back(std::move(one));
    }
    for (uint32_t rep = 0; rep < args.reps; ++rep) {
      for (uint32_t s = 0; s < batch; ++s) {
        sessions[s]->reset();
        KIPP_TRY(bench.prefill(*sessions[s], std::span(prompt).subspan(s % args.prompt, 1)));
      }
      KIPP_ASSIGN(double decode, bench.decode_together(sessions, args.generate));
      batch_decodes[batch].push_back(decode);
    }
  }
  const uint64_t kv_bytes = uint64_t(kv_blocks_for(capacity)) * kKvBlockTokens * kv_bytes_per_token(c, args.backend.kv_cache());
  const std::optional<BackendModel::DeviceMemory> device = backend->device_memory();
  // A device backend keeps its weights and KV on the device: host memory is all "other".
  const uint64_t anonymous = anonymous_memory_bytes();
  const uint64_t accounted = device ? 0 : kv_bytes + backend->copied_weight_bytes();
  other_memory = anonymous > accounted ? anonymous - accounted : 0;
  const uint64_t peak = peak_rss_bytes();
  // Measured last, so that its buffer is not in the peak RSS above.
  const unsigned threads = args.backend.threads ? args.backend.threads : default_cpu_threads();
  // The roofline is the host memory's for a host backend. A device backend streams its weights
  // from device memory, whose bandwidth this does not measure (docs/CUDA.md divides by it).
  const double bandwidth = device ? 0.0 : read_bandwidth_gb_per_s(threads);
  const uint64_t bytes_per_token = weight_bytes_per_token(model->weights());
  const double roofline = device ? 0.0 : bandwidth * 1e9 / double(bytes_per_token);
  const double decode_share = decodes.empty() ? 0.0 : summarize(decodes).median / roofline;

  if (args.json) {
    nlohmann::json out = {{"model", args.model}, {"checkpoint", c.id}, {"backend", backend->describe()},
                          {"prompt_tokens", args.prompt}, {"generated_tokens", args.generate},
                          {"depth", args.depth}, {"reps", args.reps}, {"load_seconds", summary_json(loads)},
                          {"prefill_tokens_per_second", summary_json(prefills)},
                          {"decode_tokens_per_second", summary_json(decodes)}, {"peak_rss_bytes", peak},
                          {"kv_cache_bytes", kv_bytes},
                          {"kv_cache_format", kv_format_name(args.backend.kv_cache())},
                          {"kv_bytes_per_token", kv_bytes_per_token(c, args.backend.kv_cache())}, {"copied_weight_bytes", backend->copied_weight_bytes()},
                          {"memory_beyond_weights_and_kv_bytes", other_memory},
                          {"weight_bytes_per_token", bytes_per_token}};
    if (!device) {
      out["read_bandwidth_gb_per_s"] = bandwidth;
      out["decode_roofline_tokens_per_second"] = roofline;
    }
    for (const auto& [batch, samples] : batch_decodes)
      out["batch_decode_tokens_per_second"][std::to_string(batch)] = summary_json(samples);
    if (device)
      out["device_memory"] = {{"device", device->device},
                              {"held_peak_bytes", device->held_peak_bytes},
                              {"used_bytes", device->used_bytes},
                              {"total_bytes", device->total_bytes}};
    if (args.depth > 0) {
      out["decode_at_depth_tokens_per_second"] = summary_json(deep_decodes);
      out["depth_fill_tokens_per_second"] = depth_fill;
    }
    std::printf("%s\n", out.dump(2).c_str());
    return {};
  }
  std::printf("model      %s (%s)\nbackend    %s\nmedian of %u runs (range)\n", args.model.c_str(), std::string(c.id).c_str(),
              backend->describe().c_str(), args.reps);
  std::printf("load                 %s\n", format(summarize(loads), "ms", 1e3).c_str());
  std::printf("prefill  p=%-5u     %s\n", args.prompt, format(summarize(prefills), "tok/s").c_str());
  if (!decodes.empty())
    std::printf("decode   n=%-5u     %s\n", args.generate, format(summarize(decodes), "tok/s").c_str());
  for (const auto& [batch, samples] : batch_decodes)
    std::printf("decode   %-3u at once %s   (all sequences together)\n", batch,
                format(summarize(samples), "tok/s").c_str());
  if (!deep_decodes.empty())
    std::printf("decode   at %-5u    %s   (context filled at %.1f tok/s)\n", args.depth,
                format(summarize(deep_decodes), "tok/s").c_str(), depth_fill);
  std::printf("peak RSS             %9.1f MiB (weights included)\n", double(peak) / (1 << 20));
  std::printf("%s       %9.1f MiB (copied %s at load; their mapped pages released)\n",
              device ? "device weights" : "packed weights", double(backend->copied_weight_bytes()) / (1 << 20),
              device ? "to the device" : "and packed");
  std::printf("KV cache             %9.1f MiB (%u positions, %s, %llu bytes per token%s)\n", double(kv_bytes) / (1 << 20),
              capacity, std::string(kv_format_name(args.backend.kv_cache())).c_str(),
              (unsigned long long)kv_bytes_per_token(c, args.backend.kv_cache()), device ? ", on the device" : "");
  if (device) {
    std::printf("device memory        %9.1f MiB (the most the backend held: weights, KV, activations)\n",
                double(device->held_peak_bytes) / (1 << 20));
    std::printf("device in use        %9.1f MiB of %.1f MiB on %s (everyone's, the runtime's included)\n",
                double(device->used_bytes) / (1 << 20), double(device->total_bytes) / (1 << 20),
                device->device.c_str());
  }
  std::printf("other memory         %9.1f MiB (%s)\n", double(other_memory) / (1 << 20),
              device ? "host: scratch, tables, stacks; anonymous memory"
                     : "scratch, tables, stacks: anonymous memory less KV and weights");
  if (device) {
    std::printf("weights per token    %9.1f MiB (decode's roofline: the device's bandwidth / this)\n",
                double(bytes_per_token) / (1 << 20));
    return {};
  }
  std::printf("read bandwidth       %9.2f GB/s (streaming read, 4 streams x %u threads, median of 5)\n", bandwidth,
              threads);
  std::printf("decode roofline      %9.2f tok/s (bandwidth / %.1f MiB of weights per token)", roofline,
              double(bytes_per_token) / (1 << 20));
  if (decode_share > 0) std::printf("; decode at %.0f%% of it", 100 * decode_share);
  std::printf("\n");
  return {};
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Measure load time, prefill and decode speed, and memory");
  auto args = std::make_shared<BenchArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact")->required();
  sub->add_option("-p,--prompt", args->prompt, "Prompt tokens for prefill (default 512)");
  sub->add_option("-n,--generate", args->generate, "Tokens to decode (default 128)");
  sub->add_option("--depth", args->depth, "Also decode after this many cached tokens (default 0: skip)");
  sub->add_option("--batch", args->batches,
                  "Also decode N sequences together, one eval per step; a list like 8,32,64 measures each")
      ->delimiter(',');
  sub->add_option("--reps", args->reps, "Runs per figure (default 3)");
  args->backend.add_to(*sub);
  sub->add_flag("--json", args->json, "Machine-readable output with every sample");
  return {sub, [args] {
            if (auto done = run_bench(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
