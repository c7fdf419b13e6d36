// Kernel launches through one function: under nvcc this is the <<<grid, block, 0, stream>>>
// launch; compiled as plain C++ against the test suite's CPU emulator of the CUDA runtime
// (tests/cuda_emulator), the same kernels run there, so their logic is tested on every machine.
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

}  // namespace kipp::cuda
