// The portable kernel set: 4-float vectors; 2 row vectors x 4 tokens over Q8_0/Q4_1, 1 panel x 2 tokens over FP32/BF16
// (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS portable
#define KIPP_KERNEL_NAME "portable"
#define KIPP_LANES 4
#define KIPP_TILE_ROWS 2
#define KIPP_TILE_TOKENS 4
#define KIPP_TILE_PANELS 1
#define KIPP_PANEL_TOKENS 2
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& portable_kernels() { return portable::kernels(); }
}  // namespace kipp::cpu
