// The HTTP layer over real sockets: a server on 127.0.0.1 (an ephemeral port) running on its
// own thread, and plain POSIX clients that never wait longer than a few seconds for anything.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/api_response.h"

namespace kipp::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Long enough never to fire by accident on a loaded machine; the tests of a limit shorten it.
HttpLimits test_limits() {
  HttpLimits limits;
  limits.max_header_bytes = 4096;
  limits.max_body_bytes = 64 * 1024;
  limits.max_connections = 64;
  limits.request_timeout = 10s;
  limits.idle_timeout = 10s;
  limits.write_timeout = 10s;
  return limits;
}

template <class Pred>
bool wait_until(Pred pred, milliseconds timeout = 3000ms) {
  auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return pred();
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

long elapsed_ms(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// ---------------------------------------------------------------------------------------------
// Client side

struct Reply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                 // decoded
  std::vector<std::string> chunks;  // when chunked, each chunk as framed
  bool chunked = false;

  std::string header(const std::string& name) const {
    for (const auto& [key, value] : headers)
      if (lower(key) == lower(name)) return value;
    return "";
  }
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

enum class Parse { kIncomplete, kComplete, kBad };

// One response (1xx interim responses skipped) from the front of `buf`; `eof`: nothing more
// will arrive.
Parse parse_reply(const std::string& buf, bool eof, Reply& out, size_t& used) {
  size_t pos = 0;
  for (;;) {
    size_t end = buf.find("\r\n\r\n", pos);
    if (end == std::string::npos) return eof ? Parse::kBad : Parse::kIncomplete;
    std::string head = buf.substr(pos, end - pos);
    if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) return Parse::kBad;
    Reply reply;
    reply.status = std::atoi(head.c_str() + 9);
    size_t line = head.find("\r\n");
    while (line != std::string::npos) {
      size_t next = head.find("\r\n", line + 2);
      std::string field = head.substr(line + 2, next == std::string::npos ? std::string::npos : next - line - 2);
      size_t colon = field.find(':');
      if (colon == std::string::npos) return Parse::kBad;
      std::string value = field.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      reply.headers.emplace_back(field.substr(0, colon), value);
      line = next;
    }
    size_t at = end + 4;
    if (reply.status >= 100 && reply.status < 200) {
      pos = at;
      continue;
    }
    if (lower(reply.header("Transfer-Encoding")) == "chunked") {
      reply.chunked = true;
      for (;;) {
        size_t crlf = buf.find("\r\n", at);
        if (crlf == std::string::npos) return eof ? Parse::kBad : Parse::kIncomplete;
        char* stop = nullptr;
        std::string size_text = buf.substr(at, crlf - at);
        unsigned long size = std::strtoul(size_text.c_str(), &stop, 16);
        if (size_text.empty() || *stop != '\0') return Parse::kBad;
        at = crlf + 2;
        if (size == 0) {
          if (buf.size() < at + 2) return eof ? Parse::kBad : Parse::kIncomplete;
          if (buf.compare(at, 2, "\r\n") != 0) return Parse::kBad;
          used = at + 2;
          out = std::move(reply);
          return Parse::kComplete;
        }
        if (buf.size() < at + size + 2) return eof ? Parse::kBad : Parse::kIncomplete;
        reply.chunks.push_back(buf.substr(at, size));
        reply.body += reply.chunks.back();
        at += size + 2;
      }
    }
    std::string length = reply.header("Content-Length");
    if (!length.empty()) {
      size_t n = std::strtoull(length.c_str(), nullptr, 10);
      if (buf.size() < at + n) return eof ? Parse::kBad : Parse::kIncomplete;
      reply.body = buf.substr(at, n);
      used = at + n;
      out = std::move(reply);
      return Parse::kComplete;
    }
    if (!eof) return Parse::kIncomplete;
    reply.body = buf.substr(at);
    used = buf.size();
    out = std::move(reply);
    return Parse::kComplete;
  }
}

class Conn {
 public:
  // `rcvbuf` > 0 shrinks the receive buffer (before connecting, so the window stays small).
  explicit Conn(uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
  }
  ~Conn() { close(); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool eof() const { return eof_; }
  const std::string& raw() const { return buf_; }

  bool send(std::string_view data) {
    while (!data.empty()) {
      if (fd_ < 0) return false;
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // One whole response, or nothing when the connection closes first or the time runs out.
  std::optional<Reply> read_reply(milliseconds timeout = 3000ms) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      Reply reply;
      size_t used = 0;
      Parse p = parse_reply(buf_, eof_, reply, used);
      if (p == Parse::kComplete) {
        buf_.erase(0, used);
        return reply;
      }
      if (p == Parse::kBad || eof_) return std::nullopt;
      if (!fill(deadline)) return std::nullopt;
    }
  }

  // Whether the received bytes come to contain `needle` within the time.
  bool read_until(std::string_view needle, milliseconds timeout = 3000ms) {
    auto deadline = Clock::now() + timeout;
    while (buf_.find(needle) == std::string::npos) {
      if (eof_ || !fill(deadline)) return false;
    }
    return true;
  }

  // Whether the server closes the connection (end of stream or reset) within the time.
  bool closed_within(milliseconds timeout = 3000ms) {
    auto deadline = Clock::now() + timeout;
    while (!eof_)
      if (!fill(deadline) && !eof_) return false;
    return true;
  }

  // Reads what is there; false on timeout (true with eof() set at end of stream).
  bool fill(Clock::time_point deadline) {
    if (fd_ < 0) {
      eof_ = true;
      return false;
    }
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      if (left < 0) return false;
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      char tmp[65536];
      ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n > 0) {
        buf_.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      eof_ = true;  // end of stream, or reset
      return true;
    }
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

std::string get(const std::string& target, const std::string& extra = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

std::string post(const std::string& target, const std::string& body, const std::string& extra = "") {
  return "POST " + target +
         " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + extra + "\r\n" + body;
}

// Sends one request on `c` and reads its response.
std::optional<Reply> ask(Conn& c, const std::string& request) {
  if (!c.connected() || !c.send(request)) return std::nullopt;
  return c.read_reply();
}

// The same on a fresh connection.
std::optional<Reply> fetch(uint16_t port, const std::string& request) {
  Conn c(port);
  return ask(c, request);
}

// ---------------------------------------------------------------------------------------------
// Server side

// Answers with what it was sent.
void echo(HttpRequest request, const std::shared_ptr<HttpExchange>& exchange) {
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, value] : request.headers) headers.push_back({name, value});
  nlohmann::json out = {{"method", request.method}, {"target", request.target}, {"path", request.path},
                        {"body", request.body},     {"headers", headers},       {"x_test", request.header("x-test")}};
  HttpResponse response;
  response.body = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  response.headers = {{"X-Echo", "1"}};
  exchange->respond(std::move(response));
}

// The options `kipp serve` passes: the API layer shapes the layer's own errors.
HttpServerOptions serve_options(const HttpLimits& limits) {
  return {.limits = limits, .error_format = http_error_response};
}

class TestServer {
 public:
  TestServer(const HttpLimits& limits, HttpHandler handler) : TestServer(serve_options(limits), std::move(handler)) {}
  TestServer(HttpServerOptions options, HttpHandler handler) {
    auto created = HttpServer::create("127.0.0.1", 0, std::move(options), std::move(handler));
    if (!created) {
      error_ = created.error().message;
      return;
    }
    server_ = std::move(created).value();
    done_ = returned_.get_future();
    thread_ = std::thread([this] {
      server_->run();
      returned_.set_value();
    });
  }
  ~TestServer() { stop_and_wait(10s); }

  bool ok() const { return server_ != nullptr; }
  const std::string& error() const { return error_; }
  uint16_t port() const { return server_->port(); }
  HttpServer& server() { return *server_; }

  // stop() from this thread; whether run() returned within the time.
  bool stop_and_wait(milliseconds timeout) {
    if (!thread_.joinable()) return true;
    server_->stop();
    bool returned = done_.wait_for(timeout) == std::future_status::ready;
    if (returned) thread_.join();
    return returned;
  }

 private:
  std::unique_ptr<HttpServer> server_;
  std::string error_;
  std::promise<void> returned_;
  std::future<void> done_;
  std::thread thread_;
};

// Threads started by handlers, joined before the test ends.
class Workers {
 public:
  ~Workers() { join(); }
  void spawn(std::function<void()> work) {
    std::lock_guard lock(mutex_);
    threads_.emplace_back(std::move(work));
  }
  void join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::mutex mutex_;
  std::vector<std::thread> threads_;
};

// Exchanges a handler kept without answering, and how often their disconnect callbacks ran.
struct Held {
  std::mutex mutex;
  std::vector<std::shared_ptr<HttpExchange>> exchanges;
  std::atomic<int> handled{0};
  std::atomic<int> gone{0};

  HttpHandler handler() {
    return [this](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
      exchange->on_disconnect([this] { ++gone; });
      {
        std::lock_guard lock(mutex);
        exchanges.push_back(exchange);
      }
      ++handled;
    };
  }
  std::shared_ptr<HttpExchange> first() {
    std::lock_guard lock(mutex);
    return exchanges.empty() ? nullptr : exchanges.front();
  }
};

void expect_error_body(const Reply& reply, const std::string& type, const std::string& mentions) {
  auto body = reply.json();
  ASSERT_TRUE(body.is_object()) << reply.body;
  ASSERT_TRUE(body.contains("error")) << reply.body;
  const auto& error = body["error"];
  EXPECT_EQ(error.value("type", ""), type) << reply.body;
  EXPECT_TRUE(error.contains("param")) << reply.body;
  EXPECT_TRUE(error.contains("code")) << reply.body;
  EXPECT_NE(error.value("message", "").find(mentions), std::string::npos) << reply.body;
  EXPECT_EQ(reply.header("Content-Type"), "application/json");
  EXPECT_EQ(lower(reply.header("Connection")), "close");
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(HttpServer, GetAndPostRoundTripOnOneConnection) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.connected());

  ASSERT_TRUE(c.send(get("/v1/models?limit=2&x=y", "X-Test: abc\r\nX-Other: 1\r\n")));
  auto first = c.read_reply();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->header("Server"), "kipp");
  EXPECT_EQ(first->header("X-Echo"), "1");
  EXPECT_EQ(first->header("Content-Type"), "application/json");
  auto j = first->json();
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/v1/models");
  EXPECT_EQ(j["target"], "/v1/models?limit=2&x=y");
  EXPECT_EQ(j["x_test"], "abc");
  ASSERT_EQ(j["headers"].size(), 3u);  // in the order sent
  EXPECT_EQ(j["headers"][0][0], "Host");
  EXPECT_EQ(j["headers"][1][0], "X-Test");
  EXPECT_EQ(j["headers"][2][0], "X-Other");

  // The same connection, kept alive.
  ASSERT_TRUE(c.send(post("/v1/chat/completions", R"({"messages":[]})")));
  auto second = c.read_reply();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  j = second->json();
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/v1/chat/completions");
  EXPECT_EQ(j["body"], R"({"messages":[]})");
  EXPECT_FALSE(c.eof());
  EXPECT_EQ(srv.server().open_connections(), 1u);
}

