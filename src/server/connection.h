// One accepted connection of the HTTP server, from its first byte to its close. A connection's
// state is touched only on the I/O thread; the handler's reply channel (connection_exchange.h)
// reaches it through its strand, so that calls made one after another, from any threads, are
// applied in that order.
//
// A connection's life: wait for the first byte (idle deadline) -> read the header and the body
// (request deadline; 408 when it passes) -> hand the request to the handler and watch the socket
// for a disconnect while the response is pending -> write the response (a write deadline per
// write) -> read the next request, or shut down the sending side and drain what the client still
// sends for a moment before closing (so that an error reply is not lost to a reset).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/server_core.h"

namespace kipp::server {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  // `counted`: one of limits.max_connections (a refused connection is not).
  Connection(ServerCore& core, boost::asio::ip::tcp::socket socket, uint64_t key, bool counted);

  const Strand& strand() const { return strand_; }

  void start();   // serves requests until the client leaves or a limit closes it
  void refuse();  // a connection beyond max_connections: 503, then closed
  // Closes the connection now; a pending response counts as a disconnect.
  void close_now();
  // Draining: a keep-alive connection waiting for its next request is closed (a router retries
  // a request that was on its way); the others close once their response is out.
  void close_if_idle();

  // The reply channel's operations for request `id`, on the I/O thread. A call for an earlier
  // request, or one the current request's state does not allow, is ignored.
  void do_respond(uint64_t id, HttpResponse response);
  void do_start_stream(uint64_t id, int status, const std::string& content_type, const HttpHeaders& headers);
  void do_write(uint64_t id, std::string data);
  void do_finish(uint64_t id);
  void do_on_disconnect(uint64_t id, std::function<void()> callback);
  // The handler's exchange was destroyed: a request it never answered gets a 500, a stream it
  // never finished is cut off (the client sees no terminating chunk).
  void do_abandon(uint64_t id);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase {
    kWaitFirstByte,  // between requests, nothing received yet
    kReadHeader,
    kContinue,  // writing "100 Continue"
    kReadBody,
    kHandling,    // the handler has the request; no response yet
    kResponding,  // a whole response is being written
    kStreaming,
    kStreamEnding,  // the stream's end is queued: nothing more is written to it
    kErrorReply,    // a limit or parse error is being answered
    kLingering,
    kClosed,
  };
  enum class After { kNone, kNextRequest, kLinger, kReadBody };
  enum class TimerKind { kIdle, kRequest, kLinger };
  enum class Probe { kQuiet, kGone, kFull };

  bool closed() const { return phase_ == Phase::kClosed; }
  bool pending() const;
  // An HTTP/1.0 client gets a stream unframed, ended by closing the connection.
  bool chunked() const { return !http10_; }
  // The layer's own error as the application shapes it (plain text when it gave no format).
  HttpResponse formatted(const HttpError& error) const;
  void fire_gone();
  void arm_timer(Clock::time_point deadline, TimerKind kind);
  void disarm_timer();
  void on_timer();
  void start_read();
  // The completion of a read begun in `phase`: a failed read is answered (or the connection
  // closed), a whole header or body goes on to `next`. Stale completions are dropped.
  auto then(Phase phase, void (Connection::*next)());
  void begin_request(Clock::time_point deadline);
  void on_header();
  void read_body();
  void on_read_error(boost::system::error_code ec);
  void error_reply(HttpError error, HttpHeaders headers = {});
  void on_request();
  Probe probe();
  void start_watch();
  void stop_watch();
  void enqueue(std::string bytes) {
    queued_bytes_ += bytes.size();
    outq_.push_back(std::move(bytes));
  }
  void pump();
  void on_written(boost::system::error_code ec);
  void on_drained(After next);
  void finish_request();
  void linger();
  void drain();

  ServerCore* core_;
  boost::asio::ip::tcp::socket socket_;
  Strand strand_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer write_timer_;
  const uint64_t key_;
  const bool counted_;
  const Clock::time_point accepted_;

  Phase phase_ = Phase::kWaitFirstByte;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;

  TimerKind timer_kind_ = TimerKind::kIdle;
  uint64_t timer_seq_ = 0;
  bool timed_out_ = false;

  // The current request.
  uint64_t cur_id_ = 0;
  std::string cur_path_;
  bool cur_gone_ = false;
  std::function<void()> gone_cb_;
  bool keep_alive_ = false;
  bool http10_ = false;
  bool head_request_ = false;

  bool watching_ = false;
  uint64_t watch_seq_ = 0;

  // Rendered pieces (http_framing.h) waiting to go out, in order.
  std::deque<std::string> outq_;
  size_t queued_bytes_ = 0;  // over outq_
  std::vector<boost::asio::const_buffer> gather_;
  size_t in_flight_ = 0;
  bool writing_ = false;
  uint64_t write_seq_ = 0;
  After after_drain_ = After::kNone;

  size_t lingered_ = 0;
};

}  // namespace kipp::server
