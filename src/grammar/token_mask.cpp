#include "grammar/token_mask.h"

namespace kipp::grammar {

TokenMasks::TokenMasks(std::shared_ptr<Automaton> automaton, std::shared_ptr<const TokenTrie> trie,
                       uint64_t max_steps_per_set)
    : automaton_(std::move(automaton)), trie_(std::move(trie)), max_steps_per_set_(max_steps_per_set) {}

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
  const uint64_t steps_before = automaton_->steps();
  TokenSet set(trie_->vocab());
  const TokenTrie& trie = *trie_;
  // Breadth first over the prefixes the grammar can read, from the root: a child whose byte leads
  // to the dead state is refused with every token below it. Taken first in first out, the nodes
  // come in increasing id order, so even a walk that allows most of the vocabulary reads the
  // trie's arrays front to back.
  std::vector<std::pair<TokenTrie::NodeId, StateId>>& pending = pending_;
  pending.assign(1, {TokenTrie::kRoot, state});
  for (size_t next_pending = 0; next_pending < pending.size(); ++next_pending) {
    const auto [node, from] = pending[next_pending];
    const int32_t* known_next = automaton_->known_transitions(from);
    for (TokenTrie::NodeId child = trie.first_child(node), end = trie.children_end(node); child < end; ++child) {
      const uint8_t byte = trie.byte(child);
      const int32_t known = known_next[byte];
      StateId next = StateId(known);
      if (known < 0) {
        KIPP_ASSIGN(next, automaton_->next(from, byte));
        if (automaton_->steps() - steps_before > max_steps_per_set_)
          return limit_exceeded("the constraint needs more than the limit of ", max_steps_per_set_,
                                " matcher steps to find the tokens allowed next (the grammar is too ambiguous)");
      }
      if (next == kDeadState) continue;
      for (uint32_t id : trie.tokens(child)) set.add(id);
      if (trie.first_child(child) != trie.children_end(child)) pending.push_back({child, next});
    }
  }
  return set;
}

size_t TokenMasks::memory_bytes() const {
  const size_t set_bytes = sizeof(TokenSet) + (trie_->vocab() + 63) / 64 * sizeof(uint64_t);
  return automaton_->memory_bytes() + cache_.size() * set_bytes + pending_.capacity() * sizeof(pending_[0]);
}

Result<StateId> TokenMasks::after(StateId state, std::string_view bytes) {
  for (char byte : bytes) {
    KIPP_ASSIGN(state, automaton_->next(state, uint8_t(byte)));
    if (state == kDeadState) break;
  }
  return state;
}

}  // namespace kipp::grammar
