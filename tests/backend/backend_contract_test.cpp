// The backend contract, checked on every backend this build offers and on the synthetic
// checkpoints: session lifecycle, paging through scrambled block tables (private and pooled),
// cached decode against recomputation, multi-row logits, multi-item evaluation and the checks
// that reject a bad call without changing any session.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
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
  std::string model;
  KvFormat kv_cache = KvFormat::bf16;
  std::string cpu_isa = {};       // cpu: a kernel set other than the detected one
  std::string scheme = "bf16";    // the artifact: bf16, q8_0 or affine4_gs32
  bool bf16_activations = false;  // cpu: --bf16-activations
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.backend << " " << c.model << "." << c.scheme << " kv " << kv_format_name(c.kv_cache) << " " << c.cpu_isa
       << (c.bf16_activations ? " bf16-activations" : "");
}

using testing::argmax;
using testing::nmse;

std::vector<uint32_t> prompt(size_t length, uint32_t seed) { return testing::random_prompt(length, seed); }

class BackendContract : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    auto file = ModelFile::open(testing::test_models_dir() + "/" + c.model + "." + c.scheme + ".gguf");
    ASSERT_TRUE(file.ok()) << file.error().message;
    file_ = std::move(file).value();
    BackendOptions options;
    options.kv_cache = c.kv_cache;
    options.cpu_isa = c.cpu_isa;
    options.bf16_activations = c.bf16_activations;
    auto backend = create_backend(c.backend, *file_, options);
    ASSERT_TRUE(backend.ok()) << backend.error().message;
    backend_ = std::move(backend).value();
    vocab_ = file_->checkpoint().vocab();
  }

  std::unique_ptr<BackendSession> session(uint32_t capacity) {
    auto created = backend_->create_session(capacity);
    EXPECT_TRUE(created.ok()) << created.error().message;
    return created.ok() ? std::move(created).value() : nullptr;
  }

  // Appends `tokens` to `s` through `table` and returns the logits of the last `rows` of them.
  std::vector<float> eval(BackendSession& s, std::span<const uint32_t> tokens, uint32_t rows,
                          std::span<const uint32_t> table = {}) {
    std::vector<float> logits(size_t(rows) * vocab_);
    EvalItem item{&s, tokens, s.length(), rows, logits.data(), table};
    const Status status = backend_->eval(std::span(&item, 1));
    EXPECT_TRUE(status.ok()) << status.error().message;
    return logits;
  }

  // Logits of the same positions from batches of different shapes: bitwise equal on a
  // batch-invariant backend; otherwise every row's argmax equal and NMSE <= 1e-4 (the bound for
  // batched against isolated evaluation).
  void expect_same_rows(std::span<const float> got, std::span<const float> want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    if (backend_->batch_invariant()) {
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << what;
      return;
    }
    for (size_t row = 0; row * vocab_ < got.size(); ++row) {
      EXPECT_EQ(argmax(got.subspan(row * vocab_, vocab_)), argmax(want.subspan(row * vocab_, vocab_)))
          << what << ", row " << row;
      EXPECT_LE(nmse(got.subspan(row * vocab_, vocab_), want.subspan(row * vocab_, vocab_)), 1e-4)
          << what << ", row " << row;
    }
  }

  // One token per eval call (the decode path); logits of the last `keep` positions, in order.
  std::vector<float> decode_each(BackendSession& s, std::span<const uint32_t> tokens,
                                 std::span<const uint32_t> table = {}, size_t keep = SIZE_MAX) {
    std::vector<float> kept;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const uint32_t rows = tokens.size() - i <= keep ? 1 : 0;
      const std::vector<float> logits = eval(s, tokens.subspan(i, 1), rows, table);
      kept.insert(kept.end(), logits.begin(), logits.end());
    }
    return kept;
  }

  std::span<const float> row(const std::vector<float>& logits, size_t r) const {
    return std::span(logits).subspan(r * vocab_, vocab_);
  }

  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<BackendModel> backend_;
  uint32_t vocab_ = 0;
};

TEST_P(BackendContract, CapacityIsCheckedAtCreation) {
  EXPECT_FALSE(backend_->create_session(0).ok());
  EXPECT_FALSE(backend_->create_session(file_->checkpoint().context + 1).ok());
  auto full = backend_->create_session(file_->checkpoint().context);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full.value()->capacity(), file_->checkpoint().context);
  EXPECT_EQ(full.value()->length(), 0u);
}

