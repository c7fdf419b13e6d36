#include "model/residency.h"

#include <cstdio>

#include "gguf/gguf_format.h"

namespace kipp {
namespace {

std::string gigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", double(bytes) / 1e9);
  return text;
}

}  // namespace

uint64_t artifact_tensor_bytes(const Checkpoint& checkpoint, QuantScheme scheme, HeadScheme head) {
  uint64_t bytes = 0;
  for (const ExpectedTensor& tensor : expected_tensors(checkpoint)) {
    const auto type = gguf::tensor_type_info(uint32_t(expected_tensor_type(tensor, scheme, head)));
    bytes += tensor.elements() / type->block_elements * type->block_bytes;
  }
  return bytes;
}

std::string residency_warning(const Checkpoint& c, QuantScheme scheme, uint64_t weight_bytes, uint64_t available) {
  if (weight_bytes <= available) return {};
  std::string fits;
  for (QuantScheme other : {QuantScheme::bf16, QuantScheme::q8_0, QuantScheme::affine4_gs32}) {
    const uint64_t bytes = artifact_tensor_bytes(c, other, HeadScheme::bf16);
    if (other == scheme || bytes > available) continue;
    fits += (fits.empty() ? "" : ", ") + std::string(quant_scheme_name(other)) + " (" + gigabytes(bytes) + ")";
  }
  return std::string(c.id) + " in " + std::string(quant_scheme_name(scheme)) + " holds " + gigabytes(weight_bytes) +
         " of weights and " + gigabytes(available) +
         " of memory is available: they cannot stay resident, so every token reads them from disk again; " +
         (fits.empty() ? "no scheme of this checkpoint fits" : "what fits: " + fits);
}

}  // namespace kipp
