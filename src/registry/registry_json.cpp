#include "registry/registry_json.h"

#include <nlohmann/json.hpp>

#include "registry/registry.h"

namespace kipp {

std::string registry_json(int indent) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const Checkpoint& c : all_checkpoints()) {
    nlohmann::ordered_json e;
    e["id"] = c.id;
    e["repository"] = c.repository;
    e["revision"] = c.revision;
    e["variant"] = variant_name(c.variant);
    e["synthetic"] = c.synthetic;
    e["license"] = "Apache-2.0";
    e["architecture"] = architecture_name(c.architecture);
    e["role"] = role_name(c.role);
    e["layers"] = c.layers;
    e["hidden"] = c.hidden;
    e["ffn"] = c.ffn;
    e["q_heads"] = c.q_heads;
    e["kv_heads"] = c.kv_heads;
    e["head_dim"] = c.head_dim();
    e["attention_width"] = c.attention_width();
    e["vocab"] = c.vocab();
    e["context"] = c.context;
    e["rope_theta"] = static_cast<double>(c.rope_theta);
    e["rms_norm_eps"] = 1e-6;
    e["tied"] = c.tied;
    e["has_head"] = c.has_head();
    if (c.role == Role::embed) {
      e["embedding"] = {{"pooling", "last_token"},
                        {"appends_endoftext", c.appends_endoftext()},
                        {"normalize", "l2"},
                        {"matryoshka_dims", {family::matryoshka_min_dims, c.hidden}}};
    }
    if (c.role == Role::rerank) e["rerank"] = {{"token_yes", family::token_yes}, {"token_no", family::token_no}};
    e["eos_id"] = c.eos_id();
    e["stop_ids"] = c.stop_ids();
    e["stores_tied_head"] = c.stores_tied_head;
    if (c.is_moe()) {
      // The block's fixed facts beside the per-entry ones (../shared/REVIEW-QWEN3-MOE.md, point 1).
      e["moe"] = {{"num_experts", c.experts.count},
                  {"num_experts_per_tok", c.experts.per_token},
                  {"moe_intermediate_size", c.experts.ffn},
                  {"norm_topk_prob", true},
                  {"decoder_sparse_step", 1},
                  {"mlp_only_layers", nlohmann::ordered_json::array()}};
    }
    e["tensor_count"] = c.tensor_count();
    e["source_tensor_count"] = c.source_tensor_count();
    e["parameter_count"] = c.parameter_count();
    e["kv_bytes_per_token"] = c.kv_bytes_per_token();
    entries.push_back(std::move(e));
  }
  nlohmann::ordered_json doc;
  doc["checkpoints"] = std::move(entries);
  return doc.dump(indent);
}

}  // namespace kipp
