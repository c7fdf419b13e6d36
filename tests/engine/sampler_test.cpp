// The sampler against distributions computed here independently (softmax in double, the kept
// sets found by a full sort), with chi-square tests at fixed seeds, plus its rules for greedy,
// penalties, logit_bias, determinism and bad settings.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>

namespace kipp {
namespace {

const std::vector<float> kLogits = {1.5f, -0.3f, 2.2f, 0.0f, 0.7f, -1.1f, 2.0f, 0.9f, -2.5f, 1.1f, 0.4f, -0.6f};

// Settings built field by field: the defaults of SamplingParams, then the named changes.
struct Settings {
  SamplingParams p;
  Settings& temperature(float v) {
    p.temperature = v;
    return *this;
  }
  Settings& top_k(uint32_t v) {
    p.top_k = v;
    return *this;
  }
  Settings& top_p(float v) {
    p.top_p = v;
    return *this;
  }
  Settings& min_p(float v) {
    p.min_p = v;
    return *this;
  }
  Settings& repetition(float v) {
    p.repetition_penalty = v;
    return *this;
  }
  Settings& frequency(float v) {
    p.frequency_penalty = v;
    return *this;
  }
  Settings& presence(float v) {
    p.presence_penalty = v;
    return *this;
  }
  Settings& bias(uint32_t token, float v) {
    p.logit_bias.push_back({token, v});
    return *this;
  }
  Settings& ban(uint32_t token) {
    p.banned.push_back(token);
    return *this;
  }
  Settings& seed(uint64_t v) {
    p.seed = v;
    return *this;
  }
  Settings& window(uint32_t v) {
    p.penalty_window = v;
    return *this;
  }
  operator SamplingParams() const { return p; }
};

uint32_t next(Sampler& sampler, std::span<const float> logits) {
  auto token = sampler.sample(logits);
  EXPECT_TRUE(token) << token.error().message;
  return token ? *token : ~0u;
}

Sampler make(SamplingParams params, uint32_t vocab = uint32_t(kLogits.size())) {
  auto sampler = Sampler::create(params, vocab);
  EXPECT_TRUE(sampler) << sampler.error().message;
  return std::move(*sampler);
}

// softmax(logits / temperature) over `kept` ids, zero elsewhere.
std::vector<double> expected_distribution(const std::vector<float>& logits, double temperature,
                                          const std::set<uint32_t>& kept) {
  std::vector<double> p(logits.size(), 0.0);
  double max_logit = -1e300;
  for (uint32_t id : kept) max_logit = std::max(max_logit, double(logits[id]));
  double total = 0.0;
  for (uint32_t id : kept) total += p[id] = std::exp((logits[id] - max_logit) / temperature);
  for (double& x : p) x /= total;
  return p;
}

std::set<uint32_t> all_ids(size_t n) {
  std::set<uint32_t> ids;
  for (uint32_t i = 0; i < n; ++i) ids.insert(i);
  return ids;
}

// Ids by logit, highest first, lower id first among equals.
std::vector<uint32_t> ranked(const std::vector<float>& logits) {
  std::vector<uint32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0u);
  std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
  return ids;
}

// Draws `n` tokens and checks every one is in `expected`'s support and that the counts pass a
// chi-square test against it at the 0.1% level (the seed is fixed, so the outcome is too).
void expect_distribution(Sampler& sampler, const std::vector<float>& logits, const std::vector<double>& expected,
                         int n = 60000, const AllowedTokens* allowed = nullptr) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) {
    auto token = sampler.sample(logits, allowed);
    ASSERT_TRUE(token) << token.error().message;
    ASSERT_LT(*token, logits.size());
    ASSERT_GT(expected[*token], 0.0) << "token " << *token << " is outside the kept set";
    ++counts[*token];
  }
  double chi2 = 0.0;
  int categories = 0;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (expected[id] == 0.0) continue;
    const double e = expected[id] * n;
    chi2 += (counts[id] - e) * (counts[id] - e) / e;
    ++categories;
  }
  // Upper 0.1% points of chi-square for 1..15 degrees of freedom.
  const double critical[] = {0,     10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32,
                             26.12, 27.88, 29.59, 31.26, 32.91, 34.53, 36.12, 37.70};
  ASSERT_GE(categories, 2);
  EXPECT_LT(chi2, critical[categories - 1]) << "chi-square " << chi2 << " over " << categories << " tokens";
}

