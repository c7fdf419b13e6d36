// One connection's loop (see connection.h): reading requests within the limits, answering what
// the layer answers itself, watching for a disconnect while the handler works, writing what the
// handler sends in order under a write deadline, and lingering before the close.
#include "server/connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <limits>

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "server/connection_exchange.h"
#include "server/http_framing.h"

namespace kipp::server {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

// A client that is sent an error and closed may still be sending; its bytes are drained (and
// discarded) for this long, or up to this many bytes, before the socket is closed.
constexpr milliseconds kMaxLinger{2000};
constexpr size_t kMaxLingerBytes = 1 << 20;
// At most this many queued pieces go out in one write.
constexpr size_t kMaxGather = 64;

std::string to_std(beast::string_view s) { return std::string(s.data(), s.size()); }

// A request target without its query.
std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

void run_callback(const std::function<void()>& callback) {
  try {
    callback();
  } catch (...) {
    // A disconnect callback that throws has nobody to report to.
  }
}

}  // namespace

Connection::Connection(ServerCore& core, tcp::socket socket, uint64_t key, bool counted)
    : core_(&core),
      socket_(std::move(socket)),
      strand_(asio::make_strand(core.ioc)),
      timer_(core.ioc),
      write_timer_(core.ioc),
      key_(key),
      counted_(counted),
      accepted_(Clock::now()) {}

void Connection::start() { start_read(); }

void Connection::refuse() {
  error_reply({.status = 503,
               .message = "the server has reached its limit of " + std::to_string(core_->limits.max_connections) +
                          " open connections; retry later",
               .code = "too_many_connections"},
              {{"Retry-After", "1"}});
}

void Connection::close_now() {
  if (closed()) return;
  const bool was_pending = pending();
  phase_ = Phase::kClosed;
  ++timer_seq_;
  ++watch_seq_;
  watching_ = false;
  error_code ec;
  timer_.cancel();
  write_timer_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  if (!writing_) {
    outq_.clear();
    queued_bytes_ = 0;
  }
  buffer_.consume(buffer_.size());
  core_->connections.erase(key_);
  if (counted_) {
    core_->open.fetch_sub(1);
  } else {
    --core_->refusing;
  }
  if (was_pending) {
    cur_gone_ = true;
    fire_gone();
  }
}

void Connection::close_if_idle() {
  if (phase_ == Phase::kWaitFirstByte) close_now();
}

// --- The reply channel's operations ---

void Connection::do_respond(uint64_t id, HttpResponse response) {
  if (closed() || id != cur_id_ || phase_ != Phase::kHandling) return;
  phase_ = Phase::kResponding;
  enqueue(whole_response(std::move(response), keep_alive_, head_request_));
  after_drain_ = keep_alive_ ? After::kNextRequest : After::kLinger;
  pump();
}

void Connection::do_start_stream(uint64_t id, int status, const std::string& content_type, const HttpHeaders& headers) {
  if (closed() || id != cur_id_ || phase_ != Phase::kHandling) return;
  if (!chunked()) keep_alive_ = false;
  phase_ = Phase::kStreaming;
  enqueue(stream_head(status, content_type, headers, chunked(), keep_alive_));
  if (head_request_) {
    phase_ = Phase::kStreamEnding;
    if (chunked()) enqueue(last_chunk());
    after_drain_ = keep_alive_ ? After::kNextRequest : After::kLinger;
  }
  pump();
}

void Connection::do_write(uint64_t id, std::string data) {
  if (closed() || id != cur_id_ || phase_ != Phase::kStreaming || data.empty()) return;
  if (queued_bytes_ > core_->limits.max_queued_bytes) {
    close_now();  // it reads slower than the stream comes: gone, so the request stops too
    return;
  }
  enqueue(chunked() ? framed_chunk(data) : std::move(data));
  pump();
}

void Connection::do_finish(uint64_t id) {
  if (closed() || id != cur_id_ || phase_ != Phase::kStreaming) return;
  phase_ = Phase::kStreamEnding;
  if (chunked()) enqueue(last_chunk());
  after_drain_ = keep_alive_ ? After::kNextRequest : After::kLinger;
  pump();
}

