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

Status BackendModel::record_steps(StepRecorder*) {
  return fail("the ", name(), " backend does not record forward steps");
}

std::string_view kv_format_name(KvFormat format) { return format == KvFormat::q8_0 ? "q8_0" : "bf16"; }

unsigned default_cpu_threads() { return cpu::physical_cores(); }

// The CUDA backend is offered when its code is linked in. -DKIPP_CUDA=ON puts it in kipp_backend
// (the reference below, strong there, pulls it from the archive); the test suite links the build of
// it that runs on the CPU emulator (tests/cuda_emulator). Elsewhere the weak reference stays null.
#ifdef KIPP_HAVE_CUDA
static bool cuda_linked() { return true; }
#else
[[gnu::weak]] Result<std::unique_ptr<BackendModel>> create_cuda_backend(const ModelFile& model,
                                                                        const BackendOptions& options);
static bool cuda_linked() { return &create_cuda_backend != nullptr; }
#endif

std::span<const std::string_view> backend_names() {
  static constexpr std::string_view names[] = {"cpu", "cpu-ref", "cuda"};
  return std::span(names).first(cuda_linked() ? 3 : 2);
}

Result<std::unique_ptr<BackendModel>> create_backend(std::string_view name, const ModelFile& model,
                                                     const BackendOptions& options) {
  if (name == "cpu") return create_cpu_backend(model, options);
  if (options.int8_activations) return fail("--int8-activations applies to the cpu backend only, not ", name);
  if (options.bf16_activations) return fail("--bf16-activations applies to the cpu backend only, not ", name);
  if (!options.cpu_isa.empty()) return fail("--cpu-isa applies to the cpu backend only, not ", name);
  if (!options.cuda_graphs && name != "cuda")
    return fail("--no-cuda-graphs applies to the cuda backend only, not ", name);
  if (name == "cpu-ref") return create_cpu_ref_backend(model, options.kv_cache);
  if (name == "cuda" && cuda_linked()) {
    // ../shared/REVIEW-QWEN3-MOE.md, point 8: MoE on CUDA waits for the dense backend's GPU gates.
    if (model.checkpoint().is_moe())
      return fail("the cuda backend does not run mixture-of-experts checkpoints (", model.checkpoint().id,
                  "); --backend cpu-ref does");
    // It returns logits only: the hidden row that embeddings and reranking read waits for a GPU to
    // test it on.
    if (model.checkpoint().role != Role::generate)
      return fail("the cuda backend does not run ", role_name(model.checkpoint().role), " checkpoints (",
                  model.checkpoint().id, "); --backend cpu and cpu-ref do");
    if (options.kv_cache != KvFormat::bf16)
      return fail("--kv-cache ", kv_format_name(options.kv_cache),
                  " is not offered by the cuda backend, whose cache is BF16 (cpu and cpu-ref offer it)");
    return create_cuda_backend(model, options);
  }
  std::string known;
  for (std::string_view n : backend_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return fail("unknown backend '", name, "' (this build has: ", known, ")");
}

}  // namespace kipp
