// The avx2 kernel set: 8-float vectors, 4 x 3 register tiles (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS avx2
#define KIPP_KERNEL_NAME "avx2"
#define KIPP_LANES 8
#define KIPP_TILE_ROWS 4
#define KIPP_TILE_TOKENS 3
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& avx2_kernels() { return avx2::kernels(); }
}  // namespace kipp::cpu
