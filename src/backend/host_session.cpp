#include "backend/host_session.h"

#include <new>

namespace kipp {
namespace {

Result<std::shared_ptr<KvStore>> allocate_store(const Checkpoint& checkpoint, uint32_t blocks) {
  try {
    return std::make_shared<KvStore>(checkpoint.layers, checkpoint.kv_width(), blocks);
  } catch (const std::bad_alloc&) {
    return fail("cannot allocate a KV store of ", blocks, " blocks (",
                uint64_t(blocks) * kKvBlockTokens * checkpoint.kv_bytes_per_token() >> 20, " MiB)");
  }
}

}  // namespace

Status HostSession::adopt_prefix(uint32_t length) {
  if (!pooled_) return fail("adopt_prefix: only a pooled session can adopt shared blocks");
  if (length_ != 0) return fail("adopt_prefix: the session already holds ", length_, " positions");
  if (length % kKvBlockTokens != 0) return fail("adopt_prefix: ", length, " positions is not a whole number of blocks");
  if (length > capacity_) return fail("adopt_prefix: ", length, " positions exceed the capacity of ", capacity_);
  length_ = length;
  return {};
}

Status HostSessions::check_capacity(uint32_t capacity) const {
  if (capacity == 0 || capacity > checkpoint_.context)
    return fail("session capacity ", capacity, " is outside 1..", checkpoint_.context, " for ", checkpoint_.id);
  return {};
}

Result<std::unique_ptr<BackendSession>> HostSessions::create(uint32_t capacity) {
  KIPP_TRY(check_capacity(capacity));
  KIPP_ASSIGN(std::shared_ptr<KvStore> store, allocate_store(checkpoint_, kv_blocks_for(capacity)));
  return std::unique_ptr<BackendSession>(new HostSession(std::move(store), capacity, false, token_));
}

Status HostSessions::create_pool(uint32_t blocks) {
  if (pool_) return fail("the model already has a KV pool of ", pool_->blocks(), " blocks");
  if (blocks == 0) return fail("a KV pool needs at least one block");
  KIPP_ASSIGN(pool_, allocate_store(checkpoint_, blocks));
  return {};
}

Result<std::unique_ptr<BackendSession>> HostSessions::create_pooled(uint32_t capacity) {
  if (!pool_) return fail("create_kv_pool first: the model has no shared KV pool");
  KIPP_TRY(check_capacity(capacity));
  return std::unique_ptr<BackendSession>(new HostSession(pool_, capacity, true, token_));
}

}  // namespace kipp
