// Whether weights can stay resident: the memory figures as Linux reports them, and the one line
// the loader prints when a file is larger than the memory available.
#include <gtest/gtest.h>

#include "model/residency.h"
#include "registry/registry.h"
#include "util/memory_available.h"

namespace kipp {
namespace {

TEST(MemoryAvailable, ReadsMemAvailableAndTheCgroupsRoom) {
  const std::string meminfo =
      "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   22000000 kB\nBuffers: 1 kB\n";
  EXPECT_EQ(meminfo_available(meminfo), 22000000ull * 1024);
  EXPECT_EQ(meminfo_available("MemTotal: 1 kB\n"), std::nullopt);
  EXPECT_EQ(cgroup_room("max\n", "123\n"), std::nullopt) << "no limit";
  EXPECT_EQ(cgroup_room("8589934592\n", "1073741824\n"), 7516192768ull);
  EXPECT_EQ(cgroup_room("100\n", "200\n"), 0u);
  EXPECT_TRUE(memory_available_bytes().has_value()) << "this test runs on Linux";
}

TEST(Residency, ArtifactBytesFollowTheSchemes) {
  const Checkpoint& a3b = *find_checkpoint("qwen3-30b-a3b");
  // BF16: every parameter in two bytes but the norms and routers, widened to F32.
  const uint64_t f32_elements = 48ull * (2 * 2048 + 2 * 128 + 128 * 2048) + 2048;
  EXPECT_EQ(artifact_tensor_bytes(a3b, QuantScheme::bf16, HeadScheme::bf16),
            2 * a3b.parameter_count() + 2 * f32_elements);
  EXPECT_LT(artifact_tensor_bytes(a3b, QuantScheme::affine4_gs32, HeadScheme::bf16),
            artifact_tensor_bytes(a3b, QuantScheme::q8_0, HeadScheme::bf16));
}

TEST(Residency, AFileLargerThanMemoryIsOneLineWithWhatFits) {
  const Checkpoint& a3b = *find_checkpoint("qwen3-30b-a3b");
  const uint64_t q8 = artifact_tensor_bytes(a3b, QuantScheme::q8_0, HeadScheme::bf16);
  const uint64_t affine4 = artifact_tensor_bytes(a3b, QuantScheme::affine4_gs32, HeadScheme::bf16);
  const uint64_t gb24 = 24'000'000'000;
  ASSERT_GT(q8, gb24);
  ASSERT_LT(affine4, gb24);
  EXPECT_EQ(residency_warning(a3b, QuantScheme::affine4_gs32, affine4, gb24), "") << "it fits: nothing to say";
  const std::string line = residency_warning(a3b, QuantScheme::q8_0, q8, gb24);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("qwen3-30b-a3b in q8_0 holds"), std::string::npos) << line;
  EXPECT_NE(line.find("24.0 GB of memory is available"), std::string::npos) << line;
  EXPECT_NE(line.find("what fits: affine4_gs32"), std::string::npos) << line;
  const Checkpoint& a22b = *find_checkpoint("qwen3-235b-a22b");
  const std::string big =
      residency_warning(a22b, QuantScheme::affine4_gs32,
                        artifact_tensor_bytes(a22b, QuantScheme::affine4_gs32, HeadScheme::bf16), gb24);
  EXPECT_NE(big.find("no scheme of this checkpoint fits"), std::string::npos) << big;
}

}  // namespace
}  // namespace kipp
