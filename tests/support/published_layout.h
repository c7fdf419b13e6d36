// What the hub really serves for each pinned checkpoint, as ../shared/CHECKPOINTS-AS-PUBLISHED.md
// records it: which form each small file takes, which files exist, how the weights are split
// into shards, and what the index states. The fixture generator lays out checkpoints from these
// facts, so that tests run on the files users download, not on what our code expects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/artifact_layout.h"
#include "registry/registry.h"

namespace kipp::testing {

// config.json is json.dumps(indent=2, sort_keys=True); the Base files add a final newline. The
// MoE files (Qwen3MoeForCausalLM, 34 keys) differ in how rope_theta is written: a float in the
// April 2025 releases (1000000.0), an integer in the 2507 and Coder files, which also name
// transformers 4.52.3.
// The embedding and reranker files (transformers 4.51.2 or 4.51.3's writer: a final newline) differ
// in eos_token_id, which is 151645 in Qwen3-Embedding-4B and the rerankers, 151643 in
// Qwen3-Embedding-0.6B and -8B.
enum class ConfigForm {
  base,
  post_trained,
  moe_base,
  moe_april,
  moe_2507,
  moe_coder,
  embedding,     // Qwen3-Embedding-0.6B: eos 151643, transformers 4.51.3
  embedding_4b,  // eos 151645, transformers 4.51.2
  embedding_8b,  // eos 151643, transformers 4.51.2
  reranker,      // eos 151645, transformers 4.51.3
};
// The published generation_config.json files: the 30B-A3B-Instruct-2507 file is the
// 4B-Instruct-2507 text with a final newline; Qwen3-Coder's has its own keys and order.
// The embedding repositories publish none.
enum class GenerationConfigForm { base, post_trained, instruct_2507, instruct_2507_newline, coder, none };
// The four tokenizer_config.json files whose bytes are known (each with its own chat template).
enum class TokenizerConfigForm { base, post_trained, instruct_2507, thinking_2507 };
// tokenizer.json: the Qwen2.5 file of the Base repositories (22 added tokens, merges as "a b"
// strings), the post-trained Qwen3 file (26 added tokens, merges as pairs; the rerankers ship it
// too), or the embedding repositories' file: the Qwen3 one whose post-processor appends
// <|endoftext|> (a TemplateProcessing), with the added tokens the checkpoint has rows for.
enum class TokenizerForm { qwen2_5, qwen3, qwen3_embedding };
// merges.txt: the Qwen3 file opens with "#version: 0.2"; the Qwen2.5 file (Instruct-2507) does not.
enum class MergesForm { qwen2_5, qwen3 };

struct PublishedLayout {
  std::string_view id;  // the registry id of the published checkpoint
  ConfigForm config;
  GenerationConfigForm generation_config;
  TokenizerConfigForm tokenizer_config;
  TokenizerForm tokenizer;
  MergesForm merges;
  int64_t index_total_size_excess;  // the index's metadata.total_size minus the tensor bytes
  bool has_license;
  uint64_t readme_bytes;  // the published README.md's size; 0 where unknown
  // What of this layout is not established by the fact sheet and was filled in from siblings.
  std::string_view inferred;
  // transformers' max_shard_size when it saved the weights: "4GB" for the generative checkpoints,
  // "5GB" in most embedding and reranker repositories (their first shards pass 4 GB).
  uint64_t max_shard_bytes = 4'000'000'000;
  // The sentence-transformers files (modules.json, 1_Pooling/config.json,
  // config_sentence_transformers.json) of an embedding repository.
  bool sentence_transformers = false;
};

std::vector<const PublishedLayout*> all_published_layouts();
const PublishedLayout* find_published_layout(std::string_view id);
// The published checkpoint whose files a fixture of `entry` replicates: itself for a pinned
// checkpoint; for a kipp-test/ entry, the published sibling of the same variant and tying.
const PublishedLayout& default_layout_for(const Checkpoint& entry);

// The published checkpoint of a layout (its registry entry).
const Checkpoint& layout_checkpoint(const PublishedLayout& layout);
// The tokenizer.json of these layouts is stored in git-LFS on the hub (the post-trained repos).
bool tokenizer_in_lfs(const PublishedLayout& layout);

// The SHA-256 of the chat template each tokenizer_config.json form embeds (fact sheet §7).
std::string_view chat_template_sha256(TokenizerConfigForm form);

// The safetensors tensors of a checkpoint in the order transformers' state_dict holds them
// (embedding; per layer q, k, v, o, q_norm, k_norm, gate, up, down, the two layer norms; the final
// norm; lm_head when untied or when `layout` stores a tied head).
std::vector<ExpectedTensor> source_tensors(const Checkpoint& dims, const PublishedLayout& layout);

struct PlannedShard {
  std::string file_name;  // model.safetensors, or model-0000N-of-0000M.safetensors
  std::vector<ExpectedTensor> tensors;
  uint64_t file_bytes = 0;  // 8 + header + data, as the safetensors writer lays it out
};
// How the weights split into files. At the published checkpoint's own dimensions this is the
// hub's split: shards filled in state_dict order up to 4 GB (10^9 bytes) each, a single
// model.safetensors when everything fits in one. At other dimensions (the tiny test entries) the
// replica keeps the published shard count and the published last shard's tensor count, and
// spreads the other tensors evenly by count over the remaining shards.
std::vector<PlannedShard> plan_shards(const Checkpoint& dims, const PublishedLayout& layout);

// A shard's tensors in the order the safetensors writer stores them: sorted by name (all BF16).
std::vector<const ExpectedTensor*> in_file_order(const std::vector<ExpectedTensor>& tensors);

// The safetensors header JSON of a shard: "__metadata__" {"format": "pt"} first, tensors sorted
// by name with contiguous data offsets in that order, compact, padded with spaces to 8 bytes.
std::string safetensors_header(const std::vector<ExpectedTensor>& tensors);

}  // namespace kipp::testing
