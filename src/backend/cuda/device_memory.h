// Device memory as owned values, and CUDA errors as kipp errors: every allocation and copy the
// backend makes goes through here, so a failure (out of memory, no device) is a Status naming
// what was being done, never an abort.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "util/error.h"

namespace kipp::cuda {

inline Status check(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return {};
  return fail("CUDA: ", what, ": ", cudaGetErrorString(code));
}

// Bytes held in DeviceBuffers now, and the most they have reached, process-wide (one GPU).
struct DeviceBytes {
  std::atomic<uint64_t> held{0}, peak{0};
  void add(uint64_t bytes) {
    const uint64_t now = held += bytes;
    for (uint64_t seen = peak; now > seen && !peak.compare_exchange_weak(seen, now);) {
    }
  }
  void remove(uint64_t bytes) { held -= bytes; }
};
inline DeviceBytes& device_bytes() {
  static DeviceBytes counter;
  return counter;
}

// A device allocation of `bytes`, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (!data_) return;
    cudaFree(data_);
    device_bytes().remove(bytes_);
  }

  static Result<DeviceBuffer> allocate(size_t bytes, const std::string& what) {
    DeviceBuffer buffer;
    // Result<DeviceBuffer>(std::move(...)) spelled out: nvcc's front end does not move implicitly here.
    if (bytes == 0) return Result<DeviceBuffer>(std::move(buffer));
    if (auto ok = check(cudaMalloc(&buffer.data_, bytes),
                        ("allocating " + std::to_string(bytes >> 20) + " MiB for " + what).c_str());
        !ok)
      return ok.error();
    buffer.bytes_ = bytes;
    device_bytes().add(bytes);
    return Result<DeviceBuffer>(std::move(buffer));
  }

  // Grows (never shrinks) to at least `bytes`; the contents are not kept.
  Status reserve(size_t bytes, const std::string& what) {
    if (bytes <= bytes_) return {};
    KIPP_ASSIGN(DeviceBuffer bigger, allocate(bytes, what));
    *this = std::move(bigger);
    return {};
  }

  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace kipp::cuda
