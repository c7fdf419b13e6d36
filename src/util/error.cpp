#include "util/error.h"

namespace kipp {

Error with_context(const std::string& context, Error error) {
  return Error{context + ": " + error.message};
}

}  // namespace kipp
