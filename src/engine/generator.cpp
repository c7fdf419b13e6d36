#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/prompt_lookup.h"

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

Status check_prompt(const GenerateContext& c, std::span<const uint32_t> prompt) {
  if (prompt.empty()) return fail("the prompt is empty: at least one token is needed to predict the next");
  for (uint32_t id : prompt) KIPP_TRY(c.tokenizer.check_id(id));
  if (c.session.length() + prompt.size() > c.session.capacity())
    return fail("the prompt (", prompt.size(), " tokens after ", c.session.length(), " cached) does not fit the ",
                c.session.capacity(), " positions of the session");
  return {};
}

Result<AnswerDecoder> decoder_for(const GenerateContext& c, const GenerateOptions& options) {
  // Rows of the output head past the tokenizer's ids are padding: never sampled.
  KIPP_ASSIGN(Sampler sampler, Sampler::create(options.sampling, uint32_t(c.tokenizer.vocab_size())));
  if (options.speculative && !options.sampling.greedy())
    return fail("speculative decoding needs greedy sampling (temperature 0): only then is its output the same");
  const Result<ThinkTokens> think = find_think_tokens(c.tokenizer);
  std::optional<TokenConstraint> constraint;
  if (options.constraint) {
    if (!think) return think.error();
    constraint.emplace(options.constraint, c.stop_ids, options.constraint_frame);
  }
  std::optional<ThinkingBudget> budget;
  if (options.thinking_budget) {
    KIPP_ASSIGN(ThinkClosing closing, find_think_closing(c.tokenizer));
    budget.emplace(*options.thinking_budget, std::move(closing), !constraint);
  }
  return AnswerDecoder(c.tokenizer, c.stop_ids, std::move(sampler), options.stop,
                       answer_layout(options.answer_start, think, find_call_tokens(c.tokenizer)), std::move(constraint),
                       std::move(budget));
}

// One generate() call: the prompt evaluated, then a token chosen and taken per step, each step's
// evaluation verifying a prompt-lookup draft when speculating.
class Generator {
 public:
  Generator(const GenerateContext& c, const GenerateOptions& options, AnswerDecoder decoder, const TextSink& on_text)
      : c_(c),
        options_(options),
        decoder_(std::move(decoder)),
        on_text_(on_text),
        logits_(size_t(options.speculative ? kMaxDraftTokens + 1 : 1) * c.tokenizer.vocab_size()) {}

  Result<Generation> run(std::span<const uint32_t> prompt) {
    const Clock::time_point start = Clock::now();
    KIPP_TRY(eval_tokens(c_, prompt, logits_.data(), 1));
    const Clock::time_point prompt_done = Clock::now();
    out_.timings.prompt_tokens = uint32_t(prompt.size());
    out_.timings.prompt_seconds = seconds_between(start, prompt_done);
    const uint32_t prompt_end = c_.session.length();
    sequence_.assign(prompt.begin(), prompt.end());
    const float* row = logits_.data();  // the logits the next token is chosen from; null once it ended
    while (row) {
      if (!budget_left()) {
        out_.finish = FinishReason::length;
        break;
      }
      if (options_.cancelled && options_.cancelled()) {
        out_.finish = FinishReason::cancelled;
        break;
      }
      KIPP_ASSIGN(const uint32_t token, decoder_.choose(std::span(row, c_.tokenizer.vocab_size())));
      if (out_.tokens.empty()) out_.timings.first_token_seconds = seconds_between(start, Clock::now());
      KIPP_ASSIGN(const bool going, take(token));
      if (!going) break;
      if (!budget_left()) continue;
      KIPP_ASSIGN(row, evaluate(token));
    }
    // As without drafts, the cache ends holding the prompt and every token but the last.
    const uint32_t keep = prompt_end + uint32_t(out_.tokens.empty() ? 0 : out_.tokens.size() - 1);
    if (c_.session.length() > keep) KIPP_TRY(c_.session.truncate(keep));
    if (out_.finish != FinishReason::stop_string) {
      std::string held_back;
      if (decoder_.finish(held_back)) {
        out_.finish = FinishReason::stop_string;
        out_.stop = decoder_.matched_stop();
      }
      emit(held_back);
    }
    out_.timings.generated_tokens = uint32_t(out_.tokens.size());
    out_.timings.decode_seconds = seconds_between(prompt_done, Clock::now());
    out_.timings.constraint_seconds = decoder_.constraint_seconds();
    return std::move(out_);
  }

