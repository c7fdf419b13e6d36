// Attention over cached K and V rows for a group of up to four tokens: scores, online softmax
// and the weighted V rows, each cached row widened once for the group (kernels.h's
// AttentionArgs says what a job covers).
// One part of every kernel set: kernels_impl.h includes it once in each kernels_<isa>.cpp,
// after the parts before it, whose names it uses.
#pragma once

namespace kipp::cpu::KIPP_KERNEL_NS {
namespace {

// e^x for x <= 0 (scores less their maximum), to about one ulp: x = n ln2 + r with |r| <= ln2/2,
// a degree-7 Taylor polynomial in r, scaled by 2^n through the exponent bits. Inputs below -87
// are raised to it (their weight, about 1e-38, is nothing beside the maximum's 1).
vf exp_nonpositive(vf x) {
  const vf lowest = splat(-87.0f);
  x = x < lowest ? lowest : x;
  const vf round = splat(12582912.0f);  // 1.5 * 2^23: adding and subtracting it rounds to an integer
  const vf n = (x * splat(1.44269504f) + round) - round;
  const vf r = (x - n * splat(0.693145752f)) - n * splat(1.42860677e-6f);
  vf p = splat(1.0f / 5040);
  p = madd(p, r, splat(1.0f / 720));
  p = madd(p, r, splat(1.0f / 120));
  p = madd(p, r, splat(1.0f / 24));
  p = madd(p, r, splat(1.0f / 6));
  p = madd(p, r, splat(0.5f));
  p = madd(p, r, splat(1.0f));
  p = madd(p, r, splat(1.0f));
  const vi32 exponent = (__builtin_convertvector(n, vi32) + 127) << 23;
  return p * (vf)exponent;
}

// How attention reads cached rows (backend/kv_store.h): vectors of a KV head's values, widened to
// FP32 exactly, so both formats go through the same arithmetic from there on.
struct Bf16Rows {
  static size_t bytes_of(uint32_t values) { return size_t(values) * 2; }
  vf load(const std::byte* head, uint32_t d) const { return load_bf16(reinterpret_cast<const uint16_t*>(head) + d); }
};

// A Q8_0 row: blocks of an FP16 scale and 32 int8 (quant/blocks.h's BlockQ8_0, whose header this
// file does not include). scale x integer is exact in FP32.
struct Q8_0Rows {
  static constexpr size_t kBlockBytes = 2 + kBlock;
  const float* fp16;  // fp16_table()
  static size_t bytes_of(uint32_t values) { return size_t(values) / kBlock * kBlockBytes; }
  vf load(const std::byte* head, uint32_t d) const {
    const std::byte* block = head + size_t(d / kBlock) * kBlockBytes;
    uint16_t scale;
    __builtin_memcpy(&scale, block, 2);
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2) + d % kBlock;
    return splat(fp16[scale]) * widen_i8(q);
  }
};

// N vectors summed, each in reduce's tree: four at a time, the rest one by one.
template <int N>
void reduce_all(const vf (&v)[N], float* out) {
  int i = 0;
  for (; i + 4 <= N; i += 4) reduce4(v + i, out + i);
  for (; i < N; ++i) out[i] = reduce(v[i]);
}

// Accumulators the attention kernels keep in registers at once (half the set's vector
// registers), and the rows (or vectors) a step covers for T tokens x H heads within them: 4, 2
// or 1, dividing a 32-row block and a head's vectors.
constexpr int kAccumulators = KIPP_LANES == 16 ? 16 : 8;
constexpr int step_for(int tokens_times_heads) {
  const int room = kAccumulators / tokens_times_heads;
  return room >= 4 ? 4 : room >= 2 ? 2 : 1;
}

// Scores of T tokens' H query heads (h on, consecutive, sharing one KV head) against R K rows of
// a block, rows j on: one accumulator per token, head and row, lanes over head_dim in order, then
// the fixed lane tree, so each token's scores are the same as if it were alone. Each K row is
// widened once for all T x H heads. Token t keeps the rows before counts[t]; the others (still
// inside the 32-row block) are computed and dropped, which keeps the loop free of branches.
template <int T, int H, int R, class Rows>
void scores_of_rows(const Rows& kv, const AttentionToken* tokens, uint32_t h, const std::byte* k, size_t row_bytes,
                    uint32_t j, const uint32_t* counts, uint32_t dim, float scale) {
  vf acc[T * H * R];
  for (vf& v : acc) v = vf{};
  for (uint32_t d = 0; d < dim; d += kLanes) {
    vf rows[R];
    for (int r = 0; r < R; ++r) rows[r] = kv.load(k + r * row_bytes, d);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < H; ++i) {
        const vf qv = load_f32(tokens[t].q + (h + i) * dim + d);
        for (int r = 0; r < R; ++r) acc[(t * H + i) * R + r] = madd(qv, rows[r], acc[(t * H + i) * R + r]);
      }
  }
  float sums[T * H * R];
  reduce_all(acc, sums);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < H; ++i)
      for (int r = 0; r < R; ++r)
        if (j + r < counts[t]) tokens[t].scores[(h + i) * kBlock + j + r] = sums[(t * H + i) * R + r] * scale;
}

