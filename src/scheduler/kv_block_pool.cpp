#include "scheduler/kv_block_pool.h"

#include <algorithm>

#include "backend/backend.h"

namespace kipp {

KvBlockPool::KvBlockPool(uint32_t blocks) : blocks_(blocks) {
  unused_.reserve(blocks);
  for (uint32_t b = blocks; b-- > 0;) unused_.push_back(b);  // hands out block 0 first
}

uint64_t KvBlockPool::chain(uint64_t previous, std::span<const uint32_t> block_tokens) {
  // FNV-1a over the previous address and the token ids, then a final avalanche (splitmix64's).
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (value >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  };
  mix(previous);
  for (uint32_t token : block_tokens) mix(token);
  hash ^= hash >> 30;
  hash *= 0xbf58476d1ce4e5b9ull;
  hash ^= hash >> 27;
  hash *= 0x94d049bb133111ebull;
  return hash ^ (hash >> 31);
}

std::vector<uint32_t> KvBlockPool::adopt_prefix(std::span<const uint32_t> tokens, uint32_t max_blocks) {
  std::vector<uint32_t> adopted;
  uint64_t address = 0;
  const uint32_t full = std::min<uint32_t>(max_blocks, uint32_t(tokens.size() / kKvBlockTokens));
  for (uint32_t b = 0; b < full; ++b) {
    const auto block_tokens = tokens.subspan(size_t(b) * kKvBlockTokens, kKvBlockTokens);
    address = chain(address, block_tokens);
    const auto found = by_address_.find(address);
    if (found == by_address_.end()) break;
    Block& block = blocks_[found->second];
    if (!std::equal(block.tokens.begin(), block.tokens.end(), block_tokens.begin(), block_tokens.end())) break;
    take(found->second);
    adopted.push_back(found->second);
  }
  reused_ += adopted.size();
  return adopted;
}

std::optional<KvBlockPool::RowSource> KvBlockPool::find_rows(uint64_t previous, std::span<const uint32_t> tokens) {
  std::optional<RowSource> best;
  const auto [begin, end] = followers_.equal_range(previous);
  for (auto it = begin; it != end; ++it) {
    const std::vector<uint32_t>& held = blocks_[it->second].tokens;
    const uint32_t limit = uint32_t(std::min(held.size(), tokens.size()));
    uint32_t rows = 0;
    while (rows < limit && held[rows] == tokens[rows]) ++rows;
    if (rows > 0 && (!best || rows > best->rows)) best = RowSource{it->second, rows};
  }
  if (best) {
    take(best->block);
    reused_rows_ += best->rows;
  }
  return best;
}

void KvBlockPool::take(uint32_t block) {
  if (blocks_[block].references++ == 0 && blocks_[block].published) cached_.erase(blocks_[block].lru);
}

void KvBlockPool::share(uint32_t block) { ++blocks_[block].references; }

bool KvBlockPool::can_reserve(uint32_t blocks) const {
  return uint64_t(reserved_) + blocks <= unused_.size() + cached_.size();
}

void KvBlockPool::reserve(uint32_t blocks) { reserved_ += blocks; }

void KvBlockPool::unreserve(uint32_t blocks) { reserved_ -= std::min(reserved_, blocks); }

Result<uint32_t> KvBlockPool::take_reserved() {
  if (reserved_ == 0) return fail("KV pool: a block was taken without a reservation");
  uint32_t block;
  if (!unused_.empty()) {
    block = unused_.back();
    unused_.pop_back();
  } else if (!cached_.empty()) {
    block = cached_.front();
    cached_.pop_front();
    unpublish(block);
    ++evicted_;
  } else {
    return fail("KV pool: no free block although ", reserved_, " are reserved");
  }
  --reserved_;
  blocks_[block].references = 1;
  return block;
}

uint64_t KvBlockPool::publish(uint32_t block, uint64_t previous, std::span<const uint32_t> tokens) {
  const uint64_t address = chain(previous, tokens);
  Block& entry = blocks_[block];
  if (entry.published || by_address_.count(address)) return address;
  entry.published = true;
  entry.address = address;
  entry.previous = previous;
  entry.tokens.assign(tokens.begin(), tokens.end());
  by_address_.emplace(address, block);
  followers_.emplace(previous, block);
  return address;
}

void KvBlockPool::publish_tail(uint32_t block, uint64_t previous, std::span<const uint32_t> tokens) {
  Block& entry = blocks_[block];
  if (entry.published || tokens.empty() || tokens.size() >= kKvBlockTokens) return;
  entry.published = true;
  entry.address = 0;
  entry.previous = previous;
  entry.tokens.assign(tokens.begin(), tokens.end());
  followers_.emplace(previous, block);
}

void KvBlockPool::release(uint32_t block) {
  Block& entry = blocks_[block];
  if (entry.references == 0 || --entry.references > 0) return;
  if (entry.published) {
    cached_.push_back(block);
    entry.lru = std::prev(cached_.end());
  } else {
    unused_.push_back(block);
  }
}

void KvBlockPool::unpublish(uint32_t block) {
  Block& entry = blocks_[block];
  if (entry.tokens.size() == kKvBlockTokens) by_address_.erase(entry.address);
  const auto [begin, end] = followers_.equal_range(entry.previous);
  for (auto it = begin; it != end; ++it)
    if (it->second == block) {
      followers_.erase(it);
      break;
    }
  entry.published = false;
  entry.tokens.clear();
}

KvPoolStats KvBlockPool::stats() const {
  KvPoolStats stats;
  stats.total = uint32_t(blocks_.size());
  stats.cached = uint32_t(cached_.size());
  stats.free = uint32_t(unused_.size()) + stats.cached;
  stats.reserved = reserved_;
  stats.reused = reused_;
  stats.reused_rows = reused_rows_;
  stats.evicted = evicted_;
  return stats;
}

}  // namespace kipp
