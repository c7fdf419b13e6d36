#include "pull/http_fetch.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

#include "util/ascii.h"

namespace kipp::pull {
namespace {

constexpr long kConnectTimeoutSeconds = 20;
constexpr long kStallSeconds = 60;  // a transfer under 1 byte/s this long counts as dropped
constexpr long kSmallRequestTimeoutSeconds = 120;
constexpr size_t kErrorBodyBytes = 4096;  // how much of an error response body we keep
constexpr int kMaxRedirects = 10;

std::string trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

// An ETag value without the weak marker and the quotes: W/"abc" -> abc.
std::string unquote_etag(std::string value) {
  value = trim(value);
  if (value.rfind("W/", 0) == 0) value = value.substr(2);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  return value;
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// Transport failures after which resuming is worth a try; everything else is final.
bool is_interruption(CURLcode code) {
  switch (code) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
  }
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_case_name) const {
  auto it = headers.find(lower_case_name);
  return it == headers.end() ? std::string() : it->second;
}

std::optional<ContentRange> parse_content_range(const std::string& value) {
  std::string text = trim(value);
  if (text.rfind("bytes ", 0) != 0) return std::nullopt;
  text = trim(std::string_view(text).substr(6));
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  ContentRange range;
  const std::string span = text.substr(0, slash), total = text.substr(slash + 1);
  if (total != "*") {
    range.total = parse_uint(total);
    if (!range.total) return std::nullopt;
  }
  if (span != "*") {
    const size_t dash = span.find('-');
    if (dash == std::string::npos) return std::nullopt;
    range.start = parse_uint(std::string_view(span).substr(0, dash));
    range.end = parse_uint(std::string_view(span).substr(dash + 1));
    if (!range.start || !range.end || *range.end < *range.start) return std::nullopt;
  }
  return range;
}

struct HttpClient::Transfer {
  enum class Kind { text, head, sink };
  Kind kind = Kind::text;
  uint64_t max_bytes = 0;
  std::string range;  // "FROM-" for a Range request; empty for the whole body
  BodySink* sink = nullptr;
  HttpResponse response;
  bool sink_started = false;
  std::optional<Error> sink_error;
  bool too_large = false;

  bool start_sink() {
    sink_started = true;
    Status started = sink->begin(response);
    if (!started) sink_error = started.error();
    return started.ok();
  }

  static size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto& self = *static_cast<Transfer*>(user);
    const size_t bytes = size * count;
    const std::string line = trim(std::string_view(data, bytes));
    if (line.rfind("HTTP/", 0) == 0) {  // a new response of the redirect chain begins
      self.response.headers.clear();
      self.response.body.clear();
      self.response.body_bytes = 0;
      const size_t space = line.find(' ');
      std::optional<uint64_t> status;
      if (space != std::string::npos) status = parse_uint(std::string_view(line).substr(space + 1, 3));
      self.response.status = status ? static_cast<long>(*status) : 0;
      return bytes;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return bytes;
    const std::string name = ascii_lower(trim(std::string_view(line).substr(0, colon)));
    const std::string value = trim(std::string_view(line).substr(colon + 1));
    self.response.headers[name] = value;
    if (name == "x-linked-etag") self.response.linked_etag = unquote_etag(value);
    if (name == "x-linked-size") self.response.linked_size = parse_uint(value);
    return bytes;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto& self = *static_cast<Transfer*>(user);
    const size_t bytes = size * count;
    HttpResponse& response = self.response;
    if (!response.success() || self.kind != Kind::sink) {
      if (self.kind == Kind::text && response.success() && response.body.size() + bytes > self.max_bytes) {
        self.too_large = true;
        return 0;  // aborts the transfer
      }
      const size_t keep = response.success()
                              ? bytes
                              : std::min(bytes, kErrorBodyBytes - std::min(kErrorBodyBytes, response.body.size()));
      response.body.append(data, keep);
      response.body_bytes += bytes;
      return bytes;
    }
    if (!self.sink_started && !self.start_sink()) return 0;
    Status written = self.sink->write(data, bytes);
    if (!written) {
      self.sink_error = written.error();
      return 0;
    }
    response.body_bytes += bytes;
    return bytes;
  }
};

HttpClient::HttpClient() {
  global_init();
  handle_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (handle_) curl_easy_cleanup(static_cast<CURL*>(handle_));
}

void HttpClient::set_token(std::string origin, std::string token) {
  token_origin_ = std::move(origin);
  token_ = std::move(token);
}

Result<HttpResponse> HttpClient::perform(std::string url, Transfer& transfer) {
  std::string linked_etag;
  std::optional<uint64_t> linked_size;
  for (int hop = 0;; ++hop) {
    transfer.response = HttpResponse{};
    KIPP_ASSIGN(HttpResponse response, perform_once(url, transfer));
    if (linked_etag.empty()) linked_etag = response.linked_etag;  // the hub's, on the first hop
    if (!linked_size) linked_size = response.linked_size;
    response.linked_etag = linked_etag;
    response.linked_size = linked_size;
    const std::string location = response.header("location");
    if (!response.dropped.empty() || response.status < 300 || response.status >= 400 || location.empty())
      return response;
    KIPP_ASSIGN(std::string next, resolve_url(url, location));
    if (transfer.kind == Transfer::Kind::head && url_origin(next) != url_origin(url)) return response;
    if (hop == kMaxRedirects) return fail(url, ": more than ", kMaxRedirects, " redirects");
    url = std::move(next);
  }
}

Result<HttpResponse> HttpClient::perform_once(const std::string& url, Transfer& transfer) {
  CURL* curl = static_cast<CURL*>(handle_);
  if (!curl) return fail("cannot initialise libcurl");
  curl_easy_reset(curl);  // keeps the connection and DNS caches
  char error_text[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  // CURLOPT_NOSIGNAL stays off: this is a single-threaded CLI, and with it off libcurl keeps
  // SIGPIPE from ending the process when a peer closes a connection mid-write.
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // perform() follows, hop by hop
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "kipp/0.1");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutSeconds);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kStallSeconds);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (transfer.kind != Transfer::Kind::sink) curl_easy_setopt(curl, CURLOPT_TIMEOUT, kSmallRequestTimeoutSeconds);
  if (transfer.kind == Transfer::Kind::head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (transfer.kind == Transfer::Kind::text) curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  // CURLOPT_RANGE (not RESUME_FROM): curl sends the header and leaves judging the answer to us.
  if (!transfer.range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, transfer.range.c_str());
  curl_slist* headers = nullptr;
  if (sends_token_to(url)) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + token_).c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  }

  const CURLcode code = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  unreachable_ =
      code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_COULDNT_CONNECT;
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // error_text goes out of scope
  transfer.response.url = url;
  if (transfer.sink_error) return *transfer.sink_error;
  if (transfer.too_large) return fail(url, ": response larger than ", transfer.max_bytes, " bytes");
  const std::string why = error_text[0] ? std::string(error_text) : std::string(curl_easy_strerror(code));
  if (code == CURLE_OK) {
    if (transfer.kind == Transfer::Kind::sink && transfer.response.success() && !transfer.sink_started &&
        !transfer.start_sink())
      return *transfer.sink_error;
    return std::move(transfer.response);
  }
  if (is_interruption(code)) {
    transfer.response.dropped = why;
    return std::move(transfer.response);
  }
  return fail(url, ": ", why);
}