// sums += weight[j] x V row j for T tokens' H heads (h on) sharing the V rows, rows j from
// `first` to `count`, position by position: the sums stay in registers, S vectors of each at a
// time, while the rows go by, and each V vector is widened once for all T x H heads. Each
// token's sums take the same steps as alone.
template <int T, int H, class Rows>
void weigh_rows(const Rows& kv, const AttentionToken* tokens, uint32_t h, const std::byte* v, size_t row_bytes,
                uint32_t first, uint32_t count, uint32_t dim) {
  constexpr int S = step_for(T * H);
  for (uint32_t d0 = 0; d0 < dim; d0 += S * kLanes) {
    vf acc[T][H][S];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < H; ++i)
        for (int s = 0; s < S; ++s) acc[t][i][s] = load_f32(tokens[t].sums + (h + i) * dim + d0 + s * kLanes);
    for (uint32_t j = first; j < count; ++j) {
      vf rows[S];
      for (int s = 0; s < S; ++s) rows[s] = kv.load(v + j * row_bytes, d0 + s * kLanes);
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < H; ++i) {
          const vf p = splat(tokens[t].scores[(h + i) * kBlock + j]);
          for (int s = 0; s < S; ++s) acc[t][i][s] = madd(p, rows[s], acc[t][i][s]);
        }
    }
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < H; ++i)
        for (int s = 0; s < S; ++s) store_f32(tokens[t].sums + (h + i) * dim + d0 + s * kLanes, acc[t][i][s]);
  }
}

// Online softmax of one query head of a token over a block's first `count` scores: rescale what
// the head summed so far to its new maximum, then turn the scores into weights. The block's
// maximum and its weights' sum are taken over vectors of positions, those from `count` on left
// out (their slots hold no score).
void softmax_block(const AttentionToken& token, uint32_t h, uint32_t count, uint32_t dim) {
  vi32 position;
  for (int i = 0; i < kLanes; ++i) position[i] = i;
  float* scores = token.scores + h * kBlock;
  vf largest = splat(-__builtin_inff());
  for (int v = 0; v < kVecs; ++v) {
    const vf s = load_f32(scores + v * kLanes);
    largest = ((position + v * kLanes < int32_t(count)) & (s > largest)) ? s : largest;
  }
  const float block_max = largest_lane(largest);
  const float new_max = block_max > token.max_score[h] ? block_max : token.max_score[h];
  // exp(0) is 1 exactly: skip the call when the maximum stays (and is a number).
  const bool same_max = new_max == token.max_score[h] && new_max != -__builtin_inff();
  const float correction = same_max ? 1.0f : __builtin_expf(token.max_score[h] - new_max);
  if (correction != 1.0f) {
    token.weight_sum[h] *= correction;
    float* sums = token.sums + h * dim;
    for (uint32_t d = 0; d < dim; d += kLanes) store_f32(sums + d, load_f32(sums + d) * splat(correction));
  }
  vf weights{};
  for (int v = 0; v < kVecs; ++v) {
    const vf w = exp_nonpositive(load_f32(scores + v * kLanes) - splat(new_max));
    store_f32(scores + v * kLanes, w);
    weights += position + v * kLanes < int32_t(count) ? w : vf{};
  }
  token.weight_sum[h] += reduce(weights);
  token.max_score[h] = new_max;
}

// Asks for the rows [0, count) of a block, the job's KV heads of K and V, while the block before
// it is computed: its rows are a row apart per head range, a pattern the hardware prefetchers
// pick up late.
void prefetch_block(const AttentionArgs& a, size_t physical, uint32_t count, size_t head_bytes) {
  const size_t first = a.kv_begin * head_bytes, last = a.kv_end * head_bytes;
  for (uint32_t j = 0; j < count; ++j) {
    const std::byte* k_row = a.k_layer + physical * a.block_bytes + j * a.row_bytes;
    const std::byte* v_row = a.v_layer + physical * a.block_bytes + j * a.row_bytes;
    for (size_t byte = first; byte < last; byte += 64) {
      __builtin_prefetch(k_row + byte);
      __builtin_prefetch(v_row + byte);
    }
  }
}

