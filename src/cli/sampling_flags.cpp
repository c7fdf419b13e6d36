#include "cli/sampling_flags.h"

#include <random>
#include <stdexcept>

namespace kipp::cli {
namespace {

Result<LogitBias> parse_bias(const std::string& text) {
  const size_t eq = text.find('=');
  try {
    if (eq == std::string::npos) throw std::invalid_argument(text);
    size_t used = 0;
    const unsigned long id = std::stoul(text.substr(0, eq), &used);
    if (used != eq) throw std::invalid_argument(text);
    const float bias = std::stof(text.substr(eq + 1), &used);
    if (used != text.size() - eq - 1) throw std::invalid_argument(text);
    return LogitBias{uint32_t(id), bias};
  } catch (const std::exception&) {
    return fail("--logit-bias ", text, ": expected TOKEN_ID=BIAS, e.g. 151645=-100");
  }
}

}  // namespace

void SamplingFlags::add_to(CLI::App& app) {
  temperature_option_ =
      app.add_option("--temperature", temperature_, "0 is greedy (default: the checkpoint's recommendation)");
  top_k_option_ = app.add_option("--top-k", top_k_, "Keep the k most likely tokens; 0 = off (default 20)");
  top_p_option_ = app.add_option("--top-p", top_p_, "Nucleus size in (0, 1] (default 0.95 or 0.8)");
  min_p_option_ = app.add_option("--min-p", min_p_, "Drop tokens below min_p x the best (default 0)");
  app.add_option("--repetition-penalty", repetition_, "Over the last 64 generated tokens; 1 = off")->default_val(1.0f);
  app.add_option("--frequency-penalty", frequency_, "Per occurrence in the last 64, -2..2")->default_val(0.0f);
  app.add_option("--presence-penalty", presence_, "Once per token in the last 64, -2..2")->default_val(0.0f);
  app.add_option("--logit-bias", logit_bias_, "TOKEN_ID=BIAS (-100..100), repeatable");
  seed_option_ = app.add_option("--seed", seed_, "Seed of the sampler (default: random, printed at the end)");
  app.add_flag("--greedy", greedy_, "Always take the most likely token (same as --temperature 0)");
}

Result<SamplingParams> SamplingFlags::resolve(Variant variant) const {
  SamplingParams p = recommended_sampling(variant);
  if (temperature_option_->count()) p.temperature = temperature_;
  if (top_p_option_->count()) p.top_p = top_p_;
  if (top_k_option_->count()) p.top_k = top_k_;
  if (min_p_option_->count()) p.min_p = min_p_;
  if (greedy_) p.temperature = 0.0f;
  p.repetition_penalty = repetition_;
  p.frequency_penalty = frequency_;
  p.presence_penalty = presence_;
  p.seed = seed_option_->count() ? seed_ : std::random_device{}();
  for (const std::string& text : logit_bias_) {
    KIPP_ASSIGN(LogitBias bias, parse_bias(text));
    p.logit_bias.push_back(bias);
  }
  return p;
}

}  // namespace kipp::cli
