// Which kernel table runs, and what every set shares: the FP16 table block scales are read from
// and the int16 activations quantized products read. These are plain code, the same whatever set
// runs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "quant/float_formats.h"

namespace kipp::cpu {

const Kernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return avx512_kernels();
    case Isa::avx2: return avx2_kernels();
    case Isa::portable: break;
  }
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

void quantize_activation(const float* x, uint32_t n, int16_t* out, float* scale) {
  float largest = 0.0f;
  bool finite = true;
  for (uint32_t i = 0; i < n; ++i) {
    largest = std::max(largest, std::fabs(x[i]));
    finite = finite && std::isfinite(x[i]);
  }
  if (largest == 0.0f || !finite) {
    // Zeros stay zeros; a non-finite activation makes every product NaN, as it would in FP32.
    *scale = finite ? 0.0f : std::nanf("");
    for (uint32_t i = 0; i < n; ++i) out[i] = 0;
    return;
  }
  const float inverse = 32767.0f / largest;
  for (uint32_t i = 0; i < n; ++i) out[i] = int16_t(std::lrint(x[i] * inverse));
  *scale = largest / 32767.0f;
}

}  // namespace kipp::cpu
