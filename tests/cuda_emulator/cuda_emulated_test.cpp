// The CUDA backend on the CPU emulator: decode steps as graphs, a device too small for the weights,
// and the emulator's own barriers and failure reports. The backend contract and the logit gate
// against cpu-ref (backend_gate_test.cpp) run on it too: kipp_cuda_emulated_tests, cuda cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/launch.cuh"
#include "cuda_runtime.h"
#include "logit_checks.h"
#include "model/model_file.h"
#include "test_paths.h"

namespace kipp {
namespace {

TEST(CudaEmulated, WeightsThatDoNotFitAreAClearError) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  setenv("KIPP_CUDA_EMULATOR_MIB", "8", 1);  // the tiny model's embedding alone is 74 MiB
  auto cuda = create_backend("cuda", **file);
  unsetenv("KIPP_CUDA_EMULATOR_MIB");
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.error().message.find("model weights"), std::string::npos) << cuda.error().message;
  EXPECT_NE(cuda.error().message.find("out of memory"), std::string::npos) << cuda.error().message;
  EXPECT_TRUE(create_backend("cuda", **file).ok()) << "a failed load leaves nothing behind";
}

// The cuda cache is BF16 only: --kv-cache q8_0 is refused at creation, by name, not ignored.
TEST(CudaEmulated, TheQ8_0KvCacheIsRefusedByName) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  BackendOptions options;
  options.kv_cache = KvFormat::q8_0;
  auto cuda = create_backend("cuda", **file, options);
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.error().message.find("--kv-cache q8_0"), std::string::npos) << cuda.error().message;
}

// MoE on CUDA waits for the dense backend's gates on a GPU (../shared/REVIEW-QWEN3-MOE.md, point 8).
TEST(CudaEmulated, AMixtureOfExpertsArtifactIsRefusedByName) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-moe-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto cuda = create_backend("cuda", **file);
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.error().message.find("the cuda backend does not run mixture-of-experts checkpoints"),
            std::string::npos)
      << cuda.error().message;
  EXPECT_NE(cuda.error().message.find("kipp-test/qwen3-moe-tiny"), std::string::npos) << cuda.error().message;
}

// Decode steps replay a graph captured per batch size; the logits are the kernels' own, bitwise.
TEST(CudaEmulated, DecodeStepsReplayGraphsThatMatchPlainLaunches) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  const uint32_t vocab = (*file)->checkpoint().vocab();
  const std::vector<uint32_t> a = testing::random_prompt(40, 3), b = testing::random_prompt(40, 4);
  // Two sessions: a prefill each, then decode steps of one and of both (batch sizes 1 and 2),
  // across a 32-position block boundary.
  auto run = [&](bool graphs) {
    BackendOptions options;
    options.cuda_graphs = graphs;
    auto cuda = create_backend("cuda", **file, options);
    std::vector<float> logits;
    if (!cuda.ok()) return logits;
    auto s1 = (*cuda)->create_session(64), s2 = (*cuda)->create_session(64);
    std::vector<float> row(2 * vocab);
    EvalItem prefill[2] = {{s1->get(), std::span(a).first(28), 0, 1, row.data(), {}},
                           {s2->get(), std::span(b).first(30), 0, 1, row.data() + vocab, {}}};
    EXPECT_TRUE((*cuda)->eval(prefill).ok());
    logits.insert(logits.end(), row.begin(), row.end());
    for (uint32_t p = 28; p < 36; ++p) {
      std::vector<EvalItem> step = {{s1->get(), std::span(a).subspan(p, 1), p, 1, row.data(), {}}};
      if (p >= 30) step.push_back({s2->get(), std::span(b).subspan(p, 1), p, 1, row.data() + vocab, {}});
      EXPECT_TRUE((*cuda)->eval(step).ok());
      logits.insert(logits.end(), row.begin(), row.begin() + step.size() * vocab);
    }
    return logits;
  };
  const uint64_t before = kipp_emu::graph_launches();
  const std::vector<float> plain = run(false);
  EXPECT_EQ(kipp_emu::graph_launches(), before) << "--no-cuda-graphs launches kernel by kernel";
  const std::vector<float> replayed = run(true);
  EXPECT_EQ(kipp_emu::graph_launches() - before, 8u) << "every decode step is a graph replay";
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(replayed, plain);
}