TEST(HttpServer, ConnectionCloseAndHttp10AreHonoured) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  {
    Conn c(srv.port());
    ASSERT_TRUE(c.send(get("/bye", "Connection: close\r\n")));
    auto reply = c.read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(lower(reply->header("Connection")), "close");
    EXPECT_TRUE(c.closed_within());
  }
  {
    Conn c(srv.port());
    ASSERT_TRUE(c.send("GET /old HTTP/1.0\r\n\r\n"));
    auto reply = c.read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(reply->json()["path"], "/old");
    EXPECT_TRUE(c.closed_within());
  }
  {
    // HTTP/1.0 asking for keep-alive gets it.
    Conn c(srv.port());
    ASSERT_TRUE(c.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto reply = c.read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ(lower(reply->header("Connection")), "keep-alive");
    ASSERT_TRUE(c.send("GET /b HTTP/1.0\r\n\r\n"));
    reply = c.read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->json()["path"], "/b");
    EXPECT_TRUE(c.closed_within());
  }
}

TEST(HttpServer, ChunkedRequestBodyIsDecoded) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
             "5\r\nhello\r\n"
             "6;ext=1\r\n world\r\n"
             "0\r\n\r\n"));
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->json()["body"], "hello world");
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send(get("/one") + post("/two", "2") + get("/three")));
  for (const char* path : {"/one", "/two", "/three"}) {
    auto reply = c.read_reply();
    ASSERT_TRUE(reply) << path;
    EXPECT_EQ(reply->json()["path"], path);
  }
}

