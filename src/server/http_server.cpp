// The HTTP layer of `kipp serve` (see http_server.h). One io_context, run by one thread: every
// connection is a Session whose state is touched only on that thread. HttpExchange calls from
// other threads reach their Session through a per-session strand, so that calls made one after
// another (from any threads) are applied in that order.
//
// A session's life: wait for the first byte (idle deadline) -> read the header and the body
// (request deadline; 408 when it passes) -> hand the request to the handler and watch the
// socket for a disconnect while the response is pending -> write the response (a write deadline
// per write) -> read the next request, or shut down the sending side and drain what the client
// still sends for a moment before closing (so that an error reply is not lost to a reset).
#include "server/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include "server/tcp_listener.h"

namespace kipp::server {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A client that is sent an error and closed may still be sending; its bytes are drained (and
// discarded) for this long, or up to this many bytes, before the socket is closed.
constexpr milliseconds kMaxLinger{2000};
constexpr size_t kMaxLingerBytes = 1 << 20;
// Connections refused for max_connections that may be in their short 503-and-drain at once;
// beyond, a refused connection is closed without a reply.
constexpr unsigned kMaxRefusing = 64;
// At most this many queued pieces go out in one write.
constexpr size_t kMaxGather = 64;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string to_std(beast::string_view s) { return std::string(s.data(), s.size()); }

bool is_token_char(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// Header names and values from the application go out only when they cannot break the framing.
bool valid_header(const std::string& name, const std::string& value) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (!is_token_char(c)) return false;
  for (unsigned char c : value)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

bool reserved_header(const std::string& name) {
  return iequals(name, "content-length") || iequals(name, "transfer-encoding") || iequals(name, "connection") ||
         iequals(name, "server");
}

std::string reason_phrase(int status) {
  auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  if (reason.empty() || reason.front() == '<') return "Unknown";
  return to_std(reason);
}

// Responses to 1xx, 204 and 304 carry no body and no Content-Length.
bool status_has_body(int status) { return status >= 200 && status != 204 && status != 304; }

enum class Framing { kLength, kChunked, kUntilClose };

std::string format_head(int status, const std::string& content_type, Framing framing, size_t length,
                        const HttpHeaders& headers, bool keep_alive, bool no_cache) {
  std::string h;
  h.reserve(256);
  h += "HTTP/1.1 ";
  h += std::to_string(status);
  h += ' ';
  h += reason_phrase(status);
  h += "\r\nServer: kipp\r\n";
  if (!content_type.empty() && valid_header("Content-Type", content_type)) {
    h += "Content-Type: ";
    h += content_type;
    h += "\r\n";
  }
  if (framing == Framing::kChunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else if (framing == Framing::kLength && status_has_body(status)) {
    h += "Content-Length: ";
    h += std::to_string(length);
    h += "\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  bool has_cache_control = false;
  for (const auto& [name, value] : headers) {
    if (!valid_header(name, value) || reserved_header(name)) continue;
    if (iequals(name, "content-type") && !content_type.empty()) continue;
    if (iequals(name, "cache-control")) has_cache_control = true;
    h += name;
    h += ": ";
    h += value;
    h += "\r\n";
  }
  if (no_cache && !has_cache_control) h += "Cache-Control: no-cache\r\n";
  h += "\r\n";
  return h;
}

std::string error_response(int status, const std::string& body, const HttpHeaders& extra = {}) {
  return format_head(status, "application/json", Framing::kLength, body.size(), extra, false, false) + body;
}

class Session;

// Everything the server shares with its sessions. The io_context is the first member so that it
// is destroyed last: handlers it still holds may own sessions, and a session's destructor
// touches nothing here.
struct Core : std::enable_shared_from_this<Core> {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  HttpLimits limits;
  HttpHandler handler;
  uint16_t port = 0;
  std::atomic<unsigned> open{0};
  // The rest only on the I/O thread.
  unsigned refusing = 0;
  bool stopping = false;
  bool draining = false;  // answer what is in progress, keep no connection open after it
  uint64_t next_key = 0;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions;

  Core(const HttpLimits& l, HttpHandler h) : limits(l), handler(std::move(h)) {}
  void accept();
  void on_accept(error_code ec, tcp::socket sock);
  void shutdown();
  void drain();
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Strand = asio::strand<asio::io_context::executor_type>;

  Session(Core* core, tcp::socket sock, uint64_t key, bool counted)
      : core_(core),
        socket_(std::move(sock)),
        strand_(asio::make_strand(core->ioc)),
        timer_(core->ioc),
        write_timer_(core->ioc),
        key_(key),
        counted_(counted),
        accepted_(Clock::now()) {}

  const Strand& strand() const { return strand_; }

  void start() { start_read(); }

  // A connection beyond max_connections: 503, then closed.
  void refuse() {
    phase_ = Phase::kErrorReply;
    HttpHeaders extra{{"Retry-After", "1"}};
    enqueue(error_response(503,
                           openai_error_body("the server has reached its limit of " +
                                                 std::to_string(core_->limits.max_connections) +
                                                 " open connections; retry later",
                                             "server_error", "", "too_many_connections"),
                           extra));
    after_drain_ = After::kLinger;
    pump();
  }

  // Closes the connection now; a pending response counts as a disconnect.
  void close_now() {
    if (closed_) return;
    closed_ = true;
    bool was_pending = pending();
    phase_ = Phase::kClosed;
    ++timer_seq_;
    ++watch_seq_;
    watching_ = false;
    error_code ec;
    timer_.cancel();
    write_timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    if (!writing_) outq_.clear();
    buffer_.consume(buffer_.size());
    core_->sessions.erase(key_);
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

  // Draining: a keep-alive connection waiting for its next request is closed (a router retries
  // a request that was on its way); the others close once their response is out.
  void close_if_idle() {
    if (phase_ == Phase::kWaitFirstByte) close_now();
  }

  // --- HttpExchange operations, on the I/O thread (through the strand). ---

  void do_respond(uint64_t id, HttpResponse response) {
    if (closed_ || id != cur_id_ || phase_ != Phase::kHandling) return;
    int status = response.status;
    if (status < 100 || status > 999) status = 500;
    bool body = status_has_body(status) && !head_request_;
    std::string out = format_head(status, response.content_type, Framing::kLength, response.body.size(),
                                  response.headers, keep_alive_, false);
    if (body) out += response.body;
    phase_ = Phase::kResponding;
    enqueue(std::move(out));
    after_drain_ = keep_alive_ ? After::kNextRequest : After::kLinger;
    pump();
  }

  void do_start_stream(uint64_t id, int status, const std::string& content_type, const HttpHeaders& headers) {
    if (closed_ || id != cur_id_ || phase_ != Phase::kHandling) return;
    if (status < 200 || status > 999) status = 500;
    // An HTTP/1.0 client gets the stream unframed, ended by closing the connection.
    chunked_ = !http10_;
    if (!chunked_) keep_alive_ = false;
    phase_ = Phase::kStreaming;
    enqueue(format_head(status, content_type, chunked_ ? Framing::kChunked : Framing::kUntilClose, 0, headers,
                        keep_alive_, true));
    if (head_request_) {
      finishing_ = true;
      if (chunked_) enqueue("0\r\n\r\n");
      after_drain_ = keep_alive_ ? After::kNextRequest : After::kLinger;
    }
    pump();
  }

  void do_write(uint64_t id, std::string data) {
    if (closed_ || id != cur_id_ || phase_ != Phase::kStreaming || finishing_ || data.empty()) return;
    if (chunked_) {
      char size[24];
      int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
      std::string chunk;
      chunk.reserve(static_cast<size_t>(n) + data.size() + 2);
      chunk.append(size, static_cast<size_t>(n));
      chunk += data;
      chunk += "\r\n";
      enqueue(std::move(chunk));
    } else {
      enqueue(std::move(data));
    }
    pump();
  }

  void do_finish(uint64_t id) {
    if (closed_ || id != cur_id_ || phase_ != Phase::kStreaming || finishing_) return;
    finishing_ = true;
    if (chunked_) enqueue("0\r\n\r\n");
    after_drain_ = keep_alive_ ? After::kNextRequest : After::kLinger;
    pump();
  }

  void do_on_disconnect(uint64_t id, std::function<void()> callback) {
    if (!callback || id != cur_id_) return;  // an earlier request: it was answered in full
    if (cur_gone_) {
      run_callback(callback);
    } else if (pending()) {
      gone_cb_ = std::move(callback);
    }
  }

  // The handler's exchange was destroyed: a request it never answered gets a 500, a stream it
  // never finished is cut off (the client sees no terminating chunk).
  void do_abandon(uint64_t id) {
    if (closed_ || id != cur_id_) return;
    if (phase_ == Phase::kHandling) {
      gone_cb_ = nullptr;
      do_respond(id, internal_error("the request was dropped without a response"));
    } else if (phase_ == Phase::kStreaming && !finishing_) {
      gone_cb_ = nullptr;
      close_now();
    }
  }

 private:
  enum class Phase {
    kWaitFirstByte,  // between requests, nothing received yet
    kReadHeader,
    kContinue,  // writing "100 Continue"
    kReadBody,
    kHandling,    // the handler has the request; no response yet
    kResponding,  // a whole response is being written
    kStreaming,
    kErrorReply,  // a limit or parse error is being answered
    kLingering,
    kClosed,
  };
  enum class After { kNone, kNextRequest, kLinger, kReadBody };
  enum class TimerKind { kIdle, kRequest, kLinger };

  bool pending() const {
    return phase_ == Phase::kHandling || phase_ == Phase::kResponding || phase_ == Phase::kStreaming;
  }

  static HttpResponse internal_error(const std::string& message) {
    HttpResponse r;
    r.status = 500;
    r.body = openai_error_body(message, "server_error");
    return r;
  }

  static void run_callback(const std::function<void()>& callback) {
    try {
      callback();
    } catch (...) {
      // A disconnect callback that throws has nobody to report to.
    }
  }

  void fire_gone() {
    auto callback = std::move(gone_cb_);
    gone_cb_ = nullptr;
    if (callback) run_callback(callback);
  }

  // --- Timers ---

  void arm_timer(Clock::time_point deadline, TimerKind kind) {
    timer_kind_ = kind;
    uint64_t seq = ++timer_seq_;
    timer_.expires_at(deadline);
    timer_.async_wait([self = shared_from_this(), seq](error_code ec) {
      if (ec || self->closed_ || seq != self->timer_seq_) return;
      self->on_timer();
    });
  }

  void disarm_timer() {
    ++timer_seq_;
    timer_.cancel();
  }

  void on_timer() {
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

  void start_read() {
    if (closed_) return;
    if (core_->stopping) {
      close_now();
      return;
    }
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(core_->limits.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    parser_->body_limit(static_cast<std::uint64_t>(core_->limits.max_body_bytes));
    timed_out_ = false;
    finishing_ = false;
    chunked_ = false;
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
      if (self->closed_ || self->phase_ != Phase::kWaitFirstByte) return;
      if (ec) {
        self->close_now();  // the client left between requests, or the connection failed
        return;
      }
      self->buffer_.commit(n);
      self->begin_request(first ? self->accepted_ + self->core_->limits.request_timeout
                                : Clock::now() + self->core_->limits.request_timeout);
    });
  }

  void begin_request(Clock::time_point deadline) {
    phase_ = Phase::kReadHeader;
    arm_timer(deadline, TimerKind::kRequest);
    http::async_read_header(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
      if (self->closed_ || self->phase_ != Phase::kReadHeader) return;
      if (ec) {
        self->on_read_error(ec);
        return;
      }
      self->on_header();
    });
  }

  void on_header() {
    const auto& req = parser_->get();
    // RFC 7230 3.3.3: a request body whose length cannot be determined is refused, as is one
    // framed two ways (the classic request-smuggling shapes).
    if (req.count(http::field::transfer_encoding) > 0) {
      if (!parser_->chunked()) {
        error_reply(400, "malformed HTTP request: the only Transfer-Encoding accepted is chunked", "bad_request");
        return;
      }
      if (req.count(http::field::content_length) > 0) {
        error_reply(400, "malformed HTTP request: both Content-Length and Transfer-Encoding", "bad_request");
        return;
      }
    }
    auto expect = req[http::field::expect];
    if (!parser_->is_done() && req.version() >= 11 && iequals(std::string_view(expect.data(), expect.size()),
                                                              "100-continue")) {
      phase_ = Phase::kContinue;
      enqueue("HTTP/1.1 100 Continue\r\n\r\n");
      after_drain_ = After::kReadBody;
      pump();
      return;
    }
    read_body();
  }

  void read_body() {
    phase_ = Phase::kReadBody;
    if (parser_->is_done()) {
      on_request();
      return;
    }
    http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
      if (self->closed_ || self->phase_ != Phase::kReadBody) return;
      if (ec) {
        self->on_read_error(ec);
        return;
      }
      self->on_request();
    });
  }

  void on_read_error(error_code ec) {
    const auto& limits = core_->limits;
    if (timed_out_) {
      error_reply(408, "the request did not arrive within the request timeout of " +
                           std::to_string(limits.request_timeout.count()) + " ms",
                  "request_timeout");
    } else if (ec == http::error::header_limit) {
      error_reply(431, "the request line and headers exceed the limit of " +
                           std::to_string(limits.max_header_bytes) + " bytes",
                  "request_header_fields_too_large");
    } else if (ec == http::error::body_limit) {
      error_reply(413, "the request body exceeds the limit of " + std::to_string(limits.max_body_bytes) + " bytes",
                  "request_too_large");
    } else if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
               ec.category() != http::make_error_code(http::error::bad_method).category()) {
      close_now();  // the client left mid-request or the connection failed: nobody to answer
    } else {
      error_reply(400, "malformed HTTP request: " + ec.message(), "bad_request");
    }
  }

  void error_reply(int status, const std::string& message, const std::string& code) {
    disarm_timer();
    phase_ = Phase::kErrorReply;
    parser_.reset();
    enqueue(error_response(status, openai_error_body(message, "invalid_request_error", "", code)));
    after_drain_ = After::kLinger;
    pump();
  }

  void on_request() {
    disarm_timer();
    auto& req = parser_->get();
    HttpRequest request;
    request.method = to_std(req.method_string());
    request.target = to_std(req.target());
    request.path = request.target.substr(0, request.target.find('?'));
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
    if (closed_) return;  // the client had already left

    uint64_t id = cur_id_;
    try {
      auto exchange = make_exchange(id);
      core_->handler(std::move(request), std::move(exchange));
    } catch (const std::exception& e) {
      do_respond(id, internal_error(std::string("the request handler failed: ") + e.what()));
    } catch (...) {
      do_respond(id, internal_error("the request handler failed"));
    }
  }

  std::shared_ptr<HttpExchange> make_exchange(uint64_t id);

  // --- Disconnect detection while a response is pending ---

  // Whether the client is still there: reads what it sent ahead (pipelined requests) into the
  // buffer, up to a cap; false once it has closed or the connection failed.
  enum class Probe { kQuiet, kGone, kFull };
  Probe probe() {
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

  void start_watch() {
    if (watching_ || closed_ || !pending()) return;
    // Check now: a close that arrived before the wait was registered raises no new event.
    switch (probe()) {
      case Probe::kGone:
        close_now();
        return;
      case Probe::kFull:
        return;  // a client that sends this much ahead is not watched further
      case Probe::kQuiet:
        break;
    }
    watching_ = true;
    uint64_t seq = watch_seq_;
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), seq](error_code ec) {
      if (self->closed_ || seq != self->watch_seq_) return;
      self->watching_ = false;
      if (!self->pending()) return;
      if (ec) {
        self->close_now();
        return;
      }
      self->start_watch();
    });
  }

