#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kipp {
namespace {

bool in_range(float value, float low, float high) { return value >= low && value <= high; }  // false for NaN

}  // namespace

SamplingParams recommended_sampling(Variant variant) {
  SamplingParams p;
  const bool thinks = variant == Variant::instruct || variant == Variant::thinking_2507;
  p.temperature = thinks ? 0.6f : 0.7f;
  p.top_p = thinks ? 0.95f : 0.8f;
  p.top_k = 20;
  return p;
}

Status validate(const SamplingParams& p, uint32_t vocab) {
  if (!(p.temperature >= 0.0f) || std::isinf(p.temperature))
    return fail("temperature must be a finite number >= 0 (0 is greedy), got ", p.temperature);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return fail("top_p must be in (0, 1], got ", p.top_p);
  if (!in_range(p.min_p, 0.0f, 1.0f)) return fail("min_p must be in [0, 1], got ", p.min_p);
  if (!(p.repetition_penalty > 0.0f) || std::isinf(p.repetition_penalty))
    return fail("repetition_penalty must be a finite number > 0 (1 is off), got ", p.repetition_penalty);
  if (!in_range(p.frequency_penalty, -2.0f, 2.0f))
    return fail("frequency_penalty must be in [-2, 2], got ", p.frequency_penalty);
  if (!in_range(p.presence_penalty, -2.0f, 2.0f))
    return fail("presence_penalty must be in [-2, 2], got ", p.presence_penalty);
  for (const LogitBias& b : p.logit_bias) {
    if (b.token >= vocab) return fail("logit_bias token ", b.token, " is outside the vocabulary (", vocab, " ids)");
    if (!in_range(b.bias, -100.0f, 100.0f))
      return fail("logit_bias for token ", b.token, " must be in [-100, 100], got ", b.bias);
  }
  for (uint32_t id : p.banned)
    if (id >= vocab) return fail("banned token ", id, " is outside the vocabulary (", vocab, " ids)");
  return {};
}

Result<Sampler> Sampler::create(const SamplingParams& params, uint32_t vocab) {
  KIPP_TRY(validate(params, vocab));
  return Sampler(params, vocab);
}

Sampler::Sampler(const SamplingParams& params, uint32_t vocab)
    : params_(params), vocab_(vocab), random_(params.seed), counts_(vocab), adjusted_(vocab) {
  recent_.reserve(params.penalty_window);
  order_.reserve(vocab);
  weights_.reserve(vocab);
}

void Sampler::accept(uint32_t token) {
  if (params_.penalty_window == 0 || token >= vocab_) return;
  if (recent_.size() == params_.penalty_window) {
    --counts_[recent_.front()];
    recent_.erase(recent_.begin());
  }
  recent_.push_back(token);
  ++counts_[token];
}

void Sampler::reset() {
  for (uint32_t token : recent_) counts_[token] = 0;
  recent_.clear();
  random_.reseed(params_.seed);
}

// Steps 0 to 2: the row restricted to the allowed tokens, with logit_bias and the penalties applied.
void Sampler::adjust(std::span<const float> logits, const AllowedTokens* allowed) {
  if (!allowed) {
    std::copy(logits.begin(), logits.end(), adjusted_.begin());
  } else {
    std::fill(adjusted_.begin(), adjusted_.end(), -INFINITY);
    if (allowed->set) {
      const std::span<const uint64_t> words = allowed->set->words();
      for (size_t w = 0; w < words.size(); ++w)
        for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
          const size_t id = w * 64 + size_t(std::countr_zero(bits));
          if (id < vocab_) adjusted_[id] = logits[id];
        }
    }
    for (uint32_t id : allowed->extra)
      if (id < vocab_) adjusted_[id] = logits[id];
  }
  for (const LogitBias& b : params_.logit_bias) adjusted_[b.token] += b.bias;
  for (uint32_t id : params_.banned) adjusted_[id] = -INFINITY;
  for (size_t i = 0; i < recent_.size(); ++i) {
    const uint32_t token = recent_[i];
    if (std::find(recent_.begin(), recent_.begin() + i, token) != recent_.begin() + i) continue;  // once per token
    float& logit = adjusted_[token];
    logit = logit > 0.0f ? logit / params_.repetition_penalty : logit * params_.repetition_penalty;
    logit -= params_.frequency_penalty * float(counts_[token]) + params_.presence_penalty;
  }
}