TEST(HttpServer, ExpectContinueGetsInterimResponse) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_TRUE(c.read_until("HTTP/1.1 100 Continue\r\n\r\n"));
  ASSERT_TRUE(c.send("data"));
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->json()["body"], "data");
}

TEST(HttpServer, HandlerFailuresAnswer500) {
  TestServer srv(test_limits(), [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.path == "/throw") throw std::runtime_error("boom");
    if (request.path == "/drop") return;  // the exchange is dropped unanswered
    echo(std::move(request), exchange);
  });
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send(get("/throw")));
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 500);
  EXPECT_EQ(reply->json()["error"]["type"], "server_error");
  EXPECT_NE(reply->body.find("boom"), std::string::npos);

  ASSERT_TRUE(c.send(get("/drop")));
  reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 500);

  ASSERT_TRUE(c.send(get("/fine")));
  reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
}

TEST(HttpServer, HeadsAreTheServersToFrame) {
  TestServer srv(test_limits(), [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    HttpResponse response;
    response.status = request.path == "/odd" ? 477 : 200;
    response.content_type = "text/plain";
    response.body = "body";
    // Framing headers are the server's; one that would end the head early is never sent.
    response.headers = {{"Content-Length", "999"}, {"Transfer-Encoding", "gzip"},     {"Connection", "close"},
                        {"Server", "other"},       {"X-Split", "a\r\nInjected: yes"}, {"Bad Name", "x"},
                        {"X-Fine", "ok"}};
    exchange->respond(std::move(response));
  });
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  const auto reply = ask(c, get("/plain"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->body, "body");
  EXPECT_EQ(reply->header("Content-Length"), "4");
  EXPECT_EQ(reply->header("Server"), "kipp");
  EXPECT_EQ(lower(reply->header("Connection")), "keep-alive");
  EXPECT_EQ(reply->header("X-Fine"), "ok");
  EXPECT_EQ(reply->header("Transfer-Encoding"), "");
  EXPECT_EQ(reply->header("Injected"), "");
  EXPECT_EQ(reply->headers.size(), 5u);  // Server, Content-Type, Content-Length, Connection, X-Fine

  // HEAD: the same head, no body; the next response follows at once. An unknown status keeps
  // its number.
  ASSERT_TRUE(c.send("HEAD /plain HTTP/1.1\r\nHost: t\r\n\r\n" + get("/odd")));
  ASSERT_TRUE(c.read_until("HTTP/1.1 477 Unknown\r\n")) << testing::PrintToString(c.raw());
  const std::string& raw = c.raw();
  const size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  EXPECT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << raw;
  EXPECT_NE(raw.substr(0, head_end).find("\r\nContent-Length: 4\r\n"), std::string::npos) << raw;
  EXPECT_EQ(raw.compare(head_end + 4, 12, "HTTP/1.1 477"), 0) << raw;
}

// A malformed request's 400, in the shape the server's error format gives it, and the close.
void expect_malformed_answer(uint16_t port, const std::string& content_type, const std::string& starts_with) {
  auto reply = fetch(port, "GARBAGE\r\n\r\n");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 400);
  EXPECT_EQ(reply->header("Content-Type"), content_type);
  EXPECT_EQ(reply->body.rfind(starts_with, 0), 0u) << reply->body;
  EXPECT_EQ(lower(reply->header("Connection")), "close");
}

