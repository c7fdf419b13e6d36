// cpu-ref: the readable Qwen3 forward pass. One token at a time through the nine steps of each
// layer, K and V stored in the session's BF16 cache, then the final norm and the output head.
// Prefill and decode are the same loop, so multi-row logits equal position-by-position logits
// bit for bit, and an item's result never depends on the other items of a call.
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu_ref/kv_cache.h"
#include "backend/cpu_ref/ops.h"
#include "quant/float_formats.h"

namespace kipp::cpu_ref {
namespace {

const float* as_f32(const WeightView& w) { return reinterpret_cast<const float*>(w.data); }

class Model final : public BackendModel {
 public:
  explicit Model(const ModelFile& file)
      : c_(file.checkpoint()), w_(file.weights()), x_(c_.hidden), x_norm_(c_.hidden), q_(c_.attention_width()),
        k_(c_.kv_width()), v_(c_.kv_width()), attention_(c_.attention_width()), projected_(c_.hidden),
        gate_(c_.ffn), up_(c_.ffn), scores_(c_.context) {}

  Result<std::unique_ptr<BackendSession>> create_session(uint32_t capacity) override {
    if (capacity == 0 || capacity > c_.context)
      return fail("session capacity ", capacity, " is outside 1..", c_.context, " for ", c_.id);
    return std::unique_ptr<BackendSession>(new KvCache(c_.layers, c_.kv_width(), capacity));
  }

  Status eval(std::span<EvalItem> items) override {
    for (const EvalItem& item : items) KIPP_TRY(check(item));
    for (EvalItem& item : items) {
      auto& cache = static_cast<KvCache&>(*item.session);
      const uint32_t count = uint32_t(item.tokens.size());
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t position = item.start_position + i;
        forward(cache, item.tokens[i], position);
        cache.set_length(position + 1);
        const uint32_t first_row = count - item.logit_rows;
        if (i >= first_row) output_logits(item.logits + size_t(i - first_row) * c_.vocab());
      }
    }
    return {};
  }

 private:
  Status check(const EvalItem& item) const {
    if (!item.session) return fail("eval: an item has no session");
    if (item.start_position != item.session->length())
      return fail("eval: start position ", item.start_position, " but the session holds ", item.session->length());
    if (item.tokens.empty()) return fail("eval: an item has no tokens");
    if (item.session->length() + item.tokens.size() > item.session->capacity())
      return fail("eval: ", item.tokens.size(), " tokens exceed the session's capacity of ", item.session->capacity(),
                  " (", item.session->length(), " used)");
    if (item.logit_rows > item.tokens.size()) return fail("eval: more logit rows than tokens");
    if (item.logit_rows > 0 && !item.logits) return fail("eval: logit rows requested without a buffer");
    for (uint32_t token : item.tokens)
      if (token >= c_.vocab()) return fail("eval: token ", token, " is outside the vocabulary of ", c_.vocab());
    return {};
  }

  // The residual stream of one token through every layer, following the contract's nine steps.
  void forward(KvCache& cache, uint32_t token, uint32_t position) {
    widen_row(w_.token_embedding, token, x_.data());
    for (uint32_t l = 0; l < c_.layers; ++l) {
      const LayerWeights& layer = w_.layers[l];
      rms_norm(x_.data(), as_f32(layer.attn_norm), c_.hidden, c_.rms_norm_eps(), x_norm_.data());  // 1
      matvec(layer.attn_q, x_norm_.data(), q_.data());                                              // 2
      matvec(layer.attn_k, x_norm_.data(), k_.data());
      matvec(layer.attn_v, x_norm_.data(), v_.data());
      normalize_heads(q_.data(), c_.q_heads, layer.attn_q_norm);                                    // 3
      normalize_heads(k_.data(), c_.kv_heads(), layer.attn_k_norm);
      rotate_heads(q_.data(), c_.q_heads, position);                                                // 4
      rotate_heads(k_.data(), c_.kv_heads(), position);
      cache.store(l, position, k_.data(), v_.data());
      attend(cache, l, position);                                                                   // 5
      matvec(layer.attn_output, attention_.data(), projected_.data());                              // 6
      add_to_residual(projected_.data());
      rms_norm(x_.data(), as_f32(layer.ffn_norm), c_.hidden, c_.rms_norm_eps(), x_norm_.data());    // 7
      matvec(layer.ffn_gate, x_norm_.data(), gate_.data());                                         // 8
      matvec(layer.ffn_up, x_norm_.data(), up_.data());
      silu_mul(gate_.data(), up_.data(), c_.ffn, gate_.data());
      matvec(layer.ffn_down, gate_.data(), projected_.data());
      add_to_residual(projected_.data());                                                           // 9
    }
  }

  void normalize_heads(float* heads, uint32_t count, const WeightView& weight) {
    for (uint32_t h = 0; h < count; ++h)
      rms_norm(heads + h * c_.head_dim(), as_f32(weight), c_.head_dim(), c_.rms_norm_eps(), heads + h * c_.head_dim());
  }

  void rotate_heads(float* heads, uint32_t count, uint32_t position) {
    for (uint32_t h = 0; h < count; ++h) rope_neox(heads + h * c_.head_dim(), c_.head_dim(), position, c_.rope_theta);
  }

  // Causal grouped-query attention of this position's queries over the cached positions 0..position.
  void attend(const KvCache& cache, uint32_t layer, uint32_t position) {
    const uint32_t dim = c_.head_dim(), group = c_.q_heads / c_.kv_heads();
    const float scale = 1.0f / std::sqrt(float(dim));
    for (uint32_t h = 0; h < c_.q_heads; ++h) {
      const float* q = q_.data() + h * dim;
      const uint32_t kv_head = h / group;
      for (uint32_t p = 0; p <= position; ++p) {
        const uint16_t* k = cache.k_at(layer, p) + kv_head * dim;
        float dot = 0.0f;
        for (uint32_t i = 0; i < dim; ++i) dot += q[i] * bf16_to_f32(k[i]);
        scores_[p] = dot * scale;
      }
      softmax(scores_.data(), position + 1);
      float* out = attention_.data() + h * dim;
      std::fill(out, out + dim, 0.0f);
      for (uint32_t p = 0; p <= position; ++p) {
        const uint16_t* v = cache.v_at(layer, p) + kv_head * dim;
        for (uint32_t i = 0; i < dim; ++i) out[i] += scores_[p] * bf16_to_f32(v[i]);
      }
    }
  }

  void add_to_residual(const float* delta) {
    for (uint32_t i = 0; i < c_.hidden; ++i) x_[i] += delta[i];
  }

  void output_logits(float* logits) {
    rms_norm(x_.data(), as_f32(w_.output_norm), c_.hidden, c_.rms_norm_eps(), x_norm_.data());
    matvec(w_.lm_head, x_norm_.data(), logits);
  }

  const Checkpoint& c_;
  const ModelWeights& w_;
  // Scratch, allocated once: residual, normed input, q/k/v, attention output, projections, FFN, scores.
  std::vector<float> x_, x_norm_, q_, k_, v_, attention_, projected_, gate_, up_, scores_;
};

}  // namespace
}  // namespace kipp::cpu_ref

namespace kipp {

Result<std::unique_ptr<BackendModel>> create_cpu_ref_backend(const ModelFile& model) {
  return std::unique_ptr<BackendModel>(new cpu_ref::Model(model));
}

}  // namespace kipp
