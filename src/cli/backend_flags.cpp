#include "cli/backend_flags.h"

namespace kipp::cli {

void BackendFlags::add_to(CLI::App& app) {
  app.add_option("--backend", name, "cpu (default) or cpu-ref");
  app.add_option("--threads", threads, "CPU threads (default: one per physical core)");
}

Result<std::unique_ptr<BackendModel>> BackendFlags::create(const ModelFile& model) const {
  return create_backend(name, model, {threads});
}

}  // namespace kipp::cli
