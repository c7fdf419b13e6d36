// The portable kernel set: 4-float vectors, 2 x 4 register tiles (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS portable
#define KIPP_KERNEL_NAME "portable"
#define KIPP_LANES 4
#define KIPP_TILE_ROWS 2
#define KIPP_TILE_TOKENS 4
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& portable_kernels() { return portable::kernels(); }
}  // namespace kipp::cpu
