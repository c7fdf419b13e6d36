#include "model/artifact_layout.h"

namespace kipp {

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
    case TensorRole::ffn_down: return true;
    default: return false;
  }
}

std::vector<uint64_t> ExpectedTensor::gguf_dims() const {
  return is_vector() ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{cols, rows};
}

std::vector<uint64_t> ExpectedTensor::hf_shape() const {
  return is_vector() ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{rows, cols};
}

std::vector<ExpectedTensor> expected_tensors(const Checkpoint& c) {
  const uint64_t hidden = c.hidden, ffn = c.ffn, q = c.attention_width(), kv = c.kv_width(), head = c.head_dim();
  std::vector<ExpectedTensor> out;
  out.push_back({"token_embd.weight", "model.embed_tokens.weight", TensorRole::token_embedding, -1, c.vocab(), hidden});
  out.back().is_head = c.tied;
  for (int l = 0; l < int(c.layers); ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    const std::string hf = "model.layers." + std::to_string(l) + ".";
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
    add("ffn_gate", "mlp.gate_proj", TensorRole::ffn_gate, ffn, hidden);
    add("ffn_up", "mlp.up_proj", TensorRole::ffn_up, ffn, hidden);
    add("ffn_down", "mlp.down_proj", TensorRole::ffn_down, hidden, ffn);
  }
  out.push_back({"output_norm.weight", "model.norm.weight", TensorRole::output_norm, -1, 1, hidden});
  if (!c.tied) {
    out.push_back({"output.weight", "lm_head.weight", TensorRole::output, -1, c.vocab(), hidden});
    out.back().is_head = true;
  }
  return out;
}

gguf::TensorType expected_tensor_type(const ExpectedTensor& tensor, QuantScheme scheme, HeadScheme head) {
  if (tensor.is_vector()) return gguf::TensorType::f32;
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
