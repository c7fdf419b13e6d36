#include "scheduler/constraint_cache.h"

#include "engine/token_constraint.h"

namespace kipp {

std::shared_ptr<grammar::TokenMasks> ConstraintCache::masks_for(std::shared_ptr<grammar::Automaton> automaton) {
  const std::string digest = automaton->grammar().digest();
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first == digest) {
      entries_.splice(entries_.begin(), entries_, it);
      while (entries_.size() > 1 && memory_bytes() > max_bytes_) entries_.pop_back();
      return entries_.front().second;
    }
  if (!trie_) trie_ = constrained_vocabulary(tokenizer_);
  auto masks = std::make_shared<grammar::TokenMasks>(std::move(automaton), trie_);
  entries_.emplace_front(digest, masks);
  while (entries_.size() > 1 && (entries_.size() > kMaxGrammars || memory_bytes() > max_bytes_)) entries_.pop_back();
  return masks;
}

size_t ConstraintCache::memory_bytes() const {
  size_t bytes = 0;
  for (const auto& [digest, masks] : entries_) bytes += masks->memory_bytes();
  return bytes;
}

}  // namespace kipp
