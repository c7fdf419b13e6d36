// A session whose KV lives in host memory (the CPU backends): either a private KvStore sized to
// its capacity, or the model's shared pool. It holds its store and its model's session counter by
// shared ownership, so it stays safe to use even if the model is destroyed first.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/kv_store.h"
#include "backend/positioned_session.h"
#include "util/invariant.h"

namespace kipp {

class HostSession final : public PositionedSession {
 public:
  HostSession(std::shared_ptr<KvStore> store, uint32_t capacity, bool pooled, std::shared_ptr<const int> model_token)
      : PositionedSession(capacity, pooled, std::move(model_token)), store_(std::move(store)) {}

  uint32_t store_blocks() const override { return store_->blocks(); }
  const void* store_id() const override { return store_.get(); }
  KvStore& store() { return *store_; }

 private:
  std::shared_ptr<KvStore> store_;
};

// A session of an item given to a CPU backend's eval, which created it (the eval checks made sure
// it is this model's).
inline HostSession& host_session(BackendSession* session) {
  KIPP_INVARIANT(dynamic_cast<HostSession*>(session) != nullptr);
  return static_cast<HostSession&>(*session);
}

// The session bookkeeping both CPU backends share: private and pooled creation, the one shared
// pool, and the live-session count.
class HostSessions {
 public:
  HostSessions(const Checkpoint& checkpoint, KvFormat format) : checkpoint_(checkpoint), format_(format) {}

  Result<std::unique_ptr<BackendSession>> create(uint32_t capacity);
  Status create_pool(uint32_t blocks);
  Result<std::unique_ptr<BackendSession>> create_pooled(uint32_t capacity);
  Status copy_pool_rows(uint32_t from, uint32_t to, uint32_t rows);
  uint32_t live() const { return uint32_t(token_.use_count() - 1); }

 private:
  Result<std::shared_ptr<KvStore>> allocate_store(uint32_t blocks) const;

  const Checkpoint& checkpoint_;
  KvFormat format_;
  std::shared_ptr<KvStore> pool_;
  std::shared_ptr<const int> token_ = std::make_shared<const int>(0);
};

// The part of a CPU backend model that is only session bookkeeping.
class HostBackendModel : public BackendModel {
 public:
  HostBackendModel(const Checkpoint& checkpoint, KvFormat format) : sessions_(checkpoint, format) {}
  Result<std::unique_ptr<BackendSession>> create_session(uint32_t capacity) override {
    return sessions_.create(capacity);
  }
  Status create_kv_pool(uint32_t blocks) override { return sessions_.create_pool(blocks); }
  Result<std::unique_ptr<BackendSession>> create_pooled_session(uint32_t capacity) override {
    return sessions_.create_pooled(capacity);
  }
  Status copy_pool_rows(uint32_t from, uint32_t to, uint32_t rows) override {
    return sessions_.copy_pool_rows(from, to, rows);
  }
  uint32_t live_sessions() const override { return sessions_.live(); }

 private:
  HostSessions sessions_;
};

}  // namespace kipp
