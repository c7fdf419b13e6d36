// The backend contract's one output besides logits, the final hidden row (backend.h,
// ../shared/REVIEW-QWEN3-MOE.md), on every backend and kernel set this build runs, on the
// embedding checkpoint (no head, 151,665 rows) and the reranker (151,669 rows): the row is the
// final norm of the item's last token, bit for bit the same alone or beside other items and
// across eval calls, close to cpu-ref's on the fast backend; a checkpoint without a head refuses
// logits, and an id past the embedding rows is refused before any session changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "logit_checks.h"
#include "test_paths.h"

namespace kipp {
namespace {

struct Case {
  std::string backend;
  std::string model;  // a test artifact's name: qwen3-embedding-tiny.bf16, ...
  std::string cpu_isa = {};
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.backend << " " << c.cpu_isa << " " << c.model; }

// The final norm of each position, as the backend records it.
class FinalNorms : public StepRecorder {
 public:
  void record(ForwardStep step, uint32_t, uint32_t position, std::span<const float> values) override {
    if (step == ForwardStep::final_norm) rows[position].assign(values.begin(), values.end());
  }
  std::map<uint32_t, std::vector<float>> rows;
};

class HiddenRow : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    auto file = ModelFile::open(testing::test_models_dir() + "/" + GetParam().model + ".gguf");
    ASSERT_TRUE(file.ok()) << file.error().message;
    file_ = std::move(file).value();
    backend_ = make(GetParam().backend, GetParam().cpu_isa);
    ASSERT_NE(backend_, nullptr);
  }

  std::unique_ptr<BackendModel> make(const std::string& backend, const std::string& isa) const {
    BackendOptions options;
    options.cpu_isa = isa;
    auto made = create_backend(backend, *file_, options);
    EXPECT_TRUE(made.ok()) << made.error().message;
    return made.ok() ? std::move(made).value() : nullptr;
  }

  uint32_t hidden() const { return file_->checkpoint().hidden; }

  // The hidden rows of `prompts`, each a fresh session's first tokens, all in one eval call.
  std::vector<std::vector<float>> rows_together(BackendModel& model,
                                                const std::vector<std::vector<uint32_t>>& prompts) {
    std::vector<std::unique_ptr<BackendSession>> sessions;
    std::vector<EvalItem> items;
    std::vector<std::vector<float>> rows(prompts.size(), std::vector<float>(hidden()));
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto session = model.create_session(uint32_t(prompts[i].size()));
      EXPECT_TRUE(session.ok());
      if (!session.ok()) return {};
      EvalItem item;
      item.session = session->get();
      item.tokens = prompts[i];
      item.logit_rows = 0;
      item.hidden = rows[i].data();
      items.push_back(item);
      sessions.push_back(std::move(session).value());
    }
    const Status status = model.eval(items);
    EXPECT_TRUE(status.ok()) << status.error().message;
    return rows;
  }

  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<BackendModel> backend_;
};

// Lengths across a pass of 128 tokens (the cpu backend's), a KV block (32) and one token.
std::vector<std::vector<uint32_t>> prompts() {
  return {testing::random_prompt(1, 1), testing::random_prompt(7, 2), testing::random_prompt(33, 3),
          testing::random_prompt(150, 4)};
}

TEST_P(HiddenRow, AloneEqualsBesideOtherItems) {
  const auto together = rows_together(*backend_, prompts());
  for (size_t i = 0; i < prompts().size(); ++i) {
    const auto alone = rows_together(*backend_, {prompts()[i]});
    EXPECT_TRUE(std::equal(alone[0].begin(), alone[0].end(), together[i].begin())) << "prompt " << i;
  }
}

TEST_P(HiddenRow, IsTheFinalNormOfTheLastTokenAcrossCalls) {
  const std::vector<uint32_t> ids = prompts()[3];
  auto session = backend_->create_session(uint32_t(ids.size()));
  ASSERT_TRUE(session.ok());
  FinalNorms norms;
  ASSERT_TRUE(backend_->record_steps(&norms).ok());
  std::vector<float> row(hidden());
  // The prompt in two calls, the row asked for at the end of the second.
  EvalItem first{session->get(), std::span(ids).first(100), 0, 0, nullptr, {}};
  ASSERT_TRUE(backend_->eval(std::span(&first, 1)).ok());
  EvalItem second{session->get(), std::span(ids).subspan(100), 100, 0, nullptr, {}, row.data()};
  ASSERT_TRUE(backend_->eval(std::span(&second, 1)).ok());
  ASSERT_TRUE(backend_->record_steps(nullptr).ok());
  ASSERT_EQ(norms.rows.count(uint32_t(ids.size() - 1)), 1u);
  EXPECT_EQ(norms.rows[uint32_t(ids.size() - 1)], row);
  const auto at_once = rows_together(*backend_, {ids});
  EXPECT_EQ(at_once[0], row) << "the prompt at once and in two calls";
}

