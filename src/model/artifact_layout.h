// What a Kipp artifact holds for a registry entry: the metadata keys, the quant schemes, and
// the exact tensor list with names, shapes and types. The converter writes from this list and
// the loader checks against it, so the two can never disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_format.h"
#include "registry/registry.h"

namespace kipp {

// Metadata keys. Standard GGUF/llama.cpp keys where they exist; Kipp's own under kipp.*.
namespace keys {
inline constexpr std::string_view architecture = "general.architecture";
inline constexpr std::string_view name = "general.name";
inline constexpr std::string_view alignment = "general.alignment";
inline constexpr std::string_view file_type = "general.file_type";
inline constexpr std::string_view quantization_version = "general.quantization_version";
inline constexpr std::string_view license = "general.license";
inline constexpr std::string_view context_length = "qwen3.context_length";
inline constexpr std::string_view embedding_length = "qwen3.embedding_length";
inline constexpr std::string_view block_count = "qwen3.block_count";
inline constexpr std::string_view feed_forward_length = "qwen3.feed_forward_length";
inline constexpr std::string_view head_count = "qwen3.attention.head_count";
inline constexpr std::string_view head_count_kv = "qwen3.attention.head_count_kv";
inline constexpr std::string_view key_length = "qwen3.attention.key_length";
inline constexpr std::string_view value_length = "qwen3.attention.value_length";
inline constexpr std::string_view rms_epsilon = "qwen3.attention.layer_norm_rms_epsilon";
inline constexpr std::string_view rope_freq_base = "qwen3.rope.freq_base";
inline constexpr std::string_view rope_dimension_count = "qwen3.rope.dimension_count";
// An embedding artifact's pooling, in llama.cpp's enum (3: the last token), which its
// `--embedding` reads, with add_eos_token below.
inline constexpr std::string_view pooling_type = "qwen3.pooling_type";
inline constexpr uint32_t kPoolingLast = 3;
// The MoE hyperparameters, in llama.cpp's qwen3moe spelling (it writes no key for the routing,
// which is fixed for the architecture: softmax, top-k renormalised).
inline constexpr std::string_view expert_count = "qwen3moe.expert_count";
inline constexpr std::string_view expert_used_count = "qwen3moe.expert_used_count";
inline constexpr std::string_view expert_feed_forward_length = "qwen3moe.expert_feed_forward_length";
inline constexpr std::string_view tokenizer_model = "tokenizer.ggml.model";
inline constexpr std::string_view tokenizer_pre = "tokenizer.ggml.pre";
inline constexpr std::string_view tokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view token_type = "tokenizer.ggml.token_type";
inline constexpr std::string_view merges = "tokenizer.ggml.merges";
inline constexpr std::string_view bos_token_id = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view eos_token_id = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view padding_token_id = "tokenizer.ggml.padding_token_id";
inline constexpr std::string_view add_bos_token = "tokenizer.ggml.add_bos_token";
inline constexpr std::string_view add_eos_token = "tokenizer.ggml.add_eos_token";
inline constexpr std::string_view chat_template = "tokenizer.chat_template";
inline constexpr std::string_view kipp_format_version = "kipp.format_version";
inline constexpr std::string_view kipp_checkpoint = "kipp.checkpoint";
inline constexpr std::string_view kipp_repository = "kipp.source.repository";
inline constexpr std::string_view kipp_revision = "kipp.source.revision";
inline constexpr std::string_view kipp_source_files = "kipp.source.files";
inline constexpr std::string_view kipp_source_sha256 = "kipp.source.sha256";
inline constexpr std::string_view kipp_quant_scheme = "kipp.quant.scheme";
inline constexpr std::string_view kipp_quant_head = "kipp.quant.head";  // written only when not bf16
inline constexpr std::string_view kipp_converter = "kipp.converter.version";
}  // namespace keys

// llama.cpp's name of the checkpoint's architecture: general.architecture, and the prefix of
// its hyperparameter keys.
std::string_view gguf_architecture(const Checkpoint& checkpoint);
// A hyperparameter key above (spelled for qwen3) as the checkpoint's architecture spells it.
std::string architecture_key(const Checkpoint& checkpoint, std::string_view qwen3_key);

inline constexpr uint32_t kArtifactFormatVersion = 1;
inline constexpr std::string_view kTokenizerModel = "gpt2";
inline constexpr std::string_view kTokenizerPre = "qwen2";

enum class QuantScheme { bf16, q8_0, affine4_gs32 };
std::string_view quant_scheme_name(QuantScheme scheme);
std::optional<QuantScheme> parse_quant_scheme(std::string_view name);
uint32_t llama_file_type(QuantScheme scheme);

// How the output head is stored (the tied embedding, or the untied output.weight): BF16, or, with
// `--head q8_0`, ggml Q8_0 (recorded as kipp.quant.head; llama.cpp reads either).
enum class HeadScheme { bf16, q8_0 };
std::string_view head_scheme_name(HeadScheme head);
std::optional<HeadScheme> parse_head_scheme(std::string_view name);

enum class TensorRole {
  token_embedding,
  attn_norm,
  attn_q,
  attn_k,
  attn_v,
  attn_output,
  attn_q_norm,
  attn_k_norm,
  ffn_norm,
  ffn_gate,
  ffn_up,
  ffn_down,
  ffn_gate_inp,   // the MoE router
  ffn_gate_exps,  // the experts' gate projections, stacked
  ffn_up_exps,
  ffn_down_exps,
  output_norm,
  output,
};

struct ExpectedTensor {
  std::string gguf_name;  // llama.cpp name, e.g. blk.3.ffn_up.weight
  // safetensors name, e.g. model.layers.3.mlp.up_proj.weight; for a stack of experts the common
  // prefix of its sources, model.layers.3.mlp.experts (see hf_expert_name)
  std::string hf_name;
  TensorRole role;
  int layer;      // -1 outside the layer stack
  uint64_t rows;  // output features (1 for a norm vector)
  uint64_t cols;  // input features: the contiguous dimension
  bool is_vector() const { return rows == 1; }
  bool is_head = false;  // the output head: the embedding when tied, output.weight when untied
  // A stack: `experts` matrices of [rows, cols], expert e's stored at e * rows * cols. The hub
  // publishes each as its own tensor, hf_expert_name(e). 0: one matrix.
  uint64_t experts = 0;
  std::string hf_expert_suffix = {};  // gate_proj.weight, up_proj.weight or down_proj.weight
  bool is_projection() const;         // a per-layer matrix (or stack) a scheme may quantize
  uint64_t elements() const { return rows * cols * (experts ? experts : 1); }
  std::string hf_expert_name(uint64_t expert) const;  // model.layers.3.mlp.experts.17.up_proj.weight
  std::vector<uint64_t> gguf_dims() const;            // {cols}, {cols, rows} or {cols, rows, experts}
  std::vector<uint64_t> hf_shape() const;             // {cols} or {rows, cols}: one source tensor's
};

// Every tensor of the entry's artifact, in the order the converter writes them.
std::vector<ExpectedTensor> expected_tensors(const Checkpoint& checkpoint);

// The tensors as the safetensors hold them: each stack replaced by its experts' matrices in
// expert order (each keeps the stack's gguf_name and role, with its own hf_name and experts 0).
std::vector<ExpectedTensor> unstacked(const std::vector<ExpectedTensor>& tensors);

// Storage type of a tensor under a scheme: norms and the router F32 (exact), projections and
// expert stacks per scheme, the head per head scheme, an untied embedding BF16.
gguf::TensorType expected_tensor_type(const ExpectedTensor& tensor, QuantScheme scheme,
                                      HeadScheme head = HeadScheme::bf16);

}  // namespace kipp
