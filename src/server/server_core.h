// What the HTTP server shares with its connections (http_server.cpp owns it, connection.h reads
// it): the io_context, the limits, the request handler and the count of open connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include <boost/asio/io_context.hpp>

#include "server/http_exchange.h"
#include "server/http_limits.h"

namespace kipp::server {

class Connection;

// What the server shares with its connections; everything but `open` only on the I/O thread.
// The io_context is the first member so that it is destroyed last: handlers it still holds may
// own connections, and a connection's destructor touches nothing here.
struct ServerCore : std::enable_shared_from_this<ServerCore> {
  ServerCore(HttpServerOptions options, HttpHandler request_handler)
      : limits(options.limits), error_format(std::move(options.error_format)), handler(std::move(request_handler)) {}

  boost::asio::io_context ioc;
  const HttpLimits limits;
  const HttpErrorFormat error_format;
  const HttpHandler handler;
  std::atomic<unsigned> open{0};  // connections being served (refused ones are not counted)
  unsigned refusing = 0;          // connections in their 503-and-close
  bool stopping = false;
  bool draining = false;  // answer what is in progress, keep no connection open after it
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> connections;
};

}  // namespace kipp::server
