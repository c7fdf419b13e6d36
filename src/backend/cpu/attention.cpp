#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "backend/kv_store.h"

namespace kipp::cpu {
namespace {

// Partials held at once when the context does not ask for more: a prefill pass of 128 tokens at
// a few thousand positions goes through in a handful of waves.
constexpr uint32_t kMinPartials = 512;

// The kernels walk head_dim in runs of 8 vectors of up to 16 floats.
static_assert(family::head_dim % 128 == 0);

uint32_t chunks_of(const AttentionQuery& query) { return (query.positions + kAttentionChunk - 1) / kAttentionChunk; }

bool same_session(const AttentionQuery& a, const AttentionQuery& b) {
  return a.k_layer == b.k_layer && a.v_layer == b.v_layer && a.table == b.table;
}

}  // namespace

AttentionRunner::AttentionRunner(const Checkpoint& checkpoint, ThreadPool& pool, const Kernels& kernels,
                                 KvFormat kv_format)
    : c_(checkpoint),
      pool_(pool),
      kernels_(kernels),
      kv_format_(kv_format),
      row_bytes_(kv_row_bytes(kv_format, checkpoint.kv_width())),
      capacity_(std::max(kMinPartials, (checkpoint.context + kAttentionChunk - 1) / kAttentionChunk)),
      partial_floats_(size_t(checkpoint.q_heads) * (checkpoint.head_dim() + 2)),
      partials_(capacity_ * partial_floats_),
      scores_(size_t(pool.size()) * kAttentionTokens * 32 * checkpoint.q_heads) {
  first_partial_.reserve(capacity_);
  groups_.reserve(capacity_);
}

void AttentionRunner::run(std::span<const AttentionQuery> queries) {
  size_t begin = 0;
  uint32_t held = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    if (held + chunks_of(queries[i]) > capacity_) {
      run_wave(queries.subspan(begin, i - begin));
      begin = i;
      held = 0;
    }
    held += chunks_of(queries[i]);
  }
  run_wave(queries.subspan(begin));
}

// Groups are formed window by window, a window being up to kAttentionTokens consecutive queries
// of one session, and within a window chunk by chunk, of the queries that reach the chunk (a
// prefill's later positions reach every chunk its earlier ones do, so these are consecutive;
// any gap starts another group).
void AttentionRunner::group_queries(std::span<const AttentionQuery> queries) {
  groups_.clear();
  const uint32_t count = uint32_t(queries.size());
  for (uint32_t begin = 0; begin < count;) {
    uint32_t end = begin + 1, chunks = chunks_of(queries[begin]);
    while (end < count && end - begin < kAttentionTokens && same_session(queries[begin], queries[end]))
      chunks = std::max(chunks, chunks_of(queries[end++]));
    for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
      for (uint32_t first = begin; first < end;) {
        uint32_t last = first;
        while (last < end && chunks_of(queries[last]) > chunk) ++last;
        if (last > first) groups_.push_back({first, last - first, chunk});
        first = std::max(last, first + 1);
      }
    }
    begin = end;
  }
}

// Many tokens (a prefill) take one KV head per job, jobs ordered head by head: consecutive jobs of
// a thread then read the same head's K and V rows, a few hundred KiB that stay in cache from one
// group to the next. Few tokens slice the KV heads only as far as it takes to give every thread a
// few jobs.
uint32_t AttentionRunner::kv_slices(size_t query_count) const {
  const uint32_t kv_heads = c_.kv_heads, threads = pool_.size(), groups = uint32_t(groups_.size());
  if (query_count >= threads) return kv_heads;
  uint32_t slices = 1;
  while (slices < kv_heads && kv_heads % (2 * slices) == 0 && uint64_t(groups) * slices < 2ull * threads) slices *= 2;
  return slices;
}