// A constraint's allowed set: a bit set plus extra ids, as TokenConstraint hands them over.
AllowedTokens allowed_of(std::initializer_list<uint32_t> in_set, std::vector<uint32_t> extra) {
  auto set = std::make_shared<grammar::TokenSet>(uint32_t(kLogits.size()));
  for (uint32_t id : in_set) set->add(id);
  return AllowedTokens{set, std::move(extra)};
}

TEST(Sampler, AConstraintRenormalizesOverTheAllowedTokens) {
  const AllowedTokens allowed = allowed_of({1, 4, 7}, {10});
  Sampler sampler = make(Settings().temperature(0.8f).seed(3));
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 0.8, {1, 4, 7, 10}), 60000, &allowed);
  // top_k then applies within the allowed set: top_k 2 keeps 7 (0.9) and 4 (0.7).
  Sampler top = make(Settings().temperature(1.0f).top_k(2).seed(5));
  expect_distribution(top, kLogits, expected_distribution(kLogits, 1.0, {4, 7}), 60000, &allowed);
}

TEST(Sampler, GreedyUnderAConstraintTakesTheBestAllowedToken) {
  Sampler sampler = make(Settings().temperature(0.0f));
  const AllowedTokens allowed = allowed_of({0, 3, 5}, {});
  EXPECT_EQ(sampler.sample(kLogits, &allowed).value(), 0u);  // 1.5, though 2.2 (id 2) is the best overall
  const AllowedTokens only_extra{nullptr, {8}};
  EXPECT_EQ(sampler.sample(kLogits, &only_extra).value(), 8u);
  const AllowedTokens none{nullptr, {}};
  EXPECT_FALSE(sampler.sample(kLogits, &none).ok());
}

TEST(Sampler, TemperatureOneMatchesTheSoftmax) {
  Sampler sampler = make(Settings().temperature(1.0f).seed(7));
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 1.0, all_ids(kLogits.size())));
}

TEST(Sampler, TemperatureScalesTheLogits) {
  Sampler sampler = make(Settings().temperature(0.6f).seed(11));
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 0.6, all_ids(kLogits.size())));
}

TEST(Sampler, TopKKeepsTheKHighest) {
  Sampler sampler = make(Settings().temperature(1.3f).top_k(4).seed(3));
  const std::vector<uint32_t> order = ranked(kLogits);
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 1.3, {order.begin(), order.begin() + 4}));
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  const float top_p = 0.8f;
  Sampler sampler = make(Settings().temperature(1.0f).top_p(top_p).seed(5));
  const std::vector<double> full = expected_distribution(kLogits, 1.0, all_ids(kLogits.size()));
  std::set<uint32_t> nucleus;
  double sum = 0.0;
  for (uint32_t id : ranked(kLogits)) {
    if (sum >= top_p) break;
    nucleus.insert(id);
    sum += full[id];
  }
  ASSERT_LT(nucleus.size(), kLogits.size());
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 1.0, nucleus));
}

TEST(Sampler, MinPDropsTokensFarBelowTheBest) {
  const float min_p = 0.3f;
  Sampler sampler = make(Settings().temperature(1.0f).min_p(min_p).seed(9));
  const std::vector<double> full = expected_distribution(kLogits, 1.0, all_ids(kLogits.size()));
  const double best = *std::max_element(full.begin(), full.end());
  std::set<uint32_t> kept;
  for (uint32_t id = 0; id < kLogits.size(); ++id)
    if (full[id] >= min_p * best) kept.insert(id);
  ASSERT_LT(kept.size(), kLogits.size());
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 1.0, kept));
}

