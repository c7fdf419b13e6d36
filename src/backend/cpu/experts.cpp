#include "backend/cpu/experts.h"

#include <algorithm>

#include "backend/cpu_ref/ops.h"
#include "util/invariant.h"

namespace kipp::cpu {
namespace {

// A product over the output rows one thread takes.
void run_rows(const Kernels& kernels, MatmulArgs args, Range rows) {
  args.row_begin = rows.begin;
  args.row_end = rows.end;
  kernels.matmul(args);
}

uint32_t round_up(uint32_t n, uint32_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Rows the gathered matrices need at most: every choice, plus each segment's padding to a
// multiple of kPlaneTokens.
uint32_t gathered_capacity(uint32_t max_tokens, uint32_t per_token, uint32_t experts) {
  return max_tokens * per_token + (kPlaneTokens - 1) * std::min(experts, max_tokens * per_token);
}

}  // namespace

ExpertMixer::ExpertMixer(const Checkpoint& c, ThreadPool& pool, const Kernels& kernels, bool int8_activations,
                         uint32_t max_tokens)
    : pool_(pool),
      kernels_(kernels),
      int8_activations_(int8_activations),
      experts_(c.experts.count),
      per_token_(c.experts.per_token),
      hidden_(c.hidden),
      expert_ffn_(c.experts.ffn),
      router_(max_tokens, experts_),
      choices_(size_t(max_tokens) * per_token_),
      margins_(max_tokens),
      counts_(experts_),
      next_row_(experts_),
      gathered_row_(size_t(max_tokens) * per_token_),
      expert_in_(gathered_capacity(max_tokens, per_token_, experts_), hidden_, true),
      expert_gate_(gathered_capacity(max_tokens, per_token_, experts_), expert_ffn_, true),
      expert_up_(gathered_capacity(max_tokens, per_token_, experts_), expert_ffn_),
      expert_out_(max_tokens * per_token_, hidden_),
      down_rows_(gathered_capacity(max_tokens, per_token_, experts_)) {
  segments_.reserve(experts_);
}

void ExpertMixer::mix(const PackedLayer& layer, const Activations& x_norm, uint32_t tokens, Activations& out) {
  choose(layer, x_norm, tokens);
  gather(layer, x_norm, tokens);
  run_experts(layer);
  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(tokens, index, count);
    for (uint32_t t = range.begin; t < range.end; ++t) {
      float* y = out.row(t);
      std::fill(y, y + hidden_, 0.0f);
      for (uint32_t r = 0; r < per_token_; ++r) {
        const float weight = choices_[size_t(t) * per_token_ + r].weight;
        const float* expert = expert_out_.row(t * per_token_ + r);
        for (uint32_t i = 0; i < hidden_; ++i) y[i] += weight * expert[i];
      }
    }
  });
}

// The router's logits for every token (its FP32 rows, exact as stored), then per token the FP32
// softmax and the choice, as cpu-ref makes them.
void ExpertMixer::choose(const PackedLayer& layer, const Activations& x_norm, uint32_t tokens) {
  const PackedMatrix& router = layer.ffn_gate_inp;
  pool_.run([&](unsigned index, unsigned count) {
    const Range rows = split(uint32_t(router.rows), index, count, 16);
    if (rows.begin == rows.end) return;
    run_rows(kernels_, x_norm.times(router, form(router), tokens, router_.row_pointers.data()), rows);
  });
  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(tokens, index, count);
    for (uint32_t t = range.begin; t < range.end; ++t) {
      cpu_ref::softmax(router_.row(t), experts_);
      margins_[t] = choose_experts(std::span(router_.row(t), experts_),
                                   std::span(choices_).subspan(size_t(t) * per_token_, per_token_));
    }
  });
}

// Lays the chosen (token, rank) pairs out expert by expert, tokens in order within an expert, and
// copies each token's normed row there in the forms the expert's gate and up products read.
void ExpertMixer::gather(const PackedLayer& layer, const Activations& x_norm, uint32_t tokens) {
  std::fill(counts_.begin(), counts_.end(), 0);
  for (uint32_t i = 0; i < tokens * per_token_; ++i) ++counts_[choices_[i].expert];
  segments_.clear();
  uint32_t next = 0;
  for (uint32_t e = 0; e < experts_; ++e) {
    next_row_[e] = next;  // where the expert's next token goes
    if (!counts_[e]) continue;
    segments_.push_back({e, next, counts_[e]});
    next += round_up(counts_[e], kPlaneTokens);
  }
  KIPP_INVARIANT(next <= expert_in_.row_pointers.size());
  for (uint32_t t = 0; t < tokens; ++t)
    for (uint32_t r = 0; r < per_token_; ++r) {
      const uint32_t row = next_row_[choices_[size_t(t) * per_token_ + r].expert]++;
      gathered_row_[size_t(t) * per_token_ + r] = row;
      down_rows_[row] = expert_out_.row(t * per_token_ + r);
    }
  const ActivationForm forms[] = {form(layer.gate_exps[0]), form(layer.up_exps[0])};
  pool_.run([&](unsigned index, unsigned count) {
    const Range range = split(tokens * per_token_, index, count);
    for (uint32_t i = range.begin; i < range.end; ++i) {
      const uint32_t row = gathered_row_[i];
      std::copy_n(x_norm.row(i / per_token_), hidden_, expert_in_.row(row));
      expert_in_.quantize_row(row, forms, kernels_);
    }
  });
}

// Each chosen expert's gate and up for its tokens, silu(gate) * up on the same thread's rows,
// then its down projection into each choice's row of expert_out_. Threads share every expert's
// rows (output features; the quant blocks run along the inputs, so no split cuts a block).
void ExpertMixer::run_experts(const PackedLayer& layer) {
  pool_.run([&](unsigned index, unsigned count) {
    const Range rows = split(expert_ffn_, index, count, 16);
    if (rows.begin == rows.end) return;
    for (const Segment& s : segments_) {
      for (auto [weight, out] :
           {std::pair{&layer.gate_exps[s.expert], &expert_gate_}, std::pair{&layer.up_exps[s.expert], &expert_up_}}) {
        run_rows(kernels_,
                 expert_in_.times_rows(*weight, form(*weight), s.first, s.count, out->row_pointers.data() + s.first),
                 rows);
      }
      for (uint32_t row = s.first; row < s.first + s.count; ++row)
        cpu_ref::silu_mul(expert_gate_.row(row) + rows.begin, expert_up_.row(row) + rows.begin, rows.end - rows.begin,
                          expert_gate_.row(row) + rows.begin);
    }
  });
  const ActivationForm down_form[] = {form(layer.down_exps[0])};
  pool_.run([&](unsigned index, unsigned count) {
    for (const Segment& s : segments_) {
      const Range range = split(s.count, index, count);
      for (uint32_t row = s.first + range.begin; row < s.first + range.end; ++row)
        expert_gate_.quantize_row(row, down_form, kernels_);
    }
  });
  pool_.run([&](unsigned index, unsigned count) {
    const Range rows = split(hidden_, index, count, 16);
    if (rows.begin == rows.end) return;
    for (const Segment& s : segments_) {
      const PackedMatrix& down = layer.down_exps[s.expert];
      run_rows(kernels_, expert_gate_.times_rows(down, form(down), s.first, s.count, down_rows_.data() + s.first),
               rows);
    }
  });
}

}  // namespace kipp::cpu
