#include "server/hidden_row_batch.h"

namespace kipp::server {

std::shared_ptr<HiddenRowBatch> HiddenRowBatch::create(Scheduler& scheduler, std::vector<std::vector<uint32_t>> prompts,
                                                       Finish finish, std::shared_ptr<void> keep) {
  return std::shared_ptr<HiddenRowBatch>(
      new HiddenRowBatch(scheduler, std::move(prompts), std::move(finish), std::move(keep)));
}

HiddenRowBatch::HiddenRowBatch(Scheduler& scheduler, std::vector<std::vector<uint32_t>> prompts, Finish finish,
                               std::shared_ptr<void> keep)
    : scheduler_(scheduler),
      prompts_(std::move(prompts)),
      finish_(std::move(finish)),
      keep_(std::move(keep)),
      rows_(prompts_.size()),
      remaining_(prompts_.size()) {}

std::optional<ApiError> HiddenRowBatch::start() {
  std::lock_guard lock(mutex_);
  std::optional<ApiError> refused = fill_window();
  if (refused) {
    cancelled_ = true;  // what was taken ends unanswered: the refusal answers
    for (const auto& ticket : tickets_) ticket->cancel();
  }
  return refused;
}

void HiddenRowBatch::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  for (const auto& ticket : tickets_) ticket->cancel();
}

std::optional<ApiError> HiddenRowBatch::fill_window() {
  while (next_ < prompts_.size() && in_flight_ < kHiddenRowWindow) {
    const size_t index = next_;
    CompletionRequest request;
    request.prompt = prompts_[index];
    request.max_tokens = 0;
    request.hidden_row = true;
    request.on_done = [self = shared_from_this(), index](const RequestReport& report) { self->done(index, report); };
    Submission submission = scheduler_.submit(std::move(request));
    if (submission.verdict == Verdict::too_large)
      return ApiError{400, submission.reason, "input", "invalid_request_error", "context_length_exceeded"};
    if (submission.verdict == Verdict::queue_full) {
      if (in_flight_ == 0) return ApiError{503, submission.reason, "", "server_error", "overloaded"};
      break;  // the next one goes in when one of these is done
    }
    tickets_.push_back(submission.ticket);
    ++next_;
    ++in_flight_;
  }
  return std::nullopt;
}

// On the scheduler thread, which must not block: the next prompt goes in, and the last one done
// answers.
void HiddenRowBatch::done(size_t index, const RequestReport& report) {
  std::optional<Outcome> outcome;
  {
    std::lock_guard lock(mutex_);
    if (cancelled_) return;
    if (report.error && !error_) error_ = ApiError{500, report.error->message, "", "server_error"};
    if (report.cancelled && !error_) error_ = ApiError{503, "the server is stopping", "", "server_error"};
    rows_[index] = report.hidden;
    --in_flight_;
    if (!error_) error_ = fill_window();
    if (error_) {
      cancelled_ = true;
      for (const auto& ticket : tickets_) ticket->cancel();
      outcome = Outcome{{}, 0, error_};
    } else if (--remaining_ == 0) {
      outcome = Outcome{std::move(rows_), 0, std::nullopt};
      for (const auto& prompt : prompts_) outcome->prompt_tokens += uint32_t(prompt.size());
    }
  }
  if (outcome) {
    finish_(std::move(*outcome));
    keep_.reset();
  }
}

}  // namespace kipp::server
