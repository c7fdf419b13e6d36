// `kipp list [--models-dir DIR]` and `kipp rm ID [--quant Q] [--head H] [--models-dir DIR]
// [--keep-download]`: the artifacts `kipp pull` left in a models folder, and their removal
// (pull/local_models.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report.h"
#include "pull/local_models.h"
#include "pull/pull.h"
#include "util/progress.h"

namespace kipp::cli {
namespace {

std::string scheme_text(const pull::LocalArtifact& artifact) {
  std::string text(quant_scheme_name(artifact.scheme));
  if (artifact.head != HeadScheme::bf16) text += "+head-" + std::string(head_scheme_name(artifact.head));
  return text;
}

int list(const std::string& models_dir) {
  auto artifacts = pull::list_local_artifacts(models_dir);
  if (!artifacts) return report(artifacts.error());
  if (artifacts->empty()) {
    std::fprintf(stderr, "no artifacts in %s (`kipp pull ID` adds one; `kipp registry` lists the ids)\n",
                 models_dir.c_str());
    return 0;
  }
  std::printf("%-34s %-8s %-19s %10s  %s\n", "id", "role", "scheme", "size", "path");
  for (const pull::LocalArtifact& artifact : *artifacts) {
    const std::string id = artifact.checkpoint ? std::string(artifact.checkpoint->id) : "?";
    const std::string role = artifact.checkpoint ? std::string(role_name(artifact.checkpoint->role)) : "?";
    std::printf("%-34s %-8s %-19s %10s  %s", id.c_str(), role.c_str(),
                artifact.checkpoint ? scheme_text(artifact).c_str() : "?", format_bytes(artifact.bytes).c_str(),
                artifact.path.c_str());
    if (!artifact.problem.empty()) std::printf("  (not usable: %s)", artifact.problem.c_str());
    else if (!artifact.pull_named) std::printf("  (named otherwise: an id does not find it; give the file)");
    std::printf("\n");
  }
  return 0;
}

struct RemoveArgs {
  std::string id, quant, head, models_dir = pull::kDefaultModelsDir;
  bool keep_download = false;
};

Status remove(const RemoveArgs& args) {
  const Checkpoint* checkpoint = find_checkpoint(args.id);
  if (!checkpoint) return fail("unknown checkpoint \"", args.id, "\": not in the Kipp registry (see `kipp registry`)");
  KIPP_ASSIGN(std::vector<pull::LocalArtifact> all, pull::list_local_artifacts(args.models_dir));
  const std::optional<QuantScheme> scheme =
      args.quant.empty() ? std::nullopt : std::optional<QuantScheme>(*parse_quant_scheme(args.quant));
  const std::optional<HeadScheme> head =
      args.head.empty() ? std::nullopt : std::optional<HeadScheme>(*parse_head_scheme(args.head));
  const std::vector<pull::LocalArtifact> chosen = pull::artifacts_of(all, *checkpoint, scheme, head);
  const std::string download = pull::download_dir(args.models_dir, *checkpoint);
  std::error_code error;
  const bool has_download = !args.keep_download && std::filesystem::exists(download, error);
  if (chosen.empty() && !has_download)
    return fail(args.id, args.quant.empty() ? "" : " (" + args.quant + ")", " is not in ", args.models_dir,
                " (`kipp list` shows what is)");
  for (const pull::LocalArtifact& artifact : chosen) {
    if (!std::filesystem::remove(artifact.path, error) && error)
      return fail(artifact.path, ": cannot remove: ", error.message());
    std::fprintf(stderr, "removed %s\n", artifact.path.c_str());
  }
  // The downloaded source goes too, unless an artifact of another scheme is kept (it may be
  // converted again from it) or --keep-download says so.
  if (has_download && pull::artifacts_of(all, *checkpoint).size() == chosen.size()) {
    const uintmax_t removed = std::filesystem::remove_all(download, error);
    if (error) return fail(download, ": cannot remove: ", error.message());
    std::fprintf(stderr, "removed %s (%ju files)\n", download.c_str(), removed);
  }
  return {};
}

}  // namespace

Command add_list_command(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "List the artifacts in the models folder (id, role, scheme, size, path)");
  auto models_dir = std::make_shared<std::string>(pull::kDefaultModelsDir);
  sub->add_option("--models-dir", *models_dir, "The folder `kipp pull` writes to; default ./models");
  return {sub, [models_dir] { return list(*models_dir); }};
}

Command add_rm_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("rm", "Remove a checkpoint's artifacts (and its downloaded source) from the models folder");
  auto args = std::make_shared<RemoveArgs>();
  sub->add_option("id", args->id, "Registry id, e.g. qwen3-0.6b (see `kipp list`)")->required();
  sub->add_option("--quant", args->quant, "Only the artifact of this scheme: bf16, q8_0 or affine4_gs32")
      ->check(CLI::IsMember({"bf16", "q8_0", "affine4_gs32"}));
  sub->add_option("--head", args->head, "Only the artifact with this head: bf16 or q8_0")
      ->check(CLI::IsMember({"bf16", "q8_0"}));
  sub->add_option("--models-dir", args->models_dir, "The folder `kipp pull` writes to; default ./models");
  sub->add_flag("--keep-download", args->keep_download, "Keep the downloaded source files (DIR/.downloads/)");
  return {sub, [args] {
            if (auto done = remove(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
