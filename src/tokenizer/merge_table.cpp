// Sizing: a power of two at least 1.5x the entry count (at most two-thirds full) keeps probe
// sequences short and the table small; it doubles if more entries arrive than it was sized for.
#include "tokenizer/merge_table.h"

#include <algorithm>
#include <bit>

namespace kipp {

MergeTable::MergeTable(size_t expected_merges) {
  resize(std::bit_ceil(std::max<size_t>(16, expected_merges + expected_merges / 2)));
}

void MergeTable::resize(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{kEmpty, Merge{0, 0}});
  mask_ = capacity - 1;
  shift_ = unsigned(64 - std::countr_zero(capacity));
  size_ = 0;
  for (const Slot& entry : old)
    if (entry.key != kEmpty) insert(TokenId(entry.key >> 32), TokenId(entry.key), entry.merge);
}

bool MergeTable::insert(TokenId left, TokenId right, Merge merge) {
  if ((size_ + 1) * 3 > slots_.size() * 2) resize(slots_.size() * 2);
  const uint64_t key = pair_key(left, right);
  for (size_t slot = home_slot(key);; slot = (slot + 1) & mask_) {
    Slot& entry = slots_[slot];
    if (entry.key == key) return false;
    if (entry.key == kEmpty) {
      entry = Slot{key, merge};
      ++size_;
      return true;
    }
  }
}

}  // namespace kipp
