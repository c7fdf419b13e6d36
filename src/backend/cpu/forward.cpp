// cpu: the fast CPU backend. The same nine steps as cpu-ref (numbered alike below), over a batch
// of tokens at once (all items of an eval call packed together, up to tokens_per_pass() per pass),
// so every weight matrix is streamed once per pass for all of them. Norms, SiLU, RoPE and KV
// addressing are cpu-ref's own functions; what differs is the products and attention, which run
// in the kernel set chosen at load (kernels.h) on a persistent thread pool. Each output element
// is computed by one thread in one fixed order, so results do not depend on batching, chunking
// or thread count.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/activations.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/experts.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu_ref/ops.h"
#include "backend/eval_checks.h"
#include "backend/host_session.h"
#include "backend/kv_store.h"
#include "util/invariant.h"

namespace kipp::cpu {
namespace {

// Tokens per pass: enough to amortize each weight read over a prefill tile, small enough that
// the activations stay within a few MiB. A mixture of experts spreads a pass over its experts
// (8 of 128 per token), so it takes four times as many: each expert then gets about 32 tokens of
// a 512-token prefill at once instead of 8 in each of four passes.
uint32_t tokens_per_pass(const Checkpoint& c) { return c.is_moe() ? 512 : 128; }

const float* as_f32(const WeightView& w) { return reinterpret_cast<const float*>(w.data); }

// Why this backend computes no logits for a checkpoint whose head it could not pack (empty when it does).
std::string logits_refusal(const Checkpoint& c, const WeightView& head) {
  if (!head.data || head_is_packable(head)) return {};
  return "the cpu backend computes no logits for " + std::string(c.id) + ": its head's " + std::to_string(head.rows) +
         " rows do not fill 16-row panels (cpu-ref computes them; the final hidden row is offered)";
}

// One token of the current pass: where it comes from and where its results go.
struct BatchToken {
  KvRows kv;
  uint32_t token, position;
  float* logits;  // null when no logits are wanted for it
  float* hidden;  // its final-normed hidden row, when wanted (the last token of an item that asks)
};

class Model final : public HostBackendModel {
 public:
  Model(const ModelFile& file, std::unique_ptr<ThreadPool> pool, std::unique_ptr<PackedWeights> packed,
        const Kernels& kernels, const BackendOptions& options)
      : HostBackendModel(file.checkpoint(), options.kv_cache),
        c_(file.checkpoint()),
        pool_owner_(std::move(pool)),
        pool_(*pool_owner_),
        mapped_(file.weights()),
        packed_(std::move(packed)),
        kernels_(kernels),
        int8_activations_(options.int8_activations),
        bf16_activations_(options.bf16_activations),
        kv_format_(options.kv_cache),
        checker_(c_, logits_refusal(c_, file.weights().lm_head)),
        x_(tokens_per_pass(c_), c_.hidden),
        x_norm_(tokens_per_pass(c_), c_.hidden, true),
        q_(tokens_per_pass(c_), c_.attention_width()),
        k_new_(tokens_per_pass(c_), c_.kv_width()),
        v_new_(tokens_per_pass(c_), c_.kv_width()),
        attention_(tokens_per_pass(c_), c_.attention_width(), true),
        projected_(tokens_per_pass(c_), c_.hidden),
        gate_(tokens_per_pass(c_), c_.is_moe() ? 0 : c_.ffn, true),
        up_(tokens_per_pass(c_), c_.is_moe() ? 0 : c_.ffn),
        rope_(tokens_per_pass(c_), c_.head_dim()),
        logit_rows_(tokens_per_pass(c_)),
        attention_runner_(c_, pool_, kernels_, kv_format_) {
    batch_.reserve(tokens_per_pass(c_));
    queries_.reserve(tokens_per_pass(c_));
    if (c_.is_moe())
      experts_ = std::make_unique<ExpertMixer>(c_, pool_, kernels_, int8_activations_, tokens_per_pass(c_));
  }

