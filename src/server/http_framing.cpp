// Heads are built as Beast messages and rendered by its serializer; chunks by make_chunk.
#include "server/http_framing.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

namespace kipp::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

bool is_token_char(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// Beast writes names and values as given; one with a CR, LF or NUL would end the head early.
bool valid_header(const std::string& name, const std::string& value) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (!is_token_char(c)) return false;
  for (unsigned char c : value)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

bool reserved_header(const std::string& name) {
  for (const char* owned : {"content-length", "transfer-encoding", "connection", "server"})
    if (beast::iequals(name, owned)) return true;
  return false;
}

// Responses to 1xx, 204 and 304 carry no body and no Content-Length.
bool status_has_body(int status) { return status >= 200 && status != 204 && status != 304; }

enum class Framing { length, chunked, until_close };

// Everything but the payload framing's value, in the order clients have always seen it.
template <class Body>
void fill_head(http::response<Body>& message, int status, const std::string& content_type, Framing framing,
               size_t length, const HttpHeaders& headers, bool keep_alive, bool no_cache) {
  message.version(11);
  message.result(static_cast<unsigned>(status));
  if (http::int_to_status(static_cast<unsigned>(status)) == http::status::unknown) message.reason("Unknown");
  message.set(http::field::server, "kipp");
  if (!content_type.empty() && valid_header("Content-Type", content_type))
    message.set(http::field::content_type, content_type);
  if (framing == Framing::chunked) {
    message.chunked(true);
  } else if (framing == Framing::length && status_has_body(status)) {
    message.content_length(length);
  }
  // Named either way: an HTTP/1.0 client keeps the connection only when told keep-alive.
  message.set(http::field::connection, keep_alive ? "keep-alive" : "close");
  bool has_cache_control = false;
  for (const auto& [name, value] : headers) {
    if (!valid_header(name, value) || reserved_header(name)) continue;
    if (beast::iequals(name, "content-type") && !content_type.empty()) continue;
    if (beast::iequals(name, "cache-control")) has_cache_control = true;
    message.insert(name, value);
  }
  if (no_cache && !has_cache_control) message.set(http::field::cache_control, "no-cache");
}

// What the serializer writes for `message`: the head and, unless `head_only`, the body.
template <class Body>
std::string render(http::response<Body>& message, bool head_only) {
  http::response_serializer<Body> serializer(message);
  serializer.split(head_only);
  std::string out;
  beast::error_code ec;
  while (!ec && !(head_only ? serializer.is_header_done() : serializer.is_done())) {
    serializer.next(ec, [&](beast::error_code&, const auto& buffers) {
      const std::string piece = beast::buffers_to_string(buffers);
      out += piece;
      serializer.consume(piece.size());
    });
  }
  return out;
}

}  // namespace

std::string whole_response(HttpResponse response, bool keep_alive, bool head_only) {
  const int status = response.status < 100 || response.status > 999 ? 500 : response.status;
  http::response<http::string_body> message;
  fill_head(message, status, response.content_type, Framing::length, response.body.size(), response.headers, keep_alive,
            false);
  if (status_has_body(status) && !head_only) message.body() = std::move(response.body);
  return render(message, false);
}

std::string stream_head(int status, const std::string& content_type, const HttpHeaders& headers, bool chunked,
                        bool keep_alive) {
  if (status < 200 || status > 999) status = 500;
  http::response<http::empty_body> message;
  fill_head(message, status, content_type, chunked ? Framing::chunked : Framing::until_close, 0, headers, keep_alive,
            true);
  return render(message, true);
}

std::string framed_chunk(std::string_view data) {
  return beast::buffers_to_string(http::make_chunk(boost::asio::const_buffer(data.data(), data.size())));
}

std::string last_chunk() { return beast::buffers_to_string(http::make_chunk_last()); }

std::string continue_response() {
  http::response<http::empty_body> interim{http::status::continue_, 11};
  return render(interim, false);
}

}  // namespace kipp::server
