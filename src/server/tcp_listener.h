// Binding a listening socket by host name or address and port (0 picks a free one), for the
// HTTP server and the router agent port alike, with errors that say where.
#pragma once

#include <cstdint>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "util/error.h"

namespace kipp::server {

// "host:port", with IPv6 addresses bracketed.
std::string describe_endpoint(const std::string& host, uint16_t port);

// Opens, binds and listens `acceptor` (of an io_context) on host:port; returns the bound port.
Result<uint16_t> listen_on(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host, uint16_t port);

}  // namespace kipp::server