  void stop_watch() {
    ++watch_seq_;
    if (watching_) {
      watching_ = false;
      error_code ec;
      socket_.cancel(ec);  // nothing else is in flight when a response has been written
    }
  }

  // --- Writing ---

  void enqueue(std::string bytes) { outq_.push_back(std::move(bytes)); }

  void pump() {
    if (closed_ || writing_) return;
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
      if (ec || self->closed_ || seq != self->write_seq_) return;
      self->close_now();  // the client stopped reading
    });
    asio::async_write(socket_, gather_, [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
  }

  void on_written(error_code ec) {
    writing_ = false;
    ++write_seq_;
    write_timer_.cancel();
    if (closed_) {
      outq_.clear();
      return;
    }
    if (ec) {
      close_now();
      return;
    }
    for (size_t i = 0; i < in_flight_ && !outq_.empty(); ++i) outq_.pop_front();
    in_flight_ = 0;
    pump();
  }

  void on_drained(After next) {
    switch (next) {
      case After::kNone:
        break;
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
  void finish_request() {
    gone_cb_ = nullptr;
    stop_watch();
  }

  // Stops sending, then drains what the client still sends until it closes (or a short while).
  void linger() {
    phase_ = Phase::kLingering;
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    buffer_.consume(buffer_.size());
    auto wait = std::min(core_->limits.request_timeout, kMaxLinger);
    arm_timer(Clock::now() + std::max(wait, milliseconds(1)), TimerKind::kLinger);
    drain();
  }

  void drain() {
    socket_.async_read_some(buffer_.prepare(16384), [self = shared_from_this()](error_code ec, size_t n) {
      if (self->closed_) return;
      self->lingered_ += n;
      if (ec || self->lingered_ > kMaxLingerBytes) {
        self->close_now();
        return;
      }
      self->drain();
    });
  }

  Core* core_;
  tcp::socket socket_;
  Strand strand_;
  asio::steady_timer timer_;
  asio::steady_timer write_timer_;
  const uint64_t key_;
  const bool counted_;
  const Clock::time_point accepted_;

  Phase phase_ = Phase::kWaitFirstByte;
  bool closed_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;

  TimerKind timer_kind_ = TimerKind::kIdle;
  uint64_t timer_seq_ = 0;
  bool timed_out_ = false;

  // The current request.
  uint64_t cur_id_ = 0;
  bool cur_gone_ = false;
  std::function<void()> gone_cb_;
  bool keep_alive_ = false;
  bool http10_ = false;
  bool head_request_ = false;
  bool chunked_ = false;
  bool finishing_ = false;

  bool watching_ = false;
  uint64_t watch_seq_ = 0;

  std::deque<std::string> outq_;
  std::vector<asio::const_buffer> gather_;
  size_t in_flight_ = 0;
  bool writing_ = false;
  uint64_t write_seq_ = 0;
  After after_drain_ = After::kNone;

  size_t lingered_ = 0;
};

// The handler's reply channel: every call hops onto the session's strand.
class Exchange final : public HttpExchange {
 public:
  Exchange(std::shared_ptr<Core> core, std::shared_ptr<Session> session, uint64_t id)
      : core_(std::move(core)), session_(std::move(session)), id_(id) {}

  ~Exchange() override {
    try {
      asio::post(session_->strand(), [s = session_, id = id_] { s->do_abandon(id); });
    } catch (...) {
      // Out of memory while posting: the client is answered when it gives up.
    }
  }

  void respond(HttpResponse response) override {
    asio::post(session_->strand(), [s = session_, id = id_, r = std::move(response)]() mutable {
      s->do_respond(id, std::move(r));
    });
  }

  void start_stream(int status, std::string content_type, HttpHeaders headers) override {
    asio::post(session_->strand(),
               [s = session_, id = id_, status, ct = std::move(content_type), h = std::move(headers)] {
                 s->do_start_stream(id, status, ct, h);
               });
  }

  void write(std::string data) override {
    asio::post(session_->strand(),
               [s = session_, id = id_, d = std::move(data)]() mutable { s->do_write(id, std::move(d)); });
  }

  void finish() override {
    asio::post(session_->strand(), [s = session_, id = id_] { s->do_finish(id); });
  }

  void on_disconnect(std::function<void()> callback) override {
    asio::post(session_->strand(),
               [s = session_, id = id_, cb = std::move(callback)]() mutable { s->do_on_disconnect(id, std::move(cb)); });
  }

 private:
  // Keeps the io_context alive for as long as the exchange can post to it; declared first so
  // that the session goes before it.
  std::shared_ptr<Core> core_;
  std::shared_ptr<Session> session_;
  uint64_t id_;
};

std::shared_ptr<HttpExchange> Session::make_exchange(uint64_t id) {
  return std::make_shared<Exchange>(core_->shared_from_this(), shared_from_this(), id);
}

void Core::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket sock) { on_accept(ec, std::move(sock)); });
}

