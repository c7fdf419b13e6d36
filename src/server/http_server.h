// The HTTP layer of `kipp serve`: an event-driven HTTP/1.1 server (Boost.Beast on one I/O
// thread) that parses requests within fixed limits and hands each whole request to a handler
// (http_exchange.h). It knows nothing of models, JSON or the scheduler: it moves bytes, enforces
// limits and reports disconnects. Every limit it enforces is answered with a body the
// application shapes (HttpServerOptions::error_format) and closes only the offending connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "server/http_exchange.h"
#include "util/error.h"

namespace kipp::server {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;        // request line + headers; beyond: 431
  size_t max_body_bytes = 8 * 1024 * 1024;    // beyond: 413
  unsigned max_connections = 256;             // open at once; beyond: 503 + Retry-After, closed
  std::chrono::milliseconds request_timeout{30000};  // a whole request must arrive within: 408
  std::chrono::milliseconds idle_timeout{60000};     // keep-alive connection with no request: closed
  std::chrono::milliseconds write_timeout{30000};    // a client that stops reading: closed
  // Bytes of a stream waiting to go out to a client that reads slower than they come (a streamed
  // answer's events): beyond, the client is dropped as gone rather than buffered for ever.
  size_t max_queued_bytes = 4 * 1024 * 1024;
};

struct HttpServerOptions {
  HttpLimits limits = {};
  // The body of the errors the layer answers itself; without one they are plain text.
  HttpErrorFormat error_format = {};
};

class HttpServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts listening; requests are served once
  // run() is called.
  static Result<std::unique_ptr<HttpServer>> create(const std::string& host, uint16_t port,
                                                    HttpServerOptions options, HttpHandler handler);
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
