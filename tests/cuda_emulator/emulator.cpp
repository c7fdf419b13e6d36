// The CPU emulator of the CUDA runtime (see cuda_runtime.h): device memory, streams and graphs,
// and kernels whose threads run as fibers, one fiber stack per thread of a block.
//
// A block runs warp by warp on one host thread: each lane of a warp runs until it reaches a
// barrier or exits; when every lane of the warp waits at the same warp-level operation (a
// shuffle, __syncwarp) the operation completes and the warp goes on; when every live thread of
// the block waits at __syncthreads, all go on. Anything else (lanes of one warp at different
// barriers, a shuffle with exited lanes or a partial mask) is a launch failure with a message,
// sticky like CUDA's, returned by the next synchronizing call.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime.h"

#if !defined(__x86_64__)
#error "the CUDA emulator switches fibers with x86-64 code (tests/cuda_emulator/CMakeLists.txt skips it elsewhere)"
#endif

namespace kipp_emu {

struct Graph {
  std::vector<std::function<void()>> operations;
};
struct GraphExec {
  std::vector<std::function<void()>> operations;
};
struct Stream {
  Graph* capture = nullptr;  // the graph being recorded, if capturing
};

namespace {

constexpr unsigned kWarp = 32;
constexpr size_t kStackBytes = 256 << 10;

// ---- failures, sticky as on a device ----

std::mutex fault_mutex;
std::string fault_message;  // empty: no fault
std::atomic<bool> faulted{false};

void report_fault(const std::string& message) {
  std::lock_guard lock(fault_mutex);
  if (fault_message.empty()) fault_message = message;
  faulted = true;
}

// ---- fibers ----

// Saves the callee-saved registers on the current stack, stores the stack pointer in *from and
// continues on `to` (a stack saved the same way, or a new one made by prepare_stack).
extern "C" void kipp_emu_switch(void** from, void* to);
extern "C" void kipp_emu_fiber_start();
asm(R"(
  .text
  .globl kipp_emu_switch
  .type kipp_emu_switch, @function
kipp_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kipp_emu_switch, .-kipp_emu_switch

  .globl kipp_emu_fiber_start
  .type kipp_emu_fiber_start, @function
kipp_emu_fiber_start:
  movq %rbx, %rdi
  call *%r12
  ud2
  .size kipp_emu_fiber_start, .-kipp_emu_fiber_start
)");

enum class Wait { none, warp, block, done };

struct Lane {
  LaneIndex index;
  Wait wait = Wait::none;
  bool shuffling = false;  // at a shuffle (else at __syncwarp) when wait == warp
  unsigned mask = 0;
  int lane_mask = 0;  // a shuffle's: the lane it reads is its own xor this
  uint64_t deposit = 0, result = 0;
  void (*combine)(void* const* lanes) = nullptr;  // set for a warp_collective
  void* sp = nullptr;                             // where its stack stopped
};

class Worker;
thread_local Worker* this_worker = nullptr;

class Worker {
 public:
  Worker() { this_worker = this; }
  ~Worker() {
    for (char* stack : stacks_) munmap(stack, kStackBytes);
  }

  // Runs every thread of one block; false after a fault (reported).
  bool run_block(const BlockIndex& block, const std::function<void()>& body) {
    block_ = block;
    body_ = &body;
    const unsigned threads = block.block_dim.x * block.block_dim.y * block.block_dim.z;
    if (!ensure_stacks(threads)) return false;
    lanes_.assign(threads, Lane{});
    for (unsigned t = 0; t < threads; ++t) {
      const dim3& d = block.block_dim;
      lanes_[t].index.thread_idx = {t % d.x, t / d.x % d.y, t / (d.x * d.y)};
      prepare(t);
    }
    const unsigned warps = (threads + kWarp - 1) / kWarp;
    for (;;) {
      for (unsigned w = 0; w < warps; ++w)
        if (!run_warp(w)) return false;
      bool any_waiting = false;
      for (Lane& lane : lanes_)
        if (lane.wait == Wait::block) {
          lane.wait = Wait::none;
          any_waiting = true;
        }
      if (!any_waiting) return true;
    }
  }

  const LaneIndex& lane_index() const { return current_->index; }
  const BlockIndex& block_index() const { return block_; }

  void wait_block() {
    current_->wait = Wait::block;
    yield();
  }

