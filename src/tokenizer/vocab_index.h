// Token text -> id for the vocabulary entries, used while the tokenizer is built (the merge list
// names its pieces by text). Open addressing over 8-byte slots (hash tag and id) that point back
// into the caller's token strings, so 151k tokens take a 2 MiB table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/text_hash.h"
#include "tokenizer/token_id.h"

namespace kipp {

class VocabIndex {
 public:
  // `tokens` (id -> text) must outlive the index.
  explicit VocabIndex(std::span<const std::string_view> tokens);

  // Adds tokens[id]; false when its text is already present (under any id).
  bool insert(TokenId id);
  std::optional<TokenId> find(std::string_view text) const;
  // Building walks 151k merges whose lookups are all cache misses (slot, then the token's view,
  // then its text). Called a few merges ahead, these start each level's load early: `prefetch_slot`
  // first, later `prefetch_view` (reads the slot), later `prefetch_text` (reads the view).
  void prefetch_slot(std::string_view text) const { __builtin_prefetch(&slots_[size_t(text_hash(text)) & mask_]); }
  void prefetch_view(std::string_view text) const {
    __builtin_prefetch(&tokens_[slots_[size_t(text_hash(text)) & mask_].id]);
  }
  void prefetch_text(std::string_view text) const {
    __builtin_prefetch(tokens_[slots_[size_t(text_hash(text)) & mask_].id].data());
  }

 private:
  struct Slot {
    uint32_t tag;  // high half of the text's hash; 0 marks an empty slot
    TokenId id;
  };

  static uint32_t tag_of(uint64_t hash) { return uint32_t(hash >> 32) | 1u; }

  std::span<const std::string_view> tokens_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace kipp
