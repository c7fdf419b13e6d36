// HTTP transfers for `kipp pull`, over libcurl: small GETs into memory, HEAD probes, and body
// downloads streamed into a caller's sink from a given byte (a Range request). It follows
// redirects itself, hop by hop, so that the hub's token goes to the hub's origin only (never to the
// CDN an LFS file redirects to) and a HEAD stops at the hub's own answer; it reports what the hub
// says in headers, and knows nothing of files, hashes or retries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "util/error.h"

namespace kipp::pull {

struct HttpResponse {
  std::string url;                             // where the final response of the redirect chain came from
  long status = 0;                             // of the final response of the redirect chain
  std::map<std::string, std::string> headers;  // of the final response; names in lower case
  std::string linked_etag;                     // X-Linked-Etag from any response of the chain, unquoted
  std::optional<uint64_t> linked_size;         // X-Linked-Size from any response of the chain
  std::string body;                            // get_text, or the first bytes of an error response
  uint64_t body_bytes = 0;                     // body bytes delivered (to the sink or to `body`)
  // Non-empty when the transfer broke off after the request was sent (connection reset, peer
  // closed early, stalled): the caller may resume. Says why, in curl's words.
  std::string dropped;

  std::string header(const std::string& lower_case_name) const;  // "" when absent
  bool success() const { return status >= 200 && status < 300; }
};

// Receives the body of a successful (2xx) final response. begin() runs once, before the first
// byte (also for an empty body); an error from either call aborts the transfer with that error.
class BodySink {
 public:
  virtual ~BodySink() = default;
  virtual Status begin(const HttpResponse& response) = 0;
  virtual Status write(const char* data, size_t size) = 0;
};

// "scheme://host:port" of a URL, lower case, with the scheme's default port filled in; "" if the
// URL does not parse.
std::string url_origin(const std::string& url);

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Requests to `origin` ("https://huggingface.co", scheme://host[:port]) carry
  // `Authorization: Bearer token`; requests anywhere else never do.
  void set_token(std::string origin, std::string token);
  bool sends_token_to(const std::string& url) const { return !token_.empty() && url_origin(url) == token_origin_; }

  // GET with the body kept in memory; a body over max_bytes is an error.
  Result<HttpResponse> get_text(const std::string& url, uint64_t max_bytes);
  // HEAD: status and headers only. Redirects within the same origin are followed; one to another
  // origin is not, and that redirect response itself is returned (the hub's own headers about an
  // LFS file: X-Linked-Etag, X-Linked-Size, Location), as huggingface_hub reads it.
  Result<HttpResponse> head(const std::string& url);
  // GET from byte `from` (a Range request when from > 0); a 2xx body goes to `sink`, any other
  // status is returned with a short excerpt of its body and the sink untouched.
  Result<HttpResponse> download(const std::string& url, uint64_t from, BodySink& sink);

  // Whether the last failed call failed because the host could not be resolved or connected to.
  bool last_error_was_unreachable() const { return unreachable_; }

 private:
  struct Transfer;
  Result<HttpResponse> perform(std::string url, Transfer& transfer);
  Result<HttpResponse> perform_once(const std::string& url, Transfer& transfer);
  void* handle_ = nullptr;  // CURL*, reused so connections stay open between files
  bool unreachable_ = false;
  std::string token_origin_, token_;
};

// `location` (absolute, or relative as a Location header may be) resolved against `base`.
Result<std::string> resolve_url(const std::string& base, const std::string& location);

// The wait a 429 or 503 asks for in Retry-After (seconds, or an HTTP date), if it says.
std::optional<double> retry_after_seconds(const HttpResponse& response);
// The longest Retry-After honoured as given; longer requests wait this long and say so.
inline constexpr double kMaxRetryAfterSeconds = 300.0;

// The wait before the next attempt: the backoff delay, or the server's Retry-After when it asks
// for longer (capped at kMaxRetryAfterSeconds). `why` gains a note when Retry-After decided.
double retry_delay(double backoff, const HttpResponse& response, std::string& why);

// How often a dropped connection or a transient answer is retried before giving up.
struct RetryPolicy {
  int attempts = 5;            // failed attempts in a row that are retried
  double first_delay_s = 0.5;  // doubled after each failed attempt
  double max_delay_s = 8.0;
};

// 408, 429, 502, 503, 504: answers that say "try again shortly".
bool is_transient_status(long status);

// Runs a small request (listing page, probe) again while it is dropped or answered with a
// transient status, waiting as `policy` says, or as long as Retry-After asks when that is longer;
// `on_retry` hears why before each wait.
Result<HttpResponse> with_retries(const RetryPolicy& policy, const std::function<Result<HttpResponse>()>& request,
                                  const std::function<void(const std::string&)>& on_retry);

// "bytes START-END/TOTAL" or "bytes */TOTAL" (TOTAL may be "*"), as sent with 206 and 416.
struct ContentRange {
  std::optional<uint64_t> start, end, total;
};
std::optional<ContentRange> parse_content_range(const std::string& value);

}  // namespace kipp::pull