  void wait_warp(bool shuffling, unsigned mask, int lane_mask, uint64_t deposit,
                 void (*combine)(void* const*) = nullptr) {
    Lane& lane = *current_;
    lane.combine = combine;
    lane.wait = Wait::warp;
    lane.shuffling = shuffling;
    lane.mask = mask;
    lane.lane_mask = lane_mask;
    lane.deposit = deposit;
    yield();
  }

  uint64_t result() const { return current_->result; }

 private:
  static void fiber_main(Worker* worker) {
    (*worker->body_)();
    worker->current_->wait = Wait::done;
    worker->yield();
  }

  bool ensure_stacks(unsigned threads) {
    while (stacks_.size() < threads) {
      void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (stack == MAP_FAILED) {
        report_fault("the emulator could not map a fiber stack");
        return false;
      }
      stacks_.push_back(static_cast<char*>(stack));
    }
    return true;
  }

  void prepare(unsigned t) {
    // The frame kipp_emu_switch pops: r15 r14 r13 r12 rbx rbp, then the return address, placed
    // so that the stack is 16-byte aligned after the return (the call in fiber_start realigns).
    auto* top = reinterpret_cast<void**>(stacks_[t] + kStackBytes);
    void** frame = top - 7;
    frame[0] = frame[1] = frame[2] = nullptr;                   // r15 r14 r13
    frame[3] = reinterpret_cast<void*>(&Worker::fiber_main);    // r12: the function
    frame[4] = this;                                            // rbx: its argument
    frame[5] = nullptr;                                         // rbp
    frame[6] = reinterpret_cast<void*>(&kipp_emu_fiber_start);  // return address
    lanes_[t].sp = frame;
  }

  void resume(Lane& lane) {
    current_ = &lane;
    kipp_emu_switch(&scheduler_sp_, lane.sp);
  }

  // The running lane stops (at a barrier, or exited): the next lane of its warp runs, straight
  // from this one, or else the scheduler.
  void yield() {
    Lane* from = current_;
    Lane* next = next_in_warp(*from);
    if (next == from) return;
    current_ = next ? next : from;
    kipp_emu_switch(&from->sp, next ? next->sp : scheduler_sp_);
  }

  // The lane after `from` in its warp that can run; once every lane has stopped, the warp-level
  // operation they all wait at completes and the warp's first lane runs again. Null when the
  // warp waits for __syncthreads or has exited, or after a fault.
  Lane* next_in_warp(const Lane& from) {
    const unsigned at = unsigned(&from - lanes_.data());
    const unsigned w = at / kWarp, first = w * kWarp, end = std::min<unsigned>(first + kWarp, unsigned(lanes_.size()));
    for (unsigned t = at + 1; t < end; ++t)
      if (lanes_[t].wait == Wait::none) return &lanes_[t];
    unsigned at_warp = 0, live = 0;
    for (unsigned t = first; t < end; ++t) {
      at_warp += lanes_[t].wait == Wait::warp;
      live += lanes_[t].wait != Wait::done;
    }
    if (at_warp == 0 || !complete_warp_operation(w, first, end, at_warp, live)) return nullptr;
    return &lanes_[first];
  }

  // Runs warp `w` until each of its lanes has exited or waits at __syncthreads.
  bool run_warp(unsigned w) {
    const unsigned first = w * kWarp, end = std::min<unsigned>(first + kWarp, unsigned(lanes_.size()));
    for (unsigned t = first; t < end; ++t)
      if (lanes_[t].wait == Wait::none) {
        resume(lanes_[t]);
        break;
      }
    return !faulted;
  }

  bool complete_warp_operation(unsigned w, unsigned first, unsigned end, unsigned at_warp, unsigned live) {
    const auto where = [&] {
      const uint3& b = block_.block_idx;
      return "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) + ") warp " +
             std::to_string(w);
    };
    if (end - first != kWarp || at_warp != live || live != kWarp) {
      report_fault("lanes of " + where() + " diverge at a warp-level operation: " + std::to_string(at_warp) + " of " +
                   std::to_string(end - first) + " lanes reached it, " + std::to_string(live) + " are live");
      return false;
    }
    const Lane& lead = lanes_[first];
    for (unsigned t = first; t < end; ++t) {
      const Lane& lane = lanes_[t];
      if (lane.mask != 0xffffffffu || lane.shuffling != lead.shuffling || lane.combine != lead.combine) {
        report_fault("lanes of " + where() + " meet at different warp-level operations or with a partial mask");
        return false;
      }
    }
    if (lead.combine) {
      void* mine[kWarp] = {};
      for (unsigned t = first; t < end; ++t) mine[t - first] = reinterpret_cast<void*>(lanes_[t].deposit);
      lead.combine(mine);
      for (unsigned t = first; t < end; ++t) lanes_[t].wait = Wait::none;
      return true;
    }
    for (unsigned t = first; t < end; ++t) {
      Lane& lane = lanes_[t];
      const int self = int(t - first);
      const int source = (self ^ lane.lane_mask) & int(kWarp - 1);
      lane.result = lanes_[first + unsigned(source)].deposit;
    }
    for (unsigned t = first; t < end; ++t) lanes_[t].wait = Wait::none;
    return true;
  }

