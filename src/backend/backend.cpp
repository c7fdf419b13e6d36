#include "backend/backend.h"

#include "backend/cpu/cpu_features.h"

namespace kipp {

Status destroy_backend(std::unique_ptr<BackendModel>& model) {
  if (!model) return {};
  if (const uint32_t live = model->live_sessions(); live > 0)
    return fail("the ", model->name(), " model still has ", live, " live session", live == 1 ? "" : "s",
                "; destroy them first");
  model.reset();
  return {};
}

unsigned default_cpu_threads() { return cpu::physical_cores(); }

std::span<const std::string_view> backend_names() {
#ifdef KIPP_HAVE_CUDA
  static constexpr std::string_view names[] = {"cpu", "cpu-ref", "cuda"};
#else
  static constexpr std::string_view names[] = {"cpu", "cpu-ref"};
#endif
  return names;
}

Result<std::unique_ptr<BackendModel>> create_backend(std::string_view name, const ModelFile& model,
                                                     const BackendOptions& options) {
  if (name == "cpu") return create_cpu_backend(model, options.threads);
  if (name == "cpu-ref") return create_cpu_ref_backend(model);
#ifdef KIPP_HAVE_CUDA
  if (name == "cuda") return create_cuda_backend(model);
#endif
  std::string known;
  for (std::string_view n : backend_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return fail("unknown backend '", name, "' (this build has: ", known, ")");
}

}  // namespace kipp
