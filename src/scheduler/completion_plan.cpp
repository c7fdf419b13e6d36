#include "scheduler/completion_plan.h"

#include <algorithm>
#include <random>

namespace kipp {
namespace {

uint64_t random_seed() { return std::random_device{}() | (uint64_t(std::random_device{}()) << 32); }

}  // namespace

Result<CompletionRequest, CompletionRefusal> plan_completion(const CompletionAsk& ask, const ServingLimits& limits) {
  using Reason = CompletionRefusal::Reason;
  const size_t longest = ask.longest_prompt;
  const uint32_t context = limits.context;
  if (longest >= context)
    return CompletionRefusal{Reason::prompt_too_long, "the prompt has " + std::to_string(longest) +
                                                          " tokens; the context holds " + std::to_string(context) +
                                                          " (n_prompt_tokens " + std::to_string(longest) + ", n_ctx " +
                                                          std::to_string(context) + ")"};
  const uint32_t room = std::min(context, limits.pool_positions);
  const uint32_t room_left = room > longest ? room - uint32_t(longest) : 1;
  uint32_t max_tokens = ask.max_tokens.value_or(limits.default_max_tokens.value_or(ask.chat ? room_left : 16));
  if (longest + uint64_t(max_tokens) > context && limits.refuse_long_max_tokens)
    return CompletionRefusal{Reason::answer_too_long, "the prompt (" + std::to_string(longest) +
                                                          " tokens) plus max_tokens (" + std::to_string(max_tokens) +
                                                          ") exceeds the context of " + std::to_string(context) +
                                                          " tokens"};
  if (!limits.refuse_long_max_tokens) max_tokens = std::min(max_tokens, room_left);

  CompletionRequest work;
  work.max_tokens = max_tokens;
  work.n = ask.n;
  work.sampling = ask.sampling;
  if (!ask.seeded) work.sampling.seed = random_seed();
  if (auto valid = validate(work.sampling, limits.vocab); !valid)
    return CompletionRefusal{Reason::invalid_sampling, valid.error().message};
  work.stop = ask.stop;
  work.logprobs = ask.logprobs;
  work.top_logprobs = ask.top_logprobs;
  work.answer_start = ask.chat ? chat_answer_start(limits.variant, ask.thinking) : AnswerStart::at_once;
  work.thinking_budget = ask.thinking_budget;
  work.constraint = ask.constraint;
  if (ask.constraint_is_call && limits.call_tokens)
    work.grammar_frame = TokenFrame{limits.call_tokens->open, limits.call_tokens->close, ask.calls_repeat};
  if (ask.calls_banned && limits.call_tokens) work.sampling.banned.push_back(limits.call_tokens->open);
  return work;
}

}  // namespace kipp
