// `kipp run ID [--quant Q] [--models-dir DIR] [pull flags] [chat flags]`: the one-liner. The
// checkpoint's artifact in the models folder, pulled first when it is not there (progress shown,
// a broken download resumed), then the interactive chat on it (cli/chat_command.h).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/chat_command.h"
#include "cli/commands.h"
#include "cli/pull_flags.h"
#include "cli/report.h"
#include "pull/local_models.h"
#include "pull/pull.h"

namespace kipp::cli {
namespace {

struct RunArgs {
  std::string id;
  PullFlags pull;
  ChatArgs chat;
};

Status run(const RunArgs& args, const CLI::App& app) {
  const Checkpoint* checkpoint = find_checkpoint(args.id);
  if (!checkpoint) return fail("unknown checkpoint \"", args.id, "\": not in the Kipp registry (see `kipp registry`)");
  if (std::string refusal = role_refusal(*checkpoint, Role::generate, "kipp run"); !refusal.empty())
    return fail(refusal);
  KIPP_ASSIGN(pull::PullOptions options, args.pull.options(app, args.id));
  ChatArgs chat = args.chat;
  chat.model = pull::artifact_path(options.models_dir, checkpoint->id, options.scheme, options.head);
  KIPP_ASSIGN(std::vector<pull::LocalArtifact> present, pull::list_local_artifacts(options.models_dir));
  const auto found = pull::artifacts_of(present, *checkpoint, options.scheme, options.head);
  if (found.empty() || !found.front().problem.empty()) {
    std::fprintf(stderr, "%s is not in %s yet: pulling it\n", args.id.c_str(), options.models_dir.c_str());
    KIPP_ASSIGN(chat.model, pull_with_progress(options));
  }
  return run_chat(chat);
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Chat with a registry checkpoint, pulling it first when it is not here");
  auto args = std::make_shared<RunArgs>();
  sub->add_option("id", args->id, "Registry id, e.g. qwen3-0.6b (see `kipp registry`)")->required();
  args->pull.add_to(*sub);
  add_chat_options(*sub, args->chat);
  return {sub, [args, sub] {
            if (auto done = run(*args, *sub); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
