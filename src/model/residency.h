// Whether a model's weights can stay in memory, said before they are read: a file larger than
// the memory available is read from disk again on every token (slower than the processor by
// orders of magnitude), which would otherwise look like a hang (../shared/REVIEW-QWEN3-MOE.md,
// point 7; 235B-A22B on a 24 GB machine).
#pragma once

#include <cstdint>
#include <string>

#include "model/artifact_layout.h"

namespace kipp {

// Bytes of tensor data in an artifact of `checkpoint` under a scheme and head.
uint64_t artifact_tensor_bytes(const Checkpoint& checkpoint, QuantScheme scheme, HeadScheme head);

// One line when `weight_bytes` of `checkpoint` (stored as `scheme`) exceed `available` bytes of
// memory: the figures, and which of the checkpoint's schemes would fit; empty when they fit.
std::string residency_warning(const Checkpoint& checkpoint, QuantScheme scheme, uint64_t weight_bytes,
                              uint64_t available);

}  // namespace kipp
