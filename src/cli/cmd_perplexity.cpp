// `kipp perplexity --model FILE --file TEXT [--window N] [--backend B] [--json]`: the perplexity
// of a text file under the model, over consecutive windows of N tokens, and the evaluation speed.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "engine/perplexity.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

namespace kipp::cli {
namespace {

struct PerplexityArgs {
  std::string model, file;
  uint32_t window = 512;
  bool json = false;
  BackendFlags backend;
};

Status run_perplexity(const PerplexityArgs& args) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  KIPP_ASSIGN(std::string text, read_text_file(args.file, uint64_t(1) << 30));
  KIPP_ASSIGN(Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  auto tokens = tokenizer.encode(text);
  if (!tokens) return with_context(args.file, tokens.error());
  const Checkpoint& c = model->checkpoint();
  if (args.window > c.context) return fail("--window ", args.window, " is longer than the context of ", c.context);
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  auto result = perplexity(*backend, *tokens, args.window, uint32_t(tokenizer.vocab_size()));
  if (!result) return with_context(args.file, result.error());
  const PerplexityResult& r = *result;
  const double speed = r.seconds > 0 ? double(tokens->size()) / r.seconds : 0.0;
  if (args.json) {
    const nlohmann::json out = {{"model", c.id},
                                {"backend", backend->describe()},
                                {"perplexity", r.perplexity},
                                {"mean_nll", r.mean_nll},
                                {"tokens", tokens->size()},
                                {"scored_tokens", r.scored},
                                {"windows", r.windows},
                                {"window", args.window},
                                {"seconds", r.seconds},
                                {"tokens_per_second", speed}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("perplexity %.6g over %llu scored tokens (%u windows of up to %u tokens) at %.1f tok/s\n", r.perplexity,
                static_cast<unsigned long long>(r.scored), r.windows, args.window, speed);
  }
  return {};
}

}  // namespace

Command add_perplexity_command(CLI::App& app) {
  auto* sub = app.add_subcommand("perplexity", "Perplexity of a text file under the model, and the evaluation speed");
  auto args = std::make_shared<PerplexityArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact")->required();
  sub->add_option("--file", args->file, "A UTF-8 text file")->required();
  sub->add_option("--window", args->window, "Tokens per window, each evaluated from an empty cache (default 512)");
  args->backend.add_to(*sub);
  sub->add_flag("--json", args->json, "Machine-readable result");
  return {sub, [args] {
            if (auto done = run_perplexity(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
