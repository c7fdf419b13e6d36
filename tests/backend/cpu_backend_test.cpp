// The fast CPU backend's own parts: the thread pool, work splitting, kernel-set choice, and
// results that do not depend on the thread count (the contract suite covers the rest).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "logit_checks.h"
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
  EXPECT_EQ(cpu::chosen_isa("").value(), cpu::detected_isa());
  auto portable = cpu::chosen_isa("portable");
  ASSERT_TRUE(portable.ok());
  EXPECT_EQ(portable.value(), cpu::Isa::portable);
  auto unknown = cpu::chosen_isa("sse9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("--cpu-isa sse9: expected portable, avx2, avx512, avx512bf16 or amx"),
            std::string::npos);
  for (cpu::Isa isa : {cpu::Isa::avx2, cpu::Isa::avx512, cpu::Isa::avx512bf16, cpu::Isa::amx}) {
    auto forced = cpu::chosen_isa(cpu::isa_name(isa));
    EXPECT_EQ(forced.ok(), cpu::runs(isa)) << cpu::isa_name(isa);
    if (!forced.ok()) {
      EXPECT_NE(forced.error().message.find("this processor cannot run it"), std::string::npos);
    }
  }
  EXPECT_GE(cpu::physical_cores(), 1u);
}

// --bf16-activations takes the avx512bf16 set by itself, refuses any other named set, and is
// refused by a processor without AVX512-BF16, each by name.
TEST(CpuBackend, Bf16ActivationsTakeTheSetWithPairProducts) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  BackendOptions options;
  options.bf16_activations = true;
  auto chosen = create_backend("cpu", *file.value(), options);
  if (cpu::runs(cpu::Isa::avx512bf16)) {
    ASSERT_TRUE(chosen.ok()) << chosen.error().message;
    EXPECT_NE(chosen.value()->describe().find("avx512bf16 kernels"), std::string::npos) << chosen.value()->describe();
    EXPECT_NE(chosen.value()->describe().find("BF16 activations"), std::string::npos) << chosen.value()->describe();
  } else {
    ASSERT_FALSE(chosen.ok());
    EXPECT_NE(chosen.error().message.find("--bf16-activations needs AVX512-BF16"), std::string::npos)
        << chosen.error().message;
  }
  options.cpu_isa = "portable";
  auto refused = create_backend("cpu", *file.value(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--bf16-activations needs the avx512bf16 kernel set, not portable"),
            std::string::npos)
      << refused.error().message;
  options.cpu_isa = {};
  EXPECT_FALSE(create_backend("cpu-ref", *file.value(), options).ok());
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

// Attention past one chunk (kAttentionChunk positions) is computed chunk by chunk and folded.
// The fold must not make a token's logits depend on how its prompt was chunked, on the thread
// count, or on which threads took which chunks; and it must still agree with the oracle. Two
// tests, so that the sanitizer build can leave out the oracle's long scalar prefill.
class LongContext : public ::testing::Test {
 protected:
  static constexpr uint32_t kLength = 2 * cpu::kAttentionChunk + 70, kRows = 4;

  void SetUp() override {
    auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-tiny-untied.bf16.gguf");
    ASSERT_TRUE(file.ok()) << file.error().message;
    file_ = std::move(file).value();
  }

  uint32_t vocab() const { return file_->checkpoint().vocab(); }

  // The last kRows logits of the prompt, evaluated with `threads` threads in pieces of `piece`.
  std::vector<float> last_rows(const std::string& backend_name, unsigned threads, uint32_t piece) {
    auto backend = create_backend(backend_name, *file_, {threads});
    EXPECT_TRUE(backend.ok());
    auto session = backend.value()->create_session(kLength);
    EXPECT_TRUE(session.ok());
    std::vector<float> logits(size_t(kRows) * vocab());
    for (uint32_t start = 0; start < kLength; start += piece) {
      const uint32_t count = std::min(piece, kLength - start);
      const uint32_t wanted = start + count > kLength - kRows ? start + count - (kLength - kRows) : 0;
      const uint32_t wanted_rows = std::min(wanted, count);
      float* first_row =
          wanted_rows ? logits.data() + size_t(kRows - (kLength - start - count) - wanted_rows) * vocab() : nullptr;
      EvalItem item{session.value().get(), std::span(ids_).subspan(start, count), start, wanted_rows, first_row, {}};
      EXPECT_TRUE(backend.value()->eval(std::span(&item, 1)).ok());
    }
    return logits;
  }

  std::unique_ptr<ModelFile> file_;
  const std::vector<uint32_t> ids_ = testing::random_prompt(kLength, 11);
};

TEST_F(LongContext, AttentionDoesNotDependOnPiecesOrThreads) {
  const std::vector<float> whole = last_rows("cpu", 2, kLength);
  EXPECT_EQ(last_rows("cpu", 1, kLength), whole);
  EXPECT_EQ(last_rows("cpu", 3, 100), whole);  // pieces straddle the chunk edges
  EXPECT_EQ(last_rows("cpu", 2, 1), whole);    // token-by-token decode: one token, many chunks
}

TEST_F(LongContext, AttentionMatchesTheOracle) {
  const std::vector<float> whole = last_rows("cpu", 2, kLength);
  const std::vector<float> oracle = last_rows("cpu-ref", 1, kLength);
  for (uint32_t r = 0; r < kRows; ++r) {
    const std::span<const float> got(whole.data() + size_t(r) * vocab(), vocab());
    const std::span<const float> want(oracle.data() + size_t(r) * vocab(), vocab());
    EXPECT_LE(testing::nmse(got, want), 1e-4) << "row " << r;
    EXPECT_EQ(testing::argmax(got), testing::argmax(want)) << "row " << r;
  }
}

}  // namespace
}  // namespace kipp
