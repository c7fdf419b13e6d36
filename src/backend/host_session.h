// A session whose KV lives in host memory (the CPU backends): either a private KvStore sized to
// its capacity, or the model's shared pool. It holds its store and its model's session counter by
// shared ownership, so it stays safe to use even if the model is destroyed first.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/kv_store.h"

namespace kipp {

class HostSession final : public BackendSession {
 public:
  HostSession(std::shared_ptr<KvStore> store, uint32_t capacity, bool pooled, std::shared_ptr<const int> model_token)
      : store_(std::move(store)), capacity_(capacity), pooled_(pooled), model_token_(std::move(model_token)) {}

  uint32_t capacity() const override { return capacity_; }
  uint32_t length() const override { return length_; }
  void reset() override { length_ = 0; }
  Status truncate(uint32_t length) override {
    if (length > length_) return fail("truncate to ", length, " positions: the session holds only ", length_);
    length_ = length;
    return {};
  }
  Status adopt_prefix(uint32_t length) override;
  bool pooled() const override { return pooled_; }
  uint32_t store_blocks() const override { return store_->blocks(); }
  const void* store_id() const override { return store_.get(); }

  KvStore& store() { return *store_; }
  void set_length(uint32_t length) { length_ = length; }

 private:
  std::shared_ptr<KvStore> store_;
  uint32_t capacity_;
  bool pooled_;
  uint32_t length_ = 0;
  std::shared_ptr<const int> model_token_;  // counted by the model's live_sessions()
};

// The session bookkeeping both CPU backends share: private and pooled creation, the one shared
// pool, and the live-session count.
class HostSessions {
 public:
  explicit HostSessions(const Checkpoint& checkpoint) : checkpoint_(checkpoint) {}

  Result<std::unique_ptr<BackendSession>> create(uint32_t capacity);
  Status create_pool(uint32_t blocks);
  Result<std::unique_ptr<BackendSession>> create_pooled(uint32_t capacity);
  uint32_t live() const { return uint32_t(token_.use_count() - 1); }

 private:
  Status check_capacity(uint32_t capacity) const;

  const Checkpoint& checkpoint_;
  std::shared_ptr<KvStore> pool_;
  std::shared_ptr<const int> token_ = std::make_shared<const int>(0);
};

// The part of a CPU backend model that is only session bookkeeping.
class HostBackendModel : public BackendModel {
 public:
  explicit HostBackendModel(const Checkpoint& checkpoint) : sessions_(checkpoint) {}
  Result<std::unique_ptr<BackendSession>> create_session(uint32_t capacity) override {
    return sessions_.create(capacity);
  }
  Status create_kv_pool(uint32_t blocks) override { return sessions_.create_pool(blocks); }
  Result<std::unique_ptr<BackendSession>> create_pooled_session(uint32_t capacity) override {
    return sessions_.create_pooled(capacity);
  }
  uint32_t live_sessions() const override { return sessions_.live(); }

 private:
  HostSessions sessions_;
};

}  // namespace kipp
