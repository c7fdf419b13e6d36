// Linear probing in a power-of-two table at most two-thirds full with every token in it; the
// slot's tag filters candidates before the text comparison.
#include "tokenizer/vocab_index.h"

#include <algorithm>
#include <bit>

#include "tokenizer/text_hash.h"

namespace kipp {

VocabIndex::VocabIndex(std::span<const std::string_view> tokens)
    : tokens_(tokens), slots_(std::bit_ceil(std::max<size_t>(16, tokens.size() + tokens.size() / 2)), Slot{0, 0}) {
  mask_ = slots_.size() - 1;
}

bool VocabIndex::insert(TokenId id) {
  const std::string_view text = tokens_[id];
  const uint64_t hash = text_hash(text);
  const uint32_t tag = tag_of(hash);
  for (size_t at = size_t(hash) & mask_;; at = (at + 1) & mask_) {
    Slot& slot = slots_[at];
    if (slot.tag == 0) {
      slot = Slot{tag, id};
      return true;
    }
    if (slot.tag == tag && tokens_[slot.id] == text) return false;
  }
}

std::optional<TokenId> VocabIndex::find(std::string_view text) const {
  const uint64_t hash = text_hash(text);
  const uint32_t tag = tag_of(hash);
  for (size_t at = size_t(hash) & mask_;; at = (at + 1) & mask_) {
    const Slot& slot = slots_[at];
    if (slot.tag == 0) return std::nullopt;
    if (slot.tag == tag && tokens_[slot.id] == text) return slot.id;
  }
}

}  // namespace kipp