TEST(HttpServer, TheErrorFormatShapesTheLayersOwnErrors) {
  auto options = serve_options(test_limits());
  options.limits.max_connections = 1;
  options.error_format = [](const HttpError& error) {
    HttpResponse response;
    response.status = 299;  // the error's status wins
    response.content_type = "application/x-test";
    response.body = error.code + "|" + error.path + "|" + error.message;
    return response;
  };
  TestServer srv(std::move(options),
                 [](HttpRequest, std::shared_ptr<HttpExchange>) { throw std::runtime_error("boom"); });
  ASSERT_TRUE(srv.ok()) << srv.error();
  expect_malformed_answer(srv.port(), "application/x-test", "bad_request||malformed HTTP request");

  ASSERT_TRUE(wait_until([&] { return srv.server().open_connections() == 0; }));  // the 400's connection
  Conn held(srv.port());
  const auto failed = ask(held, get("/throws?x=1"));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  EXPECT_EQ(failed->body, "|/throws|the request handler failed: boom");
  // `held` is the one connection allowed: the next is refused, Retry-After added by the layer.
  auto refused = fetch(srv.port(), get("/"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->header("Retry-After"), "1");
  EXPECT_EQ(refused->body.rfind("too_many_connections||", 0), 0u) << refused->body;
}

// kipp serve's format: under /v1/messages the layer's own errors take Anthropic's shape, with
// Anthropic's type for the status; elsewhere OpenAI's.
TEST(HttpServer, TheLayersErrorsOnMessagesTakeAnthropicsShape) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  const auto anthropic_error = [](const Reply& reply, const std::string& type, const std::string& mentions) {
    const auto body = reply.json();
    ASSERT_TRUE(body.is_object()) << reply.body;
    EXPECT_EQ(body.value("type", ""), "error") << reply.body;
    EXPECT_EQ(body["error"].value("type", ""), type) << reply.body;
    EXPECT_NE(body["error"].value("message", "").find(mentions), std::string::npos) << reply.body;
    EXPECT_FALSE(body["error"].contains("param")) << reply.body;
    EXPECT_EQ(reply.header("Content-Type"), "application/json");
  };
  // One request on a connection of its own (the layer closes it after an error), and its answer.
  const auto answer = [&](const std::string& request, int status) {
    Conn c(srv.port());
    c.send(request);
    auto reply = c.read_reply();
    EXPECT_TRUE(reply && reply->status == status) << request.substr(0, 40);
    return reply ? *reply : Reply{};
  };
  const std::string too_long = "Host: t\r\nContent-Length: 100000\r\n\r\n";
  anthropic_error(answer("POST /v1/messages HTTP/1.1\r\n" + too_long, 413), "request_too_large", "65536");
  anthropic_error(answer(get("/v1/messages/count_tokens?beta=true", "X-Big: " + std::string(8000, 'a') + "\r\n"), 431),
                  "invalid_request_error", "4096");
  expect_error_body(answer("POST /v1/chat/completions HTTP/1.1\r\n" + too_long, 413), "invalid_request_error", "65536");
}

TEST(HttpServer, WithoutAnErrorFormatTheLayersErrorsArePlainText) {
  TestServer srv(HttpServerOptions{.limits = test_limits()}, echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  expect_malformed_answer(srv.port(), "text/plain; charset=utf-8", "malformed HTTP request");
}

// ---------------------------------------------------------------------------------------------
// Limits and malformed input

TEST(HttpServer, HeaderTooLargeIs431) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  c.send(get("/", "X-Big: " + std::string(8000, 'a') + "\r\n"));
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 431);
  expect_error_body(*reply, "invalid_request_error", "4096");
  EXPECT_TRUE(c.closed_within());
}

TEST(HttpServer, BodyTooLargeByContentLengthIs413BeforeTheBody) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  // Only the header is sent: the answer must not wait for the body.
  ASSERT_TRUE(c.send("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"));
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 413);
  expect_error_body(*reply, "invalid_request_error", "65536");
  EXPECT_TRUE(c.closed_within());
}