TEST_P(BackendContract, ZeroOneAndManyTokenAppends) {
  auto s = session(64);
  const std::vector<uint32_t> ids = prompt(10, 1);
  EvalItem nothing{s.get(), {}, 0, 0, nullptr, {}};
  ASSERT_TRUE(backend_->eval(std::span(&nothing, 1)).ok());
  EXPECT_EQ(s->length(), 0u);
  eval(*s, std::span(ids).first(1), 1);
  EXPECT_EQ(s->length(), 1u);
  const std::vector<float> many = eval(*s, std::span(ids).subspan(1), 1);
  EXPECT_EQ(s->length(), 10u);
  auto fresh = session(64);
  expect_same_rows(eval(*fresh, ids, 1), many, "10 tokens at once against 1 + 9");
}

TEST_P(BackendContract, ExactCapacityFillsAndOverflowChangesNothing) {
  const std::vector<uint32_t> ids = prompt(41, 2);
  auto s = session(40);
  const std::vector<float> last = eval(*s, std::span(ids).first(40), 1);
  EXPECT_EQ(s->length(), 40u);
  std::vector<float> logits(vocab_);
  EvalItem overflow{s.get(), std::span(ids).subspan(40), 40, 1, logits.data(), {}};
  const Status refused = backend_->eval(std::span(&overflow, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("capacity"), std::string::npos) << refused.error().message;
  EXPECT_EQ(s->length(), 40u);
  // The cache is untouched: truncating one position and re-evaluating it reproduces the last row.
  ASSERT_TRUE(s->truncate(39).ok());
  expect_same_rows(eval(*s, std::span(ids).subspan(39, 1), 1), last, "the last position again");
}

TEST_P(BackendContract, ResetAndTruncateRewindTheTimeline) {
  const std::vector<uint32_t> a = prompt(50, 3), b = prompt(50, 4);
  auto reference = session(100);
  const std::vector<float> expected = eval(*reference, a, 1);
  auto s = session(100);
  eval(*s, b, 1);
  s->reset();
  EXPECT_EQ(s->length(), 0u);
  EXPECT_EQ(eval(*s, a, 1), expected);
  EXPECT_FALSE(s->truncate(51).ok());
  EXPECT_EQ(s->length(), 50u);
  ASSERT_TRUE(s->truncate(20).ok());  // back into the first block, then regrow past it
  expect_same_rows(eval(*s, std::span(a).subspan(20), 1), expected, "regrown after truncation");
  ASSERT_TRUE(s->truncate(50).ok());
  ASSERT_TRUE(s->truncate(0).ok());
  EXPECT_EQ(eval(*s, a, 1), expected);
}

TEST_P(BackendContract, SessionsAreIndependent) {
  const std::vector<uint32_t> a = prompt(36, 5), b = prompt(36, 6);
  auto alone_a = session(64), alone_b = session(64);
  const std::vector<float> expect_a = decode_each(*alone_a, a, {}, 3), expect_b = decode_each(*alone_b, b, {}, 3);
  auto s_a = session(64), s_b = session(64);
  std::vector<float> got_a, got_b;
  for (size_t i = 0; i < 36; ++i) {  // interleaved, one token each
    const uint32_t rows = i >= 33 ? 1 : 0;
    const std::vector<float> ra = eval(*s_a, std::span(a).subspan(i, 1), rows);
    const std::vector<float> rb = eval(*s_b, std::span(b).subspan(i, 1), rows);
    got_a.insert(got_a.end(), ra.begin(), ra.end());
    got_b.insert(got_b.end(), rb.begin(), rb.end());
  }
  EXPECT_EQ(got_a, expect_a);
  EXPECT_EQ(got_b, expect_b);
}

TEST_P(BackendContract, ScrambledPrivateBlockTableIsBitwiseIdentical) {
  // 100 positions fill 4 blocks, the last partly: a 70-token prefill, then 30 decode steps.
  const std::vector<uint32_t> ids = prompt(100, 7);
  const std::vector<uint32_t> scrambled = {2, 0, 3, 1};
  std::vector<float> runs[2];
  for (int run = 0; run < 2; ++run) {
    const std::span<const uint32_t> table = run == 0 ? std::span<const uint32_t>() : scrambled;
    auto s = session(128);
    runs[run] = eval(*s, std::span(ids).first(70), 2, table);
    const std::vector<float> decoded = decode_each(*s, std::span(ids).subspan(70), table, 4);
    runs[run].insert(runs[run].end(), decoded.begin(), decoded.end());
  }
  EXPECT_EQ(runs[1], runs[0]);
}

TEST_P(BackendContract, PooledSessionsShareOneStoreThroughTheirTables) {
  const std::vector<uint32_t> a = prompt(100, 8), b = prompt(70, 9);
  auto private_a = session(128), private_b = session(128);
  const std::vector<float> expect_a = eval(*private_a, a, 4), expect_b = eval(*private_b, b, 3);
  ASSERT_TRUE(backend_->create_kv_pool(10).ok());
  EXPECT_FALSE(backend_->create_kv_pool(10).ok());
  auto pa = backend_->create_pooled_session(128), pb = backend_->create_pooled_session(128);
  ASSERT_TRUE(pa.ok() && pb.ok());
  const std::vector<uint32_t> table_a = {7, 2, 9, 0}, table_b = {5, 1, 8};
  // Both in one call (a batch shaped unlike either alone), through tables that interleave their
  // blocks in the pool.
  std::vector<float> got_a(size_t(4) * vocab_), got_b(size_t(3) * vocab_);
  EvalItem both[2] = {{pa.value().get(), a, 0, 4, got_a.data(), table_a},
                      {pb.value().get(), b, 0, 3, got_b.data(), table_b}};
  ASSERT_TRUE(backend_->eval(both).ok());
  expect_same_rows(got_a, expect_a, "a, pooled beside b");
  expect_same_rows(got_b, expect_b, "b, pooled beside a");
  // A third session adopts a's first two full blocks (a shared prefix) and continues in its own.
  auto pc = backend_->create_pooled_session(128);
  ASSERT_TRUE(pc.ok());
  const std::vector<uint32_t> table_c = {7, 2, 3, 4};
  ASSERT_TRUE(pc.value()->adopt_prefix(64).ok());
  EXPECT_EQ(pc.value()->length(), 64u);
  expect_same_rows(eval(*pc.value(), std::span(a).subspan(64), 4, table_c), expect_a, "a's prefix adopted");
  // A fourth adopts a's first block and copies the first 20 rows of its second (physical 2) into
  // block 6 of its own, then goes on in c's blocks (c is done with them).
  ASSERT_TRUE(backend_->copy_pool_rows(2, 6, 20).ok());
  auto pe = backend_->create_pooled_session(128);
  ASSERT_TRUE(pe.ok());
  ASSERT_TRUE(pe.value()->adopt_prefix(52).ok());
  const std::vector<uint32_t> table_e = {7, 6, 3, 4};
  expect_same_rows(eval(*pe.value(), std::span(a).subspan(52), 4, table_e), expect_a, "a's rows copied");
  EXPECT_FALSE(backend_->copy_pool_rows(2, 2, 5).ok()) << "onto itself";
  EXPECT_FALSE(backend_->copy_pool_rows(2, 10, 5).ok()) << "outside the pool";
  EXPECT_FALSE(backend_->copy_pool_rows(2, 6, 0).ok()) << "no rows";
  EXPECT_FALSE(backend_->copy_pool_rows(2, 6, 33).ok()) << "more than a block";
  // A session writing a block that another item of the same call reads is refused, whole.
  auto pd = backend_->create_pooled_session(128);
  ASSERT_TRUE(pd.ok());
  ASSERT_TRUE(pa.value()->truncate(99).ok());
  std::vector<float> a_next(vocab_), d_out(vocab_);
  const std::vector<uint32_t> table_d = {7};
  EvalItem items[2] = {{pa.value().get(), std::span(a).subspan(99), 99, 1, a_next.data(), table_a},
                       {pd.value().get(), std::span(b).first(10), 0, 1, d_out.data(), table_d}};
  const Status clash = backend_->eval(items);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("block 7"), std::string::npos) << clash.error().message;
  EXPECT_EQ(pd.value()->length(), 0u);
  EXPECT_EQ(pa.value()->length(), 99u);
}

