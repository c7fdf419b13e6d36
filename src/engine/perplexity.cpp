#include "engine/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

namespace kipp {
namespace {

// Rows of logits asked for per eval call: bounds the logit buffer (64 x 151,936 floats, 39 MB).
constexpr uint32_t kRowsPerCall = 64;

// -log p(token) under the softmax of the first `vocab` logits.
double negative_log_likelihood(const float* logits, uint32_t vocab, uint32_t token) {
  const float max_logit = *std::max_element(logits, logits + vocab);
  double total = 0.0;
  for (uint32_t i = 0; i < vocab; ++i) total += std::exp(double(logits[i]) - max_logit);
  return std::log(total) + max_logit - double(logits[token]);
}

}  // namespace

Result<PerplexityResult> perplexity(BackendModel& model, std::span<const uint32_t> tokens, uint32_t window,
                                    uint32_t vocab) {
  if (window < 2) return fail("the window must be at least 2 tokens (one of context, one scored)");
  if (tokens.size() < 2) return fail("the text is ", tokens.size(), " token(s); perplexity needs at least 2");
  for (uint32_t token : tokens)
    if (token >= vocab) return fail("token ", token, " is outside the vocabulary");
  window = uint32_t(std::min<size_t>(window, tokens.size()));
  KIPP_ASSIGN(std::unique_ptr<BackendSession> session, model.create_session(window));
  std::vector<float> logits(size_t(kRowsPerCall) * vocab);
  PerplexityResult result;
  double nll = 0.0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t begin = 0; begin + 1 < tokens.size(); begin += window) {
    const std::span<const uint32_t> part = tokens.subspan(begin, std::min<size_t>(window, tokens.size() - begin));
    session->reset();
    for (size_t at = 0; at < part.size(); at += kRowsPerCall) {
      const std::span<const uint32_t> piece = part.subspan(at, std::min<size_t>(kRowsPerCall, part.size() - at));
      const uint32_t rows = uint32_t(piece.size());
      EvalItem item{session.get(), piece, uint32_t(at), rows, logits.data(), {}};
      KIPP_TRY(model.eval(std::span(&item, 1)));
      // Row r predicts the token after piece[r]: part[at + r + 1], when the window has one.
      for (uint32_t r = 0; r < rows && at + r + 1 < part.size(); ++r) {
        nll += negative_log_likelihood(logits.data() + size_t(r) * vocab, vocab, part[at + r + 1]);
        ++result.scored;
      }
    }
    ++result.windows;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.mean_nll = nll / double(result.scored);
  result.perplexity = std::exp(result.mean_nll);
  return result;
}

}  // namespace kipp
