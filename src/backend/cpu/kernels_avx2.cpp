// The avx2 kernel set: 8-float vectors, 3 x 4 register tiles (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS avx2
#define KIPP_KERNEL_NAME "avx2"
#define KIPP_LANES 8
#define KIPP_TILE_ROWS 3
#define KIPP_TILE_TOKENS 4
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& avx2_kernels() { return avx2::kernels(); }
}  // namespace kipp::cpu
