// Open addressing over a power-of-two table at most half full; keys and ids live in two arenas.
#include "tokenizer/word_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "tokenizer/text_hash.h"

namespace kipp {

WordCache::WordCache(size_t max_entries)
    : slots_(std::bit_ceil(std::max<size_t>(16, max_entries * 2))), max_entries_(std::max<size_t>(1, max_entries)) {}

std::optional<std::span<const TokenId>> WordCache::find(std::string_view piece) const {
  const uint64_t hash = text_hash(piece);
  const size_t mask = slots_.size() - 1;
  for (size_t slot = size_t(hash) & mask;; slot = (slot + 1) & mask) {
    const Entry& entry = slots_[slot];
    if (!entry.used) return std::nullopt;
    if (entry.hash == hash && entry.key_length == piece.size() &&
        std::memcmp(keys_.data() + entry.key_offset, piece.data(), piece.size()) == 0)
      return std::span<const TokenId>(ids_.data() + entry.ids_offset, entry.ids_count);
  }
}

void WordCache::insert(std::string_view piece, std::span<const TokenId> ids) {
  if (piece.size() > kMaxPieceBytes || ids.size() > kMaxPieceBytes) return;
  if (entries_ == max_entries_) clear();
  const uint64_t hash = text_hash(piece);
  const size_t mask = slots_.size() - 1;
  size_t slot = size_t(hash) & mask;
  while (slots_[slot].used) slot = (slot + 1) & mask;
  slots_[slot] =
      Entry{hash, uint32_t(keys_.size()), uint32_t(ids_.size()), uint16_t(piece.size()), uint16_t(ids.size()), true};
  keys_.append(piece);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ++entries_;
}

void WordCache::clear() {
  std::fill(slots_.begin(), slots_.end(), Entry{});
  keys_.clear();
  ids_.clear();
  entries_ = 0;
}

}  // namespace kipp
