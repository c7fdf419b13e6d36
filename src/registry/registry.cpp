#include "registry/registry.h"

#include <string>

namespace kipp {
namespace {

// Facts from ../shared/REGISTRY.md (the pinned Hugging Face revisions) and docs/MODELS.md
// ("Synthetic test checkpoints", the test shapes). The kipp-test revisions are fixed tags of Kipp's own generator.
constexpr Checkpoint kCheckpoints[] = {
    // id, repository, revision, variant, layers, hidden, ffn, q_heads, kv_heads, context, theta, tied,
    // stores_tied_head, synthetic
    {"qwen3-0.6b-base", "Qwen/Qwen3-0.6B-Base", "da87bfb608c14b7cf20ba1ce41287e8de496c0cd", Variant::base, 28, 1024,
     3072, 16, 8, 32768, 1e6f, true, false, false},
    {"qwen3-0.6b", "Qwen/Qwen3-0.6B", "c1899de289a04d12100db370d81485cdf75e47ca", Variant::instruct, 28, 1024, 3072, 16,
     8, 40960, 1e6f, true, true, false},
    {"qwen3-1.7b-base", "Qwen/Qwen3-1.7B-Base", "ea980cb0a6c2ae4b936e82123acc929f1cec04c1", Variant::base, 28, 2048,
     6144, 16, 8, 32768, 1e6f, true, false, false},
    {"qwen3-1.7b", "Qwen/Qwen3-1.7B", "70d244cc86ccca08cf5af4e1e306ecf908b1ad5e", Variant::instruct, 28, 2048, 6144, 16,
     8, 40960, 1e6f, true, true, false},
    {"qwen3-4b-base", "Qwen/Qwen3-4B-Base", "906bfd4b4dc7f14ee4320094d8b41684abff8539", Variant::base, 36, 2560, 9728,
     32, 8, 32768, 1e6f, true, false, false},
    {"qwen3-4b", "Qwen/Qwen3-4B", "1cfa9a7208912126459214e8b04321603b3df60c", Variant::instruct, 36, 2560, 9728, 32, 8,
     40960, 1e6f, true, false, false},
    {"qwen3-4b-instruct-2507", "Qwen/Qwen3-4B-Instruct-2507", "cdbee75f17c01a7cc42f958dc650907174af0554",
     Variant::instruct_2507, 36, 2560, 9728, 32, 8, 262144, 5e6f, true, false, false},
    {"qwen3-4b-thinking-2507", "Qwen/Qwen3-4B-Thinking-2507", "768f209d9ea81521153ed38c47d515654e938aea",
     Variant::thinking_2507, 36, 2560, 9728, 32, 8, 262144, 5e6f, true, false, false},
    {"qwen3-8b-base", "Qwen/Qwen3-8B-Base", "49e3418fbbbca6ecbdf9608b4d22e5a407081db4", Variant::base, 36, 4096, 12288,
     32, 8, 32768, 1e6f, false, false, false},
    {"qwen3-8b", "Qwen/Qwen3-8B", "b968826d9c46dd6066d109eabc6255188de91218", Variant::instruct, 36, 4096, 12288, 32, 8,
     40960, 1e6f, false, false, false},
    {"qwen3-14b-base", "Qwen/Qwen3-14B-Base", "0b0bd3732e2c374d483664439ea334928b65f304", Variant::base, 40, 5120,
     17408, 40, 8, 32768, 1e6f, false, false, false},
    {"qwen3-14b", "Qwen/Qwen3-14B", "40c069824f4251a91eefaf281ebe4c544efd3e18", Variant::instruct, 40, 5120, 17408, 40,
     8, 40960, 1e6f, false, false, false},
    {"qwen3-32b", "Qwen/Qwen3-32B", "9216db5781bf21249d130ec9da846c4624c16137", Variant::instruct, 64, 5120, 25600, 64,
     8, 40960, 1e6f, false, false, false},
    // The mixture-of-experts checkpoints (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §2, docs/MODELS.md
    // for the source of each revision): intermediate_size is written in their configs but no layer
    // uses it; every layer holds 128 experts, 8 per token.
    {"qwen3-30b-a3b-base",
     "Qwen/Qwen3-30B-A3B-Base",
     "1b75feb79f60b8dc6c5bc769a898c206a1c6a4f9",
     Variant::base,
     48,
     2048,
     6144,
     32,
     4,
     32768,
     1e6f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 768}},
    {"qwen3-30b-a3b",
     "Qwen/Qwen3-30B-A3B",
     "ad44e777bcd18fa416d9da3bd8f70d33ebb85d39",
     Variant::instruct,
     48,
     2048,
     6144,
     32,
     4,
     40960,
     1e6f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 768}},
    {"qwen3-30b-a3b-instruct-2507",
     "Qwen/Qwen3-30B-A3B-Instruct-2507",
     "0d7cf23991f47feeb3a57ecb4c9cee8ea4a17bfe",
     Variant::instruct_2507,
     48,
     2048,
     6144,
     32,
     4,
     262144,
     1e7f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 768}},
    {"qwen3-30b-a3b-thinking-2507",
     "Qwen/Qwen3-30B-A3B-Thinking-2507",
     "144afc2f379b542fdd4e85a1fcd5e1f79112d95d",
     Variant::thinking_2507,
     48,
     2048,
     6144,
     32,
     4,
     262144,
     1e7f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 768}},
    {"qwen3-coder-30b-a3b-instruct",
     "Qwen/Qwen3-Coder-30B-A3B-Instruct",
     "b2cff646eb4bb1d68355c01b18ae02e7cf42d120",
     Variant::coder,
     48,
     2048,
     6144,
     32,
     4,
     262144,
     1e7f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 768}},
    // 235B-A22B: registered and convertible; its files (470 GB in BF16) do not stay resident in the
    // memory of the machines Kipp targets, which Kipp says before reading them (model/residency.h).
    {"qwen3-235b-a22b",
     "Qwen/Qwen3-235B-A22B",
     "8efa61729e24bd65b1d152b5ab5409052aa80e65",
     Variant::instruct,
     94,
     4096,
     12288,
     64,
     4,
     40960,
     1e6f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 1536}},
    {"qwen3-235b-a22b-instruct-2507",
     "Qwen/Qwen3-235B-A22B-Instruct-2507",
     "ac9c66cc9b46af7306746a9250f23d47083d689e",
     Variant::instruct_2507,
     94,
     4096,
     12288,
     64,
     4,
     262144,
     5e6f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 1536}},
    {"qwen3-235b-a22b-thinking-2507",
     "Qwen/Qwen3-235B-A22B-Thinking-2507",
     "6cbffae6d8e28b986a6b17bd36f42f9fa0f1f0a5",
     Variant::thinking_2507,
     94,
     4096,
     12288,
     64,
     4,
     262144,
     5e6f,
     false,
     false,
     false,
     Architecture::moe,
     {128, 8, 1536}},
    // The embedding and reranker checkpoints (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §6-§7,
    // docs/MODELS.md for the source of each fact): dense Qwen3 layers whose config.json says
    // Qwen3ForCausalLM like the rest; the role is this registry's. An embedding checkpoint's
    // variant is base: its tokenizer ends every input with <|endoftext|>, the token it pools.
    {"qwen3-embedding-0.6b",
     "Qwen/Qwen3-Embedding-0.6B",
     "97b0c614be4d77ee51c0cef4e5f07c00f9eb65b3",
     Variant::base,
     28,
     1024,
     3072,
     16,
     8,
     32768,
     1e6f,
     true,
     false,
     false,
     Architecture::dense,
     {},
     Role::embed,
     151669},
    {"qwen3-embedding-4b",
     "Qwen/Qwen3-Embedding-4B",
     "5cf2132abc99cad020ac570b19d031efec650f2b",
     Variant::base,
     36,
     2560,
     9728,
     32,
     8,
     40960,
     1e6f,
     true,
     false,
     false,
     Architecture::dense,
     {},
     Role::embed,
     151665},
    {"qwen3-embedding-8b",
     "Qwen/Qwen3-Embedding-8B",
     "1d8ad4ca9b3dd8059ad90a75d4983776a23d44af",
     Variant::base,
     36,
     4096,
     12288,
     32,
     8,
     40960,
     1e6f,
     false,
     false,
     false,
     Architecture::dense,
     {},
     Role::embed,
     151665},
    {"qwen3-reranker-0.6b",
     "Qwen/Qwen3-Reranker-0.6B",
     "e61197ed45024b0ed8a2d74b80b4d909f1255473",
     Variant::instruct,
     28,
     1024,
     3072,
     16,
     8,
     40960,
     1e6f,
     true,
     false,
     false,
     Architecture::dense,
     {},
     Role::rerank,
     151669},
    {"qwen3-reranker-4b",
     "Qwen/Qwen3-Reranker-4B",
     "22e683669bc0f0bd69640a1354a6d0aebcfeede5",
     Variant::instruct,
     36,
     2560,
     9728,
     32,
     8,
     40960,
     1e6f,
     true,
     false,
     false,
     Architecture::dense,
     {},
     Role::rerank,
     151669},
    {"qwen3-reranker-8b",
     "Qwen/Qwen3-Reranker-8B",
     "77d193c791ed757ca307ee72715aa132723da912",
     Variant::instruct,
     36,
     4096,
     12288,
     32,
     8,
     40960,
     1e6f,
     false,
     false,
     false,
     Architecture::dense,
     {},
     Role::rerank,
     151669},
    // Each test entry's fixture lays out the files of one published checkpoint (tests/support/
    // published_layout.cpp names which); stores_tied_head follows that checkpoint.
    {"kipp-test/qwen3-tiny", "kipp-test/qwen3-tiny", "0000000000000000000000000000000000000001", Variant::instruct, 2,
     256, 768, 8, 8, 4096, 1e6f, true, true, true},
    {"kipp-test/qwen3-tiny-untied", "kipp-test/qwen3-tiny-untied", "0000000000000000000000000000000000000002",
     Variant::base, 3, 256, 768, 16, 8, 4096, 1e6f, false, false, true},
    {"kipp-test/qwen3-0.6b-shape", "kipp-test/qwen3-0.6b-shape", "0000000000000000000000000000000000000003",
     Variant::instruct, 28, 1024, 3072, 16, 8, 40960, 1e6f, true, true, true},
    // The 4B and 8B shapes, for the GPU benchmarks (random weights; about 8 and 16 GB of BF16).
    {"kipp-test/qwen3-4b-shape", "kipp-test/qwen3-4b-shape", "0000000000000000000000000000000000000004",
     Variant::instruct, 36, 2560, 9728, 32, 8, 40960, 1e6f, true, false, true},
    {"kipp-test/qwen3-8b-shape", "kipp-test/qwen3-8b-shape", "0000000000000000000000000000000000000005",
     Variant::instruct, 36, 4096, 12288, 32, 8, 40960, 1e6f, false, false, true},
    // Tiny siblings for the other variants: a tied base checkpoint (the Base repositories' files)
    // and the two 2507 refreshes (their templates and tokenizer configs; theta as published).
    {"kipp-test/qwen3-tiny-base", "kipp-test/qwen3-tiny-base", "0000000000000000000000000000000000000006",
     Variant::base, 2, 256, 768, 8, 8, 4096, 1e6f, true, false, true},
    {"kipp-test/qwen3-tiny-instruct-2507", "kipp-test/qwen3-tiny-instruct-2507",
     "0000000000000000000000000000000000000007", Variant::instruct_2507, 2, 256, 768, 8, 8, 4096, 5e6f, true, false,
     true},
    {"kipp-test/qwen3-tiny-thinking-2507", "kipp-test/qwen3-tiny-thinking-2507",
     "0000000000000000000000000000000000000008", Variant::thinking_2507, 2, 256, 768, 8, 8, 4096, 5e6f, true, false,
     true},
    // The MoE layer at tiny width in Qwen3-30B-A3B's files (128 experts of 64, 8 per token), and the
    // 30B-A3B layer itself in 8 of its 48 layers, for benchmarks.
    {"kipp-test/qwen3-moe-tiny",
     "kipp-test/qwen3-moe-tiny",
     "0000000000000000000000000000000000000009",
     Variant::instruct,
     2,
     256,
     768,
     8,
     4,
     4096,
     1e6f,
     false,
     false,
     true,
     Architecture::moe,
     {128, 8, 64}},
    // Qwen3-Coder's variant on the tiny MoE layer: its template's XML tool calls.
    {"kipp-test/qwen3-coder-tiny",
     "kipp-test/qwen3-coder-tiny",
     "000000000000000000000000000000000000000b",
     Variant::coder,
     2,
     256,
     768,
     8,
     4,
     4096,
     1e7f,
     false,
     false,
     true,
     Architecture::moe,
     {128, 8, 64}},
    // An embedding checkpoint at tiny width in Qwen3-Embedding-4B's files (151,665 rows, no head, no
    // "model." prefix), and a tied reranker in Qwen3-Reranker-0.6B's.
    {"kipp-test/qwen3-embedding-tiny",
     "kipp-test/qwen3-embedding-tiny",
     "000000000000000000000000000000000000000c",
     Variant::base,
     2,
     256,
     768,
     8,
     8,
     4096,
     1e6f,
     true,
     false,
     true,
     Architecture::dense,
     {},
     Role::embed,
     151665},
    {"kipp-test/qwen3-reranker-tiny",
     "kipp-test/qwen3-reranker-tiny",
     "000000000000000000000000000000000000000d",
     Variant::instruct,
     2,
     256,
     768,
     8,
     8,
     4096,
     1e6f,
     true,
     false,
     true,
     Architecture::dense,
     {},
     Role::rerank,
     151669},
    {"kipp-test/qwen3-30b-a3b-shape",
     "kipp-test/qwen3-30b-a3b-shape",
     "000000000000000000000000000000000000000a",
     Variant::instruct,
     8,
     2048,
     6144,
     32,
     4,
     40960,
     1e6f,
     false,
     false,
     true,
     Architecture::moe,
     {128, 8, 768}},
};

}  // namespace

