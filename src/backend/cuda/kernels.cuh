// The CUDA backend's kernels, one per step of the forward pass, each launched on the backend's
// stream. Activations are FP32 rows (one per batch token); K/V are BF16 in paged stores laid out
// like the host's ([layer][physical block][32][kv_head][head_dim]); weights stay in the
// artifact's formats (BF16, q8_0, affine4 = ggml Q4_1), split into planes (weight_planes.h), and
// are widened as they are read.
//
// Written for correctness first: every kernel follows the cpu-ref operation it replaces, and
// the gates compare the whole forward pass with cpu-ref on a GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "model/weights.h"

namespace kipp::cuda {

struct DeviceWeight {
  const uint8_t* data = nullptr;     // the values plane
  const uint16_t* scales = nullptr;  // the scales plane: fp16 (q8_0) or fp16 pairs (affine4)
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

// Rows `ids` of a BF16 or Q8_0 table, widened to FP32.
void embed_rows(const DeviceWeight& table, const int32_t* ids, uint32_t rows, uint32_t width, float* out,
                cudaStream_t s);
// out[r] = x[rows[r]].
void gather_rows(const float* x, const int32_t* rows, uint32_t count, uint32_t width, float* out, cudaStream_t s);
// What a product p = W x does with its rows: replace y with them, add them to y (the residual
// connections), or, for gate and up rows interleaved in W (gate f in row 2f, up f in row 2f + 1),
// write y[f] = silu(p[2f]) * p[2f + 1] (SwiGLU; y is half as wide as p).
enum class Write { replace, add, swiglu };
// y[r] = W x[r] (as `write` says) for every row r of x, each output element an FP32 sum over the
// columns: warps streaming 16-byte weight loads for small batches, the tensor cores (3xTF32,
// FP32-accurate) for large ones.
void matmul(const DeviceWeight& w, const float* x, uint32_t rows, float* y, Write write, cudaStream_t s);
// y = W RMSNorm(x) with `norm_weight`: the per-row product normalizes as it reads (no launch and
// no pass over x of its own); larger batches normalize into `x_norm` first (it may be x).
void normed_matmul(const DeviceWeight& w, const float* x, const float* norm_weight, float eps, float* x_norm,
                   uint32_t rows, float* y, Write write, cudaStream_t s);

// The rows of the fused Q/K/V product: q_heads query heads, then kv_heads key heads, then
// kv_heads value heads, each head_dim values, `stride` floats from one row to the next.
struct QkvRows {
  float* base;
  uint32_t stride;
  uint32_t q_heads, kv_heads, head_dim;
};

// Per Q and K head of every row: RMSNorm with its weight (head_dim values), then NeoX RoPE at the
// row's position (pairs i and i + head_dim / 2), as cpu-ref's rms_norm_heads, rope_cos_sin and rotate_heads; then
// each row's K and V heads are stored as BF16 at its position. One launch for all three.
void prepare_heads(const QkvRows& qkv, uint32_t rows, const float* q_weight, const float* k_weight, float eps,
                   float theta, const PagedKv& kv, cudaStream_t s);

// Scratch for attention split over the context: room for attention_scratch_floats(...) floats.
size_t attention_scratch_floats(uint32_t q_heads, uint32_t head_dim);
// Causal attention of each row's query heads over positions 0..its own, online softmax; GQA.
// Batches of under 32 rows (decode) split each row's context over several warps (flash-decoding),
// whose partial results are then merged; `scratch` holds them.
void attend(const QkvRows& qkv, uint32_t rows, const PagedKv& kv, float* scratch, float* out, cudaStream_t s);

}  // namespace kipp::cuda