Status Sampler::check_row(std::span<const float> logits, const AllowedTokens* allowed) const {
  if (logits.size() != vocab_) return fail("sampler: a row of ", logits.size(), " logits, expected ", vocab_);
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isnan(logits[i])) return fail("sampler: logit ", i, " is NaN");
  if (allowed && allowed->count() == 0) return fail("sampler: the constraint allows no token at all");
  return {};
}

Result<uint32_t> Sampler::sample(std::span<const float> logits, const AllowedTokens* allowed) {
  KIPP_TRY(check_row(logits, allowed));
  adjust(logits, allowed);
  if (params_.greedy() && !allowed) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < vocab_; ++i)
      if (adjusted_[i] > adjusted_[best]) best = i;
    return best;
  }
  KIPP_TRY(gather_candidates(allowed));
  if (params_.greedy()) {
    uint32_t best = order_[0];
    for (uint32_t id : order_)
      if (adjusted_[id] > adjusted_[best]) best = id;
    return best;
  }
  const bool sorted = keep_top_k();
  float max_logit = adjusted_[order_[0]];
  for (uint32_t id : order_) max_logit = std::max(max_logit, adjusted_[id]);
  if (params_.top_p < 1.0f) keep_top_p(max_logit, sorted);
  if (params_.min_p > 0.0f) keep_min_p(max_logit);
  return draw(max_logit);
}

// Under a constraint the candidates are the allowed tokens (the others are -inf now), in id order.
Status Sampler::gather_candidates(const AllowedTokens* allowed) {
  order_.resize(vocab_);
  if (!allowed) {
    for (uint32_t i = 0; i < vocab_; ++i) order_[i] = i;
    return {};
  }
  order_.clear();
  for (uint32_t i = 0; i < vocab_; ++i)
    if (adjusted_[i] != -INFINITY) order_.push_back(i);
  if (order_.empty()) return fail("sampler: every token the constraint allows has a logit of -inf");
  return {};
}

bool Sampler::keep_top_k() {
  if (params_.top_k == 0 || params_.top_k >= order_.size()) return false;
  const auto by_rank = [this](uint32_t a, uint32_t b) { return before(a, b); };
  std::nth_element(order_.begin(), order_.begin() + params_.top_k, order_.end(), by_rank);
  order_.resize(params_.top_k);
  std::sort(order_.begin(), order_.end(), by_rank);  // nth_element's order is the library's choice
  return true;
}

void Sampler::keep_top_p(float max_logit, bool sorted) {
  const auto by_rank = [this](uint32_t a, uint32_t b) { return before(a, b); };
  double total = 0.0;
  for (uint32_t id : order_) total += weight(id, max_logit);
  // Sort only as far as the kept set reaches: a few hundred ids usually, the whole row at worst.
  const double wanted = double(params_.top_p) * total;
  size_t kept = order_.size();
  for (size_t prefix = std::min<size_t>(256, order_.size());; prefix = std::min(prefix * 4, order_.size())) {
    if (!sorted) std::partial_sort(order_.begin(), order_.begin() + prefix, order_.end(), by_rank);
    double sum = 0.0;
    size_t i = 0;
    while (i < prefix && sum < wanted) sum += weight(order_[i++], max_logit);
    if (sum >= wanted || prefix == order_.size()) {
      kept = std::max<size_t>(i, 1);
      break;
    }
  }
  order_.resize(kept);
}

void Sampler::keep_min_p(float max_logit) {
  // The highest probability is weight 1 (the maximum logit is still a candidate).
  const double floor = params_.min_p;
  order_.erase(std::remove_if(order_.begin(), order_.end(), [&](uint32_t id) { return weight(id, max_logit) < floor; }),
               order_.end());
}

// The draw walks the candidates in the order they are in: by id, or by rank once a step sorted
// them. Either is fixed by the logits alone.
uint32_t Sampler::draw(float max_logit) {
  weights_.resize(order_.size());
  double total = 0.0;
  for (size_t i = 0; i < order_.size(); ++i) total += weights_[i] = weight(order_[i], max_logit);
  const double target = random_.uniform() * total;
  double sum = 0.0;
  for (size_t i = 0; i < order_.size(); ++i) {
    sum += weights_[i];
    if (target < sum) return order_[i];
  }
  return order_.back();  // rounding left the target at the very top
}
}  // namespace kipp
