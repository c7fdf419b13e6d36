#include "cli/report.h"

#include <cstdio>

namespace kipp::cli {

int report(const Error& error) {
  std::fprintf(stderr, "kipp: %s\n", error.message.c_str());
  return error.unreachable ? kExitUnreachable : 1;
}

}  // namespace kipp::cli
