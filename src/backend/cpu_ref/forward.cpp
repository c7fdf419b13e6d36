// cpu-ref: the readable Qwen3 forward pass. One token at a time through the nine steps of each
// layer (in a MoE layer, step 8 is the routed experts), K and V stored through the session's block table (BF16, or Q8_0 with --kv-cache q8_0), then the final norm and the
// output head (or, for an item that asks for it, the final norm of its last token alone). Prefill and decode are the same loop, so multi-row logits equal position-by-position
// logits bit for bit, and an item's result never depends on the other items of a call.
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu_ref/ops.h"
#include "backend/eval_checks.h"
#include "backend/expert_routing.h"
#include "backend/host_session.h"
#include "backend/kv_store.h"
#include "util/invariant.h"

namespace kipp::cpu_ref {
namespace {

const float* as_f32(const WeightView& w) { return reinterpret_cast<const float*>(w.data); }

class Model final : public HostBackendModel {
 public:
  Model(const ModelFile& file, KvFormat kv_format)
      : HostBackendModel(file.checkpoint(), kv_format),
        c_(file.checkpoint()),
        kv_format_(kv_format),
        w_(file.weights()),
        checker_(c_),
        x_(c_.hidden),
        x_norm_(c_.hidden),
        q_(c_.attention_width()),
        k_(c_.kv_width()),
        v_(c_.kv_width()),
        attention_(c_.attention_width()),
        projected_(c_.hidden),
        gate_(c_.is_moe() ? c_.experts.ffn : c_.ffn),
        up_(gate_.size()),
        router_(c_.experts.count),
        expert_out_(c_.is_moe() ? c_.hidden : 0),
        chosen_(c_.experts.per_token),
        choice_record_(2 * chosen_.size() + 1),
        scores_(c_.context),
        cos_sin_(c_.head_dim()),
        keys_(c_.context),
        values_(c_.context) {}

  std::string name() const override { return "cpu-ref"; }
  Status record_steps(StepRecorder* recorder) override {
    recorder_ = recorder;
    return {};
  }

  Status eval(std::span<EvalItem> items) override {
    KIPP_TRY(checker_.check(items));
    for (EvalItem& item : items) {
      HostSession& session = host_session(item.session);
      const KvRows kv{session.store(), item.block_table};
      const uint32_t count = uint32_t(item.tokens.size());
      KIPP_INVARIANT(item.logit_rows <= count);
      const uint32_t first_row = count - item.logit_rows;
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t position = item.start_position + i;
        forward(kv, item.tokens[i], position);
        session.set_length(position + 1);
        if (i >= first_row) output_logits(position, item.logits + size_t(i - first_row) * c_.vocab());
      }
      if (!item.hidden) continue;
      if (item.logit_rows > 0) std::copy(x_norm_.begin(), x_norm_.end(), item.hidden);  // the last row's, just made
      else final_norm(item.start_position + count - 1, item.hidden);
    }
    return {};
  }

 private:
  // The residual stream of one token through every layer, following the contract's nine steps.
  void forward(const KvRows& kv, uint32_t token, uint32_t position) {
    const uint32_t dim = c_.head_dim();
    const float eps = c_.rms_norm_eps();
    widen_row(w_.token_embedding, token, x_.data());
    note(ForwardStep::embedding, 0, position, x_);
    rope_cos_sin(position, dim, c_.rope_theta, cos_sin_.data());
    for (uint32_t l = 0; l < c_.layers; ++l) {
      const LayerWeights& layer = w_.layers[l];
      rms_norm(x_.data(), as_f32(layer.attn_norm), c_.hidden, eps, x_norm_.data());  // 1 attention norm
      note(ForwardStep::attn_norm, l, position, x_norm_);
      matvec(layer.attn_q, x_norm_.data(), q_.data());  // 2 Q, K, V
      matvec(layer.attn_k, x_norm_.data(), k_.data());
      matvec(layer.attn_v, x_norm_.data(), v_.data());
      rms_norm_heads(q_.data(), c_.q_heads, dim, as_f32(layer.attn_q_norm), eps);  // 3 Q/K norm
      rms_norm_heads(k_.data(), c_.kv_heads, dim, as_f32(layer.attn_k_norm), eps);
      rotate_heads(q_.data(), c_.q_heads, dim, cos_sin_.data());  // 4 RoPE
      rotate_heads(k_.data(), c_.kv_heads, dim, cos_sin_.data());
      note(ForwardStep::q_rope, l, position, q_);
      note(ForwardStep::k_rope, l, position, k_);
      store_kv(kv, l, position);
      attend(kv, l, position);  // 5 attention
      note(ForwardStep::attention, l, position, attention_);
      matvec(layer.attn_output, attention_.data(), projected_.data());  // 6 output + residual
      add_in_place(x_.data(), projected_.data(), c_.hidden);
      note(ForwardStep::attn_residual, l, position, x_);
      rms_norm(x_.data(), as_f32(layer.ffn_norm), c_.hidden, eps, x_norm_.data());  // 7 FFN norm
      note(ForwardStep::ffn_norm, l, position, x_norm_);
      if (c_.is_moe()) {  // 8 SiLU-gated FFN: the routed experts'
        mix_experts(layer, l, position);
      } else {  // 8 SiLU-gated FFN
        matvec(layer.ffn_gate, x_norm_.data(), gate_.data());
        matvec(layer.ffn_up, x_norm_.data(), up_.data());
        silu_mul(gate_.data(), up_.data(), c_.ffn, gate_.data());
        matvec(layer.ffn_down, gate_.data(), projected_.data());
      }
      note(ForwardStep::ffn_out, l, position, projected_);
      add_in_place(x_.data(), projected_.data(), c_.hidden);  // 9 residual
      note(ForwardStep::residual, l, position, x_);
    }
  }

