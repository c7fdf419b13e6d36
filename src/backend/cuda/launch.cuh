// What differs between nvcc and the test suite's CPU emulator of the CUDA runtime
// (tests/cuda_emulator), where the same kernels run as plain C++ so that their logic is tested on
// every machine: kernel launches (<<<grid, block, 0, stream>>> under nvcc) and vector loads (the
// emulator checks their alignment, which the GPU requires and x86 does not).
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace kipp::cuda {

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, Args&&... args) {
#ifdef __CUDACC__
  kernel<<<grid, block, 0, stream>>>(std::forward<Args>(args)...);
#else
  kipp_emu::launch_kernel(kernel, grid, block, stream, std::forward<Args>(args)...);
#endif
}

// Reads a vector type V (uint2, uint4, float4) at `address`, which must be aligned to sizeof(V).
template <class V>
__device__ __forceinline__ V load_vector(const void* address) {
#ifdef __CUDACC__
  return *static_cast<const V*>(address);
#else
  return kipp_emu::load_aligned<V>(address);
#endif
}

}  // namespace kipp::cuda
