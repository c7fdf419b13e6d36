#include "backend/cuda/kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "backend/cuda/launch.cuh"

namespace kipp::cuda {
namespace {

constexpr uint32_t kWarp = 32;
constexpr uint32_t kBlockValues = 32;    // weights per quantization block
constexpr uint32_t kMatmulTokens = 8;    // batch rows a warp carries per pass over a weight row (warp_sum_8)
constexpr uint32_t kWarpsPerBlock = 8;
// The tensor-core product: batches of at least kTensorRows rows, in tiles of 64 rows x 64
// features, 32 columns (one quantization block) staged at a time, by 4 warps.
constexpr uint32_t kTensorRows = 32;
constexpr uint32_t kTile = 64;
constexpr uint32_t kTileDepth = 32;
constexpr uint32_t kTileStride = kTileDepth + 4;  // keeps the fragment loads off one bank
constexpr uint32_t kTileWarps = 4;

namespace wmma = nvcuda::wmma;

__device__ float bf16_value(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }

__device__ float fp16_value(const uint8_t* p) {
  const uint16_t bits = uint16_t(p[0]) | uint16_t(p[1]) << 8;
  return __half2float(__ushort_as_half(bits));
}

__device__ float warp_sum(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Sums each of the 8 values every lane holds over the warp in 9 shuffles rather than 8 x 5: at
// each halving step a lane keeps half of its values and hands its partner the other half. Lane l
// ends with the total of value (l >> 4 & 1) * 4 + (l >> 3 & 1) * 2 + (l >> 2 & 1).
__device__ float warp_sum_8(float (&v)[8], uint32_t lane) {
#pragma unroll
  for (uint32_t kept = 4, offset = 16; kept >= 1; kept /= 2, offset /= 2) {
    const bool upper = lane & offset;
#pragma unroll
    for (uint32_t i = 0; i < kept; ++i) {
      const float send = upper ? v[i] : v[i + kept];
      const float keep = upper ? v[i + kept] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, offset);
    }
  }
  float total = v[0];
  for (int offset = 2; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
  return total;
}

// Weight (row, column = block * 32 + lane), widened to FP32.
__device__ float weight_at(const DeviceWeight& w, uint32_t row, uint32_t block, uint32_t lane) {
  const uint64_t column = uint64_t(block) * kBlockValues + lane;
  switch (w.format) {
    case WeightFormat::f32:
      return reinterpret_cast<const float*>(w.data)[uint64_t(row) * w.cols + column];
    case WeightFormat::bf16:
      return bf16_value(reinterpret_cast<const uint16_t*>(w.data)[uint64_t(row) * w.cols + column]);
    case WeightFormat::q8_0: {
      const uint8_t* b = w.data + (uint64_t(row) * (w.cols / kBlockValues) + block) * 34;
      return fp16_value(b) * float(int8_t(b[2 + lane]));
    }
    case WeightFormat::affine4: {
      const uint8_t* b = w.data + (uint64_t(row) * (w.cols / kBlockValues) + block) * 20;
      const uint8_t byte = b[4 + (lane & 15)];
      const uint32_t q = lane < 16 ? byte & 15 : byte >> 4;
      return fp16_value(b) * float(q) + fp16_value(b + 2);
    }
  }
  return 0.0f;
}

__global__ void embed_kernel(const uint16_t* table, const int32_t* ids, uint32_t rows, uint32_t width, float* out) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= uint64_t(rows) * width) return;
  const uint32_t r = uint32_t(i / width), c = uint32_t(i % width);
  out[i] = bf16_value(table[uint64_t(ids[r]) * width + c]);
}

__global__ void gather_kernel(const float* x, const int32_t* rows, uint32_t count, uint32_t width, float* out) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= uint64_t(count) * width) return;
  out[i] = x[uint64_t(rows[i / width]) * width + i % width];
}

// One block of 256 threads per row.
__global__ void rms_norm_kernel(const float* x, const float* weight, uint32_t width, float eps, float* out) {
  __shared__ float partial[kWarpsPerBlock * 4];
  const float* row = x + uint64_t(blockIdx.x) * width;
  float sum = 0.0f;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x) sum += row[i] * row[i];
  sum = warp_sum(sum);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = sum;
  __syncthreads();
  float total = 0.0f;
  for (uint32_t w = 0; w < blockDim.x / kWarp; ++w) total += partial[w];
  const float scale = 1.0f / sqrtf(total / float(width) + eps);
  float* out_row = out + uint64_t(blockIdx.x) * width;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x) out_row[i] = row[i] * scale * weight[i];
}

