// The logit gate in process, for every backend this build has besides cpu-ref: on both tiny
// checkpoints in every scheme, a 40-token prefill with every row (the batched product: tensor
// cores on cuda), then 4 decode steps (one row each), against cpu-ref on the same artifact:
// every row's argmax equal and NMSE <= 1e-4. It needs no Python, so the GPU run has it even
// where gate_logits.py cannot run; the emulated cuda backend runs it in make test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend.h"
#include "logit_checks.h"
#include "model/model_file.h"
#include "test_paths.h"

namespace kipp {
namespace {

struct GateCase {
  std::string backend, model, scheme;
};

void PrintTo(const GateCase& c, std::ostream* out) { *out << c.backend << " " << c.model << "." << c.scheme; }

constexpr uint32_t kPrefill = 40, kDecode = 4;

// Logits of the prefill's every row, then of each decode step.
std::vector<float> prefill_then_decode(BackendModel& backend, std::span<const uint32_t> prompt, uint32_t vocab) {
  auto session = backend.create_session(64);
  EXPECT_TRUE(session.ok()) << session.error().message;
  if (!session.ok()) return {};
  std::vector<float> logits(prompt.size() * vocab);
  EvalItem prefill{session->get(), prompt.first(kPrefill), 0, kPrefill, logits.data(), {}};
  Status status = backend.eval(std::span(&prefill, 1));
  EXPECT_TRUE(status.ok()) << status.error().message;
  for (uint32_t p = kPrefill; p < prompt.size() && status.ok(); ++p) {
    EvalItem step{session->get(), prompt.subspan(p, 1), p, 1, logits.data() + size_t(p) * vocab, {}};
    status = backend.eval(std::span(&step, 1));
    EXPECT_TRUE(status.ok()) << status.error().message;
  }
  return logits;
}

class BackendGate : public ::testing::TestWithParam<GateCase> {};

TEST_P(BackendGate, PrefillAndDecodeMatchCpuRef) {
  const GateCase& c = GetParam();
  auto file = ModelFile::open(testing::test_models_dir() + "/" + c.model + "." + c.scheme + ".gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto reference = create_backend("cpu-ref", **file);
  auto tested = create_backend(c.backend, **file);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  ASSERT_TRUE(tested.ok()) << tested.error().message;
  const uint32_t vocab = (*file)->checkpoint().vocab();
  const std::vector<uint32_t> prompt = testing::random_prompt(kPrefill + kDecode, 7);
  const std::vector<float> expected = prefill_then_decode(**reference, prompt, vocab);
  const std::vector<float> actual = prefill_then_decode(**tested, prompt, vocab);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t row = 0; row < prompt.size(); ++row) {
    const std::span<const float> want(expected.data() + row * vocab, vocab), got(actual.data() + row * vocab, vocab);
    EXPECT_EQ(testing::argmax(got), testing::argmax(want)) << "row " << row;
    EXPECT_LE(testing::nmse(got, want), 1e-4) << "row " << row;
  }
}

std::vector<GateCase> cases() {
  std::vector<GateCase> all;
  for (std::string_view backend : backend_names())
    if (backend != "cpu-ref")
      for (const char* model : {"qwen3-tiny", "qwen3-tiny-untied"})
        for (const char* scheme : {"bf16", "q8_0", "affine4_gs32"})
          all.push_back({std::string(backend), model, scheme});
  return all;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendGate, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GateCase>& param_info) {
                           std::string name =
                               param_info.param.backend + "_" + param_info.param.model + "_" + param_info.param.scheme;
                           for (char& ch : name)
                             if (ch == '-' || ch == '.') ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace kipp
