// The sampling flags `kipp generate` and `kipp chat` share, and how they combine with the
// checkpoint's recommended settings: a flag given wins, an absent one keeps the recommendation.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/sampler.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp::cli {

class SamplingFlags {
 public:
  void add_to(CLI::App& app);
  // The settings for a checkpoint of `variant`; the seed is random unless --seed was given.
  Result<SamplingParams> resolve(Variant variant) const;

 private:
  float temperature_ = 0, top_p_ = 0, min_p_ = 0, repetition_ = 1, frequency_ = 0, presence_ = 0;
  uint32_t top_k_ = 0;
  uint64_t seed_ = 0;
  bool greedy_ = false;
  std::vector<std::string> logit_bias_;
  CLI::Option *temperature_option_ = nullptr, *top_p_option_ = nullptr, *top_k_option_ = nullptr,
              *min_p_option_ = nullptr, *seed_option_ = nullptr;
};

}  // namespace kipp::cli