TEST_P(BackendContract, AdoptingAPrefixIsCheckedAndPooledOnly) {
  ASSERT_TRUE(backend_->create_kv_pool(4).ok());
  auto pooled = backend_->create_pooled_session(64);
  ASSERT_TRUE(pooled.ok());
  EXPECT_FALSE(pooled.value()->adopt_prefix(96).ok());  // beyond capacity
  ASSERT_TRUE(pooled.value()->adopt_prefix(33).ok());   // whole blocks and copied rows of the next
  EXPECT_EQ(pooled.value()->length(), 33u);
  EXPECT_FALSE(pooled.value()->adopt_prefix(32).ok());  // only into an empty session
  auto own = session(64);
  EXPECT_FALSE(own->adopt_prefix(32).ok());
  EXPECT_EQ(own->length(), 0u);
}

TEST_P(BackendContract, BlockTableErrorsChangeNothing) {
  const std::vector<uint32_t> ids = prompt(40, 11);
  ASSERT_TRUE(backend_->create_kv_pool(4).ok());
  auto pooled = backend_->create_pooled_session(128);
  ASSERT_TRUE(pooled.ok());
  std::vector<float> logits(vocab_);
  const std::vector<uint32_t> too_short = {0}, out_of_range = {0, 4}, repeated = {1, 1};
  for (auto [table, needle] :
       std::vector<std::pair<std::span<const uint32_t>, std::string>>{{{}, "needs a block table"},
                                                                      {too_short, "entries"},
                                                                      {out_of_range, "the store has 4"},
                                                                      {repeated, "appears twice"}}) {
    EvalItem item{pooled.value().get(), ids, 0, 1, logits.data(), table};
    const Status status = backend_->eval(std::span(&item, 1));
    ASSERT_FALSE(status.ok()) << needle;
    EXPECT_NE(status.error().message.find(needle), std::string::npos) << status.error().message;
    EXPECT_EQ(pooled.value()->length(), 0u);
  }
  auto s = session(64);
  const std::vector<uint32_t> bad_token = {uint32_t(vocab_)};
  EvalItem wrong_start{s.get(), ids, 3, 1, logits.data(), {}};
  EvalItem outside_vocab{s.get(), bad_token, 0, 1, logits.data(), {}};
  EvalItem too_many_rows{s.get(), std::span(ids).first(2), 0, 3, logits.data(), {}};
  EvalItem no_buffer{s.get(), ids, 0, 1, nullptr, {}};
  EvalItem no_session{nullptr, ids, 0, 1, logits.data(), {}};
  for (EvalItem bad : {wrong_start, outside_vocab, too_many_rows, no_buffer, no_session}) {
    // A valid item before the bad one must not run either.
    auto other = session(64);
    EvalItem items[2] = {{other.get(), ids, 0, 1, logits.data(), {}}, bad};
    EXPECT_FALSE(backend_->eval(items).ok());
    EXPECT_EQ(other->length(), 0u);
    EXPECT_EQ(s->length(), 0u);
  }
  EvalItem twice[2] = {{s.get(), ids, 0, 1, logits.data(), {}}, {s.get(), ids, 0, 1, logits.data(), {}}};
  EXPECT_FALSE(backend_->eval(twice).ok());
  EXPECT_EQ(s->length(), 0u);
}

