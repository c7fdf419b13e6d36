#include "registry/registry.h"

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
};

}  // namespace

std::string_view variant_name(Variant variant) {
  switch (variant) {
    case Variant::base: return "base";
    case Variant::instruct: return "instruct";
    case Variant::instruct_2507: return "instruct-2507";
    case Variant::thinking_2507: return "thinking-2507";
  }
  return "unknown";
}

std::vector<uint32_t> Checkpoint::stop_ids() const {
  if (variant == Variant::base) return {family::token_endoftext};
  return {family::token_im_end, family::token_endoftext};
}

uint64_t Checkpoint::parameter_count() const {
  const uint64_t h = hidden, f = ffn, v = family::vocab, q = attention_width(), kv = kv_width();
  const uint64_t per_layer = h * q + 2 * h * kv + q * h       // q, k, v, o projections
                             + 3 * h * f                      // gate, up, down
                             + 2 * h + 2 * family::head_dim;  // two layer norms, q/k norms
  return v * h * (tied ? 1 : 2) + h + per_layer * layers;
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
