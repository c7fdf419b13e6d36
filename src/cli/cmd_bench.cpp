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
#include <span>
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

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

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
        items[s] = {sessions[s].get(), std::span(&next[s], 1), sessions[s]->length(), 1, logits.data() + s * vocab, {}};
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

// Every sample the runs gave, one per rep unless said otherwise.
struct Speeds {
  std::vector<double> loads, prefills, decodes, deep_decodes;
  double depth_fill = 0;  // tokens per second filling the --depth context, measured once
  std::map<uint32_t, std::vector<double>> batch_decodes;  // by --batch sequence count
};

// What the process holds once the speeds are measured, and decode's bound from the memory's speed.
struct Footprint {
  uint64_t kv_bytes = 0;
  std::optional<BackendModel::DeviceMemory> device;  // a device backend's own account
  uint64_t other_memory = 0;
  uint64_t peak = 0;
  unsigned threads = 0;
  uint64_t bytes_per_token = 0;
  double bandwidth = 0;  // GB/s of host memory; 0 for a device backend
  double roofline = 0;   // tokens per second; 0 for a device backend
};

Status check(const BenchArgs& args) {
  if (args.reps == 0) return fail("--reps must be at least 1");
  if (args.prompt == 0) return fail("-p must be at least 1");
  for (const uint32_t batch : args.batches)
    if (batch == 0) return fail("--batch takes sequence counts of at least 1");
  return {};
}

// Prefill of the prompt, then decode from an empty context, `reps` times over one session.
Status measure_fresh(Bench& bench, BackendSession& session, const BenchArgs& args, std::span<const uint32_t> prompt,
                     Speeds& speeds) {
  for (uint32_t rep = 0; rep < args.reps; ++rep) {
    session.reset();
    KIPP_ASSIGN(double prefill, bench.prefill(session, prompt));
    speeds.prefills.push_back(prefill);
    if (args.generate == 0) continue;
    // Decode starts from an empty context (one untimed token), as llama-bench's tg does; decode
    // after a context is what --depth measures.
    session.reset();
    KIPP_TRY(bench.prefill(session, prompt.first(1)));
    KIPP_ASSIGN(double decode, bench.decode(session, args.generate));
    speeds.decodes.push_back(decode);
  }
  return {};
}

// Decode after --depth cached tokens: the context is filled once, and each rep cuts back to it.
Status measure_at_depth(Bench& bench, BackendSession& session, const BenchArgs& args, Speeds& speeds) {
  session.reset();
  const std::vector<uint32_t> context = random_ids(args.depth, 2);
  KIPP_ASSIGN(speeds.depth_fill, bench.prefill(session, context));
  for (uint32_t rep = 0; rep < args.reps; ++rep) {
    KIPP_TRY(session.truncate(args.depth));
    KIPP_ASSIGN(double decode, bench.decode(session, args.generate));
    speeds.deep_decodes.push_back(decode);
  }
  return {};
}

// For each --batch count: that many sessions, each started from its own first token, then decoded
// together.
Status measure_batches(Bench& bench, BackendModel& backend, const BenchArgs& args, std::span<const uint32_t> prompt,
                       Speeds& speeds) {
  for (const uint32_t batch : args.batches) {
    std::vector<std::unique_ptr<BackendSession>> sessions;
    for (uint32_t s = 0; s < batch; ++s) {
      KIPP_ASSIGN(std::unique_ptr<BackendSession> one, backend.create_session(1 + args.generate));
      sessions.push_back(std::move(one));
    }
    for (uint32_t rep = 0; rep < args.reps; ++rep) {
      for (uint32_t s = 0; s < batch; ++s) {
        sessions[s]->reset();
        KIPP_TRY(bench.prefill(*sessions[s], prompt.subspan(s % args.prompt, 1)));
      }
      KIPP_ASSIGN(double decode, bench.decode_together(sessions, args.generate));
      speeds.batch_decodes[batch].push_back(decode);
    }
  }
  return {};
}

