#include "engine/generator.h"

#include <algorithm>
#include <chrono>

#include "engine/stop_strings.h"
#include "tokenizer/stream_decoder.h"

namespace kipp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

Status eval_tokens(const GenerateContext& c, std::span<const uint32_t> tokens, std::vector<float>& logits) {
  EvalItem item{&c.session, tokens, c.session.length(), 1, logits.data(), {}};
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

  Generation out;
  std::vector<float> logits(family::vocab);
  StreamDecoder decoder(c.tokenizer);
  StopStrings stops(options.stop);
  std::string piece, released;
  const auto emit = [&](std::string& text) {
    if (text.empty()) return;
    out.text += text;
    if (on_text) on_text(text);
    text.clear();
  };

  const Clock::time_point start = Clock::now();
  KIPP_TRY(eval_tokens(c, prompt, logits));
  const Clock::time_point prompt_done = Clock::now();
  out.timings.prompt_tokens = uint32_t(prompt.size());
  out.timings.prompt_seconds = seconds_between(start, prompt_done);

  while (true) {
    if (out.tokens.size() >= options.max_tokens) {
      out.finish = FinishReason::length;
      break;
    }
    if (options.cancelled && options.cancelled()) {
      out.finish = FinishReason::cancelled;
      break;
    }
    KIPP_ASSIGN(const uint32_t token, sampler.sample(std::span(logits).first(vocab)));
    if (out.tokens.empty()) out.timings.first_token_seconds = seconds_between(start, Clock::now());
    out.tokens.push_back(token);
    sampler.accept(token);
    if (std::find(c.stop_ids.begin(), c.stop_ids.end(), token) != c.stop_ids.end()) {
      out.finish = FinishReason::stop_token;
      out.stop = std::string(c.tokenizer.token_bytes(token));
      break;
    }
    KIPP_TRY(decoder.push(token, piece));
    if (stops.push(piece, released)) {
      emit(released);
      out.finish = FinishReason::stop_string;
      out.stop = stops.matched();
      piece.clear();
      break;
    }
    piece.clear();
    emit(released);
    // The next token needs this one in the cache; stop at the session's end instead of failing.
    if (out.tokens.size() < options.max_tokens) {
      if (c.session.length() >= c.session.capacity()) {
        out.finish = FinishReason::length;
        break;
      }
      KIPP_TRY(eval_tokens(c, std::span(&token, 1), logits));
    }
  }
  if (out.finish != FinishReason::stop_string) {
    decoder.finish(piece);
    if (stops.push(piece, released)) {
      out.finish = FinishReason::stop_string;
      out.stop = stops.matched();
    } else {
      stops.finish(released);
    }
    emit(released);
  }
  out.timings.generated_tokens = uint32_t(out.tokens.size());
  out.timings.decode_seconds = seconds_between(prompt_done, Clock::now());
  return out;
}

}  // namespace kipp
