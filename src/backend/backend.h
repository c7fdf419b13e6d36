// The backend contract: what every backend (cpu-ref now; cpu and cuda later) implements. A backend
// owns its prepared weights, scratch and KV storage; callers see sessions and evaluation items,
// never device memory. Evaluation is synchronous.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "model/model_file.h"
#include "util/error.h"

namespace kipp {

// KV positions per block of the paged cache.
inline constexpr uint32_t kKvBlockTokens = 32;

class BackendSession {
 public:
  virtual ~BackendSession() = default;
  virtual uint32_t capacity() const = 0;  // positions the session can hold
  virtual uint32_t length() const = 0;    // positions in its KV cache
  virtual void reset() = 0;               // length 0; capacity kept
  virtual Status truncate(uint32_t length) = 0;  // keep the first `length` positions
};

struct EvalItem {
  BackendSession* session = nullptr;
  std::span<const uint32_t> tokens;  // appended at start_position
  uint32_t start_position = 0;       // must equal the session's length
  uint32_t logit_rows = 1;           // logits for the last logit_rows tokens of this item
  float* logits = nullptr;           // logit_rows x vocab FP32, row-major
};

class BackendModel {
 public:
  virtual ~BackendModel() = default;
  virtual Result<std::unique_ptr<BackendSession>> create_session(uint32_t capacity) = 0;
  // Evaluates every item; an invalid item fails the call before any session changes.
  virtual Status eval(std::span<EvalItem> items) = 0;
};

// The readable scalar oracle: FP32 activations, sequential FP32 accumulation, BF16 KV.
Result<std::unique_ptr<BackendModel>> create_cpu_ref_backend(const ModelFile& model);

}  // namespace kipp