Footprint measure_footprint(const BackendModel& backend, const ModelFile& model, const BenchArgs& args,
                            uint32_t capacity) {
  Footprint f;
  const KvFormat kv_format = args.backend.kv_cache();
  f.kv_bytes = uint64_t(kv_blocks_for(capacity)) * kKvBlockTokens * kv_bytes_per_token(model.checkpoint(), kv_format);
  f.device = backend.device_memory();
  // A device backend keeps its weights and KV on the device: host memory is all "other".
  const uint64_t anonymous = anonymous_memory_bytes();
  const uint64_t accounted = f.device ? 0 : f.kv_bytes + backend.copied_weight_bytes();
  f.other_memory = anonymous > accounted ? anonymous - accounted : 0;
  f.peak = peak_rss_bytes();
  // Measured last, so that its buffer is not in the peak RSS above.
  f.threads = args.backend.threads ? args.backend.threads : default_cpu_threads();
  // The roofline is the host memory's for a host backend. A device backend streams its weights
  // from device memory, whose bandwidth this does not measure (docs/CUDA.md divides by it).
  f.bandwidth = f.device ? 0.0 : read_bandwidth_gb_per_s(f.threads);
  f.bytes_per_token = weight_bytes_per_token(model.weights());
  f.roofline = f.device ? 0.0 : f.bandwidth * 1e9 / double(f.bytes_per_token);
  return f;
}

void print_json(const BenchArgs& args, const Checkpoint& c, const BackendModel& backend, const Speeds& speeds,
                const Footprint& f) {
  const KvFormat kv_format = args.backend.kv_cache();
  nlohmann::json out = {{"model", args.model},
                        {"checkpoint", c.id},
                        {"backend", backend.describe()},
                        {"prompt_tokens", args.prompt},
                        {"generated_tokens", args.generate},
                        {"depth", args.depth},
                        {"reps", args.reps},
                        {"load_seconds", summary_json(speeds.loads)},
                        {"prefill_tokens_per_second", summary_json(speeds.prefills)},
                        {"decode_tokens_per_second", summary_json(speeds.decodes)},
                        {"peak_rss_bytes", f.peak},
                        {"kv_cache_bytes", f.kv_bytes},
                        {"kv_cache_format", kv_format_name(kv_format)},
                        {"kv_bytes_per_token", kv_bytes_per_token(c, kv_format)},
                        {"copied_weight_bytes", backend.copied_weight_bytes()},
                        {"memory_beyond_weights_and_kv_bytes", f.other_memory},
                        {"weight_bytes_per_token", f.bytes_per_token}};
  if (!f.device) {
    out["read_bandwidth_gb_per_s"] = f.bandwidth;
    out["decode_roofline_tokens_per_second"] = f.roofline;
  }
  for (const auto& [batch, samples] : speeds.batch_decodes)
    out["batch_decode_tokens_per_second"][std::to_string(batch)] = summary_json(samples);
  if (f.device)
    out["device_memory"] = {{"device", f.device->device},
                            {"held_peak_bytes", f.device->held_peak_bytes},
                            {"used_bytes", f.device->used_bytes},
                            {"total_bytes", f.device->total_bytes}};
  if (args.depth > 0) {
    out["decode_at_depth_tokens_per_second"] = summary_json(speeds.deep_decodes);
    out["depth_fill_tokens_per_second"] = speeds.depth_fill;
  }
  std::printf("%s\n", out.dump(2).c_str());
}

void print_speeds(const BenchArgs& args, const Checkpoint& c, const BackendModel& backend, const Speeds& speeds) {
  std::printf("model      %s (%s)\nbackend    %s\nmedian of %u runs (range)\n", args.model.c_str(),
              std::string(c.id).c_str(), backend.describe().c_str(), args.reps);
  std::printf("load                 %s\n", format(summarize(speeds.loads), "ms", 1e3).c_str());
  std::printf("prefill  p=%-5u     %s\n", args.prompt, format(summarize(speeds.prefills), "tok/s").c_str());
  if (!speeds.decodes.empty())
    std::printf("decode   n=%-5u     %s\n", args.generate, format(summarize(speeds.decodes), "tok/s").c_str());
  for (const auto& [batch, samples] : speeds.batch_decodes)
    std::printf("decode   %-3u at once %s   (all sequences together)\n", batch,
                format(summarize(samples), "tok/s").c_str());
  if (!speeds.deep_decodes.empty())
    std::printf("decode   at %-5u    %s   (context filled at %.1f tok/s)\n", args.depth,
                format(summarize(speeds.deep_decodes), "tok/s").c_str(), speeds.depth_fill);
}

