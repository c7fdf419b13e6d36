// The handler's reply channel to one request on one connection. The handler calls it from any
// thread; every call hops onto the connection's strand, where the connection applies it.
#pragma once

#include <cstdint>
#include <memory>

#include "server/connection.h"

namespace kipp::server {

// `id` names the request, so that a late call about an earlier request on the same keep-alive
// connection is ignored. The exchange keeps `core` alive, and with it the io_context it posts to.
std::shared_ptr<HttpExchange> make_exchange(std::shared_ptr<ServerCore> core, std::shared_ptr<Connection> connection,
                                            uint64_t id);

}  // namespace kipp::server
