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
struct MatmulArgs {
  const WeightView* weight;
  const float* x;          // tokens rows of weight->cols values, x_stride apart
  size_t x_stride;
  uint32_t tokens;
  float* const* out;       // one output row per token (weight->rows values each)
  uint32_t row_begin, row_end;
  const float* fp16_table;  // the 65,536 FP16 values widened, for block scales
};

// Causal attention of one token's query heads of one KV group over positions 0..positions-1,
// read through the session's block table, with an online (flash-style) softmax in 32-position
// blocks.
struct AttentionArgs {
  const float* q;            // group_heads x head_dim query values (normed, rotated)
  uint32_t group_heads;      // query heads that share this KV head
  uint32_t head_dim;
  const uint16_t* k_layer;   // this layer's K store: [physical block][32][kv_width] BF16
  const uint16_t* v_layer;
  size_t block_stride;       // values per physical block (32 x kv_width)
  uint32_t kv_offset;        // this KV head's offset within a row (kv_head x head_dim)
  const uint32_t* table;     // logical -> physical block; null for identity
  uint32_t positions;
  float scale;               // 1 / sqrt(head_dim)
  float* out;                // group_heads x head_dim
  float* scratch;            // 32 floats
};

struct Kernels {
  const char* isa;
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
