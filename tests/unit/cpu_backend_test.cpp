// The fast CPU backend's own parts: the thread pool, work splitting, kernel-set choice, and
// results that do not depend on the thread count (the contract suite covers the rest).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/thread_pool.h"
#include "test_paths.h"

namespace kipp {
namespace {

TEST(CpuThreadPool, RunsEveryIndexOncePerJob) {
  cpu::ThreadPool pool(3);
  ASSERT_EQ(pool.size(), 3u);
  for (int job = 0; job < 200; ++job) {
    std::atomic<unsigned> seen[3] = {};
    pool.run([&](unsigned index, unsigned count) {
      EXPECT_EQ(count, 3u);
      seen[index].fetch_add(1);
    });
    for (auto& s : seen) EXPECT_EQ(s.load(), 1u);
  }
}

TEST(CpuThreadPool, SplitCoversTheRangeInGrains) {
  for (uint32_t total : {0u, 1u, 15u, 16u, 17u, 1000u, 151936u})
    for (unsigned count : {1u, 2u, 3u, 7u}) {
      uint32_t next = 0;
      for (unsigned i = 0; i < count; ++i) {
        const cpu::Range r = cpu::split(total, i, count, 16);
        EXPECT_EQ(r.begin, next);
        EXPECT_TRUE(r.end == total || r.end % 16 == 0);
        next = r.end;
      }
      EXPECT_EQ(next, total);
    }
}

TEST(CpuFeatures, ForcedKernelSetIsCheckedAgainstTheProcessor) {
  ::setenv("KIPP_CPU_ISA", "portable", 1);
  auto portable = cpu::chosen_isa();
  ASSERT_TRUE(portable.ok());
  EXPECT_EQ(portable.value(), cpu::Isa::portable);
  ::setenv("KIPP_CPU_ISA", "sse9", 1);
  auto unknown = cpu::chosen_isa();
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("expected portable, avx2 or avx512"), std::string::npos);
  if (cpu::detected_isa() != cpu::Isa::avx512) {
    ::setenv("KIPP_CPU_ISA", "avx512", 1);
    EXPECT_FALSE(cpu::chosen_isa().ok());
  }
  ::unsetenv("KIPP_CPU_ISA");
  EXPECT_GE(cpu::physical_cores(), 1u);
}

TEST(CpuBackend, ResultsDoNotDependOnTheThreadCount) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny-untied.q8_0.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  std::mt19937 rng(3);
  std::vector<uint32_t> ids(37);
  for (uint32_t& id : ids) id = rng() % 151643;
  std::vector<std::vector<float>> results;
  for (unsigned threads : {1u, 2u, 3u}) {
    auto backend = create_backend("cpu", *file.value(), {threads});
    ASSERT_TRUE(backend.ok()) << backend.error().message;
    auto session = backend.value()->create_session(64);
    ASSERT_TRUE(session.ok());
    std::vector<float> logits(size_t(4) * file.value()->checkpoint().vocab());
    EvalItem item{session.value().get(), ids, 0, 4, logits.data(), {}};
    ASSERT_TRUE(backend.value()->eval(std::span(&item, 1)).ok());
    results.push_back(std::move(logits));
  }
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(results[2], results[0]);
}

}  // namespace
}  // namespace kipp
