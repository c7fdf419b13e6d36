// `kipp convert`: a Hugging Face Qwen3 checkpoint directory (config.json, tokenizer files, BF16
// safetensors) to one Kipp GGUF artifact. Everything is checked against the registry entry before
// the first byte is written; tensors stream chunk by chunk into a temporary file that is renamed
// onto the output only when complete.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "model/artifact_layout.h"
#include "util/error.h"
#include "util/progress.h"

namespace kipp {

struct ConvertProgress {
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
};

struct ConvertOptions {
  std::string checkpoint_id;
  std::string source_dir;
  QuantScheme scheme = QuantScheme::bf16;
  std::string out_path;
  // SHA-256 of source files already verified by the caller (file name -> hex), to skip rehashing.
  std::map<std::string, std::string> known_sha256;
  std::function<void(const ConvertProgress&)> on_progress;  // optional
};

struct ConvertReport {
  uint64_t tensors = 0;
  uint64_t bytes_written = 0;
  double seconds = 0.0;
  uint64_t peak_rss_bytes = 0;
};

Result<ConvertReport> convert_checkpoint(const ConvertOptions& options);

// An on_progress callback that shows the conversion as one step, "converting", on `display`.
std::function<void(const ConvertProgress&)> show_progress_on(ProgressDisplay& display);

}  // namespace kipp
