// The final-normed hidden state at the last token of each of many inputs: what embeddings and
// reranking read from the model (the backend contract's hidden row, ../shared/REVIEW-QWEN3-MOE.md).
// Short inputs are evaluated together, several in one call, each in a session of its own; on the
// CPU backends a row is bit for bit the same whatever shares its call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "util/error.h"

namespace kipp {

// Tokens evaluated in one call at most (an input longer than this goes alone).
inline constexpr uint32_t kHiddenRowBatchTokens = 2048;

// One row of checkpoint.hidden values per input, in input order. Every input needs 1 to
// checkpoint.context tokens; an error names the first that does not.
Result<std::vector<std::vector<float>>> final_hidden_rows(BackendModel& model, const Checkpoint& checkpoint,
                                                          std::span<const std::vector<uint32_t>> inputs);

}  // namespace kipp