void Connection::do_on_disconnect(uint64_t id, std::function<void()> callback) {
  if (!callback || id != cur_id_) return;  // an earlier request: it was answered in full
  if (cur_gone_) {
    run_callback(callback);
  } else if (pending()) {
    gone_cb_ = std::move(callback);
  }
}

void Connection::do_abandon(uint64_t id) {
  if (closed() || id != cur_id_) return;
  if (phase_ == Phase::kHandling) {
    gone_cb_ = nullptr;
    do_respond(id,
               formatted({.status = 500, .message = "the request was dropped without a response", .path = cur_path_}));
  } else if (phase_ == Phase::kStreaming) {
    gone_cb_ = nullptr;
    close_now();
  }
}

bool Connection::pending() const {
  return phase_ == Phase::kHandling || phase_ == Phase::kResponding || phase_ == Phase::kStreaming ||
         phase_ == Phase::kStreamEnding;
}

HttpResponse Connection::formatted(const HttpError& error) const {
  HttpResponse response;
  if (core_->error_format) {
    response = core_->error_format(error);
  } else {
    response.content_type = "text/plain; charset=utf-8";
    response.body = error.message + "\n";
  }
  response.status = error.status;
  return response;
}

void Connection::fire_gone() {
  auto callback = std::move(gone_cb_);
  gone_cb_ = nullptr;
  if (callback) run_callback(callback);
}

// --- Timers ---

void Connection::arm_timer(Clock::time_point deadline, TimerKind kind) {
  timer_kind_ = kind;
  uint64_t seq = ++timer_seq_;
  timer_.expires_at(deadline);
  timer_.async_wait([self = shared_from_this(), seq](error_code ec) {
    if (ec || self->closed() || seq != self->timer_seq_) return;
    self->on_timer();
  });
}

void Connection::disarm_timer() {
  ++timer_seq_;
  timer_.cancel();
}

void Connection::on_timer() {
  if (timer_kind_ == TimerKind::kRequest && (phase_ == Phase::kReadHeader || phase_ == Phase::kReadBody)) {
    // The read completes with operation_aborted and is answered with a 408.
    timed_out_ = true;
    error_code ec;
    socket_.cancel(ec);
    return;
  }
  close_now();
}

// --- Reading requests ---

void Connection::start_read() {
  if (closed()) return;
  if (core_->stopping) {
    close_now();
    return;
  }
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(
      std::min<size_t>(core_->limits.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser_->body_limit(static_cast<std::uint64_t>(core_->limits.max_body_bytes));
  timed_out_ = false;
  // The first request must arrive whole within request_timeout of the accept; later ones
  // within request_timeout of their first byte.
  bool first = cur_id_ == 0;
  if (buffer_.size() > 0) {
    begin_request(first ? accepted_ + core_->limits.request_timeout : Clock::now() + core_->limits.request_timeout);
    return;
  }
  phase_ = Phase::kWaitFirstByte;
  arm_timer(first ? accepted_ + core_->limits.request_timeout : Clock::now() + core_->limits.idle_timeout,
            TimerKind::kIdle);
  socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this(), first](error_code ec, size_t n) {
    if (self->closed() || self->phase_ != Phase::kWaitFirstByte) return;
    if (ec) {
      self->close_now();  // the client left between requests, or the connection failed
      return;
    }
    self->buffer_.commit(n);
    self->begin_request(first ? self->accepted_ + self->core_->limits.request_timeout
                              : Clock::now() + self->core_->limits.request_timeout);
  });
}

auto Connection::then(Phase phase, void (Connection::*next)()) {
  return [self = shared_from_this(), phase, next](error_code ec, size_t) {
    if (self->closed() || self->phase_ != phase) return;
    if (ec) return self->on_read_error(ec);
    (self.get()->*next)();
  };
}

void Connection::begin_request(Clock::time_point deadline) {
  phase_ = Phase::kReadHeader;
  arm_timer(deadline, TimerKind::kRequest);
  http::async_read_header(socket_, buffer_, *parser_, then(Phase::kReadHeader, &Connection::on_header));
}

