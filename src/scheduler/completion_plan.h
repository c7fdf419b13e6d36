// The serving policy for one completion, whichever API it came through: the context budget, the
// default max_tokens, the seed, where the answer opens, the grammar frame of a forced tool call
// and the banned call token. The HTTP layer reads fields into a CompletionAsk and writes a
// refusal in its API's shape; what the request becomes is decided here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "engine/token_constraint.h"
#include "registry/registry.h"
#include "scheduler/scheduler.h"
#include "util/error.h"

namespace kipp {

// One completion as a client asked for it, before policy.
struct CompletionAsk {
  bool chat = false;                   // an answer to a rendered conversation; else a raw completion
  size_t longest_prompt = 0;           // tokens in the longest of its prompts
  std::optional<uint32_t> max_tokens;  // absent: the default (see plan_completion)
  uint32_t n = 1;
  SamplingParams sampling;  // the client's settings over the checkpoint's recommended ones
  bool seeded = false;      // the client chose sampling.seed; otherwise a random one is drawn
  std::vector<std::string> stop;
  bool logprobs = false;
  uint32_t top_logprobs = 0;
  bool thinking = true;  // chat: the template's enable_thinking
  std::optional<uint32_t> thinking_budget;
  std::shared_ptr<grammar::Automaton> constraint;  // compiled structured output, if any
  bool constraint_is_call = false;                 // the constraint is a forced call's body, between the call tokens
  bool calls_repeat = false;  // a forced call may be followed by more (parallel calls, tool_choice required)
  bool calls_banned = false;  // tool_choice none: the tools are shown, but no call may open
};

// What the serving process fixes for every request.
struct ServingLimits {
  Variant variant = Variant::base;
  uint32_t context = 0;         // positions one sequence may hold
  uint32_t pool_positions = 0;  // positions the KV block pool holds in all
  uint32_t vocab = 0;
  // The tokens a tool call opens and closes with, when the tokenizer has them.
  std::optional<CallTokens> call_tokens;
  // A max_tokens past the room left is refused (kipp serve --refuse-long-max-tokens) instead of cut
  // to that room.
  bool refuse_long_max_tokens = false;
  // The output limit of a request that sets none (kipp serve --default-max-tokens); absent: the
  // endpoint's own default.
  std::optional<uint32_t> default_max_tokens;
};

struct CompletionRefusal {
  enum class Reason {
    prompt_too_long,   // the longest prompt fills the context
    answer_too_long,   // prompt plus max_tokens exceed the context
    invalid_sampling,  // the sampling settings are out of range
  };
  Reason reason;
  std::string message;
};

// The scheduler's work for `ask` (without its prompt and callbacks), or why it cannot be served.
// The room an answer has is the rest of the context, or of the KV pool when that is smaller (a
// request must fit the pool to be admitted). max_tokens defaults to the limits' default_max_tokens,
// else to 16 for a raw completion (OpenAI's default) and, for chat, to that room; Anthropic's API
// always sets it. A max_tokens
// past the room is cut to it, as llama-server and Ollama do, since agents ask for more than a
// local context holds (Claude Code 32,000, Qwen Code 32,768): the answer then ends with `length`
// where the room runs out. Limits that refuse it instead keep OpenAI's context_length_exceeded.
Result<CompletionRequest, CompletionRefusal> plan_completion(const CompletionAsk& ask, const ServingLimits& limits);

}  // namespace kipp
