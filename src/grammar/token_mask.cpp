#include "grammar/token_mask.h"

namespace kipp::grammar {

TokenMasks::TokenMasks(std::shared_ptr<Automaton> automaton, std::shared_ptr<const TokenTrie> trie)
    : automaton_(std::move(automaton)), trie_(std::move(trie)), at_depth_(trie_->max_depth() + 1) {}

Result<std::shared_ptr<const TokenSet>> TokenMasks::allowed(StateId state) {
  auto found = cache_.find(state);
  if (found != cache_.end()) return found->second;
  if (cache_.size() >= kMaxCachedSets) cache_.clear();
  KIPP_ASSIGN(TokenSet set, walk(state));
  auto shared = std::make_shared<const TokenSet>(std::move(set));
  cache_.emplace(state, shared);
  return shared;
}

Result<TokenSet> TokenMasks::walk(StateId state) {
  ++walks_;
  TokenSet set(trie_->vocab());
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  const std::vector<uint32_t>& ids = trie_->token_ids();
  at_depth_[0] = state;
  for (uint32_t i = 0; i < nodes.size();) {
    const TokenTrie::Node& node = nodes[i];
    const StateId from = at_depth_[node.depth - 1];
    const int32_t known = automaton_->known_next(from, node.byte);
    StateId next = StateId(known);
    if (known < 0) {
      KIPP_ASSIGN(next, automaton_->next(from, node.byte));
    }
    if (next == kDeadState) {
      i = node.subtree_end;
      continue;
    }
    at_depth_[node.depth] = next;
    for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) set.add(ids[t]);
    ++i;
  }
  return set;
}

Result<StateId> TokenMasks::after(StateId state, std::string_view bytes) {
  for (char byte : bytes) {
    KIPP_ASSIGN(state, automaton_->next(state, uint8_t(byte)));
    if (state == kDeadState) break;
  }
  return state;
}

}  // namespace kipp::grammar