void Core::on_accept(error_code ec, tcp::socket sock) {
  if (stopping || !acceptor.is_open()) return;
  if (ec) {
    // Out of descriptors and the like: try again shortly rather than spin.
    accept_retry.expires_after(milliseconds(ec == asio::error::connection_aborted ? 0 : 50));
    accept_retry.async_wait([this](error_code wait_ec) {
      if (!wait_ec && !stopping) accept();
    });
    return;
  }
  error_code ignored;
  sock.set_option(tcp::no_delay(true), ignored);
  uint64_t key = next_key++;
  if (open.load() >= limits.max_connections) {
    if (refusing < kMaxRefusing) {
      ++refusing;
      auto session = std::make_shared<Session>(this, std::move(sock), key, false);
      sessions.emplace(key, session);
      session->refuse();
    } else {
      sock.close(ignored);
    }
  } else {
    open.fetch_add(1);
    auto session = std::make_shared<Session>(this, std::move(sock), key, true);
    sessions.emplace(key, session);
    session->start();
  }
  accept();
}

void Core::drain() {
  if (draining || stopping) return;
  draining = true;
  auto all = sessions;
  for (auto& [key, weak] : all)
    if (auto session = weak.lock()) session->close_if_idle();
}

void Core::shutdown() {
  if (stopping) return;
  stopping = true;
  error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  auto all = sessions;
  for (auto& [key, weak] : all)
    if (auto session = weak.lock()) session->close_now();
  sessions.clear();
}