void Connection::on_header() {
  const auto& req = parser_->get();
  // RFC 7230 3.3.3: a request body whose length cannot be determined is refused, as is one
  // framed two ways (the classic request-smuggling shapes).
  if (req.count(http::field::transfer_encoding) > 0) {
    if (!parser_->chunked()) {
      error_reply({.status = 400,
                   .message = "malformed HTTP request: the only Transfer-Encoding accepted is chunked",
                   .code = "bad_request"});
      return;
    }
    if (req.count(http::field::content_length) > 0) {
      error_reply({.status = 400,
                   .message = "malformed HTTP request: both Content-Length and Transfer-Encoding",
                   .code = "bad_request"});
      return;
    }
  }
  if (!parser_->is_done() && req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
    phase_ = Phase::kContinue;
    enqueue(continue_response());
    after_drain_ = After::kReadBody;
    pump();
    return;
  }
  read_body();
}

void Connection::read_body() {
  phase_ = Phase::kReadBody;
  if (parser_->is_done()) {
    on_request();
    return;
  }
  http::async_read(socket_, buffer_, *parser_, then(Phase::kReadBody, &Connection::on_request));
}

void Connection::on_read_error(error_code ec) {
  const auto& limits = core_->limits;
  if (timed_out_) {
    error_reply({.status = 408,
                 .message = "the request did not arrive within the request timeout of " +
                            std::to_string(limits.request_timeout.count()) + " ms",
                 .code = "request_timeout"});
  } else if (ec == http::error::header_limit) {
    error_reply({.status = 431,
                 .message = "the request line and headers exceed the limit of " +
                            std::to_string(limits.max_header_bytes) + " bytes",
                 .code = "request_header_fields_too_large"});
  } else if (ec == http::error::body_limit) {
    error_reply({.status = 413,
                 .message = "the request body exceeds the limit of " + std::to_string(limits.max_body_bytes) + " bytes",
                 .code = "request_too_large"});
  } else if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
             ec.category() != http::make_error_code(http::error::bad_method).category()) {
    close_now();  // the client left mid-request or the connection failed: nobody to answer
  } else {
    error_reply({.status = 400, .message = "malformed HTTP request: " + ec.message(), .code = "bad_request"});
  }
}

// An error the layer answers itself: the connection closes after it, since what follows the
// bad request on the wire cannot be trusted to start a new one.
void Connection::error_reply(HttpError error, HttpHeaders headers) {
  disarm_timer();
  phase_ = Phase::kErrorReply;
  // The path, when the request line arrived before the error, says whose shape the error takes.
  if (parser_) error.path = path_of(to_std(parser_->get().target()));
  parser_.reset();
  HttpResponse response = formatted(error);
  response.headers.insert(response.headers.end(), headers.begin(), headers.end());
  enqueue(whole_response(std::move(response), false, false));
  after_drain_ = After::kLinger;
  pump();
}

void Connection::on_request() {
  disarm_timer();
  auto& req = parser_->get();
  HttpRequest request;
  request.method = to_std(req.method_string());
  request.target = to_std(req.target());
  request.path = path_of(request.target);
  cur_path_ = request.path;
  for (const auto& field : req) request.headers.emplace_back(to_std(field.name_string()), to_std(field.value()));
  request.body = std::move(req.body());
  keep_alive_ = req.keep_alive() && !core_->stopping && !core_->draining;
  http10_ = req.version() < 11;
  head_request_ = req.method() == http::verb::head;
  parser_.reset();

  ++cur_id_;
  cur_gone_ = false;
  gone_cb_ = nullptr;
  phase_ = Phase::kHandling;
  start_watch();
  if (closed()) return;  // the client had already left

  uint64_t id = cur_id_;
  try {
    core_->handler(std::move(request), make_exchange(core_->shared_from_this(), shared_from_this(), id));
  } catch (const std::exception& e) {
    do_respond(id, formatted({.status = 500,
                              .message = std::string("the request handler failed: ") + e.what(),
                              .path = cur_path_}));
  } catch (...) {
    do_respond(id, formatted({.status = 500, .message = "the request handler failed", .path = cur_path_}));
  }
}

// --- Disconnect detection while a response is pending ---

