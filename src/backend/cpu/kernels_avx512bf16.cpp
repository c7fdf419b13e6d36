// The avx512bf16 kernel set: the avx512 set, whose products with BF16 weights take the
// activations rounded to BF16 in AVX512-BF16 pair products (vdpbf16ps, two products per FP32
// lane), the weights packed by column pairs (flags in src/CMakeLists.txt).
#define KIPP_KERNEL_NS avx512bf16
#define KIPP_KERNEL_NAME "avx512bf16"
#define KIPP_LANES 16
#define KIPP_TILE_ROWS 2
#define KIPP_TILE_TOKENS 6
#define KIPP_TILE_PANELS 2
#define KIPP_PANEL_TOKENS 8
#define KIPP_BF16_DOT 1
#include "backend/cpu/kernels_impl.h"

namespace kipp::cpu {
const Kernels& avx512bf16_kernels() { return avx512bf16::kernels(); }
}  // namespace kipp::cpu
