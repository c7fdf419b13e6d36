#include "server/agent_port.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "server/tcp_listener.h"

namespace kipp::server {

std::string agent_reply(const ReplicaLoad& load) {
  if (load.draining) return "drain #draining\n";
  const SchedulerStats& stats = load.stats;
  const double kv = stats.pool.total ? double(stats.pool.total - stats.pool.free) / stats.pool.total : 0.0;
  const double queue = double(stats.waiting) / std::max<uint32_t>(1, load.max_waiting);
  const double used = std::max(kv, queue);
  const int weight = used < 0.5 ? 100 : used < 0.75 ? 50 : used < 0.9 ? 25 : 1;
  // "ready" as well as "up": a drain the replica's last process reported is an administrative state
  // that HAProxy keeps through any number of "up" replies, so a replica restarted after SIGTERM
  // would never get traffic again; "ready" lifts it.
  return "up ready " + std::to_string(weight) + "%\n";
}

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

class Agent final : public AgentPort {
 public:
  explicit Agent(std::function<std::string()> reply) : reply_(std::move(reply)) {}

  ~Agent() override {
    asio::post(ioc_, [this] {
      error_code ignored;
      acceptor_.close(ignored);
    });
    if (thread_.joinable()) thread_.join();
  }

  Status listen(const std::string& host, uint16_t port) {
    KIPP_ASSIGN(port_, listen_on(acceptor_, host, port));
    accept();
    thread_ = std::thread([this] { ioc_.run(); });
    return {};
  }

  uint16_t port() const override { return port_; }

 private:
  void accept() {
    acceptor_.async_accept([this](error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) answer(std::move(socket));
      accept();
    });
  }

  // The line, then the sending side closed: HAProxy reads up to the end of the stream.
  void answer(tcp::socket socket) {
    auto peer = std::make_shared<tcp::socket>(std::move(socket));
    auto line = std::make_shared<std::string>(reply_());
    asio::async_write(*peer, asio::buffer(*line), [peer, line](error_code, size_t) {
      error_code ignored;
      peer->shutdown(tcp::socket::shutdown_both, ignored);
      peer->close(ignored);
    });
  }

  std::function<std::string()> reply_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_{ioc_};
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<AgentPort>> AgentPort::create(const std::string& host, uint16_t port,
                                                     std::function<std::string()> reply) {
  auto agent = std::make_unique<Agent>(std::move(reply));
  KIPP_TRY(agent->listen(host, port));
  return std::unique_ptr<AgentPort>(std::move(agent));
}

}  // namespace kipp::server
