// Cross-origin access for browser pages (`kipp serve --cors-origin ORIGIN`, repeatable, or `*`).
// Off by default, on purpose: a server on localhost without an API key answers any program on
// the machine, and with CORS on it would also answer any web page the user opens, which could
// then read the answers or spend the machine on its own prompts. Turn it on for the origins of
// the front ends you use.
//
// The policy wraps the HTTP handler: a preflight (OPTIONS with Access-Control-Request-Method)
// from an allowed origin is answered 204 with the methods and the headers the OpenAI clients
// send (Authorization, Content-Type, the x-stainless-* family); every other response to an
// allowed origin, streams included, carries Access-Control-Allow-Origin. Requests from other
// origins are served as before, without the headers, so the browser keeps their answers from
// the page.
#pragma once

#include <string>
#include <vector>

#include "server/http_exchange.h"

namespace kipp::server {

struct CorsOptions {
  std::vector<std::string> origins;  // exact origins ("http://localhost:5173"), or "*" for any
};

// `handler` with the policy around it; `handler` itself when no origin is allowed.
HttpHandler with_cors(CorsOptions options, HttpHandler handler);

}  // namespace kipp::server