// Whether the client is still there: reads what it sent ahead (pipelined requests) into the
// buffer, up to a cap; kGone once it has closed or the connection failed.
Connection::Probe Connection::probe() {
  int fd = socket_.native_handle();
  const size_t cap = core_->limits.max_header_bytes + core_->limits.max_body_bytes + 65536;
  for (;;) {
    if (buffer_.size() >= cap) {
      char c;
      ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0) return Probe::kGone;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Probe::kGone;
      return n > 0 ? Probe::kFull : Probe::kQuiet;
    }
    size_t want = std::min<size_t>(cap - buffer_.size(), 65536);
    auto space = buffer_.prepare(want);
    ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
    if (n == 0) return Probe::kGone;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Probe::kQuiet;
      return Probe::kGone;
    }
    buffer_.commit(static_cast<size_t>(n));
  }
}

void Connection::start_watch() {
  if (watching_ || closed() || !pending()) return;
  // Check now: a close that arrived before the wait was registered raises no new event.
  switch (probe()) {
    case Probe::kGone: close_now(); return;
    case Probe::kFull: return;  // a client that sends this much ahead is not watched further
    case Probe::kQuiet: break;
  }
  watching_ = true;
  uint64_t seq = watch_seq_;
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), seq](error_code ec) {
    if (self->closed() || seq != self->watch_seq_) return;
    self->watching_ = false;
    if (!self->pending()) return;
    if (ec) {
      self->close_now();
      return;
    }
    self->start_watch();
  });
}

void Connection::stop_watch() {
  ++watch_seq_;
  if (watching_) {
    watching_ = false;
    error_code ec;
    socket_.cancel(ec);  // nothing else is in flight when a response has been written
  }
}

// --- Writing ---

void Connection::pump() {
  if (closed() || writing_) return;
  if (outq_.empty()) {
    if (after_drain_ != After::kNone) {
      After next = after_drain_;
      after_drain_ = After::kNone;
      on_drained(next);
    }
    return;
  }
  gather_.clear();
  for (size_t i = 0; i < outq_.size() && i < kMaxGather; ++i) gather_.emplace_back(asio::buffer(outq_[i]));
  in_flight_ = gather_.size();
  writing_ = true;
  uint64_t seq = ++write_seq_;
  write_timer_.expires_after(core_->limits.write_timeout);
  write_timer_.async_wait([self = shared_from_this(), seq](error_code ec) {
    if (ec || self->closed() || seq != self->write_seq_) return;
    self->close_now();  // the client stopped reading
  });
  asio::async_write(socket_, gather_, [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
}

void Connection::on_written(error_code ec) {
  writing_ = false;
  ++write_seq_;
  write_timer_.cancel();
  if (closed()) {
    outq_.clear();
    queued_bytes_ = 0;
    return;
  }
  if (ec) {
    close_now();
    return;
  }
  for (size_t i = 0; i < in_flight_ && !outq_.empty(); ++i) {
    queued_bytes_ -= outq_.front().size();
    outq_.pop_front();
  }
  in_flight_ = 0;
  pump();
}

void Connection::on_drained(After next) {
  switch (next) {
    case After::kNone: break;
    case After::kReadBody:
      if (phase_ == Phase::kContinue) read_body();
      break;
    case After::kNextRequest:
      finish_request();
      if (core_->draining) {
        linger();  // a keep-alive connection answered before the drain: closed now
        break;
      }
      start_read();
      break;
    case After::kLinger:
      finish_request();
      linger();
      break;
  }
}

// The response went out in full: no disconnect callback from here on.
void Connection::finish_request() {
  gone_cb_ = nullptr;
  stop_watch();
}

// Stops sending, then drains what the client still sends until it closes (or a short while).
void Connection::linger() {
  phase_ = Phase::kLingering;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  buffer_.consume(buffer_.size());
  auto wait = std::min(core_->limits.request_timeout, kMaxLinger);
  arm_timer(Clock::now() + std::max(wait, milliseconds(1)), TimerKind::kLinger);
  drain();
}

void Connection::drain() {
  socket_.async_read_some(buffer_.prepare(16384), [self = shared_from_this()](error_code ec, size_t n) {
    if (self->closed()) return;
    self->lingered_ += n;
    if (ec || self->lingered_ > kMaxLingerBytes) {
      self->close_now();
      return;
    }
    self->drain();
  });
}

}  // namespace kipp::server
