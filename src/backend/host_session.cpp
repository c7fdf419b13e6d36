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

Result<std::unique_ptr<BackendSession>> HostSessions::create(uint32_t capacity) {
  KIPP_TRY(check_session_capacity(checkpoint_, capacity));
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
  KIPP_TRY(check_session_capacity(checkpoint_, capacity));
  return std::unique_ptr<BackendSession>(new HostSession(pool_, capacity, true, token_));
}

}  // namespace kipp
