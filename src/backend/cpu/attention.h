// Attention of a pass's tokens for one layer, spread over the thread pool. Each token's positions
// fall into fixed chunks (kAttentionChunk). A job is one chunk of up to kAttentionTokens
// consecutive tokens of one session (a group, which reads each cached row once for all of them)
// for a slice of the KV heads, and writes one partial per token. The partials of a token are then
// folded in chunk order. The chunks and the fold are fixed by positions alone and the kernels do
// each token's arithmetic as if it were alone, so a token's result is bitwise the same whatever
// else is in the pass, whichever tokens share its group, and however many threads there are;
// only the grouping, the slicing of heads and the spreading of jobs, which change no arithmetic,
// adapt to the batch so that every thread has work, also when a single token decodes at a long
// context.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "registry/registry.h"

namespace kipp::cpu {

// One token of the pass as attention sees it.
struct AttentionQuery {
  const float* q;            // q_heads x head_dim, normed and rotated
  float* out;                // q_heads x head_dim
  const std::byte* k_layer;  // the layer's K and V store of the token's session
  const std::byte* v_layer;
  const uint32_t* table;  // null for identity
  uint32_t positions;     // the token's position + 1
};

class AttentionRunner {
 public:
  AttentionRunner(const Checkpoint& checkpoint, ThreadPool& pool, const Kernels& kernels, KvFormat kv_format);

  void run(std::span<const AttentionQuery> queries);

 private:
  // Up to kAttentionTokens consecutive queries of one session, over one chunk of positions that
  // each of them has.
  struct Group {
    uint32_t first;  // the first query
    uint32_t tokens;
    uint32_t chunk;
  };

  void run_wave(std::span<const AttentionQuery> queries);
  void group_queries(std::span<const AttentionQuery> queries);
  uint32_t kv_slices(size_t query_count) const;
  // One job of a wave: one group's queries over KV heads [kv_begin, kv_end), on thread `thread`.
  void attend(std::span<const AttentionQuery> queries, const Group& group, uint32_t kv_begin, uint32_t kv_end,
              unsigned thread);
  // Query `t`'s head `h`: its chunks' partials folded into its output.
  void fold(std::span<const AttentionQuery> queries, uint32_t t, uint32_t h);
  float* partial(uint32_t index) { return partials_.data() + size_t(index) * partial_floats_; }

  const Checkpoint& c_;
  ThreadPool& pool_;
  const Kernels& kernels_;
  const KvFormat kv_format_;
  const size_t row_bytes_;  // of a K or V row in kv_format_
  uint32_t capacity_;       // partials held at once (at least one token's at full context)
  size_t partial_floats_;   // q_heads x (head_dim + 2)
  std::vector<float> partials_;
  std::vector<float> scores_;            // 32 per query head per group token per thread
  std::vector<uint32_t> first_partial_;  // per query of a wave
  std::vector<Group> groups_;            // of a wave
};

}  // namespace kipp::cpu