TEST(Sampler, FiltersComposeInTheDocumentedOrder) {
  // top_k 6, then temperature 0.8, then top_p 0.9 of what is left, then min_p 0.1.
  Sampler sampler = make(Settings().temperature(0.8f).top_k(6).top_p(0.9f).min_p(0.1f).seed(13));
  const std::vector<uint32_t> order = ranked(kLogits);
  const std::set<uint32_t> top6(order.begin(), order.begin() + 6);
  const std::vector<double> after_k = expected_distribution(kLogits, 0.8, top6);
  std::set<uint32_t> nucleus;
  double sum = 0.0;
  for (uint32_t id : order) {
    if (!top6.count(id) || sum >= 0.9) break;
    nucleus.insert(id);
    sum += after_k[id];
  }
  const double best = after_k[order[0]];
  std::set<uint32_t> kept;
  for (uint32_t id : nucleus)
    if (after_k[id] >= 0.1 * best) kept.insert(id);
  expect_distribution(sampler, kLogits, expected_distribution(kLogits, 0.8, kept));
}

TEST(Sampler, TopPOverAFullVocabularyRow) {
  // A realistic row: the kept set is found without sorting all 151,936 logits, and must still
  // be exactly the nucleus.
  const uint32_t vocab = 151936;
  std::vector<float> logits(vocab);
  for (uint32_t i = 0; i < vocab; ++i) logits[i] = float(std::sin(i * 0.37) * 3.0 + std::cos(i * 0.011) * 5.0);
  const std::vector<double> full = expected_distribution(logits, 1.0, all_ids(vocab));
  std::set<uint32_t> nucleus;
  double sum = 0.0;
  for (uint32_t id : ranked(logits)) {
    if (sum >= 0.5) break;
    nucleus.insert(id);
    sum += full[id];
  }
  Sampler sampler = make(Settings().temperature(1.0f).top_p(0.5f).seed(1), vocab);
  for (int i = 0; i < 300; ++i) {
    auto token = sampler.sample(logits);
    ASSERT_TRUE(token);
    ASSERT_TRUE(nucleus.count(*token)) << "token " << *token << " is outside the nucleus of " << nucleus.size();
  }
}

TEST(Sampler, GreedyTakesTheHighestLogitAndTheLowestIdAmongEquals) {
  Sampler a = make(Settings().temperature(0.0f).seed(1));
  Sampler b = make(Settings().temperature(0.0f).seed(2));
  EXPECT_EQ(next(a, kLogits), 2u);
  EXPECT_EQ(next(b, kLogits), 2u);
  const std::vector<float> ties = {0.5f, 3.0f, 1.0f, 3.0f};
  Sampler tied = make(Settings().temperature(0.0f), 4);
  EXPECT_EQ(next(tied, ties), 1u);
}

TEST(Sampler, ABannedTokenIsNeverSampledWhateverItsBias) {
  // Token 2 has the highest logit, and a +100 bias on top: banned, greedy takes the next best (6)
  // and sampling at temperature 2 never draws it.
  Sampler greedy = make(Settings().temperature(0.0f).bias(2, 100.0f).ban(2));
  EXPECT_EQ(next(greedy, kLogits), 6u);
  Sampler hot = make(Settings().temperature(2.0f).bias(2, 100.0f).ban(2).seed(9));
  for (int i = 0; i < 2000; ++i) ASSERT_NE(next(hot, kLogits), 2u);
  EXPECT_FALSE(Sampler::create(Settings().ban(12), 12));  // outside the vocabulary
}