  // Step 8 of a MoE layer into projected_: the router's logits and their FP32 softmax over every
  // expert, the top k renormalised (expert_routing.h), and the chosen experts' SwiGLU outputs,
  // each scaled by its weight and added in rank order.
  void mix_experts(const LayerWeights& layer, uint32_t l, uint32_t position) {
    matvec(layer.ffn_gate_inp, x_norm_.data(), router_.data());
    softmax(router_.data(), router_.size());
    const float margin = choose_experts(router_, chosen_);
    if (recorder_) note(ForwardStep::experts, l, position, choice_record(chosen_, margin, choice_record_));
    std::fill(projected_.begin(), projected_.end(), 0.0f);
    for (const ExpertChoice& choice : chosen_) {
      matvec(layer.ffn_gate_exps.expert(choice.expert), x_norm_.data(), gate_.data());
      matvec(layer.ffn_up_exps.expert(choice.expert), x_norm_.data(), up_.data());
      silu_mul(gate_.data(), up_.data(), c_.experts.ffn, gate_.data());
      matvec(layer.ffn_down_exps.expert(choice.expert), gate_.data(), expert_out_.data());
      for (uint32_t i = 0; i < c_.hidden; ++i) projected_[i] += choice.weight * expert_out_[i];
    }
  }

  void note(ForwardStep step, uint32_t layer, uint32_t position, std::span<const float> values) {
    if (recorder_) recorder_->record(step, layer, position, values);
  }

  // K and V are rounded to the cache's format as they enter it; attention reads them back from there.
  void store_kv(const KvRows& kv, uint32_t layer, uint32_t position) {
    store_kv_row(kv_format_, k_.data(), c_.kv_width(), kv.k(layer, position));
    store_kv_row(kv_format_, v_.data(), c_.kv_width(), kv.v(layer, position));
  }

  // This position's queries over the cached positions 0..position of this layer.
  void attend(const KvRows& kv, uint32_t layer, uint32_t position) {
    for (uint32_t p = 0; p <= position; ++p) {
      keys_[p] = kv.k(layer, p);
      values_[p] = kv.v(layer, p);
    }
    attend_gqa(q_.data(), c_.q_heads, c_.kv_heads, c_.head_dim(), kv_format_, std::span(keys_.data(), position + 1),
               std::span(values_.data(), position + 1), scores_.data(), attention_.data());
  }

  // The residual stream of the token just evaluated through the final norm, into `out` (hidden).
  void final_norm(uint32_t position, float* out) {
    rms_norm(x_.data(), as_f32(w_.output_norm), c_.hidden, c_.rms_norm_eps(), out);
    note(ForwardStep::final_norm, 0, position, std::span(out, c_.hidden));
  }

  void output_logits(uint32_t position, float* logits) {
    final_norm(position, x_norm_.data());
    matvec(w_.lm_head, x_norm_.data(), logits);
    note(ForwardStep::logits, 0, position, std::span(logits, c_.vocab()));
  }

  const Checkpoint& c_;
  const KvFormat kv_format_;
  const ModelWeights& w_;
  EvalChecker checker_;
  StepRecorder* recorder_ = nullptr;
  // Scratch, allocated once: residual, normed input, q/k/v, attention output, projections, FFN
  // (of one expert in a MoE layer), the router's probabilities, one expert's output, the choice and
  // its recorded form, attention scores, the token's RoPE angles and the KV row pointers of the
  // current layer.
  std::vector<float> x_, x_norm_, q_, k_, v_, attention_, projected_, gate_, up_, router_, expert_out_;
  std::vector<ExpertChoice> chosen_;
  std::vector<float> choice_record_, scores_, cos_sin_;
  std::vector<const std::byte*> keys_, values_;
};

}  // namespace
}  // namespace kipp::cpu_ref

namespace kipp {

Result<std::unique_ptr<BackendModel>> create_cpu_ref_backend(const ModelFile& model, KvFormat kv_cache) {
  return std::unique_ptr<BackendModel>(new cpu_ref::Model(model, kv_cache));
}

}  // namespace kipp
