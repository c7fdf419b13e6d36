// What the HTTP layer enforces on every connection (the limits), and the options a server is
// created with. Apart from http_server.h so that the connections (server_core.h) read them
// without seeing the server.
#pragma once

#include <chrono>
#include <cstddef>

#include "server/http_exchange.h"

namespace kipp::server {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;               // request line + headers; beyond: 431
  size_t max_body_bytes = 8 * 1024 * 1024;           // beyond: 413
  unsigned max_connections = 256;                    // open at once; beyond: 503 + Retry-After, closed
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

}  // namespace kipp::server