void print_footprint(const BenchArgs& args, const Checkpoint& c, const BackendModel& backend, uint32_t capacity,
                     const Speeds& speeds, const Footprint& f) {
  const KvFormat kv_format = args.backend.kv_cache();
  std::printf("peak RSS             %9.1f MiB (weights included)\n", double(f.peak) / (1 << 20));
  std::printf("%s       %9.1f MiB (copied %s at load; their mapped pages released)\n",
              f.device ? "device weights" : "packed weights", double(backend.copied_weight_bytes()) / (1 << 20),
              f.device ? "to the device" : "and packed");
  std::printf("KV cache             %9.1f MiB (%u positions, %s, %llu bytes per token%s)\n",
              double(f.kv_bytes) / (1 << 20), capacity, std::string(kv_format_name(kv_format)).c_str(),
              (unsigned long long)kv_bytes_per_token(c, kv_format), f.device ? ", on the device" : "");
  if (f.device) {
    std::printf("device memory        %9.1f MiB (the most the backend held: weights, KV, activations)\n",
                double(f.device->held_peak_bytes) / (1 << 20));
    std::printf("device in use        %9.1f MiB of %.1f MiB on %s (everyone's, the runtime's included)\n",
                double(f.device->used_bytes) / (1 << 20), double(f.device->total_bytes) / (1 << 20),
                f.device->device.c_str());
  }
  std::printf("other memory         %9.1f MiB (%s)\n", double(f.other_memory) / (1 << 20),
              f.device ? "host: scratch, tables, stacks; anonymous memory"
                       : "scratch, tables, stacks: anonymous memory less KV and weights");
  if (f.device) {
    std::printf("weights per token    %9.1f MiB (decode's roofline: the device's bandwidth / this)\n",
                double(f.bytes_per_token) / (1 << 20));
    return;
  }
  std::printf("read bandwidth       %9.2f GB/s (streaming read, 4 streams x %u threads, median of 5)\n", f.bandwidth,
              f.threads);
  std::printf("decode roofline      %9.2f tok/s (bandwidth / %.1f MiB of weights per token)", f.roofline,
              double(f.bytes_per_token) / (1 << 20));
  const double decode_share = speeds.decodes.empty() ? 0.0 : summarize(speeds.decodes).median / f.roofline;
  if (decode_share > 0) std::printf("; decode at %.0f%% of it", 100 * decode_share);
  std::printf("\n");
}

Status run_bench(const BenchArgs& args) {
  KIPP_TRY(check(args));
  Speeds speeds;
  for (uint32_t rep = 0; rep < args.reps; ++rep) {
    KIPP_ASSIGN(double seconds, load_seconds(args));
    speeds.loads.push_back(seconds);
  }
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  const uint32_t capacity = std::max(args.prompt, args.depth) + args.generate;
  if (capacity > c.context) return fail("-p/--depth plus -n is ", capacity, " positions; ", c.id, " holds ", c.context);
  Bench bench(*backend, c);
  const std::vector<uint32_t> prompt = random_ids(args.prompt, 1);
  {
    // One untimed pass so that every weight page is resident before the first timed run.
    KIPP_ASSIGN(std::unique_ptr<BackendSession> warm, backend->create_session(args.prompt));
    KIPP_TRY(bench.prefill(*warm, std::span(prompt).first(std::min<uint32_t>(args.prompt, 16))));
  }
  KIPP_ASSIGN(std::unique_ptr<BackendSession> session, backend->create_session(capacity));
  KIPP_TRY(measure_fresh(bench, *session, args, prompt, speeds));
  if (args.generate > 0) {
    if (args.depth > 0) KIPP_TRY(measure_at_depth(bench, *session, args, speeds));
    KIPP_TRY(measure_batches(bench, *backend, args, prompt, speeds));
  }
  const Footprint footprint = measure_footprint(*backend, *model, args, capacity);
  if (args.json) {
    print_json(args, c, *backend, speeds, footprint);
    return {};
  }
  print_speeds(args, c, *backend, speeds);
  print_footprint(args, c, *backend, capacity, speeds, footprint);
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