TEST_P(BackendContract, CachedDecodeEqualsRecomputation) {
  const std::vector<uint32_t> ids = prompt(66, 12);
  const std::vector<size_t> checked = {0, 1, 6, 31, 32, 33, 63, 64, 65};  // around block edges
  auto s = session(66);
  for (size_t p = 0; p < ids.size(); ++p) {
    const bool check = std::find(checked.begin(), checked.end(), p) != checked.end();
    const std::vector<float> decoded = eval(*s, std::span(ids).subspan(p, 1), check ? 1 : 0);
    if (!check) continue;
    auto fresh = session(66);
    const std::vector<float> recomputed = eval(*fresh, std::span(ids).first(p + 1), 1);
    EXPECT_EQ(argmax(decoded), argmax(recomputed)) << "position " << p;
    EXPECT_LE(nmse(decoded, recomputed), 1e-6) << "position " << p;
  }
}

TEST_P(BackendContract, MultiRowLogitsEqualPositionByPosition) {
  const std::vector<uint32_t> ids = prompt(34, 13);
  auto one_by_one = session(64);
  const std::vector<float> expected = decode_each(*one_by_one, ids);
  auto s = session(64);
  const std::vector<float> last_five = eval(*s, ids, 5);
  expect_same_rows(last_five, std::span(expected).last(5 * vocab_), "the last five rows of one call");
  auto all = session(64);
  expect_same_rows(eval(*all, ids, 34), expected, "every row of one call");
}

