// A captured sequence of kernel launches (a CUDA graph) as an owned value: replaying it costs one
// launch instead of one per kernel, which is most of a small model's decode step on a GPU.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "backend/cuda/device_memory.h"

namespace kipp::cuda {

class DeviceGraph {
 public:
  DeviceGraph() = default;
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;
  DeviceGraph(DeviceGraph&& other) noexcept { std::swap(exec_, other.exec_); }
  DeviceGraph& operator=(DeviceGraph&& other) noexcept {
    std::swap(exec_, other.exec_);
    return *this;
  }
  ~DeviceGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }

  // Records what `launches` puts on `stream` (nothing runs) and makes it replayable. Its
  // arguments, pointers included, are fixed from now on: only the memory they point to may change.
  template <class Launches>
  static Result<DeviceGraph> capture(cudaStream_t stream, Launches&& launches) {
    KIPP_TRY(check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "starting a graph capture"));
    launches();
    cudaGraph_t graph = nullptr;
    KIPP_TRY(check(cudaStreamEndCapture(stream, &graph), "capturing the decode step"));
    DeviceGraph captured;
    const cudaError_t made = cudaGraphInstantiate(&captured.exec_, graph, 0);
    cudaGraphDestroy(graph);
    KIPP_TRY(check(made, "instantiating the decode step's graph"));
    return Result<DeviceGraph>(std::move(captured));
  }

  Status launch(cudaStream_t stream) const { return check(cudaGraphLaunch(exec_, stream), "replaying a graph"); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace kipp::cuda
