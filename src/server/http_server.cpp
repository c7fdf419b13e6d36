// The server around the connections (see http_server.h): accepting them within
// max_connections, and the server's lifetime: run, drain, stop. One io_context run by one
// thread carries every connection (connection.h).
#include "server/http_server.h"

#include <exception>

#include <boost/asio/post.hpp>

#include "server/connection.h"
#include "server/server_core.h"
#include "server/tcp_listener.h"

namespace kipp::server {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

// Connections refused for max_connections that may be in their short 503-and-drain at once;
// beyond, a refused connection is closed without a reply.
constexpr unsigned kMaxRefusing = 64;

// The connections' shared state plus the listening socket. The acceptor is a member of the
// derived struct so that it closes before the base's io_context is destroyed.
struct Core final : ServerCore {
  using ServerCore::ServerCore;

  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  uint16_t port = 0;
  uint64_t next_key = 0;

  void accept();
  void on_accept(error_code ec, tcp::socket sock);
  void shutdown();
  void drain();
};

void Core::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket sock) { on_accept(ec, std::move(sock)); });
}

void Core::on_accept(error_code ec, tcp::socket sock) {
  if (stopping || !acceptor.is_open()) return;
  if (ec) {
    // Out of descriptors and the like: try again shortly rather than spin.
    accept_retry.expires_after(milliseconds(ec == asio::error::connection_aborted ? 0 : 50));
    accept_retry.async_wait([this](error_code wait_ec) {
      if (!wait_ec && !stopping) accept();
    });
    return;
  }
  error_code ignored;
  sock.set_option(tcp::no_delay(true), ignored);
  uint64_t key = next_key++;
  if (open.load() >= limits.max_connections) {
    if (refusing < kMaxRefusing) {
      ++refusing;
      auto connection = std::make_shared<Connection>(*this, std::move(sock), key, false);
      connections.emplace(key, connection);
      connection->refuse();
    } else {
      sock.close(ignored);
    }
  } else {
    open.fetch_add(1);
    auto connection = std::make_shared<Connection>(*this, std::move(sock), key, true);
    connections.emplace(key, connection);
    connection->start();
  }
  accept();
}

void Core::drain() {
  if (draining || stopping) return;
  draining = true;
  auto all = connections;
  for (auto& [key, weak] : all)
    if (auto connection = weak.lock()) connection->close_if_idle();
}

void Core::shutdown() {
  if (stopping) return;
  stopping = true;
  error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  auto all = connections;
  for (auto& [key, weak] : all)
    if (auto connection = weak.lock()) connection->close_now();
  connections.clear();
}

class Server final : public HttpServer {
 public:
  explicit Server(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  // run() has returned (or never ran): nothing else touches the connections now.
  ~Server() override { core_->shutdown(); }

  uint16_t port() const override { return core_->port; }

  void run() override {
    for (;;) {
      try {
        core_->ioc.run();
        return;
      } catch (...) {
        // A handler threw past its own guards: keep serving.
      }
    }
  }

  void stop() override {
    asio::post(core_->ioc, [core = core_.get()] { core->shutdown(); });
  }

  void drain() override {
    asio::post(core_->ioc, [core = core_.get()] { core->drain(); });
  }

  unsigned open_connections() const override { return core_->open.load(); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::create(const std::string& host, uint16_t port,
                                                       HttpServerOptions options, HttpHandler handler) {
  const std::string where = describe_endpoint(host, port);
  if (!handler) return fail("http server on ", where, ": no request handler");
  try {
    auto core = std::make_shared<Core>(std::move(options), std::move(handler));
    KIPP_ASSIGN(core->port, listen_on(core->acceptor, host, port));
    core->accept();
    return std::unique_ptr<HttpServer>(std::make_unique<Server>(std::move(core)));
  } catch (const std::exception& e) {
    return fail("cannot listen on ", where, ": ", e.what());
  }
}

}  // namespace kipp::server
