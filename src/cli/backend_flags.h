// The --backend, --threads, --int8-activations, --kv-cache, --cpu-isa and --no-cuda-graphs flags
// of the commands that run a model, and the backend they make.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "backend/backend.h"
#include "model/model_file.h"
#include "util/error.h"

namespace kipp::cli {

// The --backend help: this build's backends and the default.
std::string backend_flag_help(std::string_view default_name);

struct BackendFlags {
  std::string name = std::string(backend_names()[0]);  // set another default before add_to
  unsigned threads = 0;                                // 0: one per physical core
  bool int8_activations = false;
  bool bf16_activations = false;
  std::string kv_cache_name = "bf16";  // --kv-cache: bf16 or q8_0
  std::string cpu_isa = {};            // --cpu-isa: empty for the best the processor has
  bool no_cuda_graphs = false;

  KvFormat kv_cache() const { return kv_cache_name == "q8_0" ? KvFormat::q8_0 : KvFormat::bf16; }

  void add_to(CLI::App& app);
  Result<std::unique_ptr<BackendModel>> create(const ModelFile& model) const;
};

}  // namespace kipp::cli
