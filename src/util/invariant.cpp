#include "util/invariant.h"

#include <cstdio>
#include <cstdlib>

namespace kipp {

void invariant_broken(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "kipp: invariant broken at %s:%d: %s\n", file, line, condition);
  std::abort();
}

}  // namespace kipp
