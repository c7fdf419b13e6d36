// `kipp pull`: a registry id to a verified Kipp artifact. Finds what the pinned revision holds,
// brings every file into {models}/.downloads/ verified (download.h), then runs the converter on
// them. The front end (cli/cmd_pull.cpp) owns flags and printing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/converter.h"
#include "model/artifact_layout.h"
#include "pull/download.h"
#include "util/progress.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp::pull {

inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";
inline constexpr const char* kDefaultModelsDir = "models";

struct PullOptions {
  std::string checkpoint_id;
  QuantScheme scheme = QuantScheme::bf16;
  HeadScheme head = HeadScheme::bf16;
  std::string models_dir = kDefaultModelsDir;
  // Empty: the public hub. Synthetic kipp-test/ entries are only pulled from an explicit endpoint.
  std::string endpoint;
  // A Hugging Face access token, sent as `Authorization: Bearer` to the endpoint's origin only.
  std::string token;
  // The Hugging Face cache to take a complete snapshot of the pinned revision from (hf_cache.h);
  // empty: not looked at.
  std::string hf_cache_dir;
  // Never touch the network (HF_HUB_OFFLINE): the checkpoint must be in the Hugging Face cache.
  bool offline = false;
  ProgressDisplay* progress = nullptr;           // optional
  std::function<void(const std::string&)> note;  // one-line messages; optional
  RetryPolicy retry;
};

struct PullReport {
  std::string artifact_path;
  std::string download_dir;  // where the source files are: Kipp's download folder, or the HF cache snapshot
  std::vector<FileOutcome> files;
  ConvertReport conversion;
};

Result<PullReport> pull_checkpoint(const PullOptions& options);

// The id as one path component: "kipp-test/qwen3-tiny" -> "kipp-test_qwen3-tiny".
std::string flat_id(std::string_view checkpoint_id);
// {models}/{flat id}.{quant}.gguf, or {models}/{flat id}.{quant}.head-q8_0.gguf with a Q8_0 head
std::string artifact_path(const std::string& models_dir, std::string_view checkpoint_id, QuantScheme scheme,
                          HeadScheme head = HeadScheme::bf16);
// {models}/.downloads/{flat id}/{revision}
std::string download_dir(const std::string& models_dir, const Checkpoint& checkpoint);

}  // namespace kipp::pull
