// The one piece of behaviour the request type carries: header lookup without case, as HTTP
// compares field names.
#include "server/http_exchange.h"

#include <boost/beast/core/string.hpp>

namespace kipp::server {

std::string HttpRequest::header(std::string_view name) const {
  const boost::beast::string_view wanted(name.data(), name.size());
  for (const auto& [key, value] : headers)
    if (boost::beast::iequals(key, wanted)) return value;
  return "";
}

}  // namespace kipp::server