// A prompt longer than the cpu backend's passes (128 tokens, 512 for a mixture of experts) in one
// call, and the same prompt in uneven chunks: the last rows are the same, so pass boundaries (and
// how many tokens each expert gets in a pass) change nothing.
TEST_P(BackendContract, APromptOverSeveralPassesEqualsItInChunks) {
  const std::vector<uint32_t> ids = prompt(600, 18);
  auto whole = session(600);
  const std::vector<float> at_once = eval(*whole, ids, 3);
  auto chunked = session(600);
  std::vector<float> last;
  for (size_t start = 0; start < ids.size(); start += 97) {
    const size_t length = std::min<size_t>(97, ids.size() - start);
    const bool final_chunk = start + length == ids.size();
    last = eval(*chunked, std::span(ids).subspan(start, length), final_chunk ? 3 : 0);
  }
  expect_same_rows(at_once, last, "the last three rows of 600 tokens, at once and in chunks of 97");
}

TEST_P(BackendContract, MultiItemEvalEqualsEachAlone) {
  // Different sessions, lengths and shapes: a fresh prefill, a decode token after 20, a 10-token
  // chunk with 3 rows after 33, and a decode token at a block boundary after 64.
  const std::vector<uint32_t> a = prompt(40, 14), b = prompt(21, 15), c = prompt(43, 16), d = prompt(65, 17);
  struct Plan {
    const std::vector<uint32_t>& ids;
    uint32_t before, rows;
  };
  const Plan plans[] = {{a, 0, 1}, {b, 20, 1}, {c, 33, 3}, {d, 64, 1}};
  std::vector<std::vector<float>> alone;
  std::vector<std::unique_ptr<BackendSession>> sessions;
  std::vector<EvalItem> items;
  std::vector<std::vector<float>> together;
  for (const Plan& plan : plans) {
    auto solo = session(128);
    if (plan.before) eval(*solo, std::span(plan.ids).first(plan.before), 1);
    alone.push_back(eval(*solo, std::span(plan.ids).subspan(plan.before), plan.rows));
    sessions.push_back(session(128));
    if (plan.before) eval(*sessions.back(), std::span(plan.ids).first(plan.before), 1);
    together.emplace_back(size_t(plan.rows) * vocab_);
  }
  for (size_t i = 0; i < std::size(plans); ++i)
    items.push_back({sessions[i].get(),
                     std::span(plans[i].ids).subspan(plans[i].before),
                     plans[i].before,
                     plans[i].rows,
                     together[i].data(),
                     {}});
  ASSERT_TRUE(backend_->eval(items).ok());
  for (size_t i = 0; i < std::size(plans); ++i) expect_same_rows(together[i], alone[i], "item " + std::to_string(i));
}

TEST_P(BackendContract, DestroyingAModelWithLiveSessionsIsAnError) {
  auto s = session(64);
  auto t = session(64);
  EXPECT_EQ(backend_->live_sessions(), 2u);
  const Status refused = destroy_backend(backend_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("2 live sessions"), std::string::npos) << refused.error().message;
  ASSERT_NE(backend_, nullptr);
  eval(*s, prompt(3, 18), 1);  // still usable
  t.reset();
  s.reset();
  EXPECT_EQ(backend_->live_sessions(), 0u);
  EXPECT_TRUE(destroy_backend(backend_).ok());
  EXPECT_EQ(backend_, nullptr);
}

TEST_P(BackendContract, SessionsOutliveADestroyedModelSafely) {
  ASSERT_TRUE(backend_->create_kv_pool(4).ok());
  auto s = session(64);
  auto pooled = backend_->create_pooled_session(64);
  ASSERT_TRUE(pooled.ok());
  eval(*s, prompt(5, 19), 1);
  backend_.reset();  // regardless of the sessions
  EXPECT_EQ(s->length(), 5u);
  EXPECT_TRUE(s->truncate(2).ok());
  s->reset();
  EXPECT_EQ(pooled.value()->store_blocks(), 4u);
}

