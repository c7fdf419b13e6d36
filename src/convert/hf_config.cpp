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
  return fail(kWhat, ": ", key, " is ", it->dump(), ", expected ", expected.dump(), " (Qwen3 dense family)");
}

}  // namespace

Status check_hf_config(const std::string& config_text, const Checkpoint& c) {
  KIPP_ASSIGN(json::Json config, json::parse(config_text, kWhat));
  KIPP_ASSIGN(std::string model_type, json::get_string(config, "model_type", kWhat));
  if (model_type != "qwen3") return fail(kWhat, ": model_type is \"", model_type, "\", expected \"qwen3\"");
  if (auto it = config.find("architectures"); it != config.end()) {
    if (!it->is_array() || std::find(it->begin(), it->end(), "Qwen3ForCausalLM") == it->end())
      return fail(kWhat, ": architectures is ", it->dump(), ", expected [\"Qwen3ForCausalLM\"]");
  }
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
