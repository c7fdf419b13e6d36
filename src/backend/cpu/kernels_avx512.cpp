// The avx512 kernel set: 16-float vectors (with VNNI); 2 row vectors x 6 tokens over Q8_0/Q4_1, 2 panels x 8 tokens over FP32/BF16
// (BF16 panels by column pairs)
// (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS avx512
#define KIPP_KERNEL_NAME "avx512"
#define KIPP_LANES 16
#define KIPP_TILE_ROWS 2
#define KIPP_TILE_TOKENS 6
#define KIPP_TILE_PANELS 2
#define KIPP_PANEL_TOKENS 8
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& avx512_kernels() { return avx512::kernels(); }
}  // namespace kipp::cpu
