// The HTTP layer of `kipp serve`: an event-driven HTTP/1.1 server (Boost.Beast on one I/O
// thread) that parses requests within fixed limits and hands each whole request to a handler
// (http_exchange.h). It knows nothing of models, JSON or the scheduler: it moves bytes, enforces
// limits and reports disconnects. Every limit it enforces is answered with a body the
// application shapes (HttpServerOptions::error_format) and closes only the offending connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/http_exchange.h"
#include "server/http_limits.h"
#include "util/error.h"

namespace kipp::server {

class HttpServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts listening; requests are served once
  // run() is called.
  static Result<std::unique_ptr<HttpServer>> create(const std::string& host, uint16_t port, HttpServerOptions options,
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
