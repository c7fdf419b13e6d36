#include "server/tcp_listener.h"

namespace kipp::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

std::string describe_endpoint(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<uint16_t> listen_on(tcp::acceptor& acceptor, const std::string& host, uint16_t port) {
  const std::string where = describe_endpoint(host, port);
  error_code ec;
  tcp::endpoint endpoint;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, port);
  } else {
    tcp::resolver resolver(acceptor.get_executor());
    auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec || results.empty())
      return fail("cannot resolve ", where, ": ", ec ? ec.message() : std::string("no addresses"));
    endpoint = results.begin()->endpoint();
  }
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return fail("cannot listen on ", where, ": ", ec.message());
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return fail("cannot listen on ", where, ": ", ec.message());
  acceptor.bind(endpoint, ec);
  if (ec) return fail("cannot bind ", where, ": ", ec.message());
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen on ", where, ": ", ec.message());
  auto bound = acceptor.local_endpoint(ec);
  if (ec) return fail("cannot listen on ", where, ": ", ec.message());
  return bound.port();
}

}  // namespace kipp::server