std::string_view variant_name(Variant variant) {
  switch (variant) {
    case Variant::base: return "base";
    case Variant::instruct: return "instruct";
    case Variant::instruct_2507: return "instruct-2507";
    case Variant::thinking_2507: return "thinking-2507";
    case Variant::coder: return "coder";
  }
  return "unknown";
}

std::string_view architecture_name(Architecture architecture) {
  return architecture == Architecture::moe ? "moe" : "dense";
}

std::string_view role_name(Role role) {
  switch (role) {
    case Role::generate: return "generate";
    case Role::embed: return "embed";
    case Role::rerank: return "rerank";
  }
  return "unknown";
}

std::string role_refusal(const Checkpoint& checkpoint, Role wanted, std::string_view what) {
  if (checkpoint.role == wanted) return {};
  std::string_view serves;
  switch (checkpoint.role) {
    case Role::generate: serves = "it generates text: kipp generate, kipp chat, /v1/chat/completions"; break;
    case Role::embed: serves = "it computes embeddings: kipp embed, /v1/embeddings"; break;
    case Role::rerank: serves = "it scores documents against a query: kipp rerank, /v1/rerank"; break;
  }
  return std::string(checkpoint.id) + " has the role " + std::string(role_name(checkpoint.role)) + " (" +
         std::string(serves) + "); " + std::string(what) + " serves the role " + std::string(role_name(wanted));
}