// One warp per output feature and group of kMatmulTokens batch rows: the warp walks the weight
// row once, each lane taking one weight of every 32-weight block, and keeps one sum per row.
__global__ void matmul_kernel(DeviceWeight w, const float* x, uint32_t rows, float* y) {
  const uint32_t feature = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const uint32_t lane = threadIdx.x % kWarp;
  if (feature >= w.rows) return;
  const uint32_t first = blockIdx.y * kMatmulTokens;
  const uint32_t count = min(kMatmulTokens, rows - first);
  float sums[kMatmulTokens] = {};
  const uint32_t blocks = w.cols / kBlockValues;
  for (uint32_t block = 0; block < blocks; ++block) {
    const float weight = weight_at(w, feature, block, lane);
    const float* column = x + uint64_t(first) * w.cols + uint64_t(block) * kBlockValues + lane;
#pragma unroll
    for (uint32_t t = 0; t < kMatmulTokens; ++t)
      if (t < count) sums[t] += weight * column[uint64_t(t) * w.cols];
  }
  if (count == 1) {  // decode: one row (count is the same for the whole warp)
    const float total = warp_sum(sums[0]);
    if (lane == 0) y[uint64_t(first) * w.rows + feature] = total;
    return;
  }
  const float total = warp_sum_8(sums, lane);
  const uint32_t t = (lane >> 4 & 1) * 4 + (lane >> 3 & 1) * 2 + (lane >> 2 & 1);
  if ((lane & 3) == 0 && t < count) y[uint64_t(first + t) * w.rows + feature] = total;
}

// Splits each element of `big` into a TF32 value (kept in `big`) and the TF32 rounding of what
// that leaves (in `small`): big + small carries about 21 of FP32's 24 mantissa bits.
template <class Fragment>
__device__ void split_tf32(Fragment& big, Fragment& small) {
#pragma unroll
  for (int i = 0; i < big.num_elements; ++i) {
    const float value = big.x[i];
    big.x[i] = wmma::__float_to_tf32(value);
    small.x[i] = wmma::__float_to_tf32(value - big.x[i]);
  }
}

