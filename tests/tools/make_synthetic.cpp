// kipp-synthetic: writes the HF-style source directory of a registry entry with deterministic
// synthetic weights and the real tokenizer files, for tests and benchmarks.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "registry/registry.h"
#include "synthetic_checkpoint.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a synthetic Qwen3 checkpoint directory (BF16 safetensors + real tokenizer)", "kipp-synthetic"};
  std::string id, out, tokenizer_dir;
  uint64_t seed = 1;
  uint32_t shards = 0;
  app.add_option("--checkpoint", id, "Registry id (kipp-test/... for tests)")->required();
  app.add_option("--out", out, "Output directory")->required();
  app.add_option("--tokenizer-dir", tokenizer_dir, "Directory with the real tokenizer.json/tokenizer_config.json")
      ->required();
  app.add_option("--seed", seed, "Seed of the weights");
  app.add_option("--shards", shards, "0 for one model.safetensors, N for N shards with an index");
  CLI11_PARSE(app, argc, argv);

  const kipp::Checkpoint* checkpoint = kipp::find_checkpoint(id);
  if (!checkpoint) {
    std::fprintf(stderr, "kipp-synthetic: %s is not in the registry\n", id.c_str());
    return 1;
  }
  auto status = kipp::testing::write_synthetic_checkpoint({checkpoint, out, tokenizer_dir, seed, shards});
  if (!status) {
    std::fprintf(stderr, "kipp-synthetic: %s\n", status.error().message.c_str());
    return 1;
  }
  return 0;
}