  std::vector<char*> stacks_;
  std::vector<Lane> lanes_;
  Lane* current_ = nullptr;
  BlockIndex block_{};
  const std::function<void()>* body_ = nullptr;
  void* scheduler_sp_ = nullptr;
};

Worker& worker() {
  thread_local Worker w;
  this_worker = &w;
  return w;
}

// ---- grids, spread over a few host threads ----

struct Job {
  dim3 grid, block;
  const std::function<void()>* body;
  std::atomic<uint64_t> next{0};
  uint64_t blocks;
};

void work_on(Job& job) {
  Worker& w = worker();
  for (uint64_t i = job.next++; i < job.blocks && !faulted; i = job.next++) {
    const dim3& g = job.grid;
    const BlockIndex index{{unsigned(i % g.x), unsigned(i / g.x % g.y), unsigned(i / (uint64_t(g.x) * g.y))},
                           job.block,
                           g};
    if (!w.run_block(index, *job.body)) return;
  }
}

// Host threads that help the calling thread; kept for the process (never joined).
class HelperThreads {
 public:
  static HelperThreads& get() {
    static HelperThreads* helpers = new HelperThreads();
    return *helpers;
  }

  void run(Job& job) {
    std::lock_guard one_grid_at_a_time(run_mutex_);
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      busy_ = unsigned(threads_.size());
      ++generation_;
    }
    start_.notify_all();
    work_on(job);
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
  }

  unsigned count() const { return unsigned(threads_.size()); }

 private:
  HelperThreads() {
    unsigned helpers = std::max(1u, std::thread::hardware_concurrency()) - 1;
    if (const char* env = std::getenv("KIPP_CUDA_EMULATOR_THREADS")) helpers = std::max(1, std::atoi(env)) - 1;
    helpers = std::min(helpers, 15u);
    for (unsigned i = 0; i < helpers; ++i) threads_.emplace_back([this] { loop(); }).detach();
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      Job* job;
      {
        std::unique_lock lock(mutex_);
        start_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        job = job_;
      }
      work_on(*job);
      std::lock_guard lock(mutex_);
      if (--busy_ == 0) finished_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex run_mutex_, mutex_;
  std::condition_variable start_, finished_;
  Job* job_ = nullptr;
  unsigned busy_ = 0;
  uint64_t generation_ = 0;
};

void execute_grid(dim3 grid, dim3 block, const std::function<void()>& body) {
  if (faulted) return;
  Job job{grid, block, &body, {}, uint64_t(grid.x) * grid.y * grid.z};
  if (job.blocks == 0 || uint64_t(block.x) * block.y * block.z == 0 || uint64_t(block.x) * block.y * block.z > 1024) {
    report_fault("invalid launch configuration");
    return;
  }
  if (job.blocks == 1) {
    work_on(job);
    return;
  }
  HelperThreads::get().run(job);
}

// ---- device memory ----

std::mutex memory_mutex;
std::map<void*, size_t> allocations;
size_t allocated = 0;

// Read at every allocation, so that a test can shrink the device.
size_t memory_limit() {
  const char* env = std::getenv("KIPP_CUDA_EMULATOR_MIB");
  return (env ? size_t(std::strtoull(env, nullptr, 10)) : size_t(16384)) << 20;
}

std::atomic<uint64_t> graph_launch_count{0};

cudaError_t sticky() { return faulted ? cudaErrorLaunchFailure : cudaSuccess; }

// Runs `operation` now, or records it when `stream` is capturing.
cudaError_t on_stream(cudaStream_t stream, std::function<void()> operation) {
  if (faulted) return cudaErrorLaunchFailure;
  if (stream && stream->capture) {
    stream->capture->operations.push_back(std::move(operation));
    return cudaSuccess;
  }
  operation();
  return sticky();
}

}  // namespace