// y[r] = W x[r] on the tensor cores (sm_80 and later), for batches of many rows. 3xTF32 keeps FP32
// accuracy: with x = xb + xs and w = wb + ws split as above, the sum of xs·wb, xb·ws and xb·wb
// (xs·ws is below FP32's rounding) is accumulated in FP32. A block of 4 warps computes 64 rows x
// 64 features: each pass stages 32 columns of both (weights widened to FP32) in shared memory,
// and warp w owns rows 16w..16w+15, four 16x16 accumulators across the features.
__global__ void matmul_tensor_kernel(DeviceWeight w, const float* x, uint32_t rows, float* y) {
  alignas(32) __shared__ float x_tile[kTile * kTileStride];
  alignas(32) __shared__ float w_tile[kTile * kTileStride];
  alignas(32) __shared__ float out_tile[kTileWarps * 16 * 16];  // one accumulator per warp at a time
  const uint32_t warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const uint32_t first_row = blockIdx.y * kTile, first_feature = blockIdx.x * kTile;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[kTile / 16];
  for (auto& f : acc) wmma::fill_fragment(f, 0.0f);
  const uint32_t blocks = w.cols / kTileDepth;
  for (uint32_t block = 0; block < blocks; ++block) {
    for (uint32_t i = threadIdx.x; i < kTile * kTileDepth; i += blockDim.x) {
      const uint32_t r = i / kTileDepth, c = i % kTileDepth;
      const uint32_t row = first_row + r, feature = first_feature + r;
      x_tile[r * kTileStride + c] = row < rows ? x[uint64_t(row) * w.cols + block * kTileDepth + c] : 0.0f;
      w_tile[r * kTileStride + c] = feature < w.rows ? weight_at(w, feature, block, c) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (uint32_t k = 0; k < kTileDepth; k += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> x_big, x_small;
      wmma::load_matrix_sync(x_big, x_tile + warp * 16 * kTileStride + k, kTileStride);
      split_tf32(x_big, x_small);
#pragma unroll
      for (uint32_t n = 0; n < kTile / 16; ++n) {
        // Column-major 8x16: element (k, n) is feature n's weight k, as w_tile holds them.
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> w_big, w_small;
        wmma::load_matrix_sync(w_big, w_tile + n * 16 * kTileStride + k, kTileStride);
        split_tf32(w_big, w_small);
        wmma::mma_sync(acc[n], x_small, w_big, acc[n]);
        wmma::mma_sync(acc[n], x_big, w_small, acc[n]);
        wmma::mma_sync(acc[n], x_big, w_big, acc[n]);
      }
    }
    __syncthreads();
  }
  float* out = out_tile + warp * 16 * 16;
  for (uint32_t n = 0; n < kTile / 16; ++n) {
    wmma::store_matrix_sync(out, acc[n], 16, wmma::mem_row_major);
    __syncwarp();
    for (uint32_t i = lane; i < 16 * 16; i += kWarp) {
      const uint32_t row = first_row + warp * 16 + i / 16, feature = first_feature + n * 16 + i % 16;
      if (row < rows && feature < w.rows) y[uint64_t(row) * w.rows + feature] = out[i];
    }
    __syncwarp();
  }
}

// One warp per head of a row; head_dim is 128 (4 values per lane).
__global__ void norm_rope_kernel(float* heads, uint32_t rows, uint32_t heads_per_row, uint32_t head_dim,
                                 const float* weight, float eps, const int32_t* positions, float theta) {
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const uint32_t lane = threadIdx.x % kWarp;
  if (warp >= rows * heads_per_row) return;
  const uint32_t row = warp / heads_per_row;
  float* head = heads + uint64_t(warp) * head_dim;
  float sum = 0.0f;
  for (uint32_t i = lane; i < head_dim; i += kWarp) sum += head[i] * head[i];
  const float scale = 1.0f / sqrtf(warp_sum(sum) / float(head_dim) + eps);
  for (uint32_t i = lane; i < head_dim; i += kWarp) head[i] = head[i] * scale * weight[i];
  __syncwarp();
  const uint32_t half = head_dim / 2;
  const double position = double(positions[row]);
  for (uint32_t i = lane; i < half; i += kWarp) {
    const double angle = position * pow(double(theta), -2.0 * double(i) / double(head_dim));
    const float cos_a = float(cos(angle)), sin_a = float(sin(angle));
    const float a = head[i], b = head[i + half];
    head[i] = a * cos_a - b * sin_a;
    head[i + half] = b * cos_a + a * sin_a;
  }
}

__device__ uint64_t kv_offset(const PagedKv& kv, const KvStoreView& store, int32_t block, uint32_t slot) {
  return ((uint64_t(kv.layer) * store.blocks + uint32_t(block)) * 32 + slot) * (kv.kv_heads * kv.head_dim);
}

__global__ void write_kv_kernel(const float* k, const float* v, uint32_t rows, PagedKv kv) {
  const uint32_t width = kv.kv_heads * kv.head_dim;
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= uint64_t(rows) * width) return;
  const uint32_t row = uint32_t(i / width), c = uint32_t(i % width);
  const int32_t item = kv.row_item[row];
  const int32_t position = kv.positions[row];
  const KvStoreView store = kv.stores[item];
  const int32_t block = kv.tables[kv.table_offset[item] + position / 32];
  const uint64_t at = kv_offset(kv, store, block, uint32_t(position % 32)) + c;
  store.k[at] = __bfloat16_as_ushort(__float2bfloat16_rn(k[i]));
  store.v[at] = __bfloat16_as_ushort(__float2bfloat16_rn(v[i]));
}