std::vector<uint32_t> Checkpoint::stop_ids() const {
  if (variant == Variant::base) return {family::token_endoftext};
  return {family::token_im_end, family::token_endoftext};
}

uint64_t Checkpoint::parameter_count() const {
  const uint64_t h = hidden, f = ffn, v = vocab(), q = attention_width(), kv = kv_width();
  const uint64_t mlp = is_moe() ? uint64_t{experts.count} * h                          // router
                                      + uint64_t{experts.count} * 3 * h * experts.ffn  // each expert's gate, up, down
                                : 3 * h * f;                                           // gate, up, down
  const uint64_t per_layer = h * q + 2 * h * kv + q * h                                // q, k, v, o projections
                             + mlp + 2 * h + 2 * family::head_dim;                     // two layer norms, q/k norms
  return v * h * (has_head() && !tied ? 2 : 1) + h + per_layer * layers;
}

std::span<const Checkpoint> all_checkpoints() { return kCheckpoints; }

const Checkpoint* find_checkpoint(std::string_view id) {
  for (const auto& entry : kCheckpoints)
    if (entry.id == id) return &entry;
  return nullptr;
}

const Checkpoint* find_checkpoint_by_source(std::string_view repository, std::string_view revision) {
  for (const auto& entry : kCheckpoints)
    if (entry.repository == repository && entry.revision == revision) return &entry;
  return nullptr;
}

}  // namespace kipp
