#include "convert/hf_config.h"

#include <algorithm>

#include "util/json_fields.h"

namespace kipp {
namespace {

constexpr const char* kWhat = "config.json";

Status expect_uint(const json::Json& config, const char* key, uint64_t expected, const Checkpoint& c) {
  KIPP_ASSIGN(uint64_t value, json::get_uint(config, key, kWhat));
  if (value != expected) return fail(kWhat, ": ", key, " is ", value, ", expected ", expected, " for ", c.id);
  return {};
}

Status expect_number(const json::Json& config, const char* key, double expected, const Checkpoint& c) {
  KIPP_ASSIGN(double value, json::get_number(config, key, kWhat));
  if (float(value) != float(expected))
    return fail(kWhat, ": ", key, " is ", value, ", expected ", expected, " for ", c.id);
  return {};
}

// Fields that may be absent but, when present, must hold the family's value.
Status expect_if_present(const json::Json& config, const char* key, const json::Json& expected) {
  auto it = config.find(key);
  if (it == config.end() || *it == expected) return {};
  return fail(kWhat, ": ", key, " is ", it->dump(), ", expected ", expected.dump(), " (Qwen3 family)");
}

Status expect_value(const json::Json& config, const char* key, const json::Json& expected, const Checkpoint& c) {
  auto it = config.find(key);
  if (it == config.end()) return fail(kWhat, ": missing ", key, " (", c.id, " is a mixture of experts)");
  if (*it != expected) return fail(kWhat, ": ", key, " is ", it->dump(), ", expected ", expected.dump(), " for ", c.id);
  return {};
}

// The MoE block as the review admits it: every layer sparse, the top-k renormalised, no shared
// expert. A key the transformers class would default (norm_topk_prob defaults to false there) must
// be present. The Coder config's extra keys (qkv_bias, use_qk_norm, shared_expert_intermediate_size)
// must say what the family does.
Status check_experts(const json::Json& config, const Checkpoint& c) {
  KIPP_TRY(expect_uint(config, "num_experts", c.experts.count, c));
  KIPP_TRY(expect_uint(config, "num_experts_per_tok", c.experts.per_token, c));
  KIPP_TRY(expect_uint(config, "moe_intermediate_size", c.experts.ffn, c));
  KIPP_TRY(expect_value(config, "norm_topk_prob", true, c));
  KIPP_TRY(expect_value(config, "decoder_sparse_step", 1, c));
  KIPP_TRY(expect_value(config, "mlp_only_layers", json::Json::array(), c));
  KIPP_TRY(expect_if_present(config, "shared_expert_intermediate_size", 0));
  KIPP_TRY(expect_if_present(config, "use_qk_norm", true));
  KIPP_TRY(expect_if_present(config, "qkv_bias", false));
  return {};
}

}  // namespace

Status check_hf_config(const std::string& config_text, const Checkpoint& c) {
  KIPP_ASSIGN(json::Json config, json::parse(config_text, kWhat));
  const std::string expected_type = c.is_moe() ? "qwen3_moe" : "qwen3";
  const std::string expected_class = c.is_moe() ? "Qwen3MoeForCausalLM" : "Qwen3ForCausalLM";
  KIPP_ASSIGN(std::string model_type, json::get_string(config, "model_type", kWhat));
  if (model_type != expected_type)
    return fail(kWhat, ": model_type is \"", model_type, "\", expected \"", expected_type, "\" for ", c.id);
  if (auto it = config.find("architectures"); it != config.end()) {
    if (!it->is_array() || std::find(it->begin(), it->end(), expected_class) == it->end())
      return fail(kWhat, ": architectures is ", it->dump(), ", expected [\"", expected_class, "\"]");
  }
  if (c.is_moe()) KIPP_TRY(check_experts(config, c));
  KIPP_TRY(expect_uint(config, "hidden_size", c.hidden, c));
  KIPP_TRY(expect_uint(config, "intermediate_size", c.ffn, c));
  KIPP_TRY(expect_uint(config, "num_hidden_layers", c.layers, c));
  KIPP_TRY(expect_uint(config, "num_attention_heads", c.q_heads, c));
  KIPP_TRY(expect_uint(config, "num_key_value_heads", c.kv_heads, c));
  KIPP_TRY(expect_uint(config, "head_dim", c.head_dim(), c));
  KIPP_TRY(expect_uint(config, "vocab_size", c.vocab(), c));
  KIPP_TRY(expect_uint(config, "max_position_embeddings", c.context, c));
  KIPP_TRY(expect_number(config, "rope_theta", c.rope_theta, c));
  KIPP_TRY(expect_number(config, "rms_norm_eps", c.rms_norm_eps(), c));
  KIPP_ASSIGN(bool tied, json::get_bool(config, "tie_word_embeddings", kWhat));
  if (tied != c.tied) return fail(kWhat, ": tie_word_embeddings is ", tied, ", expected ", c.tied, " for ", c.id);
  KIPP_TRY(expect_if_present(config, "hidden_act", "silu"));
  KIPP_TRY(expect_if_present(config, "attention_bias", false));
  KIPP_TRY(expect_if_present(config, "rope_scaling", nullptr));
  KIPP_TRY(expect_if_present(config, "use_sliding_window", false));
  KIPP_TRY(expect_if_present(config, "torch_dtype", "bfloat16"));

  return {};
}

}  // namespace kipp