void AttentionRunner::attend(std::span<const AttentionQuery> queries, const Group& group, uint32_t kv_begin,
                             uint32_t kv_end, unsigned thread) {
  const uint32_t dim = c_.head_dim(), q_heads = c_.q_heads;
  const uint32_t begin = group.chunk * kAttentionChunk;
  AttentionArgs args{};
  for (uint32_t t = 0; t < group.tokens; ++t) {
    const AttentionQuery& query = queries[group.first + t];
    float* out = partial(first_partial_[group.first + t] + group.chunk);
    args.token[t] = {query.q,
                     std::min(query.positions, begin + kAttentionChunk),
                     out,
                     out + size_t(q_heads) * dim,
                     out + size_t(q_heads) * (dim + 1),
                     scores_.data() + (size_t(thread) * kAttentionTokens + t) * 32 * q_heads};
  }
  const AttentionQuery& first = queries[group.first];
  args.tokens = group.tokens;
  args.kv_begin = kv_begin;
  args.kv_end = kv_end;
  args.group_heads = q_heads / c_.kv_heads;
  args.head_dim = dim;
  args.kv_format = kv_format_;
  args.k_layer = first.k_layer;
  args.v_layer = first.v_layer;
  args.row_bytes = row_bytes_;
  args.block_bytes = kKvBlockTokens * row_bytes_;
  args.table = first.table;
  args.begin = begin;
  args.scale = 1.0f / std::sqrt(float(dim));
  args.fp16_table = fp16_table();
  kernels_.attention(args);
}

void AttentionRunner::fold(std::span<const AttentionQuery> queries, uint32_t t, uint32_t h) {
  const uint32_t dim = c_.head_dim(), q_heads = c_.q_heads;
  const AttentionQuery& qr = queries[t];
  const uint32_t chunks = chunks_of(qr);
  float* out = qr.out + size_t(h) * dim;
  const float* first = partial(first_partial_[t]);
  float max_score = first[size_t(q_heads) * dim + h], weight_sum = first[size_t(q_heads) * (dim + 1) + h];
  std::copy_n(first + size_t(h) * dim, dim, out);
  // Later chunks: both sides rescaled to the larger maximum, in chunk order.
  for (uint32_t c = 1; c < chunks; ++c) {
    const float* part = partial(first_partial_[t] + c);
    const float chunk_max = part[size_t(q_heads) * dim + h];
    const float new_max = std::max(max_score, chunk_max);
    const float keep = std::exp(max_score - new_max), add = std::exp(chunk_max - new_max);
    weight_sum = weight_sum * keep + part[size_t(q_heads) * (dim + 1) + h] * add;
    const float* sums = part + size_t(h) * dim;
    for (uint32_t d = 0; d < dim; ++d) out[d] = out[d] * keep + sums[d] * add;
    max_score = new_max;
  }
  const float inverse = 1.0f / weight_sum;
  for (uint32_t d = 0; d < dim; ++d) out[d] *= inverse;
}

void AttentionRunner::run_wave(std::span<const AttentionQuery> queries) {
  if (queries.empty()) return;
  first_partial_.clear();
  uint32_t total = 0;
  for (const AttentionQuery& query : queries) {
    first_partial_.push_back(total);
    total += chunks_of(query);
  }
  group_queries(queries);
  const uint32_t kv_heads = c_.kv_heads, groups = uint32_t(groups_.size());
  const uint32_t slices = kv_slices(queries.size());
  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(groups * slices, index, count);
    // Jobs are numbered slice by slice, then group by group.
    for (uint32_t job = range.begin; job < range.end; ++job) {
      const uint32_t slice = job / groups;
      attend(queries, groups_[job % groups], slice * kv_heads / slices, (slice + 1) * kv_heads / slices, index);
    }
  });
  // Fold every token's partials, one (token, head) pair per job.
  const uint32_t q_heads = c_.q_heads, folds = uint32_t(queries.size()) * q_heads;
  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(folds, index, count);
    for (uint32_t job = range.begin; job < range.end; ++job) fold(queries, job / q_heads, job % q_heads);
  });
}
}  // namespace kipp::cpu