TEST(HttpServer, ChunkedBodyOverTheLimitIs413) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  std::string request = "POST /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string chunk(16 * 1024, 'z');
  for (int i = 0; i < 6; ++i) request += "4000\r\n" + chunk + "\r\n";
  request += "0\r\n\r\n";
  c.send(request);  // the server may stop reading part way
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 413);
  expect_error_body(*reply, "invalid_request_error", "65536");
  EXPECT_TRUE(c.closed_within());
}

TEST(HttpServer, MalformedRequestsAre400AndTheServerCarriesOn) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string cases[] = {
      "GARBAGE\r\n\r\n",
      "GET /\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\nX-Bad: a" + std::string(1, '\0') + "b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\nhello",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999\r\n\r\nhello",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nhello",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
  };
  for (const auto& request : cases) {
    SCOPED_TRACE(testing::PrintToString(request));
    Conn c(srv.port());
    c.send(request);
    auto reply = c.read_reply();
    ASSERT_TRUE(reply);
    // A huge Content-Length may be read as over the body limit rather than as malformed.
    if (request.find("99999") != std::string::npos && reply->status == 413) continue;
    EXPECT_EQ(reply->status, 400);
    expect_error_body(*reply, "invalid_request_error", "malformed");
    EXPECT_TRUE(c.closed_within());
  }
  auto reply = fetch(srv.port(), get("/after"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->json()["path"], "/after");
}

// ---------------------------------------------------------------------------------------------
// Timeouts and connection limits

TEST(HttpServer, SlowHeadersGet408) {
  auto limits = test_limits();
  limits.request_timeout = 300ms;
  TestServer srv(limits, echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send("GET /slow HT"));
  auto reply = c.read_reply(3000ms);
  ASSERT_TRUE(reply);
  // The request deadline's answer, not the idle one's (10 s) nor a parse error's.
  EXPECT_EQ(reply->status, 408);
  expect_error_body(*reply, "invalid_request_error", "300 ms");
  EXPECT_EQ(reply->json()["error"]["code"], "request_timeout");
  EXPECT_TRUE(c.closed_within());
}

TEST(HttpServer, RequestsArrivingInPiecesAreWaitedFor) {
  TestServer srv(test_limits(), echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(wait_until([&] { return srv.server().open_connections() == 1; }));
  // Had half a request line been answered, that answer would come first.
  for (const char* piece : {"GET /slow HT", "TP/1.1\r\nHost: t\r\n", "\r\n"}) ASSERT_TRUE(c.send(piece));
  const auto whole = c.read_reply();
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->json()["path"], "/slow");
}

TEST(HttpServer, IdleConnectionsAreClosedSilently) {
  auto limits = test_limits();
  limits.idle_timeout = 300ms;
  limits.request_timeout = 300ms;
  TestServer srv(limits, echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send(get("/")));
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  // Kept open after the response, as promised, and then closed without a word.
  EXPECT_EQ(lower(reply->header("Connection")), "keep-alive");
  EXPECT_TRUE(c.closed_within(3000ms));
  EXPECT_TRUE(c.raw().empty());

  // A connection that never sends a byte gets no reply either.
  Conn quiet(srv.port());
  EXPECT_TRUE(quiet.closed_within(3000ms));
  EXPECT_TRUE(quiet.raw().empty());
  EXPECT_TRUE(wait_until([&] { return srv.server().open_connections() == 0; }));
}

TEST(HttpServer, ConnectionsBeyondTheLimitGet503) {
  auto limits = test_limits();
  limits.max_connections = 2;
  TestServer srv(limits, echo);
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto c1 = std::make_unique<Conn>(srv.port());
  Conn c2(srv.port());
  for (Conn* c : {c1.get(), &c2}) {
    ASSERT_TRUE(c->send(get("/")));
    auto reply = c->read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
  }
  EXPECT_EQ(srv.server().open_connections(), 2u);

  Conn c3(srv.port());
  c3.send(get("/third"));
  auto refused = c3.read_reply();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->header("Retry-After"), "1");
  expect_error_body(*refused, "server_error", "2");
  EXPECT_EQ(refused->json()["error"]["code"], "too_many_connections");
  EXPECT_TRUE(c3.closed_within());
  EXPECT_EQ(srv.server().open_connections(), 2u);

  // The kept connections still work; once one goes, a new one is served.
  ASSERT_TRUE(c2.send(get("/still")));
  auto still = c2.read_reply();
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
  c1.reset();
  ASSERT_TRUE(wait_until([&] { return srv.server().open_connections() <= 1; }));
  auto reply = fetch(srv.port(), get("/fourth"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->json()["path"], "/fourth");
}

// ---------------------------------------------------------------------------------------------
// Streaming and disconnects

