// What the HTTP layer and the application built on it say to each other: a whole request in, a
// reply channel out (a whole response, or a stream of chunks), a disconnect reported back, and
// the errors the layer answers by itself, whose body the application shapes. Nothing here
// knows about JSON, models or any API's error format.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kipp::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = {};  // "GET", "POST", ...
  std::string target = {};  // as sent, query included
  std::string path = {};    // target without the query
  HttpHeaders headers = {};
  std::string body = {};
  // The value of a header (name compared without case), or "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body = {};
  HttpHeaders headers = {};  // extra headers, e.g. Retry-After
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

// An error the HTTP layer answers without the handler: a request it cannot read (400, 408, 413,
// 431), a connection beyond the limit (503), a handler that threw or dropped its exchange (500).
struct HttpError {
  int status = 500;
  std::string message = {};  // one line saying what was wrong, with the limit when one was passed
  std::string code = {};     // a stable name for programs ("request_timeout"), "" when none
  std::string path = {};     // the request's path when the layer read that far ("" for a refused connection)
};

// Turns such an error into the response the application's clients expect to read (the API layer
// gives each route's own error shape, by the path). The layer sends it with the error's status
// and adds only what HTTP itself needs (Retry-After, Connection: close).
using HttpErrorFormat = std::function<HttpResponse(const HttpError& error)>;

}  // namespace kipp::server
