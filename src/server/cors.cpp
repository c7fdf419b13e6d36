#include "server/cors.h"

#include <algorithm>
#include <memory>

#include "util/ascii.h"

namespace kipp::server {
namespace {

// The request headers a page may send: what the official OpenAI and Anthropic SDKs set. The
// x-stainless-* family grows with SDK versions, so the preflight's list is answered by rule.
bool allowed_header(std::string name) {
  name = ascii_lower(std::move(name));
  for (const char* exact : {"authorization", "content-type", "accept", "openai-organization", "openai-project",
                            "x-api-key", "anthropic-version", "anthropic-beta"})
    if (name == exact) return true;
  return name.rfind("x-stainless-", 0) == 0;
}

// The requested headers (a comma-separated list) that are allowed, in the same form.
std::string allowed_headers(const std::string& requested) {
  std::string out;
  size_t start = 0;
  while (start <= requested.size()) {
    size_t end = requested.find(',', start);
    if (end == std::string::npos) end = requested.size();
    std::string name = requested.substr(start, end - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty() && allowed_header(name)) out += (out.empty() ? "" : ", ") + name;
    start = end + 1;
  }
  return out;
}

// Adds the allow-origin headers to whatever the wrapped handler answers.
class CorsExchange : public HttpExchange {
 public:
  CorsExchange(std::shared_ptr<HttpExchange> inner, HttpHeaders headers)
      : inner_(std::move(inner)), headers_(std::move(headers)) {}
  void respond(HttpResponse response) override {
    response.headers.insert(response.headers.end(), headers_.begin(), headers_.end());
    inner_->respond(std::move(response));
  }
  void start_stream(int status, std::string content_type, HttpHeaders headers) override {
    headers.insert(headers.end(), headers_.begin(), headers_.end());
    inner_->start_stream(status, std::move(content_type), std::move(headers));
  }
  void write(std::string data) override { inner_->write(std::move(data)); }
  void finish() override { inner_->finish(); }
  void on_disconnect(std::function<void()> callback) override { inner_->on_disconnect(std::move(callback)); }

 private:
  std::shared_ptr<HttpExchange> inner_;
  const HttpHeaders headers_;
};

}  // namespace

HttpHandler with_cors(CorsOptions options, HttpHandler handler) {
  if (options.origins.empty()) return handler;
  const bool any = std::find(options.origins.begin(), options.origins.end(), "*") != options.origins.end();
  return [any, origins = std::move(options.origins),
          handler = std::move(handler)](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    const std::string origin = request.header("Origin");
    const bool allowed = !origin.empty() && (any || std::find(origins.begin(), origins.end(), origin) != origins.end());
    if (!allowed) return handler(std::move(request), std::move(exchange));
    // The origin named back (not "*"), so that credentials work too; Vary tells caches why.
    HttpHeaders headers = {{"Access-Control-Allow-Origin", origin}, {"Vary", "Origin"}};
    if (request.method == "OPTIONS" && !request.header("Access-Control-Request-Method").empty()) {
      HttpResponse preflight;
      preflight.status = 204;
      preflight.content_type.clear();
      preflight.headers = std::move(headers);
      preflight.headers.push_back({"Access-Control-Allow-Methods", "GET, POST, OPTIONS"});
      const std::string headers_allowed = allowed_headers(request.header("Access-Control-Request-Headers"));
      if (!headers_allowed.empty()) preflight.headers.push_back({"Access-Control-Allow-Headers", headers_allowed});
      preflight.headers.push_back({"Access-Control-Max-Age", "600"});
      return exchange->respond(std::move(preflight));
    }
    headers.push_back({"Access-Control-Expose-Headers", "x-kipp-unenforced, Retry-After"});
    handler(std::move(request), std::make_shared<CorsExchange>(std::move(exchange), std::move(headers)));
  };
}

}  // namespace kipp::server
