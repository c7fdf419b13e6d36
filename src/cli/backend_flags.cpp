#include "cli/backend_flags.h"

#include <string>

namespace kipp::cli {

std::string backend_flag_help() {
  std::string names;
  for (std::string_view backend : backend_names()) names += (names.empty() ? "" : ", ") + std::string(backend);
  return "one of: " + names + " (default: " + std::string(backend_names()[0]) + ")";
}

void BackendFlags::add_to(CLI::App& app) {
  app.add_option("--backend", name, backend_flag_help());
  app.add_option("--threads", threads, "CPU threads (default: one per physical core)");
}

Result<std::unique_ptr<BackendModel>> BackendFlags::create(const ModelFile& model) const {
  return create_backend(name, model, {threads});
}

}  // namespace kipp::cli
