// How a subcommand ends on an error: one line on stderr and an exit status that scripts can test.
#pragma once

#include "util/error.h"

namespace kipp::cli {

// The status when a host could not be reached (scripts such as `make quickstart` tell being
// offline apart by it); every other error exits 1.
inline constexpr int kExitUnreachable = 3;

// Prints "kipp: <message>" to stderr and returns the exit status for it.
int report(const Error& error);

}  // namespace kipp::cli
