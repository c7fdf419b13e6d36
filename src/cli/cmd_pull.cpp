// `kipp pull ID [--quant Q] [--models-dir DIR] [--endpoint URL] [--token T] [--hf-cache DIR | --no-hf-cache]`:
// download, verify and convert a registry checkpoint (pull/pull.h). Messages and progress go to
// stderr; the artifact's path is the only thing printed on stdout, so scripts can capture it.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/pull_flags.h"
#include "cli/report.h"

namespace kipp::cli {

Command add_pull_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("pull", "Download a registry checkpoint at its pinned revision, verify it and convert it");
  auto checkpoint = std::make_shared<std::string>();
  auto flags = std::make_shared<PullFlags>();
  sub->add_option("id", *checkpoint, "Registry id, e.g. qwen3-0.6b (see `kipp registry`)")->required();
  flags->add_to(*sub);
  return {sub, [checkpoint, flags, sub] {
            auto options = flags->options(*sub, *checkpoint);
            if (!options) return report(options.error());
            auto path = pull_with_progress(*options);
            if (!path) return report(path.error());
            std::printf("%s\n", path->c_str());
            return 0;
          }};
}

}  // namespace kipp::cli
