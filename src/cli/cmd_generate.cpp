// `kipp generate --model FILE --prompt P [-n N] [sampling flags] [--json-schema F | --grammar F]
// [--backend B] [--json]`: a completion of the raw prompt (no chat template), streamed to stdout as
// it is generated, with the timings on stderr at the end; under a schema or grammar the text
// follows it from the first token. Sampling defaults to the checkpoint's recommended settings;
// --greedy (or --temperature 0) takes the argmax.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "cli/constraint_flags.h"
#include "cli/sampling_flags.h"
#include "engine/generator.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"

namespace kipp::cli {
namespace {

struct GenerateArgs {
  std::string model, prompt;
  uint32_t max_tokens = 256;
  bool json = false, speculative = false;
  std::vector<std::string> stop;
  SamplingFlags sampling;
  ConstraintFlags constraint;
  BackendFlags backend;
};

// The constraint's cost per token: median, 99th percentile and the largest (the first visit of a
// state walks the vocabulary; later visits are a cache lookup). Null without a constraint.
nlohmann::json constraint_json(std::vector<double> seconds) {
  if (seconds.empty()) return nullptr;
  std::sort(seconds.begin(), seconds.end());
  const auto at = [&](double q) { return seconds[std::min(seconds.size() - 1, size_t(q * double(seconds.size())))]; };
  double total = 0;
  for (double s : seconds) total += s;
  return {
      {"tokens", seconds.size()}, {"median", at(0.5)}, {"p99", at(0.99)}, {"max", seconds.back()}, {"total", total}};
}

nlohmann::json timings_json(const GenerationTimings& t) {
  return {{"prompt_tokens", t.prompt_tokens},
          {"prompt_seconds", t.prompt_seconds},
          {"prompt_tokens_per_second", t.prompt_seconds > 0 ? t.prompt_tokens / t.prompt_seconds : 0.0},
          {"generated_tokens", t.generated_tokens},
          {"decode_seconds", t.decode_seconds},
          {"decode_tokens_per_second", t.decode_seconds > 0 ? t.generated_tokens / t.decode_seconds : 0.0},
          {"time_to_first_token_seconds", t.first_token_seconds},
          {"draft_tokens", t.draft_tokens},
          {"accepted_draft_tokens", t.accepted_draft_tokens},
          {"constraint_seconds", constraint_json(t.constraint_seconds)}};
}

Status run_generate(const GenerateArgs& args) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
  if (std::string refusal = role_refusal(c, Role::generate, "kipp generate"); !refusal.empty()) return fail(refusal);
  KIPP_ASSIGN(SamplingParams sampling, args.sampling.resolve(c.variant));
  KIPP_ASSIGN(Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  KIPP_TRY(validate(sampling, uint32_t(tokenizer.vocab_size())));
  KIPP_ASSIGN(std::vector<uint32_t> prompt, tokenizer.encode(args.prompt));
  if (prompt.empty()) return fail("--prompt is empty: give at least one character to continue from");
  if (prompt.size() >= c.context)
    return fail("--prompt is ", prompt.size(), " tokens; the context of ", c.id, " is ", c.context);
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  const uint64_t wanted = uint64_t(prompt.size()) + args.max_tokens;
  KIPP_ASSIGN(std::unique_ptr<BackendSession> session,
              backend->create_session(uint32_t(std::min<uint64_t>(wanted, c.context))));

  GenerateOptions options;
  options.max_tokens = args.max_tokens;
  options.sampling = sampling;
  options.stop = args.stop;
  options.speculative = args.speculative;
  KIPP_ASSIGN(options.constraint, args.constraint.masks_for(tokenizer));
  const std::vector<uint32_t> stop_ids = c.stop_ids();
  GenerateContext context{*backend, *session, tokenizer, stop_ids};
  const auto stream = [&](std::string_view piece, std::span<const PartStart>) {
    if (args.json) return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  KIPP_ASSIGN(Generation g, generate(context, prompt, options, stream));

  const GenerationTimings& t = g.timings;
  if (args.json) {
    nlohmann::json out = {{"model", c.id},
                          {"backend", backend->describe()},
                          {"text", g.text},
                          {"tokens", g.tokens},
                          {"finish_reason", finish_reason_name(g.finish)},
                          {"stop", g.stop},
                          {"seed", sampling.seed},
                          {"sampling",
                           {{"temperature", sampling.temperature},
                            {"top_k", sampling.top_k},
                            {"top_p", sampling.top_p},
                            {"min_p", sampling.min_p},
                            {"repetition_penalty", sampling.repetition_penalty},
                            {"frequency_penalty", sampling.frequency_penalty},
                            {"presence_penalty", sampling.presence_penalty}}},
                          {"timings", timings_json(t)}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return {};
  }
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr,
               "prompt %u tokens at %.1f tok/s | generated %u tokens at %.1f tok/s | first token after %.0f ms | "
               "finish: %s%s%s | seed %llu%s\n",
               t.prompt_tokens, t.prompt_seconds > 0 ? t.prompt_tokens / t.prompt_seconds : 0.0, t.generated_tokens,
               t.decode_seconds > 0 ? t.generated_tokens / t.decode_seconds : 0.0, t.first_token_seconds * 1e3,
               std::string(finish_reason_name(g.finish)).c_str(), g.stop.empty() ? "" : " ",
               g.stop.empty() ? "" : nlohmann::json(g.stop).dump().c_str(),
               static_cast<unsigned long long>(sampling.seed),
               args.speculative ? (" | drafts: " + std::to_string(t.accepted_draft_tokens) + " of " +
                                   std::to_string(t.draft_tokens) + " accepted")
                                      .c_str()
                                : "");
  return {};
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("generate", "Continue a prompt, streaming the text (raw completion, no chat template)");
  auto args = std::make_shared<GenerateArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact")->required();
  sub->add_option("--prompt", args->prompt, "The text to continue")->required();
  sub->add_option("-n,--max-tokens", args->max_tokens, "Most tokens to generate (default 256)");
  args->sampling.add_to(*sub);
  sub->add_option("--stop", args->stop, "Stop before this text, repeatable");
  args->constraint.add_to(*sub, grammar::JsonForm::tidy);
  sub->add_flag("--spec", args->speculative,
                "Speculative decoding by prompt lookup (greedy only; same output, faster on text that repeats)");
  args->backend.add_to(*sub);
  sub->add_flag("--json", args->json, "Print one JSON result at the end instead of streaming");
  return {sub, [args] {
            if (auto done = run_generate(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