  std::string name() const override { return "cpu"; }
  Status record_steps(StepRecorder* recorder) override {
    recorder_ = recorder;
    return {};
  }
  uint64_t copied_weight_bytes() const override { return packed_->bytes(); }
  std::string describe() const override {
    return std::string("cpu (") + kernels_.isa + " kernels, " + std::to_string(pool_.size()) + " threads" +
           (int8_activations_ ? ", 8-bit activations for Q4_1" : "") +
           (bf16_activations_ ? ", BF16 activations for BF16 products" : "") +
           (kv_format_ != KvFormat::bf16 ? std::string(", ") + std::string(kv_format_name(kv_format_)) + " KV cache"
                                         : "") +
           ")";
  }

  Status eval(std::span<EvalItem> items) override {
    KIPP_TRY(checker_.check(items));
    batch_.clear();
    for (EvalItem& item : items) {
      const KvRows kv{host_session(item.session).store(), item.block_table};
      const uint32_t count = uint32_t(item.tokens.size());
      KIPP_INVARIANT(item.logit_rows <= count);
      const uint32_t first_row = count - item.logit_rows;
      for (uint32_t i = 0; i < count; ++i) {
        float* logits = i >= first_row ? item.logits + size_t(i - first_row) * c_.vocab() : nullptr;
        float* hidden = i + 1 == count ? item.hidden : nullptr;
        batch_.push_back({kv, item.tokens[i], item.start_position + i, logits, hidden});
        if (batch_.size() == tokens_per_pass(c_)) run_pass();
      }
    }
    if (!batch_.empty()) run_pass();
    for (EvalItem& item : items)
      host_session(item.session).set_length(item.start_position + uint32_t(item.tokens.size()));
    return {};
  }

 private:
  uint32_t batch_size() const { return uint32_t(batch_.size()); }
  // The activations products with `weight` take. With --bf16-activations, Q, K, V and the output
  // head (`exact`) still take x unrounded: the errors of Q, K and V are what the attention's
  // exponentials and the Q8_0 cache's rounding amplify (rounding their x too took the tiny
  // checkpoints past the gate's NMSE bound), and the head's go straight into the logits, for
  // nothing in prefill, where it runs for one token (src/backend/cpu/KERNELS.md).
  ActivationForm form(const PackedMatrix& weight, bool exact = false) const {
    return activation_form(weight.format, int8_activations_, bf16_activations_ && !exact);
  }

  // Every token of the batch through every layer, then logits and hidden rows for the tokens that
  // want them.
  void run_pass() {
    const uint32_t n = batch_size();
    for (uint32_t t = 0; t < n; ++t) {
      widen_embedding(batch_[t].token, x_.row(t));
      cpu_ref::rope_cos_sin(batch_[t].position, c_.head_dim(), c_.rope_theta, rope_.row(t));
    }
    note(ForwardStep::embedding, 0, x_);
    for (uint32_t l = 0; l < c_.layers; ++l) layer(l, mapped_.layers[l], packed_->layers()[l]);
    output_logits();
    batch_.clear();
  }

