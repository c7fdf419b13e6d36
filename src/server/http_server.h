// The HTTP layer of `kipp serve`: an event-driven HTTP/1.1 server (Boost.Beast on one I/O
// thread) that parses requests within fixed limits and hands each whole request to a handler.
// It knows nothing of models, JSON schemas or the scheduler: it moves bytes, enforces limits
// and reports disconnects. Every limit it enforces answers with an OpenAI-shaped JSON error
// and closes only the offending connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"

namespace kipp::server {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;        // request line + headers; beyond: 431
  size_t max_body_bytes = 8 * 1024 * 1024;    // beyond: 413
  unsigned max_connections = 256;             // open at once; beyond: 503 + Retry-After, closed
  std::chrono::milliseconds request_timeout{30000};  // a whole request must arrive within: 408
  std::chrono::milliseconds idle_timeout{60000};     // keep-alive connection with no request: closed
  std::chrono::milliseconds write_timeout{30000};    // a client that stops reading: closed
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent, query included
  std::string path;    // target without the query
  HttpHeaders headers;
  std::string body;
  // The value of a header (name compared without case), or "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HttpHeaders headers;  // extra headers, e.g. Retry-After
};

// One request's reply channel. Exactly one of respond() or start_stream() is called, from any
// thread, once; after start_stream(), write() any number of times and then finish(). Calls after
// the client is gone are ignored. Every method is thread-safe.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual void respond(HttpResponse response) = 0;
  // Sends the status line and headers of a chunked response (e.g. text/event-stream).
  virtual void start_stream(int status, std::string content_type, HttpHeaders headers = {}) = 0;
  virtual void write(std::string data) = 0;  // one chunk, sent in order
  virtual void finish() = 0;                 // the terminating chunk
  // `callback` runs once, on the I/O thread, when the client disconnects (or is dropped for a
  // limit) before the response is complete; immediately if it already has.
  virtual void on_disconnect(std::function<void()> callback) = 0;
};

// Called on the I/O thread for every complete request; must not block for long.
using HttpHandler = std::function<void(HttpRequest request, std::shared_ptr<HttpExchange> exchange)>;

// An OpenAI-shaped error body: {"error":{"message":..,"type":..,"param":..,"code":..}}.
std::string openai_error_body(std::string_view message, std::string_view type, std::string_view param = {},
                              std::string_view code = {});

class HttpServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts listening; requests are served once
  // run() is called.
  static Result<std::unique_ptr<HttpServer>> create(const std::string& host, uint16_t port, const HttpLimits& limits,
                                                    HttpHandler handler);
  virtual ~HttpServer() = default;
  virtual uint16_t port() const = 0;  // the bound port
  virtual void run() = 0;             // serves until stop()
  virtual void stop() = 0;            // thread-safe; run() returns soon after
  // Thread-safe: from now on no connection is kept open after its response (idle keep-alive
  // ones are closed at once); new connections are still served. open_connections() then falls
  // to 0 once every response in progress is out.
  virtual void drain() = 0;
  virtual unsigned open_connections() const = 0;
};

}  // namespace kipp::server
