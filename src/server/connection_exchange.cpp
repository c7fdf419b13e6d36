// Each call is posted to the connection's strand rather than run on the caller's thread: the
// connection's state belongs to the I/O thread, and the strand keeps calls in the order made.
#include "server/connection_exchange.h"

#include <boost/asio/post.hpp>

namespace kipp::server {
namespace {

namespace asio = boost::asio;

class Exchange final : public HttpExchange {
 public:
  Exchange(std::shared_ptr<ServerCore> core, std::shared_ptr<Connection> connection, uint64_t id)
      : core_(std::move(core)), connection_(std::move(connection)), id_(id) {}

  ~Exchange() override {
    try {
      asio::post(connection_->strand(), [c = connection_, id = id_] { c->do_abandon(id); });
    } catch (...) {
      // Out of memory while posting: the client is answered when it gives up.
    }
  }

  void respond(HttpResponse response) override {
    asio::post(connection_->strand(),
               [c = connection_, id = id_, r = std::move(response)]() mutable { c->do_respond(id, std::move(r)); });
  }

  void start_stream(int status, std::string content_type, HttpHeaders headers) override {
    asio::post(connection_->strand(), [c = connection_, id = id_, status, ct = std::move(content_type),
                                       h = std::move(headers)] { c->do_start_stream(id, status, ct, h); });
  }

  void write(std::string data) override {
    asio::post(connection_->strand(),
               [c = connection_, id = id_, d = std::move(data)]() mutable { c->do_write(id, std::move(d)); });
  }

  void finish() override {
    asio::post(connection_->strand(), [c = connection_, id = id_] { c->do_finish(id); });
  }

  void on_disconnect(std::function<void()> callback) override {
    asio::post(connection_->strand(), [c = connection_, id = id_, cb = std::move(callback)]() mutable {
      c->do_on_disconnect(id, std::move(cb));
    });
  }

 private:
  // Declared first, so that the connection goes before the io_context it was made on.
  std::shared_ptr<ServerCore> core_;
  std::shared_ptr<Connection> connection_;
  uint64_t id_;
};

}  // namespace

std::shared_ptr<HttpExchange> make_exchange(std::shared_ptr<ServerCore> core, std::shared_ptr<Connection> connection,
                                            uint64_t id) {
  return std::make_shared<Exchange>(std::move(core), std::move(connection), id);
}

}  // namespace kipp::server
