// The memory bandwidth this machine gives a streaming read, for `kipp bench`'s decode roofline
// (bandwidth / weight bytes per token): decode cannot be faster than streaming its weights once.
#pragma once

#include <cstdint>

namespace kipp::cli {

// GB/s (1e9 bytes/s) that `threads` threads reach summing a buffer of `bytes`, each its own
// slice read as four interleaved streams: the median of `passes` passes. The buffer is far
// larger than any cache and is freed after.
double read_bandwidth_gb_per_s(unsigned threads, uint64_t bytes = uint64_t{512} << 20, int passes = 5);

}  // namespace kipp::cli
