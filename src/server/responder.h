// What turns one request's scheduler updates into its HTTP answer: a whole response at the end,
// or server-sent events as the answer grows. This base holds what every API shares: the stream's
// start (events made before the headers went out wait for them), the x-kipp-* headers, and the
// lock that orders start(), on the worker that submitted the request, against the scheduler
// thread's updates. The API's own shapes live in OpenAiResponder and AnthropicResponder.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "scheduler/scheduler.h"
#include "server/api_request.h"
#include "server/http_exchange.h"

namespace kipp::server {

class Responder {
 public:
  Responder(const ApiRequest& request, std::shared_ptr<HttpExchange> exchange);
  virtual ~Responder() = default;

  // Sends the stream's headers and whatever was made before they went out (the request worker or
  // compile worker that submitted the request, docs/SERVER.md "Threads").
  void start();
  // Scheduler thread.
  void update(const ChoiceUpdate& update);
  void done(const RequestReport& report);

 protected:
  virtual void on_update(const ChoiceUpdate& update) = 0;
  virtual void on_done(const RequestReport& report) = 0;  // not for a cancelled request: done() ends those
  // Writes one event of the stream, or keeps it until start().
  void send(std::string event);
  // Ends the stream: at once when it has started, else in start() after the events kept for it (a
  // short answer can be done on the scheduler thread before its worker has started the stream).
  void end_stream();

  const bool stream_;
  HttpHeaders headers_;  // x-kipp-unenforced, x-kipp-ignored-fields
  std::shared_ptr<HttpExchange> exchange_;
  bool started_ = false;

 private:
  std::mutex mutex_;
  std::vector<std::string> pending_;
  bool ended_ = false;  // end_stream() came before start()
};

}  // namespace kipp::server
