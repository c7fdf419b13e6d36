// `kipp convert`: a Hugging Face Qwen3 checkpoint directory (config.json, tokenizer files, BF16
// safetensors) to one Kipp GGUF artifact. Everything is checked against the registry entry before
// the first byte is written; tensors stream chunk by chunk into a temporary file that is renamed
// onto the output only when complete.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

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
  HeadScheme head = HeadScheme::bf16;
  std::string out_path;
  // SHA-256 of source files already verified by the caller (file name -> hex), to skip rehashing.
  std::map<std::string, std::string> known_sha256;
  std::function<void(const ConvertProgress&)> on_progress;  // optional
};

// A tied checkpoint that also stores lm_head.weight (as the published Qwen3-0.6B and -1.7B do):
// the stored tensor is checked, compared with the embedding, and left out of the artifact, because
// transformers ties the head to the embedding and never reads it.
struct StoredTiedHead {
  bool present = false;
  uint64_t elements = 0;
  uint64_t differing_elements = 0;  // 0: bit for bit the embedding
};

// The 2507 repositories also ship config_1m.json, the settings (Dual Chunk Attention, sparse
// attention) their model cards say to swap in for contexts near a million tokens. The converter
// reads config.json only; where the other file lies beside it, the report says so.
inline constexpr const char* kLongContextConfig = "config_1m.json";
std::string describe_long_context_config(std::string_view checkpoint_id);

struct ConvertReport {
  bool long_context_config_beside = false;  // config_1m.json was in the source directory (not read)
  uint64_t tensors = 0;
  uint64_t bytes_written = 0;
  double seconds = 0.0;
  uint64_t peak_rss_bytes = 0;
  StoredTiedHead stored_tied_head;
};

Result<ConvertReport> convert_checkpoint(const ConvertOptions& options);

// One line for the convert log about a stored tied head; empty when there was none.
std::string describe_stored_tied_head(const StoredTiedHead& head, std::string_view checkpoint_id);

// An on_progress callback that shows the conversion as one step, "converting", on `display`.
std::function<void(const ConvertProgress&)> show_progress_on(ProgressDisplay& display);

}  // namespace kipp