  // The nine steps of one layer, each over the whole batch: the norms read the mapped weights `w`,
  // the products the packed ones `p`. Every input of a product is quantized for it (if its
  // weights take quantized activations) right where it is made.
  void layer(uint32_t l, const LayerWeights& w, const PackedLayer& p) {
    const float eps = c_.rms_norm_eps();
    for_tokens([&](uint32_t t) {
      cpu_ref::rms_norm(x_.row(t), as_f32(w.attn_norm), c_.hidden, eps, x_norm_.row(t));  // 1 attention norm
      quantize_for(x_norm_, t, {&p.attn_q, &p.attn_k, &p.attn_v}, true);
    });
    note(ForwardStep::attn_norm, l, x_norm_);
    matmuls({{&p.attn_q, &x_norm_, &q_, true},
             {&p.attn_k, &x_norm_, &k_new_, true},
             {&p.attn_v, &x_norm_, &v_new_, true}});        // 2 Q, K, V
    for_tokens([&](uint32_t t) { prepare_qkv(l, w, t); });  // 3 Q/K norm, 4 RoPE
    note(ForwardStep::q_rope, l, q_);
    note(ForwardStep::k_rope, l, k_new_);
    attend(l);  // 5 attention
    note(ForwardStep::attention, l, attention_);
    for_tokens([&](uint32_t t) { quantize_for(attention_, t, {&p.attn_output}); });
    matmuls({{&p.attn_output, &attention_, &projected_}});  // 6 output + residual
    for_tokens([&](uint32_t t) {
      cpu_ref::add_in_place(x_.row(t), projected_.row(t), c_.hidden);
      cpu_ref::rms_norm(x_.row(t), as_f32(w.ffn_norm), c_.hidden, eps, x_norm_.row(t));  // 7 FFN norm
      quantize_for(x_norm_, t, {&p.ffn_gate, &p.ffn_up});
    });
    note(ForwardStep::attn_residual, l, x_);
    note(ForwardStep::ffn_norm, l, x_norm_);
    if (experts_) {  // 8 SiLU-gated FFN: the routed experts'
      experts_->mix(p, x_norm_, batch_size(), projected_);
      note_choices(l);
    } else {  // 8 SiLU-gated FFN
      gated_ffn_up(p);
      for_tokens([&](uint32_t t) { quantize_for(gate_, t, {&p.ffn_down}); });
      matmuls({{&p.ffn_down, &gate_, &projected_}});
    }
    note(ForwardStep::ffn_out, l, projected_);
    for_tokens([&](uint32_t t) { cpu_ref::add_in_place(x_.row(t), projected_.row(t), c_.hidden); });  // 9 residual
    note(ForwardStep::residual, l, x_);
  }

  // Row t of `in` in the forms the products with `weights` read.
  void quantize_for(Activations& in, uint32_t t, std::initializer_list<const PackedMatrix*> weights,
                    bool exact = false) const {
    ActivationForm forms[4];
    size_t count = 0;
    for (const PackedMatrix* weight : weights) forms[count++] = form(*weight, exact);
    in.quantize_row(t, std::span(forms, count), kernels_);
  }

  // Each token's row of a step's values to the recorder, if one listens; from this thread.
  void note(ForwardStep step, uint32_t layer, const Activations& values) {
    if (!recorder_) return;
    const std::span<const float> rows(values.values);
    for (uint32_t t = 0; t < batch_size(); ++t)
      recorder_->record(step, layer, batch_[t].position, rows.subspan(size_t(t) * values.width, values.width));
  }

  // Each token's choice of experts, as cpu-ref records it.
  void note_choices(uint32_t layer) {
    if (!recorder_) return;
    std::vector<float> record(2 * c_.experts.per_token + 1);
    for (uint32_t t = 0; t < batch_size(); ++t)
      recorder_->record(ForwardStep::experts, layer, batch_[t].position,
                        choice_record(experts_->choice(t), experts_->margin(t), record));
  }

  // Q/K norm and RoPE of one token, then its K and V into its session's cache (kv_store.h).
  void prepare_qkv(uint32_t l, const LayerWeights& w, uint32_t t) {
    const uint32_t dim = c_.head_dim();
    const float eps = c_.rms_norm_eps();
    cpu_ref::rms_norm_heads(q_.row(t), c_.q_heads, dim, as_f32(w.attn_q_norm), eps);
    cpu_ref::rms_norm_heads(k_new_.row(t), c_.kv_heads, dim, as_f32(w.attn_k_norm), eps);
    cpu_ref::rotate_heads(q_.row(t), c_.q_heads, dim, rope_.row(t));
    cpu_ref::rotate_heads(k_new_.row(t), c_.kv_heads, dim, rope_.row(t));
    const BatchToken& token = batch_[t];
    store_kv_row(kv_format_, k_new_.row(t), c_.kv_width(), token.kv.k(l, token.position));
    store_kv_row(kv_format_, v_new_.row(t), c_.kv_width(), token.kv.v(l, token.position));
  }

