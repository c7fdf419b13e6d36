// One completion: a prompt evaluated into a session, then tokens sampled one at a time until a
// stop token, a stop string or the token budget, with the text streamed as it becomes final.
// Each token is chosen and taken by an AnswerDecoder, the step the server's scheduler uses too.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "engine/answer_decoder.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp {

struct GenerateOptions {
  uint32_t max_tokens = 256;
  SamplingParams sampling;
  std::vector<std::string> stop;    // stop strings, matched on the text across token boundaries
  std::function<bool()> cancelled;  // asked before each token; true ends the generation
  // Prompt-lookup drafts verified in one multi-row evaluation (greedy only): the same tokens as
  // plain greedy decoding, fewer evaluation steps when the text repeats its context.
  bool speculative = false;
  // How the answer opens (thinking first, maybe, or not at all): the start of its AnswerLayout,
  // which says where the constraint starts, what the thinking budget counts and where the
  // reasoning ends.
  AnswerStart answer_start = AnswerStart::at_once;
  // Structured output: the answer follows this grammar (see TokenConstraint), from
  // `answer_start` on.
  std::shared_ptr<grammar::TokenMasks> constraint;
  std::optional<TokenFrame> constraint_frame;  // a forced tool call: the grammar between <tool_call> tags
  // At most this many tokens inside the think block; then it is closed for the answer (ThinkingBudget).
  std::optional<uint32_t> thinking_budget;
};

struct GenerationTimings {
  uint32_t prompt_tokens = 0;
  double prompt_seconds = 0;           // evaluating the prompt
  uint32_t generated_tokens = 0;       // sampled tokens, the stop token included
  double decode_seconds = 0;           // from the end of the prompt to the end
  double first_token_seconds = 0;      // from the start to the first sampled token
  uint32_t draft_tokens = 0;           // speculative: draft tokens verified
  uint32_t accepted_draft_tokens = 0;  // of which accepted
  // Under a constraint, per sampled token: the seconds spent finding the allowed set and taking
  // the token into the grammar (the mask's cost; applying it is part of sampling).
  std::vector<double> constraint_seconds;
};

struct Generation {
  std::string text;              // what was streamed: no stop token, nothing from a stop string on
  std::vector<PartStart> parts;  // where the answer's layout changes in `text` (and past it, cut by a stop string)
  std::vector<uint32_t> tokens;  // every sampled token, the stop token included
  FinishReason finish = FinishReason::length;
  std::string stop;  // the stop string that matched, or the stop token's text
  GenerationTimings timings;
};

struct GenerateContext {
  BackendModel& model;
  BackendSession& session;  // the prompt is appended after what it already holds
  const Tokenizer& tokenizer;
  std::span<const uint32_t> stop_ids;
};

// Takes each final piece of text as soon as it is known (never empty), with the places where the
// answer's layout changes (AnswerLayout: its reasoning, answer proper and calls begin) that it
// reached: offsets from the answer's first byte.
using TextSink = std::function<void(std::string_view text, std::span<const PartStart> starts)>;

// Streams the answer's text to `on_text` (may be empty).
Result<Generation> generate(const GenerateContext& context, std::span<const uint32_t> prompt,
                            const GenerateOptions& options, const TextSink& on_text = {});

}  // namespace kipp
