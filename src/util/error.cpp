#include "util/error.h"

namespace kipp {

Error with_context(const std::string& context, Error error) {
  error.message = context + ": " + error.message;
  return error;
}

}  // namespace kipp