// Batches small enough for the per-row products (decode) are batch-invariant: a session's decode
// steps give the same bits alone as beside other sessions at other positions (the attention split
// and the products' sums depend only on the row). What the server's concurrent greedy requests
// rely on to match the same request alone.
TEST(CudaEmulated, DecodeBatchesOfUnder32RowsAreBitwiseBatchInvariant) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  const uint32_t vocab = (*file)->checkpoint().vocab();
  auto cuda = create_backend("cuda", **file);
  ASSERT_TRUE(cuda.ok()) << cuda.error().message;
  const std::vector<uint32_t> lengths = {70, 33, 5};
  std::vector<std::vector<uint32_t>> prompts;
  std::vector<std::unique_ptr<BackendSession>> alone, together;
  for (uint32_t i = 0; i < lengths.size(); ++i) {
    prompts.push_back(testing::random_prompt(lengths[i] + 2, 40 + i));
    for (auto* sessions : {&alone, &together}) {
      auto session = (*cuda)->create_session(128);
      ASSERT_TRUE(session.ok());
      EvalItem prefill{session->get(), std::span(prompts[i]).first(lengths[i]), 0, 0, nullptr, {}};
      ASSERT_TRUE((*cuda)->eval(std::span(&prefill, 1)).ok());
      sessions->push_back(std::move(*session));
    }
  }
  // Two steps: each session alone, then all three in one call.
  std::vector<float> one(vocab), three(lengths.size() * vocab);
  for (uint32_t step = 0; step < 2; ++step) {
    std::vector<EvalItem> batch;
    for (uint32_t i = 0; i < lengths.size(); ++i)
      batch.push_back({together[i].get(),
                       std::span(prompts[i]).subspan(lengths[i] + step, 1),
                       lengths[i] + step,
                       1,
                       three.data() + i * vocab,
                       {}});
    ASSERT_TRUE((*cuda)->eval(batch).ok());
    for (uint32_t i = 0; i < lengths.size(); ++i) {
      EvalItem item{alone[i].get(), batch[i].tokens, batch[i].start_position, 1, one.data(), {}};
      ASSERT_TRUE((*cuda)->eval(std::span(&item, 1)).ok());
      EXPECT_TRUE(std::equal(one.begin(), one.end(), three.begin() + i * vocab))
          << "session " << i << " at position " << batch[i].start_position;
    }
  }
}

// ---- the emulator itself: barriers, shuffles and the failures it must report ----

void warp_sums(const float* in, float* out) {
  float value = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  __shared__ float per_warp[8];
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += per_warp[w];
    out[blockIdx.x] = total;
  }
}

void half_warp_shuffles(float* out) {
  if (threadIdx.x % 32 >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

TEST(CudaEmulator, ShufflesAndBlockBarriersCombineEveryThread) {
  constexpr unsigned kBlocks = 5, kThreads = 256;
  std::vector<float> input(kBlocks * kThreads);
  for (size_t i = 0; i < input.size(); ++i) input[i] = float(i % 97);
  std::vector<float> sums(kBlocks);
  kipp_emu::launch_kernel(&warp_sums, dim3(kBlocks), dim3(kThreads), nullptr, input.data(), sums.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << kipp_emu::fault();
  for (unsigned b = 0; b < kBlocks; ++b) {
    float expected = 0;
    for (unsigned t = 0; t < kThreads; ++t) expected += input[b * kThreads + t];
    EXPECT_EQ(sums[b], expected) << "block " << b;
  }
}

TEST(CudaEmulator, AShuffleThatHalfAWarpSkipsIsALaunchFailure) {
  std::vector<float> out(64);
  kipp_emu::launch_kernel(&half_warp_shuffles, dim3(1), dim3(64), nullptr, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("diverge"), std::string::npos)
      << cudaGetErrorString(cudaErrorLaunchFailure);
  kipp_emu::clear_fault();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

void vector_loads_every_4_bytes(const uint8_t* bytes, unsigned* out) {
  out[threadIdx.x] = cuda::load_vector<uint4>(bytes + 4 * threadIdx.x).x;  // aligned for every fourth thread only
}

TEST(CudaEmulator, AMisalignedVectorLoadIsALaunchFailure) {
  alignas(16) uint8_t bytes[32 * 4 + 16] = {};
  std::vector<unsigned> out(32);
  kipp_emu::launch_kernel(&vector_loads_every_4_bytes, dim3(1), dim3(32), nullptr, bytes, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(kipp_emu::fault().find("16-byte vector load from misaligned address"), std::string::npos)
      << kipp_emu::fault();
  kipp_emu::clear_fault();
  kipp_emu::launch_kernel(&vector_loads_every_4_bytes, dim3(1), dim3(1), nullptr, bytes, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "thread 0 alone reads at offset 0: " << kipp_emu::fault();
}

TEST(CudaEmulator, AGraphReplaysTheArgumentsItCaptured) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::vector<float> input(32, 1.0f), sums(1, 0.0f);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  kipp_emu::launch_kernel(&warp_sums, dim3(1), dim3(32), stream, input.data(), sums.data());
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorStreamCaptureUnsupported) << "no synchronizing while capturing";
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(sums[0], 0.0f) << "captured, not run";
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  input.assign(32, 2.0f);  // the same buffer, new contents: a replay reads them
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  EXPECT_EQ(sums[0], 64.0f);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace kipp
