// A persistent pool of worker threads for the fast CPU backend. Workers are created once and
// wait between jobs; run() hands every thread (the caller included) its index and returns when
// all are done. No allocation and no thread creation per job. Work is split by index, so which
// thread computes which output never depends on timing.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace kipp::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return unsigned(workers_.size()) + 1; }

  // Calls job(index, size()) once for every index in 0..size()-1, in parallel.
  template <class Job>
  void run(const Job& job) {
    run_erased([](const void* context, unsigned index,
                  unsigned count) { (*static_cast<const Job*>(context))(index, count); },
               &job);
  }

 private:
  using Erased = void (*)(const void*, unsigned, unsigned);
  void run_erased(Erased function, const void* context);
  void work(unsigned index);

  std::vector<std::thread> workers_;
  Erased function_ = nullptr;
  const void* context_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<unsigned> pending_{0};
  std::atomic<bool> stopping_{false};
};

// [begin, end) of `total` items for part `index` of `count`, in multiples of `grain`.
struct Range {
  uint32_t begin, end;
};
inline Range split(uint32_t total, unsigned index, unsigned count, uint32_t grain = 1) {
  const uint32_t units = (total + grain - 1) / grain;
  const uint32_t begin = uint32_t(uint64_t(units) * index / count) * grain;
  const uint32_t end = uint32_t(uint64_t(units) * (index + 1) / count) * grain;
  return {begin < total ? begin : total, end < total ? end : total};
}

}  // namespace kipp::cpu
