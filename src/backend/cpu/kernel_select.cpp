// Which kernel table runs, and what every set shares: the FP16 table block scales are read from.
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "quant/float_formats.h"

namespace kipp::cpu {

// Only x86-64 builds the x86 sets (src/CMakeLists.txt); elsewhere detected_isa() is portable.
const Kernels& kernels_for(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Isa::amx: return amx_kernels();
    case Isa::avx512bf16: return avx512bf16_kernels();
    case Isa::avx512: return avx512_kernels();
    case Isa::avx2: return avx2_kernels();
    case Isa::portable: break;
  }
#else
  (void)isa;
#endif
  return portable_kernels();
}

const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> values(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits) values[bits] = fp16_to_f32(uint16_t(bits));
    return values;
  }();
  return table.data();
}

}  // namespace kipp::cpu