TEST(HttpServer, StreamWrittenFromAnotherThreadArrivesInOrder) {
  std::atomic<int> received{0};  // events the client has read
  Workers workers;
  TestServer srv(test_limits(), [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.path != "/stream") return echo(std::move(request), exchange);
    workers.spawn([exchange, &received] {
      exchange->start_stream(200, "text/event-stream", {{"X-Stream", "yes"}});
      for (int i = 0; i < 3; ++i) {
        // Each event goes out on its own: the next is written only once the client has this one.
        wait_until([&] { return received >= i; });
        exchange->write("data: " + std::to_string(i) + "\n\n");
      }
      exchange->finish();
    });
  });
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send(get("/stream")));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.read_until("data: " + std::to_string(i) + "\n\n")) << "event " << i << " was held back";
    ++received;
  }
  auto reply = c.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_TRUE(reply->chunked);
  EXPECT_EQ(reply->header("Content-Type"), "text/event-stream");
  EXPECT_EQ(reply->header("Cache-Control"), "no-cache");
  EXPECT_EQ(reply->header("X-Stream"), "yes");
  EXPECT_EQ(reply->chunks, (std::vector<std::string>{"data: 0\n\n", "data: 1\n\n", "data: 2\n\n"}));

  // The connection carries on after the stream.
  ASSERT_TRUE(c.send(get("/after")));
  auto after = c.read_reply();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->json()["path"], "/after");
}

TEST(HttpServer, DisconnectWhileTheHandlerHoldsTheRequest) {
  Held held;
  TestServer srv(test_limits(), held.handler());
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send(get("/wait")));
  ASSERT_TRUE(wait_until([&] { return held.handled == 1; }));
  c.close();
  ASSERT_TRUE(wait_until([&] { return held.gone == 1; }));

  // Registered after the fact: runs at once. Answers to a departed client are ignored.
  std::atomic<int> late{0};
  auto exchange = held.first();
  exchange->on_disconnect([&] { ++late; });
  EXPECT_TRUE(wait_until([&] { return late == 1; }));
  exchange->respond(HttpResponse{});
  exchange->write("ignored");
  exchange->finish();
  // Registered after those calls, so run after them on the connection's strand: a second
  // report, had any of them made one, would have come by then.
  exchange->on_disconnect([&] { ++late; });
  EXPECT_TRUE(wait_until([&] { return late == 2; }));
  EXPECT_EQ(held.gone, 1);  // once
  EXPECT_TRUE(wait_until([&] { return srv.server().open_connections() == 0; }));
}

