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
            // mlp: one dense MLP, or "8/128" experts per token; ffn: that MLP's width, or each expert's.
            std::printf("%-34s %-8s %-13s %-6s %6s %6s %6s %5s %7s %9s %4s  %s\n", "id", "role", "variant", "mlp",
                        "layers", "hidden", "ffn", "heads", "context", "rope", "tied", "repository@revision");
            for (const Checkpoint& c : all_checkpoints()) {
              const std::string mlp =
                  c.is_moe() ? std::to_string(c.experts.per_token) + "/" + std::to_string(c.experts.count) : "dense";
              const std::string heads = std::to_string(c.q_heads) + "/" + std::to_string(c.kv_heads);
              std::printf("%-34s %-8s %-13s %-6s %6u %6u %6u %5s %7u %9.0f %4s  %s@%.12s%s\n",
                          std::string(c.id).c_str(), std::string(role_name(c.role)).c_str(),
                          std::string(variant_name(c.variant)).c_str(), mlp.c_str(), c.layers, c.hidden,
                          c.is_moe() ? c.experts.ffn : c.ffn, heads.c_str(), c.context, double(c.rope_theta),
                          c.tied ? "yes" : "no", std::string(c.repository).c_str(), std::string(c.revision).c_str(),
                          c.synthetic ? "  (synthetic test entry)" : "");
            }
            return 0;
          }};
}

}  // namespace kipp::cli