  void attend(uint32_t l) {
    queries_.clear();
    for (uint32_t t = 0; t < batch_size(); ++t) {
      const KvRows& kv = batch_[t].kv;
      queries_.push_back({q_.row(t), attention_.row(t), kv.store.k_row(l, 0, 0), kv.store.v_row(l, 0, 0),
                          kv.table.empty() ? nullptr : kv.table.data(), batch_[t].position + 1});
    }
    attention_runner_.run(queries_);
  }

  struct Product {
    const PackedMatrix* weight;
    Activations* in;
    Activations* out;
    bool exact = false;  // x unrounded even with --bf16-activations: Q, K and V (form())
  };

  // Matrix products over the whole batch, every thread taking its share of each one's rows.
  void matmuls(std::initializer_list<Product> products) {
    pool_.run([&](unsigned index, unsigned count) {
      for (const Product& p : products) {
        const Range rows = split(uint32_t(p.weight->rows), index, count, 16);
        if (rows.begin == rows.end) continue;
        run_rows(p.in->times(*p.weight, form(*p.weight, p.exact), batch_size(), p.out->row_pointers.data()), rows);
      }
    });
  }

  void run_rows(MatmulArgs args, Range rows) const {
    args.row_begin = rows.begin;
    args.row_end = rows.end;
    kernels_.matmul(args);
  }

  // gate and up for each thread's rows, then silu(gate) * up on those same rows.
  void gated_ffn_up(const PackedLayer& w) {
    const uint32_t n = batch_size();
    pool_.run([&](unsigned index, unsigned count) {
      const Range rows = split(c_.ffn, index, count, 16);
      if (rows.begin == rows.end) return;
      run_rows(x_norm_.times(w.ffn_gate, form(w.ffn_gate), n, gate_.row_pointers.data()), rows);
      run_rows(x_norm_.times(w.ffn_up, form(w.ffn_up), n, up_.row_pointers.data()), rows);
      for (uint32_t t = 0; t < n; ++t)
        cpu_ref::silu_mul(gate_.row(t) + rows.begin, up_.row(t) + rows.begin, rows.end - rows.begin,
                          gate_.row(t) + rows.begin);
    });
  }

  // Final norm of the tokens that want logits or their hidden row (straight into its buffer), the
  // former gathered, then the output head into their buffers.
  void output_logits() {
    uint32_t rows = 0;
    for (const BatchToken& token : batch_) {
      if (!token.logits && !token.hidden) continue;
      float* normed = token.hidden ? token.hidden : x_norm_.row(rows);
      cpu_ref::rms_norm(x_.row(uint32_t(&token - batch_.data())), as_f32(mapped_.output_norm), c_.hidden,
                        c_.rms_norm_eps(), normed);
      if (recorder_) recorder_->record(ForwardStep::final_norm, 0, token.position, std::span(normed, c_.hidden));
      if (!token.logits) continue;
      if (token.hidden) std::copy(normed, normed + c_.hidden, x_norm_.row(rows));
      quantize_for(x_norm_, rows, {&packed_->lm_head()}, true);
      logit_rows_[rows++] = token.logits;
    }
    if (rows == 0) return;
    pool_.run([&](unsigned index, unsigned count) {
      const Range range = split(c_.vocab(), index, count, 16);
      if (range.begin == range.end) return;
      const PackedMatrix& head = packed_->lm_head();
      run_rows(x_norm_.times(head, form(head, true), rows, logit_rows_.data()), range);
    });
    if (!recorder_) return;
    for (const BatchToken& token : batch_)
      if (token.logits) recorder_->record(ForwardStep::logits, 0, token.position, std::span(token.logits, c_.vocab()));
  }

