// The bookkeeping of the model's shared KV pool: which of its 32-position blocks are free, which
// are held by running sequences, and which hold a finished prefix that a later request may adopt.
//
// A full block is immutable once written, so it can be published under the content address of
// the whole prefix it ends (a hash chained over every block before it). A later prompt with the
// same prefix finds it by that address; the tokens stored with it are compared too, so a hash
// collision can never hand a sequence someone else's KV. Blocks that nobody references but that
// hold a published prefix wait in LRU order and are evicted only when a free block is needed.
//
// A prefix rarely ends on a block boundary, so reuse is token-granular too: the last block of a
// finished sequence, partly filled, is published as a tail (it will not change any more), and
// every published block, full or tail, is also found by the address of the prefix before it.
// A prompt that goes on past its adopted full blocks with the same tokens as such a block's first
// ones copies those rows into a block of its own (copy on write: the source stays shared and
// unchanged) and evaluates only the rest.
//
// Admission reserves worst-case blocks: a request is admitted only when the blocks it may still
// need fit beside what running sequences have reserved, so a running sequence never runs out.
// The pool holds no KV itself (the backend does); it hands out block ids.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "util/error.h"

namespace kipp {

struct KvPoolStats {
  uint32_t total = 0;        // blocks in the pool
  uint32_t free = 0;         // referenced by no sequence (cached prefixes included)
  uint32_t cached = 0;       // of the free ones, holding a published prefix
  uint32_t reserved = 0;     // promised to admitted sequences, not yet taken
  uint64_t reused = 0;       // blocks adopted by a later sequence, ever
  uint64_t reused_rows = 0;  // positions copied from a published block's first rows, ever
  uint64_t evicted = 0;      // published blocks reclaimed for new data, ever
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

  // The published block (full, or the tail of a finished sequence) that follows the prefix ending
  // at address `previous` and begins with the longest run of `tokens`, taken (referenced) for the
  // caller, who copies its first `rows` positions and releases it. None when no block begins with
  // even one of them. Counts the rows as reused.
  struct RowSource {
    uint32_t block;
    uint32_t rows;
  };
  std::optional<RowSource> find_rows(uint64_t previous, std::span<const uint32_t> tokens);

  // Takes another reference to a block the caller already holds (sharing it with a sibling).
  void share(uint32_t block);

  // Whether `blocks` more can be promised beside the current reservations.
  bool can_reserve(uint32_t blocks) const;
  void reserve(uint32_t blocks);
  void unreserve(uint32_t blocks);
  // A free block for writing, taken from the reservation (evicting the oldest cached prefix when
  // no unused block is left). Failing means a reservation was not made: a bug, reported as such.
  Result<uint32_t> take_reserved();

  // Publishes a full block the caller holds, with its 32 `tokens`, after the prefix ending at
  // address `previous`, unless its own address already has a block (then the caller's copy stays
  // private and is freed on release). Returns its address, chain(previous, tokens).
  uint64_t publish(uint32_t block, uint64_t previous, std::span<const uint32_t> tokens);
  // Publishes the partly filled last block of a sequence that is ending (its `tokens`, fewer than
  // 32) after the prefix ending at `previous`: found by find_rows only, never adopted whole.
  void publish_tail(uint32_t block, uint64_t previous, std::span<const uint32_t> tokens);
  // Drops one reference; unreferenced blocks become free (cached when published).
  void release(uint32_t block);

  KvPoolStats stats() const;

 private:
  struct Block {
    uint32_t references = 0;
    bool published = false;
    uint64_t address = 0;               // a full block's own address (tails have none)
    uint64_t previous = 0;              // the address of the prefix before it
    std::vector<uint32_t> tokens;       // the published block's tokens (fewer for a tail), for verification
    std::list<uint32_t>::iterator lru;  // its place in cached_ while unreferenced
  };

  void unpublish(uint32_t block);
  // Takes a reference to a published block that may be cached (unreferenced), out of the LRU.
  void take(uint32_t block);

  std::vector<Block> blocks_;
  std::vector<uint32_t> unused_;                           // referenced by nobody, holding nothing worth keeping
  std::list<uint32_t> cached_;                             // unreferenced published blocks, oldest first
  std::unordered_map<uint64_t, uint32_t> by_address_;      // full blocks by their own address
  std::unordered_multimap<uint64_t, uint32_t> followers_;  // every published block by the address before it
  uint32_t reserved_ = 0;
  uint64_t reused_ = 0;
  uint64_t reused_rows_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace kipp
