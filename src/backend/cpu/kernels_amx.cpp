// The amx kernel set: the avx512 set (16-float vectors, its packing and every vector kernel),
// whose products of int16 activations with Q8_0 and Q4_1 weights run in Intel's tile registers
// (AMX-TILE, AMX-INT8) for every full tile of 16 tokens (flags in src/CMakeLists.txt). Not the
// BF16 pair products: on the AMX Xeon we measured, vdpbf16ps issues at a quarter of the FMA rate
// (KERNELS.md), so widening BF16 weights stays faster.
#define KIPP_KERNEL_NS amx
#define KIPP_KERNEL_NAME "amx"
#define KIPP_LANES 16
#define KIPP_TILE_ROWS 2
#define KIPP_TILE_TOKENS 6
#define KIPP_TILE_PANELS 2
#define KIPP_PANEL_TOKENS 8
#define KIPP_AMX 1
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& amx_kernels() { return amx::kernels(); }
}  // namespace kipp::cpu
