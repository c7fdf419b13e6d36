// The CUDA backend's host code, compiled as C++ against the emulator (see cuda_runtime.h here).
#include "backend/cuda/cuda_backend.cu"