TEST(Sampler, TheSameSeedGivesTheSameTokensAndResetStartsOver) {
  Sampler a = make(Settings().temperature(1.0f).seed(42));
  Sampler b = make(Settings().temperature(1.0f).seed(42));
  Sampler c = make(Settings().temperature(1.0f).seed(43));
  std::vector<uint32_t> first, second, other;
  for (int i = 0; i < 200; ++i) {
    first.push_back(next(a, kLogits));
    second.push_back(next(b, kLogits));
    other.push_back(next(c, kLogits));
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  a.reset();
  std::vector<uint32_t> again;
  for (int i = 0; i < 200; ++i) again.push_back(next(a, kLogits));
  EXPECT_EQ(first, again);
}

TEST(Sampler, PenaltiesFollowTheirRules) {
  const std::vector<float> logits = {2.0f, 1.9f, -1.0f, -1.2f};
  // Repetition: a positive logit is divided (2.0 / 1.5 < 1.9).
  Sampler repetition = make(Settings().temperature(0.0f).repetition(1.5f), 4);
  repetition.accept(0);
  EXPECT_EQ(next(repetition, logits), 1u);
  // A negative logit is multiplied: -1.0 * 1.5 = -1.5 < -1.2.
  const std::vector<float> negative = {-1.0f, -1.2f};
  Sampler repetition_negative = make(Settings().temperature(0.0f).repetition(1.5f), 2);
  repetition_negative.accept(0);
  EXPECT_EQ(next(repetition_negative, negative), 1u);
  // Presence: once, whatever the count (2.0 - 0.2 > 1.9 would keep 0; 0.15 does not suffice).
  Sampler presence = make(Settings().temperature(0.0f).presence(0.15f), 4);
  presence.accept(0);
  presence.accept(0);
  presence.accept(0);
  EXPECT_EQ(next(presence, logits), 1u) << "2.0 - 0.15 > 1.9 would keep token 0";
  // Frequency: per occurrence (2.0 - 3 x 0.05 = 1.85 < 1.9; one occurrence would keep token 0).
  Sampler once = make(Settings().temperature(0.0f).frequency(0.05f), 4);
  once.accept(0);
  EXPECT_EQ(next(once, logits), 0u);
  once.accept(0);
  once.accept(0);
  EXPECT_EQ(next(once, logits), 1u);
}

TEST(Sampler, PenaltiesForgetTokensOutsideTheWindow) {
  const std::vector<float> logits = {2.0f, 1.9f, -5.0f};
  Sampler sampler = make(Settings().temperature(0.0f).presence(1.0f).window(4), 3);
  sampler.accept(0);
  EXPECT_EQ(next(sampler, logits), 1u);
  for (int i = 0; i < 4; ++i) sampler.accept(2);
  EXPECT_EQ(next(sampler, logits), 0u);
}

TEST(Sampler, LogitBiasIsAddedFirst) {
  Sampler sampler = make(Settings().temperature(0.0f).bias(8, 5.0f));
  EXPECT_EQ(next(sampler, kLogits), 8u);  // -2.5 + 5 = 2.5 > 2.2
  Sampler banned = make(Settings().temperature(1.0f).bias(2, -100.0f).bias(6, -100.0f).seed(4));
  for (int i = 0; i < 2000; ++i) {
    const uint32_t token = next(banned, kLogits);
    ASSERT_NE(token, 2u);
    ASSERT_NE(token, 6u);
  }
}

TEST(Sampler, BadSettingsAreClearErrors) {
  const float nan = std::nanf("");
  const struct {
    SamplingParams params;
    const char* names;
  } cases[] = {
      {Settings().temperature(-0.5f), "temperature"},
      {Settings().temperature(nan), "temperature"},
      {Settings().top_p(0.0f), "top_p"},
      {Settings().top_p(1.5f), "top_p"},
      {Settings().top_p(nan), "top_p"},
      {Settings().min_p(-0.1f), "min_p"},
      {Settings().min_p(nan), "min_p"},
      {Settings().repetition(0.0f), "repetition_penalty"},
      {Settings().frequency(2.5f), "frequency_penalty"},
      {Settings().presence(nan), "presence_penalty"},
      {Settings().bias(12, 1.0f), "logit_bias"},
      {Settings().bias(1, 101.0f), "logit_bias"},
  };
  for (const auto& c : cases) {
    auto sampler = Sampler::create(c.params, uint32_t(kLogits.size()));
    ASSERT_FALSE(sampler) << c.names;
    EXPECT_NE(sampler.error().message.find(c.names), std::string::npos) << sampler.error().message;
  }
}

TEST(Sampler, RefusesNaNLogitsAndRowsOfTheWrongWidth) {
  Sampler sampler = make(Settings().temperature(1.0f));
  std::vector<float> row = kLogits;
  row[3] = std::nanf("");
  EXPECT_FALSE(sampler.sample(row));
  EXPECT_FALSE(sampler.sample(std::span(kLogits).first(5)));
}

}  // namespace
}  // namespace kipp