TEST(HttpServer, AnsweredRequestsReportNoDisconnect) {
  std::atomic<int> gone{0};
  TestServer srv(test_limits(), [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    exchange->on_disconnect([&] { ++gone; });
    echo(std::move(request), exchange);
  });
  ASSERT_TRUE(srv.ok()) << srv.error();
  {
    Conn c(srv.port());
    ASSERT_TRUE(c.send(get("/")));
    ASSERT_TRUE(c.read_reply());
  }
  EXPECT_TRUE(wait_until([&] { return srv.server().open_connections() == 0; }));
  // The close is handled on the I/O thread before the next connection is: once this second
  // request is answered, a callback the first close had made would have run.
  auto after = fetch(srv.port(), get("/after"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(gone, 0);
}

TEST(HttpServer, DisconnectMidStream) {
  std::atomic<int> gone{0};
  Workers workers;  // declared after what its threads touch, so it joins them before those go
  TestServer srv(test_limits(), [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->on_disconnect([&] { ++gone; });
    exchange->start_stream(200, "text/event-stream");
    exchange->write("first\n");
    workers.spawn([exchange, &gone] {
      auto until = Clock::now() + 5s;
      while (gone == 0 && Clock::now() < until) {
        exchange->write("tick\n");
        std::this_thread::sleep_for(20ms);
      }
      exchange->finish();
    });
  });
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c(srv.port());
  ASSERT_TRUE(c.send(get("/stream")));
  ASSERT_TRUE(c.read_until("first\n"));
  c.close();
  EXPECT_TRUE(wait_until([&] { return gone == 1; }));
  workers.join();
  EXPECT_EQ(gone, 1);
}

// A stream the client never reads: 64 KiB chunks written from a worker, up to 32 MiB (far beyond
// the socket buffers), until the connection is gone.
HttpHandler flood(Workers& workers, std::atomic<bool>& gone, std::atomic<size_t>& written) {
  return [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.path != "/flood") return echo(std::move(request), exchange);
    exchange->on_disconnect([&] { gone = true; });
    exchange->start_stream(200, "application/octet-stream");
    workers.spawn([exchange, &gone, &written] {
      const std::string chunk(64 * 1024, 'x');
      for (int i = 0; i < 512 && !gone; ++i) {
        exchange->write(chunk);
        written += chunk.size();
      }
      exchange->finish();
    });
  };
}

TEST(HttpServer, ClientThatStopsReadingBlocksNoOtherClient) {
  auto limits = test_limits();
  limits.max_queued_bytes = 64 * 1024 * 1024;  // the whole flood may wait: it stays stuck
  std::atomic<bool> gone{false};
  std::atomic<size_t> written{0};
  Workers workers;  // declared after what its threads touch, so it joins them before those go
  TestServer srv(limits, flood(workers, gone, written));  // write_timeout 10 s: it stays stuck
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn stuck(srv.port(), 4096);
  ASSERT_TRUE(stuck.send(get("/flood")));
  ASSERT_TRUE(wait_until([&] { return written >= 4u * 1024 * 1024; }));

  // Answered while the stuck client's write is still pending: the I/O thread never waits on it.
  auto reply = fetch(srv.port(), get("/other"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_FALSE(gone);

  stuck.close();
  EXPECT_TRUE(wait_until([&] { return gone.load(); }));
  EXPECT_TRUE(wait_until([&] { return srv.server().open_connections() == 0; }));
}

// A client that sends for a flood and never reads it is dropped by `limits` within 5 s: gone is
// reported, its connection closed.
void expect_stuck_flood_client_dropped(const HttpLimits& limits) {
  std::atomic<bool> gone{false};
  std::atomic<size_t> written{0};
  Workers workers;  // declared after what its threads touch, so it joins them before those go
  TestServer srv(limits, flood(workers, gone, written));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn stuck(srv.port(), 4096);
  ASSERT_TRUE(stuck.send(get("/flood")));
  EXPECT_TRUE(wait_until([&] { return gone.load(); }, 5000ms));
  EXPECT_TRUE(wait_until([&] { return srv.server().open_connections() == 0; }));
  EXPECT_TRUE(stuck.closed_within(5000ms));
}

TEST(HttpServer, ClientThatStopsReadingIsDropped) {
  auto limits = test_limits();
  limits.write_timeout = 300ms;
  expect_stuck_flood_client_dropped(limits);
}

TEST(HttpServer, ClientThatFallsBehindTheQueueCapIsDroppedBeforeTheWriteTimeout) {
  auto limits = test_limits();  // write_timeout 10 s: only the byte cap can drop it within 5 s
  limits.max_queued_bytes = 256 * 1024;
  expect_stuck_flood_client_dropped(limits);
}

TEST(HttpServer, StopEndsRunAndReportsPendingResponses) {
  Held held;
  TestServer srv(test_limits(), held.handler());
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn idle(srv.port());
  Conn waiting(srv.port());
  ASSERT_TRUE(waiting.send(get("/wait")));
  ASSERT_TRUE(wait_until([&] { return held.handled == 1; }));
  ASSERT_TRUE(wait_until([&] { return srv.server().open_connections() == 2; }));

  std::thread stopper([&] { EXPECT_TRUE(srv.stop_and_wait(3000ms)); });
  stopper.join();
  EXPECT_EQ(held.gone, 1);
  EXPECT_EQ(srv.server().open_connections(), 0u);
  EXPECT_TRUE(waiting.closed_within());
  EXPECT_TRUE(idle.closed_within());
  // The kept exchange outlives the server's loop harmlessly.
  held.first()->respond(HttpResponse{});
}

// ---------------------------------------------------------------------------------------------
// Bounded fuzzing of the request path

std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const char specials[] = {'\0',
                           '\r',
                           '\n',
                           ' ',
                           ':',
                           '\t',
                           ';',
                           '0',
                           'f',
                           static_cast<char>(0x80),
                           static_cast<char>(0xff),
                           static_cast<char>(0xc3)};
  auto random_byte = [&]() -> char {
    return rng() % 2 ? specials[pick(sizeof specials)] : static_cast<char>(rng() & 0xff);
  };
  const char* lengths[] = {
      "99999999999999999999",   "-1", "18446744073709551616", "0x10", "1e3", " 5", "5, 6", "", "4294967296",
      "00000000000000000000003"};
  const char* encodings[] = {"chunked",   "gzip, chunked", "chunked, gzip",    "identity", "xchunked",
                             "chunked\t", "CHUNKED",       "chunked, chunked", ""};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 10) {
      case 0:
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:
        if (!s.empty()) s[pick(s.size())] = random_byte();
        break;
      case 2: {
        std::string bytes;
        for (size_t n = 1 + pick(8); n > 0; --n) bytes += random_byte();
        s.insert(pick(s.size() + 1), bytes);
        break;
      }
      case 3:
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(16));
        }
        break;
      case 4: s.resize(pick(s.size() + 1)); break;
      case 5: {  // a header line twice
        size_t first = s.find("\r\n");
        size_t end = s.find("\r\n\r\n");
        if (first == std::string::npos || end == std::string::npos || first >= end) break;
        size_t at = first + 2;
        size_t next = s.find("\r\n", at);
        if (next == std::string::npos) break;
        s.insert(at, s.substr(at, next + 2 - at));
        break;
      }
      case 6: {
        std::string value = lengths[pick(std::size(lengths))];
        size_t at = s.find("Content-Length: ");
        if (at != std::string::npos) {
          size_t eol = s.find("\r\n", at);
          s.replace(at + 16, eol == std::string::npos ? std::string::npos : eol - at - 16, value);
        } else if (size_t eol = s.find("\r\n"); eol != std::string::npos) {
          s.insert(eol + 2, "Content-Length: " + value + "\r\n");
        }
        break;
      }
      case 7:
        if (size_t eol = s.find("\r\n"); eol != std::string::npos)
          s.insert(eol + 2, std::string("Transfer-Encoding: ") + encodings[pick(std::size(encodings))] + "\r\n");
        break;
      case 8:
        if (size_t eol = s.find("\r\n"); eol != std::string::npos)
          s.insert(eol + 2, "X-Long: " + std::string(100 + pick(6000), 'L') + "\r\n");
        break;
      case 9: s += rng() % 2 ? get("/again") : std::string(1 + pick(64), random_byte()); break;
    }
  }
  return s;
}

