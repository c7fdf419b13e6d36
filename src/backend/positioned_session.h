// What every backend's session keeps the same way: its capacity, its length, whether it
// addresses the shared pool, and the rules of reset, truncate and adopt_prefix. A backend's
// session adds only where its KV store lives (host memory, device memory).
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "registry/registry.h"

namespace kipp {

class PositionedSession : public BackendSession {
 public:
  PositionedSession(uint32_t capacity, bool pooled, std::shared_ptr<const int> model_token)
      : capacity_(capacity), pooled_(pooled), model_token_(std::move(model_token)) {}

  uint32_t capacity() const override { return capacity_; }
  uint32_t length() const override { return length_; }
  void reset() override { length_ = 0; }
  Status truncate(uint32_t length) override;
  Status adopt_prefix(uint32_t length) override;
  bool pooled() const override { return pooled_; }
  // After an eval: the positions the session now holds.
  void set_length(uint32_t length) { length_ = length; }

 private:
  uint32_t capacity_;
  bool pooled_;
  uint32_t length_ = 0;
  std::shared_ptr<const int> model_token_;  // counted by the model's live_sessions()
};

// A session capacity must be 1..the checkpoint's context.
Status check_session_capacity(const Checkpoint& checkpoint, uint32_t capacity);
// The checks every backend's copy_pool_rows makes: both blocks in the pool, distinct, 1..32 rows.
Status check_pool_copy(uint32_t pool_blocks, uint32_t from, uint32_t to, uint32_t rows);

}  // namespace kipp
