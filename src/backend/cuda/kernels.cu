#include "backend/cuda/kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "backend/cuda/launch.cuh"

namespace kipp::cuda {
namespace {

constexpr uint32_t kWarp = 32;
constexpr uint32_t kMatmulTokens = 8;  // batch rows a warp carries per pass over a weight row (warp_sum_8)
constexpr uint32_t kWarpsPerBlock = 8;
constexpr uint32_t kHeadValuesPerLane = 4;  // head_dim 128 over 32 lanes
// Small products split each weight row over up to 8 warps until a launch has this many blocks (about
// 8 per multiprocessor of an H100 or H200), so that enough loads are in flight to use the HBM.
// (The tiny test checkpoints' attention output and down projections get 2 to 8: the split is tested.)
constexpr uint32_t kProductBlocks = 1024;
// A batch of fewer than kTensorRows rows (decode) splits each row's context into kDecodeSplits
// pieces of whole KV blocks, a warp each; larger batches keep one warp per row and head.
constexpr uint32_t kDecodeSplits = 32;
// The tensor-core product: batches of at least kTensorRows rows, in tiles of 64 rows x 64
// features, 32 columns (one quantization block) staged at a time, by 4 warps.
constexpr uint32_t kTensorRows = 32;
constexpr uint32_t kTile = 64;
constexpr uint32_t kTileDepth = 32;
constexpr uint32_t kTileStride = kTileDepth + 4;  // keeps the fragment loads off one bank
constexpr uint32_t kTileWarps = 4;

namespace wmma = nvcuda::wmma;

__device__ float bf16_value(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }

__device__ float fp16_value(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }

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

// Columns of a weight row that one 16-byte load of its values plane holds.
__host__ __device__ constexpr uint32_t load_columns(WeightFormat format) {
  return format == WeightFormat::f32 ? 4 : format == WeightFormat::bf16 ? 8 : format == WeightFormat::q8_0 ? 16 : 32;
}

// Load `chunk` of weight row `row` (columns chunk * C .. chunk * C + C - 1), widened to FP32, from
// the planes of weight_planes.h.
template <WeightFormat F>
__device__ void load_weights(const DeviceWeight& w, uint32_t row, uint32_t chunk, float (&out)[load_columns(F)]) {
  const uint64_t index = uint64_t(row) * (w.cols / load_columns(F)) + chunk;
  const uint4 bits = load_vector<uint4>(w.data + index * 16);
  const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
  if constexpr (F == WeightFormat::f32) {
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) out[i] = __uint_as_float(words[i]);
  } else if constexpr (F == WeightFormat::bf16) {
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
      out[2 * i] = __uint_as_float(words[i] << 16);
      out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    }
  } else if constexpr (F == WeightFormat::q8_0) {
    const float scale = fp16_value(w.scales[index / 2]);  // two loads per 32-weight block
#pragma unroll
    for (uint32_t j = 0; j < 16; ++j) out[j] = scale * float(int8_t(uint8_t(words[j / 4] >> (8 * (j % 4)))));
  } else {
    const float scale = fp16_value(w.scales[2 * index]), minimum = fp16_value(w.scales[2 * index + 1]);
#pragma unroll
    for (uint32_t j = 0; j < 16; ++j) {
      const uint32_t byte = words[j / 4] >> (8 * (j % 4)) & 0xff;
      out[j] = scale * float(byte & 15) + minimum;
      out[j + 16] = scale * float(byte >> 4) + minimum;
    }
  }
}

// Write::replace or Write::add.
__device__ void write_output(float* y, uint64_t index, float value, Write write) {
  y[index] = write == Write::add ? y[index] + value : value;
}

__device__ float silu_times(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }

// A BF16 table, or a Q8_0 one (a tied head stored as Q8_0): value = the block's scale x int8.
__global__ void embed_kernel(DeviceWeight table, const int32_t* ids, uint32_t rows, uint32_t width, float* out) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= uint64_t(rows) * width) return;
  const uint32_t r = uint32_t(i / width), c = uint32_t(i % width);
  const uint64_t at = uint64_t(ids[r]) * width + c;
  out[i] = table.format == WeightFormat::q8_0 ? fp16_value(table.scales[at / 32]) * float(int8_t(table.data[at]))
                                              : bf16_value(reinterpret_cast<const uint16_t*>(table.data)[at]);
}

