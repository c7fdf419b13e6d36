// Writes a Hugging Face source directory for a registry entry laid out exactly as a published
// checkpoint is (published_layout.h): the same file names, small files with the published bytes
// (published_files.h), the same tensor set (a stored head where the published checkpoint has one),
// shard split and index. Only the weights are synthetic: BF16 values that are a pure function of
// (seed, tensor, element), so any size is generated in bounded memory and regenerated identically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "published_files.h"
#include "published_layout.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp::testing {

struct SyntheticOptions {
  const Checkpoint* checkpoint = nullptr;   // the dimensions, variant and tying written
  const PublishedLayout* layout = nullptr;  // whose files to lay out; nullptr: default_layout_for(checkpoint)
  std::string out_dir;
  PublishedSources sources;
  uint64_t seed = 1;
  // A stored tied head holds the embedding's bits; otherwise values of its own, so that a reader
  // that used it instead of the embedding would give other logits.
  bool head_equals_embedding = false;
};

Status write_synthetic_checkpoint(const SyntheticOptions& options);

// The BF16 values the generator writes for the tensor named `hf_name`, in row-major order. What
// is the same for every element (the name's hash, the scale) is worked out once, and the
// vocabulary matrices' row gain once per row.
class SyntheticTensor {
 public:
  SyntheticTensor(uint64_t seed, const std::string& hf_name, uint64_t rows, uint64_t cols);
  // Elements [start, start + count) into `out`.
  void fill(uint64_t start, uint16_t* out, uint64_t count) const;

 private:
  uint64_t seed_;
  uint64_t name_hash_;
  uint64_t cols_;
  bool norm_;        // a gain vector: values near 1
  bool vocabulary_;  // embedding or head: rows scaled by their own gain
  float std_;
};

// A raw safetensors tensor for hand-made (also malformed) files in tests.
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};
Status write_safetensors(const std::string& path, const std::vector<RawTensor>& tensors);

}  // namespace kipp::testing
