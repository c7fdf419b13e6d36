// Writes deterministic Hugging Face-style Qwen3 source directories for registry entries:
// config.json, BF16 safetensors (single file or shards + index), the real tokenizer files and
// generation_config.json. Values are a pure function of (seed, tensor, element), so any size can
// be generated in bounded memory and regenerated identically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "registry/registry.h"
#include "util/error.h"

namespace kipp::testing {

struct SyntheticOptions {
  const Checkpoint* checkpoint = nullptr;
  std::string out_dir;
  std::string tokenizer_dir;  // holds the real tokenizer.json and tokenizer_config.json
  uint64_t seed = 1;
  uint32_t shards = 0;        // 0: one model.safetensors; N: N shards and an index
};

Status write_synthetic_checkpoint(const SyntheticOptions& options);

// The BF16 bits of element `index` of the tensor named `hf_name`: what the generator writes.
uint16_t synthetic_value(uint64_t seed, const std::string& hf_name, uint64_t index, uint64_t rows, uint64_t cols);

// A raw safetensors tensor for hand-made (also malformed) files in tests.
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};
Status write_safetensors(const std::string& path, const std::vector<RawTensor>& tensors);

}  // namespace kipp::testing
