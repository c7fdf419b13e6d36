// `kipp pull ID [--quant Q] [--models-dir DIR] [--endpoint URL]`: download, verify and convert a
// registry checkpoint (pull/pull.h). Messages and progress go to stderr; the artifact's path is
// the only thing printed on stdout, so scripts can capture it.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "util/progress.h"
#include "pull/pull.h"

namespace kipp::cli {

namespace {
struct PullArgs {
  std::string checkpoint, quant = "bf16", models_dir = pull::kDefaultModelsDir, endpoint;
};
}  // namespace

Command add_pull_command(CLI::App& app) {
  auto* sub = app.add_subcommand("pull", "Download a registry checkpoint at its pinned revision, verify it and convert it");
  auto args = std::make_shared<PullArgs>();
  sub->add_option("id", args->checkpoint, "Registry id, e.g. qwen3-0.6b (see `kipp registry`)")->required();
  sub->add_option("--quant", args->quant, "Projection weights: bf16, q8_0 or affine4_gs32")
      ->check(CLI::IsMember({"bf16", "q8_0", "affine4_gs32"}));
  sub->add_option("--models-dir", args->models_dir,
                  "Where downloads (DIR/.downloads/) and the artifact (DIR/ID.QUANT.gguf) go; default ./models");
  sub->add_option("--endpoint", args->endpoint, std::string("Hub base URL; default ") + pull::kDefaultEndpoint);
  return {sub, [args, sub] {
            ProgressDisplay progress(ProgressDisplay::mode_for(stderr), stderr);
            pull::PullOptions options;
            options.checkpoint_id = args->checkpoint;
            options.scheme = *parse_quant_scheme(args->quant);
            options.models_dir = args->models_dir;
            if (sub->count("--endpoint") > 0) {
              options.endpoint = args->endpoint;
              if (options.endpoint.empty()) return report(fail("--endpoint: expected a URL, got an empty string"));
            }
            options.progress = &progress;
            options.note = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
            auto pulled = pull::pull_checkpoint(options);
            progress.finish();
            if (!pulled) return report(pulled.error());
            std::fprintf(stderr, "converted %s (%s): %llu tensors, %.1f MiB in %.2f s\n", args->checkpoint.c_str(),
                         args->quant.c_str(), (unsigned long long)pulled->conversion.tensors,
                         double(pulled->conversion.bytes_written) / (1 << 20), pulled->conversion.seconds);
            std::printf("%s\n", pulled->artifact_path.c_str());
            return 0;
          }};
}

}  // namespace kipp::cli
