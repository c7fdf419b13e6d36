// Many prompts, each a hidden-row request of the scheduler (an embedding's input, a rerank
// document's prompt), gathered into one answer. They are fed to the scheduler a window at a
// time, each one that finishes letting the next in, so that one request of 2,048 inputs neither
// overflows the queue others share (a full queue only slows it down) nor holds every sequence:
// it is batched, cached, counted and cancelled like any other work.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "scheduler/scheduler.h"
#include "server/api_error.h"

namespace kipp::server {

// Prompts a batch keeps in the scheduler at once.
inline constexpr size_t kHiddenRowWindow = 8;

class HiddenRowBatch : public std::enable_shared_from_this<HiddenRowBatch> {
 public:
  // What the batch ends with: every prompt's row (in order) and their reports summed, or the
  // refusal or failure that stopped it. Not called when it was cancelled.
  struct Outcome {
    std::vector<std::vector<float>> rows;
    uint32_t prompt_tokens = 0;
    std::optional<ApiError> error;
  };
  using Finish = std::function<void(Outcome)>;

  // `keep` is held until the batch ends (the server's count of requests in flight).
  static std::shared_ptr<HiddenRowBatch> create(Scheduler& scheduler, std::vector<std::vector<uint32_t>> prompts,
                                                Finish finish, std::shared_ptr<void> keep);
  // Submits the first window. An error when the scheduler took none of it (then `finish` is not
  // called): the refusal to answer with.
  std::optional<ApiError> start();
  // The client is gone: nothing more is submitted, what runs is cancelled, `finish` is not called.
  void cancel();

 private:
  HiddenRowBatch(Scheduler& scheduler, std::vector<std::vector<uint32_t>> prompts, Finish finish,
                 std::shared_ptr<void> keep);
  // Submits prompts from `next_` (under mutex_) until kHiddenRowWindow are in the scheduler, all
  // are, or its queue is full (the rest go in as these finish). An error when a prompt is refused
  // for its size, or when the queue is full and none of this batch's prompts is in it.
  std::optional<ApiError> fill_window();
  void done(size_t index, const RequestReport& report);

  Scheduler& scheduler_;
  const std::vector<std::vector<uint32_t>> prompts_;
  Finish finish_;
  std::shared_ptr<void> keep_;
  std::mutex mutex_;
  std::vector<std::vector<float>> rows_;
  std::vector<std::shared_ptr<RequestTicket>> tickets_;
  size_t next_ = 0;
  size_t in_flight_ = 0;
  size_t remaining_;
  std::optional<ApiError> error_;
  bool cancelled_ = false;
};

}  // namespace kipp::server
