// The avx2 kernel set: 8-float vectors; 2 row vectors x 3 tokens over Q8_0/Q4_1, 1 panel x 6 tokens over FP32/BF16
// (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS avx2
#define KIPP_KERNEL_NAME "avx2"
#define KIPP_LANES 8
#define KIPP_TILE_ROWS 2
#define KIPP_TILE_TOKENS 3
#define KIPP_TILE_PANELS 1
#define KIPP_PANEL_TOKENS 6
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& avx2_kernels() { return avx2::kernels(); }
}  // namespace kipp::cpu
