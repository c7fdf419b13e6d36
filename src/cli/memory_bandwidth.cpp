#include "cli/memory_bandwidth.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "util/stats.h"

namespace kipp::cli {

double read_bandwidth_gb_per_s(unsigned threads, uint64_t bytes, int passes) {
  if (threads == 0) threads = 1;
  std::vector<uint64_t> buffer(bytes / sizeof(uint64_t));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = i;  // touch every page before timing
  std::atomic<uint64_t> sink{0};                             // every sum lands here, so no read can be left out
  std::vector<double> rates;
  for (int pass = 0; pass < passes; ++pass) {
    std::atomic<uint64_t> read{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        // The thread's slice read as kStreams interleaved streams, a cache line from each in turn:
        // one stream per thread leaves bandwidth unused that a kernel reading a few weight panels
        // at once does get, and the roofline must not be below what a kernel can reach.
        constexpr size_t kStreams = 4, kLine = 8;
        const size_t begin = buffer.size() * t / threads, end = buffer.size() * (t + 1) / threads;
        const size_t length = (end - begin) / kStreams / kLine * kLine;
        uint64_t sum = 0;
        for (size_t i = 0; i < length; i += kLine)
          for (size_t s = 0; s < kStreams; ++s)
            for (size_t k = 0; k < kLine; ++k) sum += buffer[begin + s * length + i + k];
        sink.fetch_add(sum, std::memory_order_relaxed);
        read.fetch_add(length * kStreams * sizeof(uint64_t), std::memory_order_relaxed);
      });
    for (std::thread& worker : workers) worker.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(double(read.load()) / seconds / 1e9);
  }
  return summarize(rates).median;
}

}  // namespace kipp::cli