class Server final : public HttpServer {
 public:
  explicit Server(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  // run() has returned (or never ran): nothing else touches the sessions now.
  ~Server() override { core_->shutdown(); }

  uint16_t port() const override { return core_->port; }

  void run() override {
    for (;;) {
      try {
        core_->ioc.run();
        return;
      } catch (...) {
        // A handler threw past its own guards: keep serving.
      }
    }
  }

  void stop() override {
    asio::post(core_->ioc, [core = core_.get()] { core->shutdown(); });
  }

  void drain() override {
    asio::post(core_->ioc, [core = core_.get()] { core->drain(); });
  }

  unsigned open_connections() const override { return core_->open.load(); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name)) return value;
  return "";
}

std::string openai_error_body(std::string_view message, std::string_view type, std::string_view param,
                              std::string_view code) {
  nlohmann::json error = {
      {"message", std::string(message)},
      {"type", std::string(type)},
      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(param))},
      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(code))},
  };
  nlohmann::json body = {{"error", std::move(error)}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::unique_ptr<HttpServer>> HttpServer::create(const std::string& host, uint16_t port,
                                                       const HttpLimits& limits, HttpHandler handler) {
  const std::string where = describe_endpoint(host, port);
  if (!handler) return fail("http server on ", where, ": no request handler");
  try {
    auto core = std::make_shared<Core>(limits, std::move(handler));
    KIPP_ASSIGN(core->port, listen_on(core->acceptor, host, port));
    core->accept();
    return std::unique_ptr<HttpServer>(std::make_unique<Server>(std::move(core)));
  } catch (const std::exception& e) {
    return fail("cannot listen on ", where, ": ", e.what());
  }
}

}  // namespace kipp::server
