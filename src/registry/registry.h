// The compiled-in registry of supported checkpoints: the only copy of these facts.
// Tooling reads it through `kipp registry --json`. A checkpoint not listed here is rejected.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kipp {

enum class Variant {
  base,           // no chat template use; stops on <|endoftext|>
  instruct,       // hybrid thinking (enable_thinking switch)
  instruct_2507,  // never thinks
  thinking_2507,  // always opens <think>
  coder,          // Qwen3-Coder: never thinks; calls tools in its own XML form
};

std::string_view variant_name(Variant variant);

// What sits in step 8 of every layer: one SwiGLU MLP (dense), or 128 expert MLPs of which a
// router picks 8 per token (moe; ../shared/REVIEW-QWEN3-MOE.md).
enum class Architecture { dense, moe };

std::string_view architecture_name(Architecture architecture);

// What a checkpoint is served for (../shared/REVIEW-QWEN3-MOE.md): text (generate), one vector per
// input (embed: Qwen3-Embedding), or one relevance score per query and document (rerank:
// Qwen3-Reranker). Decided by the registry, never by config.json, which says Qwen3ForCausalLM for
// all three.
enum class Role { generate, embed, rerank };

std::string_view role_name(Role role);

// The experts of a MoE checkpoint. The rest of the block is fixed by the family and checked in
// config.json: every layer is sparse (decoder_sparse_step 1, mlp_only_layers empty), the top-k
// probabilities are renormalised (norm_topk_prob true), and there is no shared expert.
struct Experts {
  uint32_t count = 0;      // num_experts
  uint32_t per_token = 0;  // num_experts_per_tok
  uint32_t ffn = 0;        // moe_intermediate_size: each expert's SwiGLU width
};

// Family invariants shared by every checkpoint (docs/MODELS.md, ../shared/REGISTRY.md).
namespace family {
inline constexpr uint32_t head_dim = 128;
inline constexpr uint32_t vocab = 151936;
inline constexpr float rms_norm_eps = 1e-6f;
inline constexpr uint32_t token_endoftext = 151643;
inline constexpr uint32_t token_im_start = 151644;
inline constexpr uint32_t token_im_end = 151645;
// The reranker's answer tokens: its score is sigmoid(logit "yes" - logit "no") at the last position
// (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §7).
inline constexpr uint32_t token_yes = 9693;
inline constexpr uint32_t token_no = 2152;
// The smallest Matryoshka cut of an embedding the Qwen3-Embedding cards offer (32 up to the hidden
// width).
inline constexpr uint32_t matryoshka_min_dims = 32;
}  // namespace family

struct Checkpoint {
  std::string_view id;          // "qwen3-0.6b"
  std::string_view repository;  // "Qwen/Qwen3-0.6B"
  std::string_view revision;    // 40-hex commit, immutable
  Variant variant;
  uint32_t layers;
  uint32_t hidden;
  uint32_t ffn;  // intermediate_size: the dense MLP's width (in a MoE config, a key no layer uses)
  uint32_t q_heads;
  uint32_t kv_heads;  // 8 in every dense checkpoint, 4 in the MoE ones (../shared/REVIEW-QWEN3-MOE.md)
  uint32_t context;
  float rope_theta;
  bool tied;  // lm_head is the token embedding
  // The published safetensors also carry lm_head.weight although the checkpoint is tied (Qwen3-0.6B
  // and Qwen3-1.7B). Transformers ignores it, and so does the converter: it is not in the artifact.
  bool stores_tied_head;
  bool synthetic;  // a kipp-test/ entry: generated locally, never offered by `kipp pull`
  Architecture architecture = Architecture::dense;
  Experts experts = {};  // all zero in a dense checkpoint
  Role role = Role::generate;
  // Rows of the token embedding (and of the head), which is also the artifact's vocabulary: 151936
  // in the generative checkpoints; the embedding and reranker checkpoints publish their
  // tokenizer's own count (151665 or 151669).
  uint32_t vocab_rows = family::vocab;

  bool is_moe() const { return architecture == Architecture::moe; }
  // An embedding checkpoint is saved from transformers' Qwen3Model: no output head, and tensor
  // names without the "model." prefix. Its tokenizer.json's post-processor appends <|endoftext|>
  // to every input, which is the token whose hidden state becomes the vector
  // (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §6).
  bool has_head() const { return role != Role::embed; }
  bool appends_endoftext() const { return role == Role::embed; }
  std::string_view source_prefix() const { return role == Role::embed ? "" : "model."; }

  uint32_t head_dim() const { return family::head_dim; }
  uint32_t vocab() const { return vocab_rows; }
  float rms_norm_eps() const { return family::rms_norm_eps; }
  // The attention width is q_heads * head_dim; it is NOT the hidden width in general.
  uint32_t attention_width() const { return q_heads * family::head_dim; }
  uint32_t kv_width() const { return kv_heads * family::head_dim; }
  // eos as the checkpoint's tokenizer_config declares it.
  uint32_t eos_id() const { return variant == Variant::base ? family::token_endoftext : family::token_im_end; }
  std::vector<uint32_t> stop_ids() const;
  // Tensors in the artifact: 2 + 11 per layer (12 in a MoE layer: the router and three stacks of
  // experts in place of three projections), + lm_head when untied (and not an embedding checkpoint).
  uint32_t tensor_count() const { return 2 + (is_moe() ? 12 : 11) * layers + (has_head() && !tied ? 1 : 0); }
  // Tensors in the published safetensors: the artifact's, each stack of experts as one tensor per
  // expert, + a stored head of a tied checkpoint.
  uint32_t source_tensor_count() const {
    const uint32_t unstacked = is_moe() ? 3 * (experts.count - 1) * layers : 0;
    return tensor_count() + unstacked + (tied && stores_tied_head ? 1 : 0);
  }
  uint64_t kv_bytes_per_token() const { return uint64_t{layers} * 2 * kv_heads * family::head_dim * 2; }
  uint64_t parameter_count() const;
};

// The refusal a command or endpoint (`what`: "kipp generate", "/v1/embeddings") that serves
// checkpoints of role `wanted` gives one of another role, naming both roles and where the
// checkpoint is served; empty when the roles agree.
std::string role_refusal(const Checkpoint& checkpoint, Role wanted, std::string_view what);

std::span<const Checkpoint> all_checkpoints();
const Checkpoint* find_checkpoint(std::string_view id);
const Checkpoint* find_checkpoint_by_source(std::string_view repository, std::string_view revision);

}  // namespace kipp
