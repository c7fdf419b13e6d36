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
      partials_(capacity_ * partial_floats_), scores_(size_t(pool.size()) * 32 * checkpoint.q_heads) {
  first_partial_.reserve(capacity_);
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

void AttentionRunner::run_wave(std::span<const AttentionQuery> queries) {
  if (queries.empty()) return;
  first_partial_.clear();
  uint32_t total = 0;
  for (const AttentionQuery& query : queries) {
    first_partial_.push_back(total);
    total += chunks_of(query);
  }
  // Many tokens (a prefill) take one KV head per job, jobs ordered head by head: consecutive
  // jobs of a thread then read the same head's K and V rows, a few hundred KiB that stay in
  // cache from one token to the next. Few tokens slice the KV heads only as far as it takes to
  // give every thread a few jobs.
  const uint32_t kv_heads = c_.kv_heads(), threads = pool_.size();
  uint32_t slices = 1;
  if (queries.size() >= threads) {
    slices = kv_heads;
  } else {
    while (slices < kv_heads && kv_heads % (2 * slices) == 0 && uint64_t(total) * slices < 2ull * threads) slices *= 2;
  }
  const uint32_t jobs = total * slices, dim = c_.head_dim(), group = c_.q_heads / kv_heads;
  const uint32_t q_heads = c_.q_heads;

  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(jobs, index, count);
    // Jobs are numbered slice by slice, then query by query, chunk by chunk.
    for (uint32_t job = range.begin; job < range.end; ++job) {
      const uint32_t slice = job / total, p = job % total;
      const size_t query =
          size_t(std::upper_bound(first_partial_.begin(), first_partial_.end(), p) - first_partial_.begin()) - 1;
      const AttentionQuery& qr = queries[query];
      const uint32_t chunk = p - first_partial_[query];
      const uint32_t begin = chunk * kAttentionChunk;
      const uint32_t end = std::min(qr.positions, begin + kAttentionChunk);
      float* out = partial(p);
      AttentionArgs args{qr.q,
                         slice * kv_heads / slices,
                         (slice + 1) * kv_heads / slices,
                         group,
                         dim,
                         kv_format_,
                         qr.k_layer,
                         qr.v_layer,
                         row_bytes_,
                         kKvBlockTokens * row_bytes_,
                         qr.table,
                         begin,
                         end,
                         1.0f / std::sqrt(float(dim)),
                         out,
                         out + size_t(q_heads) * dim,
                         out + size_t(q_heads) * (dim + 1),
                         scores_.data() + size_t(index) * 32 * q_heads,
                         fp16_table()};
      kernels_.attention(args);
    }
  });

  // Fold every token's partials, one (token, head) pair per job.
  const uint32_t folds = uint32_t(queries.size()) * q_heads;
  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(folds, index, count);
    for (uint32_t job = range.begin; job < range.end; ++job) {
      const uint32_t t = job / q_heads, h = job % q_heads;
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
  });
}

}  // namespace kipp::cpu
