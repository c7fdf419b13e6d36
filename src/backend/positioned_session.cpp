#include "backend/positioned_session.h"

namespace kipp {

Status PositionedSession::truncate(uint32_t length) {
  if (length > length_) return fail("truncate to ", length, " positions: the session holds only ", length_);
  length_ = length;
  return {};
}

Status PositionedSession::adopt_prefix(uint32_t length) {
  if (!pooled_) return fail("adopt_prefix: only a pooled session can adopt shared blocks");
  if (length_ != 0) return fail("adopt_prefix: the session already holds ", length_, " positions");
  if (length % kKvBlockTokens != 0) return fail("adopt_prefix: ", length, " positions is not a whole number of blocks");
  if (length > capacity_) return fail("adopt_prefix: ", length, " positions exceed the capacity of ", capacity_);
  length_ = length;
  return {};
}

Status check_session_capacity(const Checkpoint& checkpoint, uint32_t capacity) {
  if (capacity == 0 || capacity > checkpoint.context)
    return fail("session capacity ", capacity, " is outside 1..", checkpoint.context, " for ", checkpoint.id);
  return {};
}

}  // namespace kipp
