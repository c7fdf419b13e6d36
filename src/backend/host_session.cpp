#include "backend/host_session.h"

#include <cstring>
#include <new>

namespace kipp {

Result<std::shared_ptr<KvStore>> HostSessions::allocate_store(uint32_t blocks) const {
  try {
    return std::make_shared<KvStore>(checkpoint_.layers, checkpoint_.kv_width(), blocks, format_);
  } catch (const std::bad_alloc&) {
    return fail("cannot allocate a ", kv_format_name(format_), " KV store of ", blocks, " blocks (",
                uint64_t(blocks) * kKvBlockTokens * kv_bytes_per_token(checkpoint_, format_) >> 20, " MiB)");
  }
}

Result<std::unique_ptr<BackendSession>> HostSessions::create(uint32_t capacity) {
  KIPP_TRY(check_session_capacity(checkpoint_, capacity));
  KIPP_ASSIGN(std::shared_ptr<KvStore> store, allocate_store(kv_blocks_for(capacity)));
  return std::unique_ptr<BackendSession>(new HostSession(std::move(store), capacity, false, token_));
}

Status HostSessions::create_pool(uint32_t blocks) {
  if (pool_) return fail("the model already has a KV pool of ", pool_->blocks(), " blocks");
  if (blocks == 0) return fail("a KV pool needs at least one block");
  KIPP_ASSIGN(pool_, allocate_store(blocks));
  return {};
}

Status HostSessions::copy_pool_rows(uint32_t from, uint32_t to, uint32_t rows) {
  if (!pool_) return fail("create_kv_pool first: the model has no shared KV pool");
  KIPP_TRY(check_pool_copy(pool_->blocks(), from, to, rows));
  const size_t bytes = size_t(rows) * pool_->row_bytes();
  for (uint32_t layer = 0; layer < checkpoint_.layers; ++layer) {
    std::memcpy(pool_->k_row(layer, to, 0), pool_->k_row(layer, from, 0), bytes);
    std::memcpy(pool_->v_row(layer, to, 0), pool_->v_row(layer, from, 0), bytes);
  }
  return {};
}

Result<std::unique_ptr<BackendSession>> HostSessions::create_pooled(uint32_t capacity) {
  if (!pool_) return fail("create_kv_pool first: the model has no shared KV pool");
  KIPP_TRY(check_session_capacity(checkpoint_, capacity));
  return std::unique_ptr<BackendSession>(new HostSession(pool_, capacity, true, token_));
}

}  // namespace kipp
