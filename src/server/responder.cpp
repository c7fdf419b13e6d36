#include "server/responder.h"

namespace kipp::server {

Responder::Responder(const ApiRequest& request, std::shared_ptr<HttpExchange> exchange)
    : stream_(request.stream), exchange_(std::move(exchange)) {
  const auto listed = [](const auto& items, const auto& describe) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + describe(item);
    return out;
  };
  if (request.structured && !request.structured->unenforced.empty())
    headers_.push_back({"x-kipp-unenforced", listed(request.structured->unenforced, [](const grammar::Unenforced& u) {
                          return u.keyword + " at " + (u.pointer.empty() ? "/" : u.pointer);
                        })});
  if (!request.ignored_fields.empty())
    headers_.push_back(
        {"x-kipp-ignored-fields", listed(request.ignored_fields, [](const std::string& f) { return f; })});
}

void Responder::start() {
  std::lock_guard lock(mutex_);
  if (!stream_) return;
  exchange_->start_stream(200, "text/event-stream", headers_);
  started_ = true;
  for (std::string& event : pending_) exchange_->write(std::move(event));
  pending_.clear();
  if (ended_) exchange_->finish();
}

void Responder::update(const ChoiceUpdate& update) {
  std::lock_guard lock(mutex_);
  on_update(update);
}

void Responder::done(const RequestReport& report) {
  std::lock_guard lock(mutex_);
  if (report.cancelled && !report.error) {  // the client is gone, or the server stops: nobody to answer
    if (stream_) end_stream();
    return;
  }
  on_done(report);
}

void Responder::send(std::string event) {
  if (started_) exchange_->write(std::move(event));
  else pending_.push_back(std::move(event));
}

void Responder::end_stream() {
  if (started_) exchange_->finish();
  else ended_ = true;
}

}  // namespace kipp::server
