#include "backend/eval_checks.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

namespace kipp {

EvalChecker::EvalChecker(const Checkpoint& checkpoint, std::string logits_refusal)
    : checkpoint_(checkpoint), logits_refusal_(std::move(logits_refusal)) {
  if (!checkpoint.has_head())
    logits_refusal_ = std::string(checkpoint.id) + " has no output head: it computes embeddings (role " +
                      std::string(role_name(checkpoint.role)) + "), not logits";
}

Status EvalChecker::check(std::span<const EvalItem> items) {
  for (size_t i = 0; i < items.size(); ++i)
    if (auto ok = check_item(items[i]); !ok) return with_context("eval item " + std::to_string(i), ok.error());
  return check_block_ownership(items);
}

Status EvalChecker::check_item(const EvalItem& item) const {
  if (!item.session) return fail("no session");
  const BackendSession& session = *item.session;
  if (item.start_position != session.length())
    return fail("start position ", item.start_position, " but the session holds ", session.length());
  if (item.tokens.size() > session.capacity() - session.length())
    return fail(item.tokens.size(), " tokens exceed the session's capacity of ", session.capacity(), " (",
                session.length(), " used)");
  if (item.logit_rows > item.tokens.size())
    return fail(item.logit_rows, " logit rows requested for ", item.tokens.size(), " tokens");
  if (item.logit_rows > 0 && !item.logits) return fail("logit rows requested without a buffer");
  if (item.logit_rows > 0 && !logits_refusal_.empty()) return fail(logits_refusal_);
  if (item.hidden && item.tokens.empty()) return fail("a hidden row requested for no tokens");
  // The embedding and reranker checkpoints have fewer rows than the generative ones: an id past
  // them is refused here, never read out of bounds.
  const uint32_t vocab = checkpoint_.vocab();
  for (uint32_t token : item.tokens)
    if (token >= vocab)
      return fail("token ", token, " is outside the vocabulary of ", vocab, " (the token embedding rows of ",
                  checkpoint_.id, ")");
  return check_block_table(item);
}

Status EvalChecker::check_block_table(const EvalItem& item) const {
  const BackendSession& session = *item.session;
  const uint32_t blocks = kv_blocks_for(item.start_position + uint32_t(item.tokens.size()));
  if (item.block_table.empty()) {
    if (session.pooled()) return fail("a pooled session needs a block table");
    return {};
  }
  if (item.block_table.size() < blocks)
    return fail("the block table has ", item.block_table.size(), " entries; ", blocks, " are needed");
  for (uint32_t b = 0; b < blocks; ++b)
    if (item.block_table[b] >= session.store_blocks())
      return fail("block table entry ", b, " is ", item.block_table[b], "; the store has ", session.store_blocks(),
                  " blocks");
  return {};
}

Status EvalChecker::check_block_ownership(std::span<const EvalItem> items) {
  uses_.clear();
  for (uint32_t i = 0; i < items.size(); ++i) {
    const EvalItem& item = items[i];
    const uint32_t blocks = kv_blocks_for(item.start_position + uint32_t(item.tokens.size()));
    const uint32_t first_written = item.tokens.empty() ? blocks : item.start_position / kKvBlockTokens;
    for (uint32_t b = 0; b < blocks; ++b)
      uses_.push_back({item.session->store_id(), physical_block(item.block_table, b), i, b >= first_written});
  }
  std::sort(uses_.begin(), uses_.end(), [](const BlockUse& a, const BlockUse& b) {
    return std::tie(a.store, a.block, a.item) < std::tie(b.store, b.block, b.item);
  });
  for (size_t u = 1; u < uses_.size(); ++u) {
    const BlockUse& a = uses_[u - 1];
    const BlockUse& b = uses_[u];
    if (a.store != b.store || a.block != b.block) continue;
    if (a.item == b.item)
      return fail("eval item ", a.item, ": physical block ", a.block, " appears twice in its table");
    if (a.written || b.written)
      return fail("eval items ", a.item, " and ", b.item, " both use physical block ", a.block, ", which ",
                  a.written ? a.item : b.item, " writes");
  }
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = i + 1; j < items.size(); ++j)
      if (items[i].session == items[j].session) return fail("eval items ", i, " and ", j, " share one session");
  return {};
}

}  // namespace kipp
