// The CUDA backend's kernels, one per step of the forward pass, each launched on the backend's
// stream. Activations are FP32 rows (one per batch token); K/V are BF16 in paged stores laid out
// like the host's ([layer][physical block][32][kv_head][head_dim]); weights stay in the
// artifact's formats (BF16, q8_0, affine4 = ggml Q4_1) and are widened as they are read.
//
// Written for correctness first: every kernel follows the cpu-ref operation it replaces, and
// the gates compare the whole forward pass with cpu-ref on a GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "model/weights.h"

namespace kipp::cuda {

struct DeviceWeight {
  const uint8_t* data = nullptr;
  WeightFormat format = WeightFormat::f32;
  uint32_t rows = 0;  // output features
  uint32_t cols = 0;  // input features
};

// One KV store as the kernels see it.
struct KvStoreView {
  uint16_t* k = nullptr;
  uint16_t* v = nullptr;
  uint32_t blocks = 0;
};

// Where each batch row's KV lives: per-row position and item, per-item table and store.
struct PagedKv {
  const int32_t* positions;     // [rows]
  const int32_t* row_item;      // [rows]
  const int32_t* table_offset;  // [items]
  const int32_t* tables;        // concatenated block tables
  const KvStoreView* stores;    // [items]
  uint32_t layer;
  uint32_t kv_heads;
  uint32_t head_dim;
};

// out[r] = table[ids[r]] (BF16 rows widened).
void embed_rows(const uint16_t* table, const int32_t* ids, uint32_t rows, uint32_t width, float* out, cudaStream_t s);
// out[r] = x[rows[r]].
void gather_rows(const float* x, const int32_t* rows, uint32_t count, uint32_t width, float* out, cudaStream_t s);
// out = x / rms(x) * weight, per row of `width`; out may be x.
void rms_norm(const float* x, const float* weight, uint32_t rows, uint32_t width, float eps, float* out,
              cudaStream_t s);
// y[r] = W x[r] for every row r of x, each output element an FP32 sum over the columns: a warp per
// feature and 8 rows for small batches, the tensor cores (3xTF32, FP32-accurate) for large ones.
void matmul(const DeviceWeight& w, const float* x, uint32_t rows, float* y, cudaStream_t s);
// Per head of every row: RMSNorm with `weight` (head_dim values), then NeoX RoPE at the row's
// position (pairs i and i + head_dim / 2), as cpu-ref's rms_norm_heads and rope_heads.
void norm_rope_heads(float* heads, uint32_t rows, uint32_t heads_per_row, uint32_t head_dim, const float* weight,
                     float eps, const int32_t* positions, float theta, cudaStream_t s);
// Stores each row's K and V (kv_heads * head_dim values) as BF16 at its position.
void write_kv(const float* k, const float* v, uint32_t rows, const PagedKv& kv, cudaStream_t s);
// Causal attention of each row's q_heads over positions 0..its own, online softmax; GQA.
void attend(const float* q, uint32_t rows, uint32_t q_heads, const PagedKv& kv, float* out, cudaStream_t s);
// out = silu(gate) * up.
void silu_mul(const float* gate, const float* up, size_t n, float* out, cudaStream_t s);
// x += delta.
void add_in_place(float* x, const float* delta, size_t n, cudaStream_t s);

}  // namespace kipp::cuda
