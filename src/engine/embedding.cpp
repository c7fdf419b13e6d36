#include "engine/embedding.h"

#include <cmath>

#include "engine/hidden_rows.h"

namespace kipp {

std::string instructed_query(std::string_view task, std::string_view query) {
  return "Instruct: " + std::string(task) + "\nQuery:" + std::string(query);
}

Result<std::vector<uint32_t>> embedding_tokens(const Tokenizer& tokenizer, const Checkpoint& checkpoint,
                                               std::string_view text) {
  KIPP_ASSIGN(std::vector<uint32_t> ids, tokenizer.encode(text));
  if (checkpoint.appends_endoftext()) ids.push_back(family::token_endoftext);
  return ids;
}

Result<uint32_t> embedding_width(const Checkpoint& checkpoint, uint32_t dimensions) {
  if (checkpoint.role != Role::embed) return fail(role_refusal(checkpoint, Role::embed, "an embedding"));
  if (dimensions == 0) return checkpoint.hidden;
  if (dimensions < family::matryoshka_min_dims || dimensions > checkpoint.hidden)
    return fail("dimensions ", dimensions, " is outside ", checkpoint.id, "'s range of ", family::matryoshka_min_dims,
                " to ", checkpoint.hidden);
  return dimensions;
}

std::vector<float> normalized_prefix(std::span<const float> hidden, uint32_t width) {
  const std::span<const float> kept = hidden.first(width);
  double squares = 0.0;
  for (float v : kept) squares += double(v) * double(v);
  const double norm = std::sqrt(squares);
  std::vector<float> out(kept.begin(), kept.end());
  if (norm == 0.0) return out;
  for (float& v : out) v = float(double(v) / norm);
  return out;
}

Result<std::vector<std::vector<float>>> embed(BackendModel& model, const Checkpoint& checkpoint,
                                              std::span<const std::vector<uint32_t>> inputs, uint32_t width) {
  KIPP_ASSIGN(const uint32_t checked, embedding_width(checkpoint, width));
  KIPP_ASSIGN(std::vector<std::vector<float>> rows, final_hidden_rows(model, checkpoint, inputs));
  std::vector<std::vector<float>> vectors;
  vectors.reserve(rows.size());
  for (const std::vector<float>& row : rows) vectors.push_back(normalized_prefix(row, checked));
  return vectors;
}

}  // namespace kipp
