// The CUDA runtime as the CUDA backend uses it, emulated on the CPU so that the backend's kernels
// and host code run in the test suite on machines without a GPU. It stands in for the real
// <cuda_runtime.h> when src/backend/cuda/*.cu are compiled as C++ (tests/cuda_emulator/*.cpp).
//
// What it models: device memory (host allocations, filled with NaN bytes so that reading memory
// nothing wrote shows up in the logits), streams (synchronous), and kernels, whose every thread
// runs as a fiber: __syncthreads and the warp shuffles are real barriers, checked for divergence
// (a shuffle that not every lane of a warp reaches is reported as a launch failure). What it does
// not model: timing, caches, races between threads, the GPU's float intrinsics (expf and rsqrtf
// are the host's here) and memory limits beyond KIPP_CUDA_EMULATOR_MIB (default 16 GiB).
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local

struct uint3 {
  unsigned x, y, z;
};

// The vector types, aligned as CUDA's (the kernels load weights, activations and KV with them).
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) float4 {
  float x, y, z, w;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorNoDevice = 100,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1 };

constexpr unsigned cudaStreamNonBlocking = 1;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major, minor;
  int multiProcessorCount;
};

namespace kipp_emu {
struct Stream;
struct Graph;
struct GraphExec;
}  // namespace kipp_emu
using cudaStream_t = kipp_emu::Stream*;
using cudaGraph_t = kipp_emu::Graph*;
using cudaGraphExec_t = kipp_emu::GraphExec*;

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaMalloc(void** pointer, size_t bytes);
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMallocHost(void** pointer, size_t bytes);
cudaError_t cudaFreeHost(void* pointer);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

namespace kipp_emu {

// Where the running CUDA thread is: its lane's indices and its block's.
struct LaneIndex {
  uint3 thread_idx;
};
struct BlockIndex {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};
const LaneIndex& this_lane();
const BlockIndex& this_block();

void sync_threads();
void sync_warp(unsigned mask);
// The value that lane (this lane xor `lane_mask`) of this warp passed to the same shuffle.
uint64_t shuffle_xor(unsigned mask, uint64_t value, int lane_mask);
// A warp-wide operation (the tensor-core ones): once every lane of the warp has called it with
// its own `mine`, `combine` runs once with all 32, before any lane goes on.
void warp_collective(void (*combine)(void* const* lanes), void* mine);

// Runs `thread_body` once per thread of the grid (blocks spread over a few host threads), or,
// while `stream` is being captured, records it into the stream's graph.
void run_grid(dim3 grid, dim3 block, cudaStream_t stream, std::function<void()> thread_body);

template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, Args&&... args) {
  // Arguments are copied at launch, as CUDA does (a graph replays the values it captured).
  auto arguments = std::make_shared<std::tuple<std::decay_t<Params>...>>(std::forward<Args>(args)...);
  run_grid(grid, block, stream, [kernel, arguments] { std::apply(kernel, *arguments); });
}

// Reports a vector load from an address not aligned as the GPU requires (a launch failure there).
void misaligned_load(const void* address, size_t alignment);

template <class V>
V load_aligned(const void* address) {
  V value{};
  if (reinterpret_cast<uintptr_t>(address) % alignof(V) != 0) {
    misaligned_load(address, alignof(V));
    return value;
  }
  std::memcpy(&value, address, sizeof value);
  return value;
}

// Graphs replayed so far, so that a test can tell that a code path replays one.
uint64_t graph_launches();

// The first launch failure since the start (or clear_fault), for tests of the emulator itself.
std::string fault();
void clear_fault();

template <class T>
T shuffle_xor_as(unsigned mask, T value, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = shuffle_xor(mask, bits, lane_mask);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

}  // namespace kipp_emu

#define threadIdx (::kipp_emu::this_lane().thread_idx)
#define blockIdx (::kipp_emu::this_block().block_idx)
#define blockDim (::kipp_emu::this_block().block_dim)
#define gridDim (::kipp_emu::this_block().grid_dim)
#define warpSize 32

inline void __syncthreads() { kipp_emu::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { kipp_emu::sync_warp(mask); }
template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
  return kipp_emu::shuffle_xor_as(mask, value, lane_mask);
}

inline float __uint_as_float(unsigned bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