// One warp per (row, query head): a running maximum, normalizer and weighted sum of V over the
// positions 0..row's position (online softmax), each score the dot product times 1/sqrt(dim).
__global__ void attend_kernel(const float* q, uint32_t rows, uint32_t q_heads, PagedKv kv, float* out) {
  constexpr uint32_t kPerLane = 4;  // head_dim 128 / 32 lanes
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const uint32_t lane = threadIdx.x % kWarp;
  if (warp >= rows * q_heads) return;
  const uint32_t row = warp / q_heads, head = warp % q_heads;
  const uint32_t kv_head = head / (q_heads / kv.kv_heads);
  const int32_t item = kv.row_item[row];
  const int32_t last = kv.positions[row];
  const KvStoreView store = kv.stores[item];
  const int32_t* table = kv.tables + kv.table_offset[item];
  const float* query = q + uint64_t(warp) * kv.head_dim + lane * kPerLane;
  const float scale = rsqrtf(float(kv.head_dim));
  float running_max = -INFINITY, normalizer = 0.0f, acc[kPerLane] = {};
  for (int32_t p = 0; p <= last; ++p) {
    const uint64_t base =
        kv_offset(kv, store, table[p / 32], uint32_t(p % 32)) + kv_head * kv.head_dim + lane * kPerLane;
    float dot = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < kPerLane; ++i) dot += query[i] * bf16_value(store.k[base + i]);
    const float score = warp_sum(dot) * scale;
    const float new_max = fmaxf(running_max, score);
    const float correction = expf(running_max - new_max);
    const float weight = expf(score - new_max);
    normalizer = normalizer * correction + weight;
#pragma unroll
    for (uint32_t i = 0; i < kPerLane; ++i) acc[i] = acc[i] * correction + weight * bf16_value(store.v[base + i]);
    running_max = new_max;
  }
  float* target = out + uint64_t(warp) * kv.head_dim + lane * kPerLane;
#pragma unroll
  for (uint32_t i = 0; i < kPerLane; ++i) target[i] = acc[i] / normalizer;
}

__global__ void silu_mul_kernel(const float* gate, const float* up, size_t n, float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

__global__ void add_kernel(float* x, const float* delta, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += delta[i];
}

unsigned blocks_for(uint64_t threads, unsigned per_block) { return unsigned((threads + per_block - 1) / per_block); }

}  // namespace

void embed_rows(const uint16_t* table, const int32_t* ids, uint32_t rows, uint32_t width, float* out, cudaStream_t s) {
  launch(embed_kernel, blocks_for(uint64_t(rows) * width, 256), 256, s, table, ids, rows, width, out);
}

void gather_rows(const float* x, const int32_t* rows, uint32_t count, uint32_t width, float* out, cudaStream_t s) {
  launch(gather_kernel, blocks_for(uint64_t(count) * width, 256), 256, s, x, rows, count, width, out);
}

void rms_norm(const float* x, const float* weight, uint32_t rows, uint32_t width, float eps, float* out,
              cudaStream_t s) {
  launch(rms_norm_kernel, rows, kWarpsPerBlock * kWarp, s, x, weight, width, eps, out);
}

void matmul(const DeviceWeight& w, const float* x, uint32_t rows, float* y, cudaStream_t s) {
  if (rows >= kTensorRows) {
    const dim3 grid(blocks_for(w.rows, kTile), blocks_for(rows, kTile));
    launch(matmul_tensor_kernel, grid, kTileWarps * kWarp, s, w, x, rows, y);
    return;
  }
  const dim3 grid(blocks_for(uint64_t(w.rows) * kWarp, kWarpsPerBlock * kWarp), blocks_for(rows, kMatmulTokens));
  launch(matmul_kernel, grid, kWarpsPerBlock * kWarp, s, w, x, rows, y);
}

void norm_rope_heads(float* heads, uint32_t rows, uint32_t heads_per_row, uint32_t head_dim, const float* weight,
                     float eps, const int32_t* positions, float theta, cudaStream_t s) {
  launch(norm_rope_kernel, blocks_for(uint64_t(rows) * heads_per_row * kWarp, kWarpsPerBlock * kWarp),
         kWarpsPerBlock * kWarp, s, heads, rows, heads_per_row, head_dim, weight, eps, positions, theta);
}

void write_kv(const float* k, const float* v, uint32_t rows, const PagedKv& kv, cudaStream_t s) {
  launch(write_kv_kernel, blocks_for(uint64_t(rows) * kv.kv_heads * kv.head_dim, 256), 256, s, k, v, rows, kv);
}

void attend(const float* q, uint32_t rows, uint32_t q_heads, const PagedKv& kv, float* out, cudaStream_t s) {
  launch(attend_kernel, blocks_for(uint64_t(rows) * q_heads * kWarp, kWarpsPerBlock * kWarp), kWarpsPerBlock * kWarp, s,
         q, rows, q_heads, kv, out);
}

void silu_mul(const float* gate, const float* up, size_t n, float* out, cudaStream_t s) {
  launch(silu_mul_kernel, blocks_for(n, 256), 256, s, gate, up, n, out);
}

void add_in_place(float* x, const float* delta, size_t n, cudaStream_t s) {
  launch(add_kernel, blocks_for(n, 256), 256, s, x, delta, n);
}

}  // namespace kipp::cuda