  void widen_embedding(uint32_t token, float* out) const { cpu_ref::widen_row(mapped_.token_embedding, token, out); }

  template <class PerToken>
  void for_tokens(const PerToken& per_token) {
    const uint32_t n = batch_size();
    pool_.run([&](unsigned index, unsigned count) {
      const Range range = split(n, index, count);
      for (uint32_t t = range.begin; t < range.end; ++t) per_token(t);
    });
  }

  const Checkpoint& c_;
  std::unique_ptr<ThreadPool> pool_owner_;
  ThreadPool& pool_;
  const ModelWeights& mapped_;             // the artifact's layout: norms and the token embedding are read here
  std::unique_ptr<PackedWeights> packed_;  // the projections and the output head, as the kernels read them
  const Kernels& kernels_;
  const bool int8_activations_;
  const bool bf16_activations_;  // BF16 products round x to BF16 where form() lets them
  const KvFormat kv_format_;
  EvalChecker checker_;
  // Activations of the current pass, allocated once.
  Activations x_, x_norm_, q_, k_new_, v_new_, attention_, projected_, gate_, up_, rope_;
  std::vector<float*> logit_rows_;
  std::unique_ptr<ExpertMixer> experts_;  // a MoE checkpoint's step 8
  AttentionRunner attention_runner_;
  std::vector<AttentionQuery> queries_;
  std::vector<BatchToken> batch_;
  StepRecorder* recorder_ = nullptr;
};

}  // namespace
}  // namespace kipp::cpu

namespace kipp {

Result<std::unique_ptr<BackendModel>> create_cpu_backend(const ModelFile& model, const BackendOptions& options) {
  // 8-bit activations move a MoE router's logits by up to ~2e-2, so they change which experts a
  // token reads in most prompts (docs/MODELS.md, measured on kipp-test/qwen3-moe-tiny); BF16
  // activations by up to ~5e-3 (src/backend/cpu/KERNELS.md).
  if (options.int8_activations && model.checkpoint().is_moe())
    return fail("--int8-activations is not offered for mixture-of-experts checkpoints (", model.checkpoint().id,
                "): 8-bit activations change which experts the router chooses");
  if (options.bf16_activations && model.checkpoint().is_moe())
    return fail("--bf16-activations is not offered for mixture-of-experts checkpoints (", model.checkpoint().id,
                "): BF16 activations change which experts the router chooses");
  unsigned threads = options.threads;
  // --bf16-activations takes the one set with BF16 pair products unless another is named.
  if (options.bf16_activations && options.cpu_isa.empty() && !cpu::runs(cpu::Isa::avx512bf16))
    return fail("--bf16-activations needs AVX512-BF16 (the avx512bf16 kernel set), which this processor lacks");
  KIPP_ASSIGN(const cpu::Isa isa,
              cpu::chosen_isa(options.bf16_activations && options.cpu_isa.empty() ? "avx512bf16" : options.cpu_isa));
  if (options.bf16_activations && !cpu::kernels_for(isa).round_bf16)
    return fail("--bf16-activations needs the avx512bf16 kernel set, not ", cpu::isa_name(isa));
  if (threads == 0) threads = default_cpu_threads();
  if (threads > 256) return fail("--threads ", threads, " is more than 256");
  auto pool = std::make_unique<cpu::ThreadPool>(threads);
  const cpu::Kernels& kernels = cpu::kernels_for(isa);
  KIPP_ASSIGN(std::unique_ptr<cpu::PackedWeights> packed,
              cpu::PackedWeights::pack(model.weights(), *pool, kernels.packing));
  return std::unique_ptr<BackendModel>(new cpu::Model(model, std::move(pool), std::move(packed), kernels, options));
}

}  // namespace kipp
