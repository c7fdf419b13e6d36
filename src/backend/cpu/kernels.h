// The fast CPU backend's inner loops, one table per instruction set. Every set is compiled from
// the same source (kernels_impl.h) with different target flags, and the backend picks one table
// at model load. Each output element is reduced in one fixed order (the set's vector lanes over
// the inner dimension, then a fixed tree), whatever the tile, batch or thread count: that is what
// makes the backend batch- and chunk-invariant.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_features.h"
#include "model/weights.h"

namespace kipp::cpu {

// out[t][r] = sum_c W[r][c] * x[t][c] for tokens t < tokens and rows row_begin <= r < row_end.
// W is packed (packed_weights.h); row_begin and row_end are multiples of kPackRows.
// FP32 and BF16 weights multiply x itself. Q8_0 and Q4_1 weights multiply x quantized to int16
// with one scale per token (quantize_activation below): each block's products are then summed
// exactly in integers, and only the block's sum is scaled and accumulated in FP32.
struct MatmulArgs {
  const WeightView* weight;
  const float* x;          // tokens rows of weight->cols values, x_stride apart
  const int16_t* x_int16;  // the same rows quantized, when the weights are quantized
  const float* x_scale;    // per token: x ~= x_int16 * x_scale
  size_t x_stride;
  uint32_t tokens;
  float* const* out;       // one output row per token (weight->rows values each)
  uint32_t row_begin, row_end;
  const float* fp16_table;  // the 65,536 FP16 values widened, for block scales
};

// Attention of one token over one chunk of its positions (kAttentionChunk positions, starting at
// a multiple of it, the last chunk shorter), for a range of KV heads and the query heads that
// share them, read through the session's block table. The result is a chunk partial: per query
// head the softmax weights' maximum score, their sum, and the weighted sum of V rows, none
// normalized; attention.h folds the partials of a token's chunks in order. Because the chunks are
// fixed by position, a token's result does not depend on how its chunks are spread over threads.
inline constexpr uint32_t kAttentionChunk = 256;

struct AttentionArgs {
  const float* q;            // the token's query heads, normed and rotated: q_heads x head_dim
  uint32_t kv_begin, kv_end; // the KV heads of this job
  uint32_t group_heads;      // query heads per KV head
  uint32_t head_dim;
  uint32_t kv_width;         // values per K or V row: kv_heads x head_dim
  const uint16_t* k_layer;   // this layer's K store: [physical block][32][kv_width] BF16
  const uint16_t* v_layer;
  size_t block_stride;       // values per physical block (32 x kv_width)
  const uint32_t* table;     // logical -> physical block; null for identity
  uint32_t begin, end;       // positions of the chunk; begin is a multiple of 32
  float scale;               // 1 / sqrt(head_dim)
  float* sums;               // per query head (indexed by absolute head): head_dim weighted V sums
  float* max_score;          // per query head
  float* weight_sum;         // per query head
  float* scores;             // scratch: 32 per query head
};

// Whether products with weights of this format take x as int16.
inline bool takes_int16(WeightFormat format) { return format == WeightFormat::q8_0 || format == WeightFormat::affine4; }

// x (n values) as int16 with one scale, max |x| -> 32767, rounded to nearest. Relative to the
// largest element the error is below 1/65534, so a dot product's error stays below about
// sqrt(n) / 65534 of |w| |x|: far under what the Q8_0 and Q4_1 weights themselves carry.
void quantize_activation(const float* x, uint32_t n, int16_t* out, float* scale);

struct Kernels {
  const char* isa;
  uint32_t lanes;  // floats per vector; packed BF16 weights are interleaved for it
  void (*matmul)(const MatmulArgs&);
  void (*attention)(const AttentionArgs&);
};

const Kernels& portable_kernels();
const Kernels& avx2_kernels();
const Kernels& avx512_kernels();
// The table of a kernel set (cpu_features.h chooses which).
const Kernels& kernels_for(Isa isa);

// FP16 -> FP32 for every bit pattern, built once.
const float* fp16_table();

}  // namespace kipp::cpu