const LaneIndex& this_lane() { return this_worker->lane_index(); }
const BlockIndex& this_block() { return this_worker->block_index(); }

void sync_threads() { this_worker->wait_block(); }
void sync_warp(unsigned mask) { this_worker->wait_warp(false, mask, 0, 0); }
void warp_collective(void (*combine)(void* const* lanes), void* mine) {
  this_worker->wait_warp(true, 0xffffffffu, 0, reinterpret_cast<uint64_t>(mine), combine);
}

uint64_t shuffle_xor(unsigned mask, uint64_t value, int lane_mask) {
  this_worker->wait_warp(true, mask, lane_mask, value);
  return this_worker->result();
}

void run_grid(dim3 grid, dim3 block, cudaStream_t stream, std::function<void()> thread_body) {
  on_stream(stream, [grid, block, body = std::move(thread_body)] { execute_grid(grid, block, body); });
}

void misaligned_load(const void* address, size_t alignment) {
  char where[32];
  std::snprintf(where, sizeof where, "%p", address);
  report_fault("a " + std::to_string(alignment) + "-byte vector load from misaligned address " + where);
}

uint64_t graph_launches() { return graph_launch_count; }

std::string fault() {
  std::lock_guard lock(fault_mutex);
  return fault_message;
}

void clear_fault() {
  std::lock_guard lock(fault_mutex);
  fault_message.clear();
  faulted = false;
}

}  // namespace kipp_emu

using kipp_emu::faulted;

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidValue; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  *properties = {};
  std::snprintf(properties->name, sizeof properties->name, "Kipp CUDA emulator (CPU)");
  properties->totalGlobalMem = kipp_emu::memory_limit();
  properties->major = 9;
  properties->minor = 0;
  properties->multiProcessorCount = int(kipp_emu::HelperThreads::get().count() + 1);
  return cudaSuccess;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorLaunchFailure: {
      thread_local std::string text;
      text = "unspecified launch failure (emulator: " + kipp_emu::fault() + ")";
      return text.c_str();
    }
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() { return kipp_emu::sticky(); }

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  std::lock_guard lock(kipp_emu::memory_mutex);
  const size_t rounded = (bytes + 255) / 256 * 256;
  if (bytes == 0 || kipp_emu::allocated + rounded > kipp_emu::memory_limit()) return cudaErrorMemoryAllocation;
  void* memory = std::aligned_alloc(256, rounded);
  if (!memory) return cudaErrorMemoryAllocation;
  std::memset(memory, 0xff, rounded);  // NaN in every float format: unwritten memory shows
  kipp_emu::allocations[memory] = rounded;
  kipp_emu::allocated += rounded;
  *pointer = memory;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (!pointer) return cudaSuccess;
  std::lock_guard lock(kipp_emu::memory_mutex);
  const auto found = kipp_emu::allocations.find(pointer);
  if (found == kipp_emu::allocations.end()) return cudaErrorInvalidValue;
  kipp_emu::allocated -= found->second;
  kipp_emu::allocations.erase(found);
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
  *pointer = std::malloc(bytes ? bytes : 1);
  return *pointer ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void* pointer) {
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  std::lock_guard lock(kipp_emu::memory_mutex);
  *total_bytes = kipp_emu::memory_limit();
  *free_bytes = *total_bytes - kipp_emu::allocated;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind) {
  if (faulted) return cudaErrorLaunchFailure;
  std::memcpy(to, from, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  return kipp_emu::on_stream(stream, [=] { std::memcpy(to, from, bytes); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new kipp_emu::Stream();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream) delete stream->capture;
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (stream && stream->capture) return cudaErrorStreamCaptureUnsupported;
  return kipp_emu::sticky();
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (!stream || stream->capture) return cudaErrorInvalidValue;
  stream->capture = new kipp_emu::Graph();
  return kipp_emu::sticky();
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (!stream || !stream->capture) return cudaErrorInvalidValue;
  *graph = stream->capture;
  stream->capture = nullptr;
  return kipp_emu::sticky();
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  *exec = new kipp_emu::GraphExec{graph->operations};
  return kipp_emu::sticky();
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (stream && stream->capture) return cudaErrorStreamCaptureUnsupported;
  ++kipp_emu::graph_launch_count;
  for (const auto& operation : exec->operations) {
    if (faulted) break;
    operation();
  }
  return kipp_emu::sticky();
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
