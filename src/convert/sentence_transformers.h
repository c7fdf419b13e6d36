// The sentence-transformers files an embedding checkpoint ships beside its weights: modules.json
// (the pipeline: Transformer, Pooling, Normalize), 1_Pooling/config.json (which token's state
// becomes the vector) and config_sentence_transformers.json (its prompts). The converter reads
// them to refuse a checkpoint whose declared computation is not the one Kipp performs: the last
// token's state, L2-normalised (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §6.2-§6.3).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

// The files, relative to the checkpoint directory, in the order they are checked.
std::vector<std::string_view> sentence_transformers_files();

// Checks the three files in `dir` against `checkpoint` (pooling by the last token only, its
// width the hidden size, a Normalize module after the pooling); errors name the file and field.
Status check_sentence_transformers(const std::string& dir, const Checkpoint& checkpoint);

}  // namespace kipp
