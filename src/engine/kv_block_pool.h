// The bookkeeping of the model's shared KV pool: which of its 32-position blocks are free, which
// are held by running sequences, and which hold a finished prefix that a later request may adopt.
//
// A full block is immutable once written, so it can be published under the content address of
// the whole prefix it ends (a hash chained over every block before it). A later prompt with the
// same prefix finds it by that address; the tokens stored with it are compared too, so a hash
// collision can never hand a sequence someone else's KV. Blocks that nobody references but that
// hold a published prefix wait in LRU order and are evicted only when a free block is needed.
//
// Admission reserves worst-case blocks: a request is admitted only when the blocks it may still
// need fit beside what running sequences have reserved, so a running sequence never runs out.
// The pool holds no KV itself (the backend does); it hands out block ids.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "util/error.h"

namespace kipp {

struct KvPoolStats {
  uint32_t total = 0;          // blocks in the pool
  uint32_t free = 0;           // referenced by no sequence (cached prefixes included)
  uint32_t cached = 0;         // of the free ones, holding a published prefix
  uint32_t reserved = 0;       // promised to admitted sequences, not yet taken
  uint64_t reused = 0;         // blocks adopted by a later sequence, ever
  uint64_t evicted = 0;        // published blocks reclaimed for new data, ever
};

class KvBlockPool {
 public:
  explicit KvBlockPool(uint32_t blocks);

  // The content address of the block that ends `tokens` (a whole number of blocks), given the
  // address of the block before it (0 for the first).
  static uint64_t chain(uint64_t previous, std::span<const uint32_t> block_tokens);

  // The longest run of published blocks that starts `tokens`, at most `max_blocks` long, each
  // taken (referenced) for the caller. Counts them as reused.
  std::vector<uint32_t> adopt_prefix(std::span<const uint32_t> tokens, uint32_t max_blocks);

  // Takes another reference to a block the caller already holds (sharing it with a sibling).
  void share(uint32_t block);

  // Whether `blocks` more can be promised beside the current reservations.
  bool can_reserve(uint32_t blocks) const;
  void reserve(uint32_t blocks);
  void unreserve(uint32_t blocks);
  // A free block for writing, taken from the reservation (evicting the oldest cached prefix when
  // no unused block is left). Failing means a reservation was not made: a bug, reported as such.
  Result<uint32_t> take_reserved();

  // Publishes a full block the caller holds under `address` with its 32 `tokens`, unless that
  // address already has a block (then the caller's copy stays private and is freed on release).
  void publish(uint32_t block, uint64_t address, std::span<const uint32_t> tokens);
  // Drops one reference; unreferenced blocks become free (cached when published).
  void release(uint32_t block);

  KvPoolStats stats() const;

 private:
  struct Block {
    uint32_t references = 0;
    bool published = false;
    uint64_t address = 0;
    std::vector<uint32_t> tokens;           // the published block's tokens, for verification
    std::list<uint32_t>::iterator lru;      // its place in cached_ while unreferenced
  };

  void unpublish(uint32_t block);

  std::vector<Block> blocks_;
  std::vector<uint32_t> unused_;           // referenced by nobody, holding nothing worth keeping
  std::list<uint32_t> cached_;             // unreferenced published blocks, oldest first
  std::unordered_map<uint64_t, uint32_t> by_address_;
  uint32_t reserved_ = 0;
  uint64_t reused_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace kipp
