// Embeddings of a Qwen3-Embedding checkpoint (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §6.3): an
// input's tokens with <|endoftext|> appended, through the model and the final norm; the hidden
// state at that last token, cut to its first d values (Matryoshka), then L2-normalised in FP32.
// No logits are computed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

// The task the model card's examples give a query by default.
inline constexpr std::string_view kDefaultEmbeddingTask =
    "Given a web search query, retrieve relevant passages that answer the query";

// "Instruct: {task}\nQuery:{query}": a query as the Qwen3-Embedding card writes it, with no space
// after "Query:". Documents are embedded as they are.
std::string instructed_query(std::string_view task, std::string_view query);

// A text's ids as the model reads them: its tokens, then <|endoftext|> (the checkpoint's
// published tokenizer appends it; Checkpoint::appends_endoftext).
Result<std::vector<uint32_t>> embedding_tokens(const Tokenizer& tokenizer, const Checkpoint& checkpoint,
                                               std::string_view text);

// The width of the vectors asked for: `dimensions` (0: the hidden width), which must be in the
// checkpoint's Matryoshka range (32 to hidden). An error for a checkpoint that is not an
// embedding one, naming its role.
Result<uint32_t> embedding_width(const Checkpoint& checkpoint, uint32_t dimensions);

// The first `width` values of `hidden`, L2-normalised (a zero vector stays zero).
std::vector<float> normalized_prefix(std::span<const float> hidden, uint32_t width);

// One vector of `width` values per input, each input's ids used as given (see embedding_tokens).
Result<std::vector<std::vector<float>>> embed(BackendModel& model, const Checkpoint& checkpoint,
                                              std::span<const std::vector<uint32_t>> inputs, uint32_t width);

}  // namespace kipp
