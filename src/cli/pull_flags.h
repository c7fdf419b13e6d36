// The flags of the commands that pull a checkpoint (`kipp pull`, `kipp run`): where it goes, in
// what scheme, from which hub with which token, and the Hugging Face cache. The Hugging Face
// environment variables users already set (HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_CACHE,
// HF_HUB_OFFLINE) are read here, in the front end, and become options.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "pull/pull.h"
#include "util/error.h"

namespace kipp::cli {

struct PullFlags {
  std::string quant = "bf16", head = "bf16", models_dir = pull::kDefaultModelsDir, endpoint, token, hf_cache;
  bool no_hf_cache = false;

  void add_to(CLI::App& app);
  // The options for pulling `checkpoint_id` with these flags as `app` parsed them.
  Result<pull::PullOptions> options(const CLI::App& app, const std::string& checkpoint_id) const;
};

// Pulls with a progress display and its messages on stderr, and a closing line; the artifact's path.
Result<std::string> pull_with_progress(const pull::PullOptions& options);

}  // namespace kipp::cli