 private:
  bool budget_left() const { return out_.tokens.size() < options_.max_tokens; }

  void emit(const std::string& text, std::span<const PartStart> starts = {}) {
    starts_.insert(starts_.end(), starts.begin(), starts.end());
    if (text.empty()) return;
    out_.text += text;
    if (on_text_) on_text_(text, starts_);
    starts_.clear();
  }

  // Takes a chosen token into the output; false when it ends the generation.
  Result<bool> take(uint32_t token) {
    out_.tokens.push_back(token);
    KIPP_ASSIGN(const TakenToken taken, decoder_.take(token));
    out_.parts.insert(out_.parts.end(), taken.parts.begin(), taken.parts.end());
    emit(taken.text, taken.parts);
    if (taken.finish) {
      out_.finish = *taken.finish;
      out_.stop = *taken.finish == FinishReason::stop_token ? std::string(c_.tokenizer.token_bytes(token))
                                                            : decoder_.matched_stop();
      return false;
    }
    sequence_.push_back(token);
    return true;
  }

  // Evaluates the token just taken, with a draft of what may follow when speculating: row i of
  // the logits predicts the token after draft[i - 1], and the draft tokens the rows confirm are
  // taken. Returns the row the next token comes from; null when the generation ended.
  Result<const float*> evaluate(uint32_t token) {
    // The next token needs this one in the cache; stop at the session's end instead of failing.
    const uint32_t room = c_.session.capacity() - c_.session.length();
    if (room == 0) {
      out_.finish = FinishReason::length;
      return nullptr;
    }
    std::vector<uint32_t> batch = {token};
    if (options_.speculative && gate_.should_draft()) {
      const uint32_t limit =
          uint32_t(std::min<size_t>({kMaxDraftTokens, room - 1, options_.max_tokens - out_.tokens.size()}));
      for (uint32_t id : lookup_draft(sequence_, limit)) batch.push_back(id);
    }
    const uint32_t drafted = uint32_t(batch.size() - 1);
    KIPP_TRY(eval_tokens(c_, batch, logits_.data(), drafted + 1));
    uint32_t accepted = 0;
    bool going = true;
    while (accepted < drafted && budget_left()) {
      const float* draft_row = logits_.data() + size_t(accepted) * c_.tokenizer.vocab_size();
      KIPP_ASSIGN(const uint32_t predicted, decoder_.choose(std::span(draft_row, c_.tokenizer.vocab_size())));
      if (predicted != batch[accepted + 1]) break;
      ++accepted;
      KIPP_ASSIGN(going, take(predicted));
      if (!going) break;
    }
    if (drafted > 0) {
      gate_.record(drafted, accepted);
      out_.timings.draft_tokens += drafted;
      out_.timings.accepted_draft_tokens += accepted;
    }
    if (!going) return nullptr;
    // Drop the rejected draft tokens from the cache; the next token comes from the row after the
    // last accepted one (chosen again there: greedy gives the same token).
    if (accepted < drafted) KIPP_TRY(c_.session.truncate(c_.session.length() - (drafted - accepted)));
    return logits_.data() + size_t(accepted) * c_.tokenizer.vocab_size();
  }

  const GenerateContext& c_;
  const GenerateOptions& options_;
  AnswerDecoder decoder_;
  const TextSink& on_text_;
  std::vector<PartStart> starts_;  // not yet handed on: they wait for text
  std::vector<float> logits_;
  Generation out_;
  std::vector<uint32_t> sequence_;  // what prompt lookup searches: the prompt, then every token taken
  SpeculationGate gate_;
};

}  // namespace

Result<Generation> generate(const GenerateContext& c, std::span<const uint32_t> prompt, const GenerateOptions& options,
                            const TextSink& on_text) {
  KIPP_TRY(check_prompt(c, prompt));
  KIPP_ASSIGN(AnswerDecoder decoder, decoder_for(c, options));
  return Generator(c, options, std::move(decoder), on_text).run(prompt);
}

}  // namespace kipp
