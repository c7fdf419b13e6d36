// The logit gate in process, for every backend this build has besides cpu-ref, on both tiny
// checkpoints in every scheme (and two with a Q8_0 output head), against cpu-ref on the same
// artifact: every row's argmax equal and NMSE <= 1e-4. Two runs: a 40-token prefill with every row
// (the batched product: tensor cores on cuda), then 4 decode steps (one row each); and one decode
// step for three sessions of 150, 40 and 0 positions in one call (a small batch; on cuda,
// attention split into five, two and one live pieces). It needs no Python, so the GPU run has it even where gate_logits.py cannot run;
// the emulated cuda backend runs it in make test.
#include <gtest/gtest.h>

#include <memory>
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

// Sessions of `lengths` positions (prompts but their last token), then their last tokens in one
// eval call: that call's logits, a row per session.
std::vector<float> one_step_after(BackendModel& backend, const std::vector<std::vector<uint32_t>>& prompts,
                                  uint32_t vocab) {
  std::vector<float> logits(prompts.size() * vocab);
  std::vector<std::unique_ptr<BackendSession>> sessions;
  std::vector<EvalItem> step;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto session = backend.create_session(256);
    EXPECT_TRUE(session.ok()) << session.error().message;
    if (!session.ok()) return {};
    sessions.push_back(std::move(*session));
    const uint32_t length = uint32_t(prompts[i].size() - 1);
    EvalItem prefill{sessions[i].get(), std::span(prompts[i]).first(length), 0, 0, nullptr, {}};
    EXPECT_TRUE(backend.eval(std::span(&prefill, 1)).ok());
    step.push_back({sessions[i].get(), std::span(prompts[i]).last(1), length, 1, logits.data() + i * vocab, {}});
  }
  const Status status = backend.eval(step);
  EXPECT_TRUE(status.ok()) << status.error().message;
  return logits;
}

class BackendGate : public ::testing::TestWithParam<GateCase> {
 protected:
  void SetUp() override {
    const GateCase& c = GetParam();
    auto file = ModelFile::open(testing::test_models_dir() + "/" + c.model + "." + c.scheme + ".gguf");
    ASSERT_TRUE(file.ok()) << file.error().message;
    file_ = std::move(*file);
    auto reference = create_backend("cpu-ref", *file_);
    auto tested = create_backend(c.backend, *file_);
    ASSERT_TRUE(reference.ok()) << reference.error().message;
    ASSERT_TRUE(tested.ok()) << tested.error().message;
    reference_ = std::move(*reference);
    tested_ = std::move(*tested);
    vocab_ = file_->checkpoint().vocab();
  }

  // Every row: argmax equal, NMSE <= 1e-4.
  void expect_rows_match(const std::vector<float>& actual, const std::vector<float>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t row = 0; row * vocab_ < actual.size(); ++row) {
      const std::span<const float> want(expected.data() + row * vocab_, vocab_);
      const std::span<const float> got(actual.data() + row * vocab_, vocab_);
      EXPECT_EQ(testing::argmax(got), testing::argmax(want)) << "row " << row;
      EXPECT_LE(testing::nmse(got, want), 1e-4) << "row " << row;
    }
  }

  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<BackendModel> reference_, tested_;
  uint32_t vocab_ = 0;
};

TEST_P(BackendGate, PrefillAndDecodeMatchCpuRef) {
  const std::vector<uint32_t> prompt = testing::random_prompt(kPrefill + kDecode, 7);
  expect_rows_match(prefill_then_decode(*tested_, prompt, vocab_), prefill_then_decode(*reference_, prompt, vocab_));
}

TEST_P(BackendGate, OneStepOverLongAndShortContextsMatchesCpuRef) {
  std::vector<std::vector<uint32_t>> prompts;
  for (uint32_t length : {150, 40, 0}) prompts.push_back(testing::random_prompt(length + 1, 20 + length));
  expect_rows_match(one_step_after(*tested_, prompts, vocab_), one_step_after(*reference_, prompts, vocab_));
}

std::vector<GateCase> cases() {
  std::vector<GateCase> all;
  for (std::string_view backend : backend_names())
    if (backend != "cpu-ref")
      for (const char* model : {"qwen3-tiny", "qwen3-tiny-untied"})
        for (const char* scheme : {"bf16", "q8_0", "affine4_gs32", "bf16.head-q8_0", "affine4_gs32.head-q8_0"})
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
