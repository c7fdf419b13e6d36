#include "model/artifact_layout.h"

namespace kipp {

std::string_view gguf_architecture(const Checkpoint& checkpoint) { return checkpoint.is_moe() ? "qwen3moe" : "qwen3"; }

std::string architecture_key(const Checkpoint& checkpoint, std::string_view qwen3_key) {
  constexpr std::string_view dense_prefix = "qwen3.";
  if (qwen3_key.substr(0, dense_prefix.size()) != dense_prefix) return std::string(qwen3_key);
  return std::string(gguf_architecture(checkpoint)) + "." + std::string(qwen3_key.substr(dense_prefix.size()));
}

std::string_view quant_scheme_name(QuantScheme scheme) {
  switch (scheme) {
    case QuantScheme::bf16: return "bf16";
    case QuantScheme::q8_0: return "q8_0";
    case QuantScheme::affine4_gs32: return "affine4_gs32";
  }
  return "unknown";
}

std::optional<QuantScheme> parse_quant_scheme(std::string_view name) {
  for (QuantScheme scheme : {QuantScheme::bf16, QuantScheme::q8_0, QuantScheme::affine4_gs32})
    if (quant_scheme_name(scheme) == name) return scheme;
  return std::nullopt;
}

uint32_t llama_file_type(QuantScheme scheme) {
  switch (scheme) {
    case QuantScheme::bf16: return gguf::kFileTypeMostlyBF16;
    case QuantScheme::q8_0: return gguf::kFileTypeMostlyQ8_0;
    case QuantScheme::affine4_gs32: return gguf::kFileTypeMostlyQ4_1;
  }
  return 0;
}

std::string_view head_scheme_name(HeadScheme head) { return head == HeadScheme::q8_0 ? "q8_0" : "bf16"; }

std::optional<HeadScheme> parse_head_scheme(std::string_view name) {
  for (HeadScheme head : {HeadScheme::bf16, HeadScheme::q8_0})
    if (head_scheme_name(head) == name) return head;
  return std::nullopt;
}

bool ExpectedTensor::is_projection() const {
  switch (role) {
    case TensorRole::attn_q:
    case TensorRole::attn_k:
    case TensorRole::attn_v:
    case TensorRole::attn_output:
    case TensorRole::ffn_gate:
    case TensorRole::ffn_up:
    case TensorRole::ffn_down:
    case TensorRole::ffn_gate_exps:
    case TensorRole::ffn_up_exps:
    case TensorRole::ffn_down_exps: return true;
    default: return false;
  }
}

std::string ExpectedTensor::hf_expert_name(uint64_t expert) const {
  return hf_name + "." + std::to_string(expert) + "." + hf_expert_suffix;
}

std::vector<uint64_t> ExpectedTensor::gguf_dims() const {
  if (experts) return {cols, rows, experts};
  return is_vector() ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{cols, rows};
}

std::vector<uint64_t> ExpectedTensor::hf_shape() const {
  return is_vector() ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{rows, cols};
}

std::vector<ExpectedTensor> expected_tensors(const Checkpoint& c) {
  const uint64_t hidden = c.hidden, ffn = c.ffn, q = c.attention_width(), kv = c.kv_width(), head = c.head_dim();
  const std::string prefix(c.source_prefix());
  std::vector<ExpectedTensor> out;
  out.push_back(
      {"token_embd.weight", prefix + "embed_tokens.weight", TensorRole::token_embedding, -1, c.vocab(), hidden});
  out.back().is_head = c.has_head() && c.tied;
  for (int l = 0; l < int(c.layers); ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    const std::string hf = prefix + "layers." + std::to_string(l) + ".";
    auto add = [&](const char* gguf, const char* hf_suffix, TensorRole role, uint64_t rows, uint64_t cols) {
      out.push_back({blk + gguf + ".weight", hf + hf_suffix + ".weight", role, l, rows, cols});
    };
    add("attn_norm", "input_layernorm", TensorRole::attn_norm, 1, hidden);
    add("attn_q", "self_attn.q_proj", TensorRole::attn_q, q, hidden);
    add("attn_k", "self_attn.k_proj", TensorRole::attn_k, kv, hidden);
    add("attn_v", "self_attn.v_proj", TensorRole::attn_v, kv, hidden);
    add("attn_q_norm", "self_attn.q_norm", TensorRole::attn_q_norm, 1, head);
    add("attn_k_norm", "self_attn.k_norm", TensorRole::attn_k_norm, 1, head);
    add("attn_output", "self_attn.o_proj", TensorRole::attn_output, hidden, q);
    add("ffn_norm", "post_attention_layernorm", TensorRole::ffn_norm, 1, hidden);
    if (!c.is_moe()) {
      add("ffn_gate", "mlp.gate_proj", TensorRole::ffn_gate, ffn, hidden);
      add("ffn_up", "mlp.up_proj", TensorRole::ffn_up, ffn, hidden);
      add("ffn_down", "mlp.down_proj", TensorRole::ffn_down, hidden, ffn);
      continue;
    }
    const uint64_t experts = c.experts.count, expert_ffn = c.experts.ffn;
    add("ffn_gate_inp", "mlp.gate", TensorRole::ffn_gate_inp, experts, hidden);
    auto add_stack = [&](const char* gguf, const char* source, TensorRole role, uint64_t rows, uint64_t cols) {
      out.push_back({blk + gguf + ".weight", hf + "mlp.experts", role, l, rows, cols});
      out.back().experts = experts;
      out.back().hf_expert_suffix = std::string(source) + ".weight";
    };
    add_stack("ffn_gate_exps", "gate_proj", TensorRole::ffn_gate_exps, expert_ffn, hidden);
    add_stack("ffn_up_exps", "up_proj", TensorRole::ffn_up_exps, expert_ffn, hidden);
    add_stack("ffn_down_exps", "down_proj", TensorRole::ffn_down_exps, hidden, expert_ffn);
  }
  out.push_back({"output_norm.weight", prefix + "norm.weight", TensorRole::output_norm, -1, 1, hidden});
  if (c.has_head() && !c.tied) {
    out.push_back({"output.weight", "lm_head.weight", TensorRole::output, -1, c.vocab(), hidden});
    out.back().is_head = true;
  }
  return out;
}

std::vector<ExpectedTensor> unstacked(const std::vector<ExpectedTensor>& tensors) {
  std::vector<ExpectedTensor> out;
  for (const ExpectedTensor& tensor : tensors) {
    if (!tensor.experts) {
      out.push_back(tensor);
      continue;
    }
    for (uint64_t e = 0; e < tensor.experts; ++e) {
      out.push_back(tensor);
      out.back().hf_name = tensor.hf_expert_name(e);
      out.back().experts = 0;
      out.back().hf_expert_suffix.clear();
    }
  }
  return out;
}

gguf::TensorType expected_tensor_type(const ExpectedTensor& tensor, QuantScheme scheme, HeadScheme head) {
  if (tensor.is_vector() || tensor.role == TensorRole::ffn_gate_inp) return gguf::TensorType::f32;
  if (tensor.is_head && head == HeadScheme::q8_0) return gguf::TensorType::q8_0;
  if (!tensor.is_projection()) return gguf::TensorType::bf16;
  switch (scheme) {
    case QuantScheme::bf16: return gguf::TensorType::bf16;
    case QuantScheme::q8_0: return gguf::TensorType::q8_0;
    case QuantScheme::affine4_gs32: return gguf::TensorType::q4_1;
  }
  return gguf::TensorType::bf16;
}

}  // namespace kipp