// Every backend with the BF16 cache; the backends that offer it with the Q8_0 cache as well, so
// paging through scrambled tables, pooled sharing and cached decode against recomputation are
// re-stated for it; and cpu with every other kernel set this processor runs (portable always,
// avx2, avx512, avx512bf16 and amx where it has them), and avx512bf16 with --bf16-activations,
// so each set's kernels keep the contract on this machine. cpu also on the Q8_0 and Q4_1 artifacts with the detected set: their products
// take other kernels (on amx, tiles of 16 tokens beside vector tiles), and batches of every shape
// against decode hold them to the same bits.
std::vector<Case> cases() {
  std::vector<Case> all;
  const cpu::Isa detected = cpu::detected_isa();
  std::vector<cpu::Isa> forced_sets;
  for (cpu::Isa isa : {cpu::Isa::portable, cpu::Isa::avx2, cpu::Isa::avx512, cpu::Isa::avx512bf16, cpu::Isa::amx})
    if (isa != detected && cpu::runs(isa)) forced_sets.push_back(isa);
  for (std::string_view backend : backend_names())
    for (const char* model : {"qwen3-tiny", "qwen3-tiny-untied"}) {
      for (const KvFormat kv : {KvFormat::bf16, KvFormat::q8_0}) {
        if (kv == KvFormat::q8_0 && backend == "cuda") continue;
        all.push_back({std::string(backend), model, kv});
        if (backend != "cpu") continue;
        for (cpu::Isa isa : forced_sets)
          all.push_back({std::string(backend), model, kv, std::string(cpu::isa_name(isa))});
        if (cpu::runs(cpu::Isa::avx512bf16))
          all.push_back({std::string(backend), model, kv, "avx512bf16", "bf16", true});
      }
      if (backend != "cpu") continue;
      for (const char* scheme : {"q8_0", "affine4_gs32"})
        all.push_back({std::string(backend), model, KvFormat::bf16, "", scheme});
    }
  // The MoE checkpoint on the backends that run it (cuda refuses it by name), where its step 8
  // gathers each pass's tokens by expert: with the BF16 and Q8_0 caches, every kernel set, and
  // the quantized artifacts.
  for (const KvFormat kv : {KvFormat::bf16, KvFormat::q8_0}) {
    all.push_back({"cpu-ref", "qwen3-moe-tiny", kv});
    all.push_back({"cpu", "qwen3-moe-tiny", kv});
  }
  all.push_back({"cpu", "qwen3-moe-tiny", KvFormat::bf16, "portable"});
  if (cpu::runs(cpu::Isa::avx2) && detected != cpu::Isa::avx2)
    all.push_back({"cpu", "qwen3-moe-tiny", KvFormat::bf16, "avx2"});
  // BF16 weights packed by column pairs (and widened: a mixture of experts refuses --bf16-activations).
  if (cpu::runs(cpu::Isa::avx512bf16)) all.push_back({"cpu", "qwen3-moe-tiny", KvFormat::bf16, "avx512bf16"});
  for (const char* scheme : {"q8_0", "affine4_gs32"})
    all.push_back({"cpu", "qwen3-moe-tiny", KvFormat::bf16, "", scheme});
  return all;
}

// The cpu backend's 8-bit and BF16 activations are refused by name for a MoE checkpoint (they
// change its routing; the cuda backend's refusal is tested on the emulator, cuda_emulated_test.cpp).
TEST(MixtureOfExperts, RoundedActivationsAreRefusedByName) {
  struct Refusal {
    const char* scheme;
    bool BackendOptions::*flag;
    const char* message;
  };
  for (const Refusal& r : {Refusal{"affine4_gs32", &BackendOptions::int8_activations, "--int8-activations"},
                           Refusal{"bf16", &BackendOptions::bf16_activations, "--bf16-activations"}}) {
    auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-moe-tiny." + r.scheme + ".gguf");
    ASSERT_TRUE(file.ok()) << file.error().message;
    BackendOptions options;
    options.*r.flag = true;
    auto refused = create_backend("cpu", **file, options);
    ASSERT_FALSE(refused.ok()) << r.message;
    EXPECT_NE(refused.error().message.find(std::string(r.message) + " is not offered for mixture-of-experts"),
              std::string::npos)
        << refused.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendContract, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           const Case& c = param_info.param;
                           std::string name = c.backend + (c.cpu_isa.empty() ? "" : "_" + c.cpu_isa) +
                                              (c.bf16_activations ? "_bf16_activations" : "") + "_" + c.model +
                                              (c.scheme == "bf16" ? "" : "_" + c.scheme) +
                                              (c.kv_cache == KvFormat::q8_0 ? "_kv_q8_0" : "");
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace kipp