TEST(HttpServer, FuzzedRequestsNeverBreakTheServer) {
  auto limits = test_limits();
  limits.max_connections = 256;
  limits.request_timeout = 250ms;
  limits.idle_timeout = 250ms;
  limits.write_timeout = 1000ms;
  TestServer srv(limits, [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.path == "/stream") {
      exchange->start_stream(200, "text/event-stream");
      exchange->write(request.body);
      exchange->write("tail");
      exchange->finish();
      return;
    }
    echo(std::move(request), exchange);
  });
  ASSERT_TRUE(srv.ok()) << srv.error();

  const std::vector<std::string> seeds = {
      get("/"),
      get("/v1/models?x=1", "Accept: */*\r\nX-Test: y\r\n"),
      post("/v1/chat/completions", R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"),
      "POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n",
      "GET /old HTTP/1.0\r\n\r\n",
      post("/stream", "streamed", "Connection: keep-alive\r\n"),
      "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
      get("/a") + get("/b"),
  };

  // A valid request is still answered correctly (a retry only for a 408 on a loaded machine).
  auto still_serving = [&](int after) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto reply = fetch(srv.port(), post("/check", "alive"));
      if (reply && reply->status == 408) continue;
      ASSERT_TRUE(reply) << "after case " << after;
      EXPECT_EQ(reply->status, 200) << "after case " << after;
      EXPECT_EQ(reply->json()["body"], "alive") << "after case " << after;
      return;
    }
    FAIL() << "only 408s after case " << after;
  };

  constexpr int kCases = 1500;
  constexpr int kBatch = 100;  // sent concurrently: the slow cases wait out request_timeout together
  std::mt19937_64 rng(0x6b697070);
  auto start = Clock::now();
  int answered = 0;
  for (int base = 0; base < kCases; base += kBatch) {
    std::vector<std::unique_ptr<Conn>> conns;
    for (int i = 0; i < kBatch; ++i) {
      auto conn = std::make_unique<Conn>(srv.port());
      conn->send(mutate(seeds[rng() % seeds.size()], rng));
      conns.push_back(std::move(conn));
    }
    // Read until each has a whole response or is closed.
    auto deadline = Clock::now() + 5s;
    std::vector<bool> done(conns.size(), false);
    size_t left = conns.size();
    while (left > 0 && Clock::now() < deadline) {
      std::vector<pollfd> fds;
      std::vector<size_t> which;
      for (size_t i = 0; i < conns.size(); ++i) {
        if (done[i]) continue;
        if (!conns[i]->connected()) {
          done[i] = true;
          --left;
          continue;
        }
        fds.push_back({conns[i]->fd(), POLLIN, 0});
        which.push_back(i);
      }
      if (fds.empty()) break;
      if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (size_t k = 0; k < fds.size(); ++k) {
        if (fds[k].revents == 0) continue;
        Conn& c = *conns[which[k]];
        c.fill(Clock::now() + 100ms);
        Reply reply;
        size_t used = 0;
        Parse p = parse_reply(c.raw(), c.eof(), reply, used);
        if (p == Parse::kComplete) ++answered;
        if (p != Parse::kIncomplete || c.eof()) {
          done[which[k]] = true;
          --left;
        }
      }
    }
    EXPECT_EQ(left, 0u) << "connections neither answered nor closed in batch from case " << base;
    conns.clear();
    still_serving(base + kBatch);
    EXPECT_TRUE(wait_until([&] { return srv.server().open_connections() <= 2; }))
        << srv.server().open_connections() << " connections still open after case " << base + kBatch;
  }
  EXPECT_GT(answered, 0);
  std::printf("fuzz: %d cases, %d answered, %ld ms\n", kCases, answered, elapsed_ms(start));
}

// ---------------------------------------------------------------------------------------------
// Binding

TEST(HttpServer, BindErrorsAreValues) {
  TestServer first(test_limits(), echo);
  ASSERT_TRUE(first.ok()) << first.error();
  auto again = HttpServer::create("127.0.0.1", first.port(), serve_options(test_limits()), echo);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("127.0.0.1:" + std::to_string(first.port())), std::string::npos)
      << again.error().message;

  // An address of no local interface (TEST-NET-1).
  auto foreign = HttpServer::create("192.0.2.1", 0, serve_options(test_limits()), echo);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("192.0.2.1"), std::string::npos) << foreign.error().message;

  auto no_handler = HttpServer::create("127.0.0.1", 0, serve_options(test_limits()), HttpHandler{});
  EXPECT_FALSE(no_handler);

  // The first server is unharmed.
  auto reply = fetch(first.port(), get("/"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
}

}  // namespace
}  // namespace kipp::server
