// Relevance scores of a Qwen3-Reranker checkpoint (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §7.1):
// the fixed prompt around an instruction, a query and a document, and the probability that the
// model's next token is "yes" rather than "no": sigmoid(logit_yes - logit_no) at the last
// position, computed from the final hidden row and the head's two rows only.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

// The instruction of the model card's examples, which a request may replace.
inline constexpr std::string_view kDefaultRerankInstruction =
    "Given a web search query, retrieve relevant passages that answer the query";

struct RerankPrompt {
  std::vector<uint32_t> tokens;
  uint32_t document_tokens_dropped = 0;  // cut from the end of the document to fit
};

// The prompt's ids: its fixed prefix (the system message and the user turn's opening), the body
// "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}" and the fixed suffix (the
// assistant turn with an empty think block), each tokenized on its own as the model card does.
// A body too long for `max_tokens` loses tokens from its end, which is the document's; an
// instruction and query that leave the document no token are an error.
Result<RerankPrompt> rerank_prompt(const Tokenizer& tokenizer, std::string_view instruction, std::string_view query,
                                   std::string_view document, uint32_t max_tokens);

// The head's rows for "yes" and "no", widened exactly from the artifact's format once: what a
// score reads besides the final hidden row.
class RerankHead {
 public:
  // An error for a checkpoint that is not a rerank one, naming its role.
  static Result<RerankHead> of(const ModelFile& file);
  // P("yes") against "no": sigmoid(h . w_yes - h . w_no), in double.
  double score(std::span<const float> hidden) const;

 private:
  std::vector<float> yes_, no_;
};

// P(yes) for each prompt (ids as rerank_prompt makes them, or given), in input order.
Result<std::vector<double>> rerank_scores(BackendModel& model, const ModelFile& file,
                                          std::span<const std::vector<uint32_t>> prompts);

}  // namespace kipp
