#include "backend/positioned_session.h"

#include <algorithm>

namespace kipp {

Status PositionedSession::truncate(uint32_t length) {
  if (length > length_) return fail("truncate to ", length, " positions: the session holds only ", length_);
  length_ = length;
  return {};
}

Status PositionedSession::adopt_prefix(uint32_t length) {
  if (!pooled_) return fail("adopt_prefix: only a pooled session can adopt shared blocks");
  if (length_ != 0) return fail("adopt_prefix: the session already holds ", length_, " positions");
  if (length > capacity_) return fail("adopt_prefix: ", length, " positions exceed the capacity of ", capacity_);
  length_ = length;
  return {};
}

Status check_pool_copy(uint32_t pool_blocks, uint32_t from, uint32_t to, uint32_t rows) {
  if (from >= pool_blocks || to >= pool_blocks)
    return fail("copy_pool_rows: block ", std::max(from, to), " is outside the pool of ", pool_blocks);
  if (from == to) return fail("copy_pool_rows: block ", from, " onto itself");
  if (rows == 0 || rows > kKvBlockTokens) return fail("copy_pool_rows: ", rows, " rows is outside 1..", kKvBlockTokens);
  return {};
}

Status check_session_capacity(const Checkpoint& checkpoint, uint32_t capacity) {
  if (capacity == 0 || capacity > checkpoint.context)
    return fail("session capacity ", capacity, " is outside 1..", checkpoint.context, " for ", checkpoint.id);
  return {};
}

}  // namespace kipp
