// The CUDA backend's kernels, compiled as C++ against the emulator (see cuda_runtime.h here).
#include "backend/cuda/kernels.cu"
