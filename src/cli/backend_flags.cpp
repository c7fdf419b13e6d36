#include "cli/backend_flags.h"

#include <string>

namespace kipp::cli {

void BackendFlags::add_to(CLI::App& app) {
  std::string names;
  for (std::string_view backend : backend_names()) names += (names.empty() ? "" : ", ") + std::string(backend);
  app.add_option("--backend", name, "one of: " + names + " (default: " + std::string(backend_names()[0]) + ")");
  app.add_option("--threads", threads, "CPU threads (default: one per physical core)");
}

Result<std::unique_ptr<BackendModel>> BackendFlags::create(const ModelFile& model) const {
  return create_backend(name, model, {threads});
}

}  // namespace kipp::cli