__global__ void gather_kernel(const float* x, const int32_t* rows, uint32_t count, uint32_t width, float* out) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= uint64_t(count) * width) return;
  out[i] = x[uint64_t(rows[i / width]) * width + i % width];
}

// 1 / rms of a row of `width` values whose squares sum to `squares`.
__device__ float rms_scale(float squares, uint32_t width, float eps) {
  return 1.0f / sqrtf(squares / float(width) + eps);
}

// One block of kWarpsPerBlock warps per row; out may be x.
__global__ void rms_norm_kernel(const float* x, const float* weight, uint32_t width, float eps, float* out) {
  __shared__ float partial[kWarpsPerBlock];
  const float* row = x + uint64_t(blockIdx.x) * width;
  float sum = 0.0f;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x) sum += row[i] * row[i];
  sum = warp_sum(sum);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = sum;
  __syncthreads();
  float total = 0.0f;
  for (uint32_t w = 0; w < blockDim.x / kWarp; ++w) total += partial[w];
  const float scale = rms_scale(total, width, eps);
  float* out_row = out + uint64_t(blockIdx.x) * width;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x) out_row[i] = row[i] * scale * weight[i];
}

// `parts` warps per output feature (1, 2, 4 or 8) and kMatmulTokens batch rows per block row: each
// warp streams its share of the weight row in 16-byte loads, each lane widening one load at a
// time and multiplying it into one sum per batch row. The warp reduces its sums; with several
// parts, the feature's first warp adds the parts' totals in order (deterministic, no atomics).
// For SwiGLU a block holds whole gate/up pairs (parts <= 4), and the gate's first warp writes.
// kNormed: the product is of RMSNorm(x) with `norm_weight`. x is multiplied by the norm's weight
// as it is read, the sum of its squares gathered from the same loads (and reduced like the sums),
// and each total scaled by 1/rms at the end: no normalized copy of x and no extra pass over it.
template <WeightFormat F, bool kNormed>
__global__ void matvec_kernel(DeviceWeight w, const float* x, const float* norm_weight, float eps, uint32_t rows,
                              uint32_t parts, float* y, Write write) {
  constexpr uint32_t kColumns = load_columns(F);
  __shared__ float part_sums[kWarpsPerBlock][kMatmulTokens];
  __shared__ float part_squares[kWarpsPerBlock][kMatmulTokens];
  const uint32_t slot = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const uint32_t feature = blockIdx.x * (kWarpsPerBlock / parts) + slot / parts, part = slot % parts;
  const bool active = feature < w.rows;  // the same for the whole warp; every warp reaches the barrier below
  const uint32_t first = blockIdx.y * kMatmulTokens;
  const uint32_t count = min(kMatmulTokens, rows - first);
  float sums[kMatmulTokens] = {}, squares[kMatmulTokens] = {};
  const uint32_t chunks = active ? w.cols / kColumns : 0;
#pragma unroll 2
  for (uint32_t chunk = part * kWarp + lane; chunk < chunks; chunk += parts * kWarp) {
    float weights[kColumns];
    load_weights<F>(w, feature, chunk, weights);
#pragma unroll
    for (uint32_t t = 0; t < kMatmulTokens; ++t) {
      if (t >= count) break;
      const float* column = x + uint64_t(first + t) * w.cols + chunk * kColumns;
      float sum = sums[t];
#pragma unroll
      for (uint32_t i = 0; i < kColumns / 4; ++i) {
        float4 v = load_vector<float4>(column + 4 * i);
        if constexpr (kNormed) {
          const float4 g = load_vector<float4>(norm_weight + chunk * kColumns + 4 * i);
          squares[t] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
          v = {v.x * g.x, v.y * g.y, v.z * g.z, v.w * g.w};
        }
        sum += weights[4 * i] * v.x + weights[4 * i + 1] * v.y + weights[4 * i + 2] * v.z + weights[4 * i + 3] * v.w;
      }
      sums[t] = sum;
    }
  }
  // Which batch row's totals this lane holds after the reduction (kMatmulTokens: none).
  float total, square = 0.0f;
  uint32_t t = kMatmulTokens;
  if (count == 1) {  // decode: one row (count is the same for the whole block)
    total = warp_sum(sums[0]);
    if constexpr (kNormed) square = warp_sum(squares[0]);
    if (lane == 0) t = 0;
  } else {
    total = warp_sum_8(sums, lane);
    if constexpr (kNormed) square = warp_sum_8(squares, lane);
    if ((lane & 3) == 0) t = (lane >> 4 & 1) * 4 + (lane >> 3 & 1) * 2 + (lane >> 2 & 1);
  }
  const auto normalized = [&](float sum, float squares_sum) {
    return kNormed ? sum * rms_scale(squares_sum, w.cols, eps) : sum;
  };
  if (parts == 1 && write != Write::swiglu) {
    if (active && t < count) write_output(y, uint64_t(first + t) * w.rows + feature, normalized(total, square), write);
    return;
  }
  if (t < kMatmulTokens) {
    part_sums[slot][t] = total;
    part_squares[slot][t] = square;
  }
  __syncthreads();
  if (part != 0 || !active || t >= count) return;
  // The value of the feature whose parts start at `from`: their totals added in order.
  const auto feature_value = [&](uint32_t from) {
    float sum = part_sums[from][t], squares_sum = part_squares[from][t];
    for (uint32_t p = 1; p < parts; ++p) {
      sum += part_sums[from + p][t];
      squares_sum += part_squares[from + p][t];
    }
    return normalized(sum, squares_sum);
  };
  if (write != Write::swiglu) {
    write_output(y, uint64_t(first + t) * w.rows + feature, feature_value(slot), write);
  } else if (feature % 2 == 0) {  // up, the next feature, sits `parts` warps later in this block
    y[uint64_t(first + t) * (w.rows / 2) + feature / 2] = silu_times(feature_value(slot), feature_value(slot + parts));
  }
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
// 64 features: each pass stages 32 columns of both (weights widened to FP32, both read in 16-byte
// loads) in shared memory, and warp w owns rows 16w..16w+15, four 16x16 accumulators across the
// features.
template <WeightFormat F>
__global__ void matmul_tensor_kernel(DeviceWeight w, const float* x, uint32_t rows, float* y, Write write) {
  constexpr uint32_t kColumns = load_columns(F), kLoadsPerRow = kTileDepth / kColumns;
  alignas(32) __shared__ float x_tile[kTile * kTileStride];
  alignas(32) __shared__ float w_tile[kTile * kTileStride];
  alignas(32) __shared__ float out_tile[kTileWarps * 16 * 16];  // one accumulator per warp at a time
  const uint32_t warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const uint32_t first_row = blockIdx.y * kTile, first_feature = blockIdx.x * kTile;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[kTile / 16];
  for (auto& f : acc) wmma::fill_fragment(f, 0.0f);
  const uint32_t blocks = w.cols / kTileDepth;
  for (uint32_t block = 0; block < blocks; ++block) {
    for (uint32_t i = threadIdx.x; i < kTile * kTileDepth / 4; i += blockDim.x) {
      const uint32_t r = i / (kTileDepth / 4), c = i % (kTileDepth / 4) * 4, row = first_row + r;
      const float4 v = row < rows ? load_vector<float4>(x + uint64_t(row) * w.cols + block * kTileDepth + c)
                                  : float4{0.0f, 0.0f, 0.0f, 0.0f};
      float* to = x_tile + r * kTileStride + c;
      to[0] = v.x, to[1] = v.y, to[2] = v.z, to[3] = v.w;
    }
    for (uint32_t i = threadIdx.x; i < kTile * kLoadsPerRow; i += blockDim.x) {
      const uint32_t r = i / kLoadsPerRow, piece = i % kLoadsPerRow, feature = first_feature + r;
      float weights[kColumns] = {};
      if (feature < w.rows) load_weights<F>(w, feature, block * kLoadsPerRow + piece, weights);
#pragma unroll
      for (uint32_t j = 0; j < kColumns; ++j) w_tile[r * kTileStride + piece * kColumns + j] = weights[j];
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
    if (write != Write::swiglu) {
      for (uint32_t i = lane; i < 16 * 16; i += kWarp) {
        const uint32_t row = first_row + warp * 16 + i / 16, feature = first_feature + n * 16 + i % 16;
        if (row < rows && feature < w.rows) write_output(y, uint64_t(row) * w.rows + feature, out[i], write);
      }
    } else {  // columns 2j and 2j + 1 of the accumulator are one feature's gate and up
      for (uint32_t i = lane; i < 16 * 8; i += kWarp) {
        const uint32_t row = first_row + warp * 16 + i / 8, pair = (first_feature + n * 16) / 2 + i % 8;
        const float* gate_up = out + i / 8 * 16 + i % 8 * 2;
        if (row < rows && 2 * pair < w.rows)
          y[uint64_t(row) * (w.rows / 2) + pair] = silu_times(gate_up[0], gate_up[1]);
      }
    }
    __syncwarp();
  }
}

__device__ uint64_t kv_offset(const PagedKv& kv, const KvStoreView& store, int32_t block, uint32_t slot) {
  return ((uint64_t(kv.layer) * store.blocks + uint32_t(block)) * 32 + slot) * (kv.kv_heads * kv.head_dim);
}

// One warp per head of a row's fused Q/K/V product. A Q or K head is normalized (RMSNorm with its
// weight) and rotated (NeoX RoPE at the row's position: pairs i and i + head_dim / 2); a K or V
// head is then stored as BF16 in the row's KV block.
__global__ void prepare_heads_kernel(QkvRows qkv, uint32_t rows, const float* q_weight, const float* k_weight,
                                     float eps, float theta, PagedKv kv) {
  const uint32_t heads_per_row = qkv.q_heads + 2 * qkv.kv_heads;
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const uint32_t lane = threadIdx.x % kWarp;
  if (warp >= rows * heads_per_row) return;
  const uint32_t row = warp / heads_per_row, index = warp % heads_per_row;  // Q heads, then K, then V
  const uint32_t head_dim = qkv.head_dim;
  float* head = qkv.base + uint64_t(row) * qkv.stride + index * head_dim;
  const int32_t position = kv.positions[row];
  if (index < qkv.q_heads + qkv.kv_heads) {
    const float* weight = index < qkv.q_heads ? q_weight : k_weight;
    float sum = 0.0f;
    for (uint32_t i = lane; i < head_dim; i += kWarp) sum += head[i] * head[i];
    const float scale = rms_scale(warp_sum(sum), head_dim, eps);
    for (uint32_t i = lane; i < head_dim; i += kWarp) head[i] = head[i] * scale * weight[i];
    __syncwarp();
    const uint32_t half = head_dim / 2;
    for (uint32_t i = lane; i < half; i += kWarp) {
      const double angle = double(position) * pow(double(theta), -2.0 * double(i) / double(head_dim));
      const float cos_a = float(cos(angle)), sin_a = float(sin(angle));
      const float a = head[i], b = head[i + half];
      head[i] = a * cos_a - b * sin_a;
      head[i + half] = b * cos_a + a * sin_a;
    }
    __syncwarp();
  }
  if (index < qkv.q_heads) return;
  const bool is_key = index < qkv.q_heads + qkv.kv_heads;
  const uint32_t kv_head = index - qkv.q_heads - (is_key ? 0 : qkv.kv_heads);
  const int32_t item = kv.row_item[row];
  const KvStoreView store = kv.stores[item];
  const int32_t block = kv.tables[kv.table_offset[item] + position / 32];
  uint16_t* target =
      (is_key ? store.k : store.v) + kv_offset(kv, store, block, uint32_t(position % 32)) + kv_head * head_dim;
  for (uint32_t i = lane; i < head_dim; i += kWarp) target[i] = __bfloat16_as_ushort(__float2bfloat16_rn(head[i]));
}

// Online softmax over some positions: the running maximum score, the normalizer (sum of
// exp(score - max)) and this lane's share of the exp-weighted sum of V.
struct SoftmaxState {
  float max = -INFINITY;
  float normalizer = 0.0f;
  float acc[kHeadValuesPerLane] = {};
};

// How many pieces attention splits each (row, head)'s context into. The same for every batch of
// the per-row products' sizes, so that a row's logits there do not depend on the rest of its batch
// (the products' per-row sums do not either), and fixed per batch shape, so that a captured graph
// serves every step of that shape as the context grows.
uint32_t attention_splits(uint32_t rows) { return rows < kTensorRows ? kDecodeSplits : 1; }

__device__ float warp_max(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// One warp per (row, query head, piece of the context): online softmax over the piece's positions,
// 32 at a time (one KV block, since pieces start on block boundaries). Each lane scores one
// position (its key read in 16-byte loads against the query in shared memory), the warp rescales
// by the new maximum once per block, then each lane adds the block's weighted values for its 4
// of the head's 128 dimensions. With one piece the warp writes the head's output; otherwise its
// SoftmaxState goes to `partials` for merge_kernel.
__global__ void attend_kernel(QkvRows qkv, uint32_t rows, PagedKv kv, uint32_t splits, float* partials, float* out) {
  constexpr uint32_t kHeadDim = kWarp * kHeadValuesPerLane;
  __shared__ float queries[kWarpsPerBlock][kHeadDim];
  __shared__ float weights[kWarpsPerBlock][kWarp];
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const uint32_t lane = threadIdx.x % kWarp, slot = threadIdx.x / kWarp;
  if (warp >= rows * qkv.q_heads * splits) return;
  const uint32_t pair = warp / splits, split = warp % splits;
  const uint32_t row = pair / qkv.q_heads, head = pair % qkv.q_heads;
  const uint32_t kv_head = head / (qkv.q_heads / kv.kv_heads);
  const int32_t item = kv.row_item[row];
  const uint32_t length = uint32_t(kv.positions[row]) + 1;
  const uint32_t piece = ((length + splits - 1) / splits + kWarp - 1) / kWarp * kWarp;  // whole blocks
  const uint32_t begin = split * piece, end = min(length, begin + piece);
  const KvStoreView store = kv.stores[item];
  const int32_t* table = kv.tables + kv.table_offset[item];
  const uint32_t slot_stride = kv.kv_heads * kHeadDim;  // from one position's heads to the next's
  float* query = queries[slot];
  const float* query_from = qkv.base + uint64_t(row) * qkv.stride + head * kHeadDim;  // Q heads come first
  for (uint32_t i = lane; i < kHeadDim; i += kWarp) query[i] = query_from[i];
  __syncwarp();
  const float scale = rsqrtf(float(kHeadDim));
  SoftmaxState state;
  for (uint32_t first = begin; first < end; first += kWarp) {
    const uint64_t block_base = kv_offset(kv, store, table[first / kWarp], 0) + kv_head * kHeadDim;
    const uint32_t count = min(kWarp, end - first);
    float score = -INFINITY;
    if (lane < count) {
      const uint16_t* key = store.k + block_base + uint64_t(lane) * slot_stride;
      float dot = 0.0f;
#pragma unroll
      for (uint32_t c = 0; c < kHeadDim / 8; ++c) {
        const uint4 bits = load_vector<uint4>(key + c * 8);
        const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
        for (uint32_t i = 0; i < 4; ++i)
          dot += query[c * 8 + 2 * i] * __uint_as_float(words[i] << 16) +
                 query[c * 8 + 2 * i + 1] * __uint_as_float(words[i] & 0xffff0000u);
      }
      score = dot * scale;
    }
    const float new_max = fmaxf(state.max, warp_max(score));
    const float correction = expf(state.max - new_max);  // 0 before the first block
    const float weight = expf(score - new_max);          // 0 past the piece's end
    state.normalizer = state.normalizer * correction + warp_sum(weight);
    state.max = new_max;
    weights[slot][lane] = weight;
    __syncwarp();
#pragma unroll
    for (uint32_t i = 0; i < kHeadValuesPerLane; ++i) state.acc[i] *= correction;
    for (uint32_t j = 0; j < count; ++j) {
      const uint2 bits =
          load_vector<uint2>(store.v + block_base + uint64_t(j) * slot_stride + lane * kHeadValuesPerLane);
      const float w = weights[slot][j];
      state.acc[0] += w * __uint_as_float(bits.x << 16);
      state.acc[1] += w * __uint_as_float(bits.x & 0xffff0000u);
      state.acc[2] += w * __uint_as_float(bits.y << 16);
      state.acc[3] += w * __uint_as_float(bits.y & 0xffff0000u);
    }
    __syncwarp();  // every lane has read the weights before the next block's overwrite them
  }
  if (splits == 1) {
    float* target = out + uint64_t(pair) * kHeadDim + lane * kHeadValuesPerLane;
#pragma unroll
    for (uint32_t i = 0; i < kHeadValuesPerLane; ++i) target[i] = state.acc[i] / state.normalizer;
    return;
  }
  // A piece past the row's length stays empty: maximum -inf, normalizer 0.
  float* partial = partials + uint64_t(warp) * (kHeadDim + 2);
  if (lane == 0) {
    partial[0] = state.max;
    partial[1] = state.normalizer;
  }
#pragma unroll
  for (uint32_t i = 0; i < kHeadValuesPerLane; ++i) partial[2 + lane * kHeadValuesPerLane + i] = state.acc[i];
}

// One warp per (row, query head): merges the pieces' states, each rescaled to the overall maximum.
__global__ void merge_kernel(uint32_t pairs, uint32_t head_dim, uint32_t splits, const float* partials, float* out) {
  const uint32_t pair = (blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  const uint32_t lane = threadIdx.x % kWarp;
  if (pair >= pairs) return;
  const float* first = partials + uint64_t(pair) * splits * (head_dim + 2);
  float overall = -INFINITY;
  for (uint32_t s = 0; s < splits; ++s) overall = fmaxf(overall, first[s * (head_dim + 2)]);
  float normalizer = 0.0f, acc[kHeadValuesPerLane] = {};
  for (uint32_t s = 0; s < splits; ++s) {
    const float* partial = first + s * (head_dim + 2);
    const float factor = expf(partial[0] - overall);  // 0 for an empty piece
    normalizer += partial[1] * factor;
#pragma unroll
    for (uint32_t i = 0; i < kHeadValuesPerLane; ++i) acc[i] += partial[2 + lane * kHeadValuesPerLane + i] * factor;
  }
  float* target = out + uint64_t(pair) * head_dim + lane * kHeadValuesPerLane;
#pragma unroll
  for (uint32_t i = 0; i < kHeadValuesPerLane; ++i) target[i] = acc[i] / normalizer;
}

// Calls launch_as(std::integral_constant<WeightFormat, format>) to pick a kernel made for `format`.
template <class Launch>
void for_format(WeightFormat format, Launch&& launch_as) {
  switch (format) {
    case WeightFormat::f32: return launch_as(std::integral_constant<WeightFormat, WeightFormat::f32>{});
    case WeightFormat::bf16: return launch_as(std::integral_constant<WeightFormat, WeightFormat::bf16>{});
    case WeightFormat::q8_0: return launch_as(std::integral_constant<WeightFormat, WeightFormat::q8_0>{});
    case WeightFormat::affine4: return launch_as(std::integral_constant<WeightFormat, WeightFormat::affine4>{});
  }
}

unsigned blocks_for(uint64_t threads, unsigned per_block) { return unsigned((threads + per_block - 1) / per_block); }

// Enough blocks of kWarpsPerBlock warps for `warps` warps.
unsigned blocks_of_warps(uint64_t warps) { return blocks_for(warps * kWarp, kWarpsPerBlock * kWarp); }

// out = RMSNorm(x) with `weight`, row by row; out may be x.
void rms_norm(const float* x, const float* weight, uint32_t rows, uint32_t width, float eps, float* out,
              cudaStream_t s) {
  launch(rms_norm_kernel, rows, kWarpsPerBlock * kWarp, s, x, weight, width, eps, out);
}

// The per-row product of x, or of RMSNorm(x) where norm_weight is set.
void launch_matvec(const DeviceWeight& w, const float* x, const float* norm_weight, float eps, uint32_t rows, float* y,
                   Write write, cudaStream_t s) {
  // More warps per feature while the launch is short of blocks, every lane keeps at least one load,
  // and (SwiGLU) a block still holds whole gate/up pairs.
  const uint32_t most = write == Write::swiglu ? kWarpsPerBlock / 2 : kWarpsPerBlock;
  const uint32_t loads = w.cols / load_columns(w.format);
  uint32_t parts = 1;
  while (parts < most && 2 * parts * kWarp <= loads && blocks_of_warps(uint64_t(w.rows) * parts) < kProductBlocks)
    parts *= 2;
  const dim3 grid(blocks_of_warps(uint64_t(w.rows) * parts), blocks_for(rows, kMatmulTokens));
  const unsigned threads = kWarpsPerBlock * kWarp;
  for_format(w.format, [&](auto format) {
    constexpr WeightFormat F = decltype(format)::value;
    if (norm_weight) launch(matvec_kernel<F, true>, grid, threads, s, w, x, norm_weight, eps, rows, parts, y, write);
    else launch(matvec_kernel<F, false>, grid, threads, s, w, x, norm_weight, eps, rows, parts, y, write);
  });
}

}  // namespace

void embed_rows(const DeviceWeight& table, const int32_t* ids, uint32_t rows, uint32_t width, float* out,
                cudaStream_t s) {
  launch(embed_kernel, blocks_for(uint64_t(rows) * width, 256), 256, s, table, ids, rows, width, out);
}

void gather_rows(const float* x, const int32_t* rows, uint32_t count, uint32_t width, float* out, cudaStream_t s) {
  launch(gather_kernel, blocks_for(uint64_t(count) * width, 256), 256, s, x, rows, count, width, out);
}

void matmul(const DeviceWeight& w, const float* x, uint32_t rows, float* y, Write write, cudaStream_t s) {
  if (rows < kTensorRows) return launch_matvec(w, x, nullptr, 0.0f, rows, y, write, s);
  for_format(w.format, [&](auto format) {
    const dim3 grid(blocks_for(w.rows, kTile), blocks_for(rows, kTile));
    launch(matmul_tensor_kernel<decltype(format)::value>, grid, kTileWarps * kWarp, s, w, x, rows, y, write);
  });
}

void normed_matmul(const DeviceWeight& w, const float* x, const float* norm_weight, float eps, float* x_norm,
                   uint32_t rows, float* y, Write write, cudaStream_t s) {
  if (rows < kTensorRows) return launch_matvec(w, x, norm_weight, eps, rows, y, write, s);
  rms_norm(x, norm_weight, rows, w.cols, eps, x_norm, s);
  matmul(w, x_norm, rows, y, write, s);
}

void prepare_heads(const QkvRows& qkv, uint32_t rows, const float* q_weight, const float* k_weight, float eps,
                   float theta, const PagedKv& kv, cudaStream_t s) {
  launch(prepare_heads_kernel, blocks_of_warps(uint64_t(rows) * (qkv.q_heads + 2 * qkv.kv_heads)),
         kWarpsPerBlock * kWarp, s, qkv, rows, q_weight, k_weight, eps, theta, kv);
}

size_t attention_scratch_floats(uint32_t q_heads, uint32_t head_dim) {
  return size_t(kTensorRows - 1) * q_heads * kDecodeSplits * (head_dim + 2);
}

void attend(const QkvRows& qkv, uint32_t rows, const PagedKv& kv, float* scratch, float* out, cudaStream_t s) {
  const uint32_t splits = attention_splits(rows);
  const uint64_t pairs = uint64_t(rows) * qkv.q_heads;
  launch(attend_kernel, blocks_of_warps(pairs * splits), kWarpsPerBlock * kWarp, s, qkv, rows, kv, splits, scratch,
         out);
  if (splits > 1)
    launch(merge_kernel, blocks_of_warps(pairs), kWarpsPerBlock * kWarp, s, uint32_t(pairs), kv.head_dim, splits,
           static_cast<const float*>(scratch), out);
}

}  // namespace kipp::cuda
