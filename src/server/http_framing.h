// The bytes a connection sends, every status line, field and chunk framed by Beast's serializer
// (never by hand). Each piece is rendered to bytes here, so that a connection keeps one ordered
// queue of byte pieces, gathered into one write under one write deadline, whatever mix of
// heads, bodies and chunks a handler produces. What a handler asks for is checked here too: a
// header that could break the framing, or that the layer owns (Content-Length,
// Transfer-Encoding, Connection, Server), is left out.
#pragma once

#include <string>
#include <string_view>

#include "server/http_exchange.h"

namespace kipp::server {

// A whole response, Content-Length framed. A HEAD request's answer (`head_only`) has the same
// head and no body; 1xx, 204 and 304 never carry one.
std::string whole_response(HttpResponse response, bool keep_alive, bool head_only);

// The head of a streamed response: chunked, or, for an HTTP/1.0 client, unframed (ended by
// closing the connection). Streams are marked Cache-Control: no-cache unless the handler says
// otherwise, so that no proxy holds events back.
std::string stream_head(int status, const std::string& content_type, const HttpHeaders& headers, bool chunked,
                        bool keep_alive);

std::string framed_chunk(std::string_view data);  // one chunk of a chunked body; `data` not empty
std::string last_chunk();                         // the chunk that ends a chunked body
std::string continue_response();                  // the interim answer to "Expect: 100-continue"

}  // namespace kipp::server
