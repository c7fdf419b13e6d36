#include "engine/rerank.h"

#include <cmath>
#include <string>

#include "backend/cpu_ref/ops.h"
#include "engine/hidden_rows.h"

namespace kipp {
namespace {

constexpr std::string_view kPrefix =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
constexpr std::string_view kSuffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

std::string body_before_document(std::string_view instruction, std::string_view query) {
  return "<Instruct>: " + std::string(instruction) + "\n<Query>: " + std::string(query) + "\n<Document>: ";
}

// The head's row `token`, widened exactly from the artifact's format.
std::vector<float> head_row(const ModelWeights& weights, uint32_t token) {
  std::vector<float> row(weights.lm_head.cols);
  cpu_ref::widen_row(weights.lm_head, token, row.data());
  return row;
}

double dot(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += double(a[i]) * double(b[i]);
  return sum;
}

}  // namespace

Result<RerankPrompt> rerank_prompt(const Tokenizer& tokenizer, std::string_view instruction, std::string_view query,
                                   std::string_view document, uint32_t max_tokens) {
  KIPP_ASSIGN(std::vector<uint32_t> prefix, tokenizer.encode(kPrefix));
  KIPP_ASSIGN(std::vector<uint32_t> suffix, tokenizer.encode(kSuffix));
  const std::string head = body_before_document(instruction, query);
  KIPP_ASSIGN(std::vector<uint32_t> body, tokenizer.encode(head + std::string(document)));
  KIPP_ASSIGN(std::vector<uint32_t> fixed_body, tokenizer.encode(head));
  const size_t fixed = prefix.size() + suffix.size();
  // The body's own tokens up to the document, plus one of the document: the least that says anything.
  if (max_tokens < fixed + fixed_body.size() + 1)
    return fail("the instruction and query take ", fixed + fixed_body.size(), " tokens with the prompt's fixed parts; ",
                max_tokens, " are allowed, which leaves the document none");
  RerankPrompt out;
  const size_t room = max_tokens - fixed;
  if (body.size() > room) {
    out.document_tokens_dropped = uint32_t(body.size() - room);
    body.resize(room);
  }
  out.tokens = std::move(prefix);
  out.tokens.insert(out.tokens.end(), body.begin(), body.end());
  out.tokens.insert(out.tokens.end(), suffix.begin(), suffix.end());
  return out;
}

Result<RerankHead> RerankHead::of(const ModelFile& file) {
  const Checkpoint& checkpoint = file.checkpoint();
  if (checkpoint.role != Role::rerank) return fail(role_refusal(checkpoint, Role::rerank, "reranking"));
  RerankHead head;
  head.yes_ = head_row(file.weights(), family::token_yes);
  head.no_ = head_row(file.weights(), family::token_no);
  return head;
}

double RerankHead::score(std::span<const float> hidden) const {
  const double margin = dot(hidden, yes_) - dot(hidden, no_);  // logit_yes - logit_no
  return 1.0 / (1.0 + std::exp(-margin));
}

Result<std::vector<double>> rerank_scores(BackendModel& model, const ModelFile& file,
                                          std::span<const std::vector<uint32_t>> prompts) {
  KIPP_ASSIGN(const RerankHead head, RerankHead::of(file));
  KIPP_ASSIGN(std::vector<std::vector<float>> rows, final_hidden_rows(model, file.checkpoint(), prompts));
  std::vector<double> scores;
  scores.reserve(rows.size());
  for (const std::vector<float>& row : rows) scores.push_back(head.score(row));
  return scores;
}

}  // namespace kipp
