#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/output_text.h"
#include "engine/prompt_lookup.h"
#include "engine/thinking_budget.h"

namespace kipp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Appends `tokens` to the session; logits for the last `rows` of them.
Status eval_tokens(const GenerateContext& c, std::span<const uint32_t> tokens, float* logits, uint32_t rows) {
  EvalItem item{&c.session, tokens, c.session.length(), rows, logits, {}};
  return c.model.eval(std::span(&item, 1));
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop_token: return "stop_token";
    case FinishReason::stop_string: return "stop_string";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "cancelled";
  }
  return "?";
}

Result<Generation> generate(const GenerateContext& c, std::span<const uint32_t> prompt, const GenerateOptions& options,
                            const std::function<void(std::string_view)>& on_text) {
  if (prompt.empty()) return fail("the prompt is empty: at least one token is needed to predict the next");
  // Rows of the output head past the tokenizer's ids are padding: never sampled.
  const uint32_t vocab = uint32_t(c.tokenizer.vocab_size());
  for (uint32_t id : prompt) KIPP_TRY(c.tokenizer.check_id(id));
  if (c.session.length() + prompt.size() > c.session.capacity())
    return fail("the prompt (", prompt.size(), " tokens after ", c.session.length(), " cached) does not fit the ",
                c.session.capacity(), " positions of the session");
  KIPP_ASSIGN(Sampler sampler, Sampler::create(options.sampling, vocab));
  if (options.speculative && !options.sampling.greedy())
    return fail("speculative decoding needs greedy sampling (temperature 0): only then is its output the same");

  Generation out;
  std::optional<TokenConstraint> constraint;
  if (options.constraint) {
    KIPP_ASSIGN(const ThinkTokens think, find_think_tokens(c.tokenizer));
    constraint.emplace(options.constraint, options.answer_start, c.stop_ids, think, options.constraint_frame);
  }
  std::optional<ThinkingBudget> budget;
  if (options.thinking_budget) {
    KIPP_ASSIGN(ThinkClosing closing, find_think_closing(c.tokenizer));
    budget.emplace(*options.thinking_budget, options.answer_start, std::move(closing), !constraint);
  }
  // The next token from a row of logits, from the tokens the constraint allows when there is one;
  // a spent thinking budget names it instead.
  const auto next_token = [&](const float* row_logits) -> Result<uint32_t> {
    if (const std::optional<uint32_t> forced = budget ? budget->forced() : std::nullopt) return *forced;
    const AllowedTokens* allowed = nullptr;
    if (constraint) {
      const Clock::time_point start = Clock::now();
      KIPP_ASSIGN(allowed, constraint->allowed());
      out.timings.constraint_seconds.push_back(seconds_between(start, Clock::now()));
    }
    return sampler.sample(std::span(row_logits, vocab), allowed);
  };

  const uint32_t rows = options.speculative ? kMaxDraftTokens + 1 : 1;
  std::vector<float> logits(size_t(rows) * family::vocab);
  OutputText output(c.tokenizer, options.stop);
  std::string released;
  const auto emit = [&](std::string& text) {
    if (text.empty()) return;
    out.text += text;
    if (on_text) on_text(text);
    text.clear();
  };
  // Takes a sampled token into the output; false when it ends the generation.
  const auto take = [&](uint32_t token) -> Result<bool> {
    out.tokens.push_back(token);
    sampler.accept(token);
    if (constraint) {
      const Clock::time_point start = Clock::now();
      KIPP_TRY(constraint->accept(token, c.tokenizer.token_bytes(token)));
      if (!out.timings.constraint_seconds.empty())
        out.timings.constraint_seconds.back() += seconds_between(start, Clock::now());
    }
    if (budget) budget->accept(token, c.tokenizer.token_bytes(token));
    if (std::find(c.stop_ids.begin(), c.stop_ids.end(), token) != c.stop_ids.end()) {
      out.finish = FinishReason::stop_token;
      out.stop = std::string(c.tokenizer.token_bytes(token));
      return false;
    }
    KIPP_ASSIGN(const bool stopped, output.push(token, released));
    emit(released);
    if (stopped) {
      out.finish = FinishReason::stop_string;
      out.stop = output.matched();
      return false;
    }
    return true;
  };
  const auto budget_left = [&] { return out.tokens.size() < options.max_tokens; };

  const Clock::time_point start = Clock::now();
  KIPP_TRY(eval_tokens(c, prompt, logits.data(), 1));
  const Clock::time_point prompt_done = Clock::now();
  out.timings.prompt_tokens = uint32_t(prompt.size());
  out.timings.prompt_seconds = seconds_between(start, prompt_done);
  const uint32_t prompt_end = c.session.length();
  // The tokens prompt lookup searches: this call's prompt and what it generates.
  std::vector<uint32_t> sequence(prompt.begin(), prompt.end());
  SpeculationGate gate;

  const float* row = logits.data();  // the logits the next token is sampled from
  while (true) {
    if (!budget_left()) {
      out.finish = FinishReason::length;
      break;
    }
    if (options.cancelled && options.cancelled()) {
      out.finish = FinishReason::cancelled;
      break;
    }
    KIPP_ASSIGN(const uint32_t token, next_token(row));
    if (out.tokens.empty()) out.timings.first_token_seconds = seconds_between(start, Clock::now());
    KIPP_ASSIGN(const bool going, take(token));
    if (!going) break;
    sequence.push_back(token);
    if (!budget_left()) continue;
    // The next token needs this one in the cache; stop at the session's end instead of failing.
    const uint32_t room = c.session.capacity() - c.session.length();
    if (room == 0) {
      out.finish = FinishReason::length;
      break;
    }
    // A draft of what may follow, verified in the same evaluation as the token itself: row i of
    // the logits predicts the token after draft[i - 1].
    std::vector<uint32_t> batch = {token};
    if (options.speculative && gate.should_draft()) {
      const uint32_t limit =
          uint32_t(std::min<size_t>({kMaxDraftTokens, room - 1, options.max_tokens - out.tokens.size()}));
      for (uint32_t id : lookup_draft(sequence, limit)) batch.push_back(id);
    }
    const uint32_t drafted = uint32_t(batch.size() - 1);
    KIPP_TRY(eval_tokens(c, batch, logits.data(), drafted + 1));
    uint32_t accepted = 0;
    bool going_on = true;
    while (accepted < drafted && budget_left()) {
      const float* draft_row = logits.data() + size_t(accepted) * family::vocab;
      KIPP_ASSIGN(const uint32_t predicted, next_token(draft_row));
      if (predicted != batch[accepted + 1]) break;
      ++accepted;
      KIPP_ASSIGN(going_on, take(predicted));
      sequence.push_back(predicted);
      if (!going_on) break;
    }
    if (drafted > 0) {
      gate.record(drafted, accepted);
      out.timings.draft_tokens += drafted;
      out.timings.accepted_draft_tokens += accepted;
    }
    if (!going_on) break;
    // Drop the rejected draft tokens from the cache; the next token comes from the row after the
    // last accepted one (sampled again there: greedy gives the same token).
    if (accepted < drafted) KIPP_TRY(c.session.truncate(c.session.length() - (drafted - accepted)));
    row = logits.data() + size_t(accepted) * family::vocab;
  }
  // As without drafts, the cache ends holding the prompt and every token but the last.
  const uint32_t keep = prompt_end + uint32_t(out.tokens.empty() ? 0 : out.tokens.size() - 1);
  if (c.session.length() > keep) KIPP_TRY(c.session.truncate(keep));
  if (out.finish != FinishReason::stop_string) {
    if (output.finish(released)) {
      out.finish = FinishReason::stop_string;
      out.stop = output.matched();
    }
    emit(released);
  }
  out.timings.generated_tokens = uint32_t(out.tokens.size());
  out.timings.decode_seconds = seconds_between(prompt_done, Clock::now());
  return out;
}

}  // namespace kipp
