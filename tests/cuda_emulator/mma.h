// The tensor-core (WMMA) API the CUDA backend uses, for the CPU emulator (see cuda_runtime.h):
// TF32 fragments of 16x16x8. A fragment's layout across lanes is unspecified in CUDA; here lane
// l holds elements l, l + 32, ... of the tile in row-major order, which element-wise code cannot
// tell apart. mma_sync is one warp-wide operation: the product is formed once all 32 lanes have
// arrived, from TF32 inputs (the low 13 bits of each FP32 input ignored, as the hardware does),
// accumulated in FP32.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda_runtime.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K>
struct TileShape;
template <int M, int N, int K>
struct TileShape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct TileShape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct TileShape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = TileShape<Use, M, N, K>::rows, cols = TileShape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols / 32;
  float x[num_elements];
  // Element j of this lane (blocks are one-dimensional): (row, column) of the tile.
  static int row_of(int j) { return (int(threadIdx.x % 32) + 32 * j) / cols; }
  static int col_of(int j) { return (int(threadIdx.x % 32) + 32 * j) % cols; }
};

inline float __float_to_tf32(float value) {  // round to nearest, ties away from zero
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

namespace detail {
inline float tf32_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= 0xffffe000u;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const float* p, unsigned ldm) {
  constexpr bool column_major = std::is_same_v<Layout, col_major>;
  for (int j = 0; j < f.num_elements; ++j) {
    const int r = f.row_of(j), c = f.col_of(j);
    f.x[j] = column_major ? p[size_t(c) * ldm + r] : p[size_t(r) * ldm + c];
  }
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
  for (int j = 0; j < f.num_elements; ++j) {
    const int r = f.row_of(j), c = f.col_of(j);
    (layout == mem_col_major ? p[size_t(c) * ldm + r] : p[size_t(r) * ldm + c]) = f.x[j];
  }
}

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, float value) {
  for (float& v : f.x) v = value;
}

template <int M, int N, int K, class LayoutA, class LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, precision::tf32, LayoutA>& a,
              const fragment<matrix_b, M, N, K, precision::tf32, LayoutB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  using A = fragment<matrix_a, M, N, K, precision::tf32, LayoutA>;
  using B = fragment<matrix_b, M, N, K, precision::tf32, LayoutB>;
  using C = fragment<accumulator, M, N, K, float>;
  struct Operands {
    C* d;
    const A* a;
    const B* b;
    const C* c;
  } mine{&d, &a, &b, &c};
  kipp_emu::warp_collective(
      [](void* const* lanes) {
        float a_tile[M][K], b_tile[K][N], c_tile[M][N];
        for (int lane = 0; lane < 32; ++lane) {
          const auto* o = static_cast<const Operands*>(lanes[lane]);
          for (int j = 0; j < A::num_elements; ++j) {
            const int e = lane + 32 * j;
            a_tile[e / K][e % K] = detail::tf32_bits(o->a->x[j]);
          }
          for (int j = 0; j < B::num_elements; ++j) {
            const int e = lane + 32 * j;
            b_tile[e / N][e % N] = detail::tf32_bits(o->b->x[j]);
          }
          for (int j = 0; j < C::num_elements; ++j) {
            const int e = lane + 32 * j;
            c_tile[e / N][e % N] = o->c->x[j];
          }
        }
        for (int lane = 0; lane < 32; ++lane) {
          const auto* o = static_cast<const Operands*>(lanes[lane]);
          for (int j = 0; j < C::num_elements; ++j) {
            const int e = lane + 32 * j, r = e / N, col = e % N;
            float sum = c_tile[r][col];
            for (int k = 0; k < K; ++k) sum += a_tile[r][k] * b_tile[k][col];
            o->d->x[j] = sum;
          }
        }
      },
      &mine);
}

}  // namespace nvcuda::wmma