// The job of kernels.h's AttentionArgs for a group of T tokens: block by block over the chunk,
// the next block prefetched; every token's scores, then each token's online softmax, then the
// weighted V rows, each cached row widened once for the whole group.
template <int T, class Rows>
void attention_of(const AttentionArgs& a, const Rows& kv) {
  const AttentionToken* tokens = a.token;
  const uint32_t dim = a.head_dim, group = a.group_heads;
  const uint32_t head_begin = a.kv_begin * group, head_end = a.kv_end * group;
  const size_t head_bytes = Rows::bytes_of(dim);
  uint32_t end = 0;
  for (int t = 0; t < T; ++t) {
    end = tokens[t].end > end ? tokens[t].end : end;
    for (uint32_t h = head_begin; h < head_end; ++h) {
      tokens[t].max_score[h] = -__builtin_inff();
      tokens[t].weight_sum[h] = 0.0f;
      for (uint32_t d = 0; d < dim; d += kLanes) store_f32(tokens[t].sums + h * dim + d, vf{});
    }
  }
  for (uint32_t start = a.begin; start < end; start += kBlock) {
    const uint32_t logical = start / kBlock;
    const size_t physical = a.table ? a.table[logical] : logical;
    const std::byte* k_block = a.k_layer + physical * a.block_bytes;
    const std::byte* v_block = a.v_layer + physical * a.block_bytes;
    // The rows each token sees in this block: all its companions see at least `fewest`.
    uint32_t counts[T], fewest = kBlock, most = 0;
    for (int t = 0; t < T; ++t) {
      const uint32_t left = tokens[t].end > start ? tokens[t].end - start : 0;
      counts[t] = left < uint32_t(kBlock) ? left : uint32_t(kBlock);
      fewest = counts[t] < fewest ? counts[t] : fewest;
      most = counts[t] > most ? counts[t] : most;
    }
    if (start + kBlock < end) {
      const uint32_t next_left = end - start - kBlock;
      prefetch_block(a, a.table ? a.table[logical + 1] : logical + 1,
                     next_left < uint32_t(kBlock) ? next_left : uint32_t(kBlock), head_bytes);
    }
    // Scores, query heads in pairs that share a KV head, the pair's K rows read front to back.
    for (uint32_t h = head_begin; h < head_end;) {
      const std::byte* k = k_block + h / group * head_bytes;
      const bool pair = (h + 1) % group != 0;  // h + 1 shares h's KV head
      if (pair) {
        constexpr int R = step_for(T * 2);
        for (uint32_t j = 0; j < most; j += R)
          scores_of_rows<T, 2, R>(kv, tokens, h, k + j * a.row_bytes, a.row_bytes, j, counts, dim, a.scale);
      } else {
        constexpr int R = step_for(T);
        for (uint32_t j = 0; j < most; j += R)
          scores_of_rows<T, 1, R>(kv, tokens, h, k + j * a.row_bytes, a.row_bytes, j, counts, dim, a.scale);
      }
      h += pair ? 2 : 1;
    }
    for (int t = 0; t < T; ++t)
      if (counts[t] > 0)
        for (uint32_t h = head_begin; h < head_end; ++h) softmax_block(tokens[t], h, counts[t], dim);
    // Weighted V rows: the rows every token sees together, then each token's own rest.
    for (uint32_t h = head_begin; h < head_end;) {
      const std::byte* v = v_block + h / group * head_bytes;
      const bool pair = (h + 1) % group != 0;
      if (pair) weigh_rows<T, 2>(kv, tokens, h, v, a.row_bytes, 0, fewest, dim);
      else weigh_rows<T, 1>(kv, tokens, h, v, a.row_bytes, 0, fewest, dim);
      for (int t = 0; t < T; ++t) {
        if (counts[t] == fewest) continue;
        if (pair) weigh_rows<1, 2>(kv, tokens + t, h, v, a.row_bytes, fewest, counts[t], dim);
        else weigh_rows<1, 1>(kv, tokens + t, h, v, a.row_bytes, fewest, counts[t], dim);
      }
      h += pair ? 2 : 1;
    }
  }
}

template <class Rows>
void attention_over(const AttentionArgs& a, const Rows& kv) {
  static_assert(kAttentionTokens == 4);
  switch (a.tokens) {
    case 1: return attention_of<1>(a, kv);
    case 2: return attention_of<2>(a, kv);
    case 3: return attention_of<3>(a, kv);
    default: return attention_of<4>(a, kv);
  }
}

void attention(const AttentionArgs& a) {
  switch (a.kv_format) {
    case KvFormat::bf16: return attention_over(a, Bf16Rows{});
    case KvFormat::q8_0: return attention_over(a, Q8_0Rows{a.fp16_table});
  }
}

}  // namespace
}  // namespace kipp::cpu::KIPP_KERNEL_NS
