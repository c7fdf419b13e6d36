#include "cli/backend_flags.h"

#include <cstdio>
#include <string>

#include "model/residency.h"
#include "util/memory_available.h"

namespace kipp::cli {

std::string backend_flag_help(std::string_view default_name) {
  std::string names;
  for (std::string_view backend : backend_names()) names += (names.empty() ? "" : ", ") + std::string(backend);
  return "one of: " + names + " (default: " + std::string(default_name) + ")";
}

void BackendFlags::add_to(CLI::App& app) {
  app.add_option("--backend", name, backend_flag_help(name));
  app.add_option("--threads", threads, "CPU threads (default: one per physical core)");
  app.add_flag("--int8-activations", int8_activations,
               "cpu backend: Q4_1 (affine4_gs32) products take 8-bit activations, as llama.cpp's do: "
               "faster prefill, slightly further from cpu-ref (src/backend/cpu/KERNELS.md); dense checkpoints only "
               "(in a mixture of experts they change which experts are chosen)");
  app.add_flag("--bf16-activations", bf16_activations,
               "cpu backend: BF16 products (but Q, K, V and the output head) take activations rounded to BF16 "
               "in AVX512-BF16 pair products (the avx512bf16 kernel set), as llama.cpp's do: faster prefill "
               "where the processor multiplies BF16 pairs at twice its FMA rate (AMD Zen 4 and 5), further "
               "from cpu-ref (src/backend/cpu/KERNELS.md); dense checkpoints only");
  app.add_option("--kv-cache", kv_cache_name,
                 "how the KV cache stores K and V: bf16 (default) or q8_0 (53% of the bytes per token, "
                 "slightly further from the BF16 cache: docs/MODELS.md; cpu and cpu-ref)")
      ->check(CLI::IsMember({"bf16", "q8_0"}));
  app.add_option("--cpu-isa", cpu_isa,
                 "cpu backend: run this kernel set instead of the best the processor supports: portable, avx2, "
                 "avx512, avx512bf16 or amx (for comparisons and tests)")
      ->check(CLI::IsMember({"portable", "avx2", "avx512", "avx512bf16", "amx"}));
  app.add_flag("--no-cuda-graphs", no_cuda_graphs,
               "cuda backend: launch every kernel of a decode step instead of replaying its captured graph");
}

Result<std::unique_ptr<BackendModel>> BackendFlags::create(const ModelFile& model) const {
  // Said before the backend reads the weights: a file that cannot stay resident makes every token
  // a disk read, which would look like a hang.
  if (const auto available = memory_available_bytes())
    if (const std::string warning =
            residency_warning(model.checkpoint(), model.scheme(), model.file_bytes(), *available);
        !warning.empty())
      std::fprintf(stderr, "kipp: warning: %s\n", warning.c_str());
  BackendOptions options;
  options.threads = threads;
  options.int8_activations = int8_activations;
  options.bf16_activations = bf16_activations;
  options.kv_cache = kv_cache();
  options.cpu_isa = cpu_isa;
  options.cuda_graphs = !no_cuda_graphs;
  return create_backend(name, model, options);
}

}  // namespace kipp::cli
