// `kipp registry [--json]`: the supported checkpoints.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "registry/registry.h"
#include "registry/registry_json.h"

namespace kipp::cli {

Command add_registry_command(CLI::App& app) {
  auto* sub = app.add_subcommand("registry", "List the supported checkpoints (--json: every field of every entry)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print every field of every entry as JSON");
  return {sub, [json] {
            if (*json) {
              std::printf("%s\n", registry_json().c_str());
              return 0;
            }
            std::printf("%-28s %-14s %6s %6s %6s %7s %8s %9s %5s  %s\n", "id", "variant", "layers", "hidden", "ffn",
                        "q_heads", "context", "rope", "tied", "repository@revision");
            for (const Checkpoint& c : all_checkpoints()) {
              std::printf("%-28s %-14s %6u %6u %6u %7u %8u %9.0f %5s  %s@%.12s%s\n", std::string(c.id).c_str(),
                          std::string(variant_name(c.variant)).c_str(), c.layers, c.hidden, c.ffn, c.q_heads, c.context,
                          double(c.rope_theta), c.tied ? "yes" : "no", std::string(c.repository).c_str(),
                          std::string(c.revision).c_str(), c.synthetic ? "  (synthetic test entry)" : "");
            }
            return 0;
          }};
}

}  // namespace kipp::cli