Result<HttpResponse> HttpClient::get_text(const std::string& url, uint64_t max_bytes) {
  Transfer transfer;
  transfer.kind = Transfer::Kind::text;
  transfer.max_bytes = max_bytes;
  return perform(url, transfer);
}

Result<HttpResponse> HttpClient::head(const std::string& url) {
  Transfer transfer;
  transfer.kind = Transfer::Kind::head;
  return perform(url, transfer);
}

Result<HttpResponse> HttpClient::download(const std::string& url, uint64_t from, BodySink& sink) {
  Transfer transfer;
  transfer.kind = Transfer::Kind::sink;
  transfer.sink = &sink;
  if (from > 0) transfer.range = std::to_string(from) + "-";
  return perform(url, transfer);
}

std::string url_origin(const std::string& url) {
  CURLU* handle = curl_url();
  std::string origin;
  char *scheme = nullptr, *host = nullptr, *port = nullptr;
  if (handle && curl_url_set(handle, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(handle, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(handle, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(handle, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
    origin = ascii_lower(std::string(scheme) + "://" + host + ":" + port);
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(handle);
  return origin;
}

Result<std::string> resolve_url(const std::string& base, const std::string& location) {
  CURLU* handle = curl_url();
  char* resolved = nullptr;
  // Setting a second, relative URL on a handle resolves it against the first.
  const bool ok = handle && curl_url_set(handle, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
                  curl_url_set(handle, CURLUPART_URL, location.c_str(), 0) == CURLUE_OK &&
                  curl_url_get(handle, CURLUPART_URL, &resolved, 0) == CURLUE_OK;
  std::string out = ok ? std::string(resolved) : std::string();
  curl_free(resolved);
  curl_url_cleanup(handle);
  if (!ok) return fail(base, ": the server redirected to \"", location, "\", which is not a URL");
  const std::string scheme = out.substr(0, out.find(':'));
  if (scheme != "http" && scheme != "https") return fail(base, ": the server redirected to a non-HTTP URL ", out);
  return out;
}

std::optional<double> retry_after_seconds(const HttpResponse& response) {
  const std::string value = trim(response.header("retry-after"));
  if (value.empty()) return std::nullopt;
  if (auto seconds = parse_uint(value)) return double(*seconds);
  const time_t when = curl_getdate(value.c_str(), nullptr);  // an HTTP date
  if (when < 0) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

double retry_delay(double backoff, const HttpResponse& response, std::string& why) {
  const std::optional<double> asked = retry_after_seconds(response);
  if (!asked || *asked <= backoff) return backoff;
  char text[96];
  if (*asked > kMaxRetryAfterSeconds) {
    std::snprintf(text, sizeof text, ", which asks to wait %.0f s (Retry-After); waiting %.0f s", *asked,
                  kMaxRetryAfterSeconds);
    why += text;
    return kMaxRetryAfterSeconds;
  }
  std::snprintf(text, sizeof text, "; waiting %.0f s as it asks (Retry-After)", *asked);
  why += text;
  return *asked;
}

bool is_transient_status(long status) {
  return status == 408 || status == 429 || status == 502 || status == 503 || status == 504;
}

Result<HttpResponse> with_retries(const RetryPolicy& policy, const std::function<Result<HttpResponse>()>& request,
                                  const std::function<void(const std::string&)>& on_retry) {
  double delay = policy.first_delay_s;
  for (int attempt = 1;; ++attempt) {
    Result<HttpResponse> response = request();
    if (!response) return response;
    std::string why;
    if (!response->dropped.empty()) why = "connection dropped (" + response->dropped + ")";
    else if (is_transient_status(response->status))
      why = "the server answered HTTP " + std::to_string(response->status);
    if (why.empty() || attempt > policy.attempts) return response;
    const double wait = retry_delay(delay, *response, why);
    if (on_retry)
      on_retry(why + "; retrying (" + std::to_string(attempt) + " of " + std::to_string(policy.attempts) + ")");
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    delay = std::min(delay * 2, policy.max_delay_s);
  }
}

}  // namespace kipp::pull