// The fast backend's rows against cpu-ref's on the same artifact (instantiated for cpu only).
class FastHiddenRow : public HiddenRow {};

TEST_P(FastHiddenRow, IsCloseToCpuRef) {
  const auto reference = make("cpu-ref", "");
  const auto want = rows_together(*reference, prompts());
  const auto got = rows_together(*backend_, prompts());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_LE(testing::nmse(got[i], want[i]), 1e-5) << "prompt " << i;
}

TEST_P(HiddenRow, IdsPastTheEmbeddingRowsAreRefusedAndChangeNothing) {
  const uint32_t rows = file_->checkpoint().vocab();
  auto session = backend_->create_session(8);
  ASSERT_TRUE(session.ok());
  std::vector<float> row(hidden());
  for (uint32_t id : {rows, rows + 3, 151935u, 0xffffffffu}) {
    const std::vector<uint32_t> ids = {1, 2, id};
    EvalItem item{session->get(), ids, 0, 0, nullptr, {}, row.data()};
    const Status refused = backend_->eval(std::span(&item, 1));
    ASSERT_FALSE(refused.ok()) << id;
    EXPECT_NE(refused.error().message.find("outside the vocabulary of " + std::to_string(rows)), std::string::npos)
        << refused.error().message;
    EXPECT_EQ(session.value()->length(), 0u);
  }
}

TEST(HiddenRowRefusals, AnEmbeddingCheckpointHasNoLogits) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-embedding-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  for (std::string_view name : backend_names()) {
    auto backend = create_backend(name, **file);
    if (name == "cuda") {
      ASSERT_FALSE(backend.ok());
      EXPECT_NE(backend.error().message.find("does not run embed checkpoints"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(backend.ok()) << backend.error().message;
    auto session = backend.value()->create_session(4);
    ASSERT_TRUE(session.ok());
    const std::vector<uint32_t> ids = {1, 2};
    std::vector<float> logits(file.value()->checkpoint().vocab());
    EvalItem item{session->get(), ids, 0, 1, logits.data(), {}};
    const Status refused = backend.value()->eval(std::span(&item, 1));
    ASSERT_FALSE(refused.ok()) << name;
    EXPECT_NE(refused.error().message.find("has no output head"), std::string::npos) << refused.error().message;
    EXPECT_EQ(session.value()->length(), 0u);
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* model : {"qwen3-embedding-tiny.bf16", "qwen3-embedding-tiny.q8_0",
                            "qwen3-embedding-tiny.affine4_gs32", "qwen3-reranker-tiny.bf16"}) {
    all.push_back({"cpu-ref", model});
    all.push_back({"cpu", model});
  }
  const cpu::Isa detected = cpu::detected_isa();
  for (cpu::Isa isa : {cpu::Isa::portable, cpu::Isa::avx2, cpu::Isa::avx512, cpu::Isa::avx512bf16, cpu::Isa::amx})
    if (isa != detected && cpu::runs(isa))
      for (const char* model : {"qwen3-embedding-tiny.bf16", "qwen3-embedding-tiny.q8_0"})
        all.push_back({"cpu", model, std::string(cpu::isa_name(isa))});
  return all;
}

std::vector<Case> fast_cases() {
  std::vector<Case> fast;
  for (const Case& c : cases())
    if (c.backend == "cpu") fast.push_back(c);
  return fast;
}

std::string case_name(const ::testing::TestParamInfo<Case>& param_info) {
  const Case& c = param_info.param;
  std::string name = c.backend + (c.cpu_isa.empty() ? "" : "_" + c.cpu_isa) + "_" + c.model;
  std::replace(name.begin(), name.end(), '-', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, HiddenRow, ::testing::ValuesIn(cases()), case_name);
INSTANTIATE_TEST_SUITE_P(FastBackend, FastHiddenRow, ::testing::ValuesIn(fast_cases()), case_name);

}  // namespace
}  // namespace kipp
