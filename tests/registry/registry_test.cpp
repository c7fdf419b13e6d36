// The registry against the family invariants and the derived figures other documents state.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "registry/registry.h"
#include "registry/registry_json.h"

namespace kipp {
namespace {

TEST(Registry, HoldsTwentySevenPinnedCheckpointsAndThirteenTestEntries) {
  int real = 0, synthetic = 0;
  std::set<std::string_view> ids;
  for (const Checkpoint& c : all_checkpoints()) {
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
    (c.synthetic ? synthetic : real)++;
    EXPECT_EQ(c.revision.size(), 40u) << c.id;
    EXPECT_EQ(c.synthetic, c.id.rfind("kipp-test/", 0) == 0) << c.id;
  }
  EXPECT_EQ(real, 27);       // 13 dense, 8 mixture-of-experts, 3 embedding, 3 reranker
  EXPECT_EQ(synthetic, 13);  // tiny, tiny-untied, tiny-base, the two tiny 2507s, the 0.6B, 4B, 8B shapes, the
                             // MoE tiny, Coder tiny and 30B-A3B shape, and the embedding and reranker tiny
  EXPECT_EQ(find_checkpoint("qwen3-32b-base"), nullptr) << "Qwen3-32B-Base was never released";
}

TEST(Registry, AttentionWidthIsNotHiddenWidthWhereTheyDiffer) {
  EXPECT_EQ(find_checkpoint("qwen3-0.6b")->attention_width(), 2048u);
  EXPECT_EQ(find_checkpoint("qwen3-0.6b")->hidden, 1024u);
  EXPECT_EQ(find_checkpoint("qwen3-4b")->attention_width(), 4096u);
  EXPECT_EQ(find_checkpoint("qwen3-32b")->attention_width(), 8192u);
  EXPECT_EQ(find_checkpoint("qwen3-8b")->attention_width(), find_checkpoint("qwen3-8b")->hidden);
  EXPECT_EQ(find_checkpoint("kipp-test/qwen3-tiny")->attention_width(), 1024u);
}

TEST(Registry, DerivedFiguresMatchTheSeedContract) {
  // KV bytes per token: 114,688 at 28 layers, 147,456 at 36 (4B), 262,144 at 64 (32B).
  EXPECT_EQ(find_checkpoint("qwen3-0.6b")->kv_bytes_per_token(), 114688u);
  EXPECT_EQ(find_checkpoint("qwen3-4b")->kv_bytes_per_token(), 147456u);
  EXPECT_EQ(find_checkpoint("qwen3-32b")->kv_bytes_per_token(), 262144u);
  // ANCHORS.md: the 0.6B shape has 596,049,920 parameters.
  EXPECT_EQ(find_checkpoint("kipp-test/qwen3-0.6b-shape")->parameter_count(), 596049920u);
  // The GPU benchmarks' shapes have their real models' parameter counts.
  EXPECT_EQ(find_checkpoint("kipp-test/qwen3-4b-shape")->parameter_count(),
            find_checkpoint("qwen3-4b")->parameter_count());
  EXPECT_EQ(find_checkpoint("kipp-test/qwen3-8b-shape")->parameter_count(),
            find_checkpoint("qwen3-8b")->parameter_count());
  // Tensor count = 2 + 11 * layers (+1 untied).
  EXPECT_EQ(find_checkpoint("qwen3-0.6b")->tensor_count(), 310u);
  EXPECT_EQ(find_checkpoint("qwen3-8b")->tensor_count(), 2u + 11u * 36u + 1u);
}

TEST(Registry, SourceTensorCountsAreThePublishedOnes) {
  // CHECKPOINTS-AS-PUBLISHED.md §1-§3: Qwen3-0.6B and Qwen3-1.7B ship lm_head.weight although they
  // are tied (311 tensors); their Base siblings (310) and the tied 4B checkpoints (398) do not;
  // every untied checkpoint ships it (399 at 8B, 443 at 14B, 707 at 32B).
  const std::pair<const char*, uint32_t> published[] = {
      {"qwen3-0.6b-base", 310},
      {"qwen3-0.6b", 311},
      {"qwen3-1.7b-base", 310},
      {"qwen3-1.7b", 311},
      {"qwen3-4b-base", 398},
      {"qwen3-4b", 398},
      {"qwen3-4b-instruct-2507", 398},
      {"qwen3-8b-base", 399},
      {"qwen3-8b", 399},
      {"qwen3-14b", 443},
      {"qwen3-32b", 707},
  };
  for (const auto& [id, count] : published) EXPECT_EQ(find_checkpoint(id)->source_tensor_count(), count) << id;
  EXPECT_EQ(find_checkpoint("qwen3-0.6b")->tensor_count(), 310u) << "the stored head is not in the artifact";
  for (const Checkpoint& c : all_checkpoints()) {
    if (!c.tied) {
      EXPECT_FALSE(c.stores_tied_head) << c.id << ": only a tied checkpoint can store a redundant head";
    }
  }
}

TEST(Registry, MixtureOfExpertsEntriesHaveThePublishedShapes) {
  // QWEN3-MOE-EMBED-AS-PUBLISHED.md §2.1 and §2.3: 30,532,122,624 parameters in 18,867 tensors
  // (48 x 393 + 3); 235B: 235,093,634,560 in 36,945; both 12 tensors a layer in llama.cpp's layout.
  const Checkpoint& a3b = *find_checkpoint("qwen3-30b-a3b");
  EXPECT_EQ(a3b.parameter_count(), 30532122624u);
  EXPECT_EQ(a3b.source_tensor_count(), 18867u);
  EXPECT_EQ(a3b.tensor_count(), 579u);
  EXPECT_EQ(a3b.kv_bytes_per_token(), 98304u);
  const Checkpoint& a22b = *find_checkpoint("qwen3-235b-a22b");
  EXPECT_EQ(a22b.parameter_count(), 235093634560u);
  EXPECT_EQ(a22b.source_tensor_count(), 36945u);
  EXPECT_EQ(a22b.tensor_count(), 1131u);
  EXPECT_EQ(a22b.kv_bytes_per_token(), 192512u);
  for (const Checkpoint& c : all_checkpoints()) {
    EXPECT_EQ(c.is_moe(), c.experts.count > 0) << c.id;
    if (!c.is_moe()) continue;
    EXPECT_EQ(c.kv_heads, 4u) << c.id;
    EXPECT_EQ(c.experts.count, 128u) << c.id;
    EXPECT_EQ(c.experts.per_token, 8u) << c.id;
    EXPECT_FALSE(c.tied) << c.id;
  }
  // The shape entry is the 30B-A3B layer; the tiny one keeps its expert count and routing.
  const Checkpoint& shape = *find_checkpoint("kipp-test/qwen3-30b-a3b-shape");
  EXPECT_EQ(shape.hidden, a3b.hidden);
  EXPECT_EQ(shape.experts.ffn, a3b.experts.ffn);
  EXPECT_EQ(shape.q_heads, a3b.q_heads);
  EXPECT_EQ(shape.layers, 8u);
}

TEST(Registry, EmbeddingAndRerankerEntriesHaveThePublishedShapes) {
  // QWEN3-MOE-EMBED-AS-PUBLISHED.md §6.1: Qwen3-Embedding-4B's two shards hold 8,043,548,672 bytes
  // of BF16 tensors with 151,665 embedding rows and no head (398 tensors).
  const Checkpoint& e4b = *find_checkpoint("qwen3-embedding-4b");
  EXPECT_EQ(e4b.parameter_count() * 2, 8043548672u);
  EXPECT_EQ(e4b.source_tensor_count(), 398u);
  // docs/MODELS.md: Qwen3-Embedding-8B is untied but ships no head (398 tensors); Reranker-8B ships
  // its lm_head (399).
  EXPECT_EQ(find_checkpoint("qwen3-embedding-8b")->source_tensor_count(), 398u);
  EXPECT_EQ(find_checkpoint("qwen3-reranker-8b")->source_tensor_count(), 399u);
  // Qwen3-Embedding-0.6B (1,191,586,416 bytes) and Qwen3-Reranker-0.6B (1,191,588,280) are single
  // files of the same 310 tensors over 151,669 rows: they differ only by the reranker's "model."
  // prefix in the header, 310 x 6 bytes, up to the header's padding to 8 bytes.
  const Checkpoint& e06 = *find_checkpoint("qwen3-embedding-0.6b");
  const Checkpoint& r06 = *find_checkpoint("qwen3-reranker-0.6b");
  EXPECT_EQ(e06.parameter_count(), r06.parameter_count());
  EXPECT_EQ(e06.source_tensor_count(), 310u);
  EXPECT_EQ(r06.source_tensor_count(), 310u);
  const int64_t header_difference = int64_t(1191588280) - int64_t(1191586416) - 310 * 6;
  EXPECT_GE(header_difference, -7);
  EXPECT_LE(header_difference, 7);
  for (const Checkpoint& c : all_checkpoints()) {
    EXPECT_EQ(c.has_head(), c.role != Role::embed) << c.id;
    EXPECT_EQ(c.appends_endoftext(), c.role == Role::embed) << c.id;
    EXPECT_EQ(c.source_prefix(), c.role == Role::embed ? "" : "model.") << c.id;
    if (c.role == Role::generate) {
      EXPECT_EQ(c.vocab(), 151936u) << c.id;
      continue;
    }
    EXPECT_TRUE(c.vocab() == 151665u || c.vocab() == 151669u) << c.id;
    EXPECT_FALSE(c.is_moe()) << c.id;
  }
}

TEST(Registry, RoleRefusalsNameBothRoles) {
  const Checkpoint& embedding = *find_checkpoint("qwen3-embedding-0.6b");
  EXPECT_EQ(role_refusal(embedding, Role::embed, "kipp embed"), "");
  const std::string refusal = role_refusal(embedding, Role::generate, "/v1/chat/completions");
  EXPECT_NE(refusal.find("has the role embed"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("/v1/chat/completions serves the role generate"), std::string::npos) << refusal;
}

TEST(Registry, StopSetsFollowTheVariant) {
  for (const Checkpoint& c : all_checkpoints()) {
    if (c.variant == Variant::base) {
      EXPECT_EQ(c.stop_ids(), std::vector<uint32_t>{151643}) << c.id;
      EXPECT_EQ(c.eos_id(), 151643u);
    } else {
      EXPECT_EQ(c.stop_ids(), (std::vector<uint32_t>{151645, 151643})) << c.id;
      EXPECT_EQ(c.eos_id(), 151645u);
    }
  }
  EXPECT_EQ(find_checkpoint("kipp-test/qwen3-tiny")->variant, Variant::instruct);
  EXPECT_EQ(find_checkpoint("kipp-test/qwen3-tiny-untied")->variant, Variant::base);
  EXPECT_EQ(find_checkpoint("qwen3-4b-thinking-2507")->variant, Variant::thinking_2507);
}

TEST(Registry, LookupBySourceFindsOnlyTheExactRevision) {
  const Checkpoint* c = find_checkpoint("qwen3-4b");
  EXPECT_EQ(find_checkpoint_by_source(c->repository, c->revision), c);
  EXPECT_EQ(find_checkpoint_by_source(c->repository, "0000000000000000000000000000000000000000"), nullptr);
  EXPECT_EQ(find_checkpoint_by_source("Qwen/Qwen2.5-7B", c->revision), nullptr);
}

TEST(Registry, JsonCarriesEveryFieldOfEveryEntry) {
  auto doc = nlohmann::json::parse(registry_json());
  ASSERT_EQ(doc["checkpoints"].size(), all_checkpoints().size());
  for (const auto& entry : doc["checkpoints"]) {
    const Checkpoint* c = find_checkpoint(entry["id"].get<std::string>());
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(entry["repository"], std::string(c->repository));
    EXPECT_EQ(entry["revision"], std::string(c->revision));
    EXPECT_EQ(entry["variant"], std::string(variant_name(c->variant)));
    EXPECT_EQ(entry["layers"], c->layers);
    EXPECT_EQ(entry["hidden"], c->hidden);
    EXPECT_EQ(entry["ffn"], c->ffn);
    EXPECT_EQ(entry["q_heads"], c->q_heads);
    EXPECT_EQ(entry["kv_heads"], c->is_moe() ? 4 : 8);
    EXPECT_EQ(entry["architecture"], c->is_moe() ? "moe" : "dense");
    EXPECT_EQ(entry.contains("moe"), c->is_moe());
    if (c->is_moe()) {
      EXPECT_EQ(entry["moe"]["num_experts"], 128);
      EXPECT_EQ(entry["moe"]["num_experts_per_tok"], 8);
      EXPECT_EQ(entry["moe"]["moe_intermediate_size"], c->experts.ffn);
      EXPECT_EQ(entry["moe"]["norm_topk_prob"], true);
    }
    EXPECT_EQ(entry["head_dim"], 128);
    EXPECT_EQ(entry["vocab"], c->role == Role::generate ? 151936 : c->vocab());
    EXPECT_EQ(entry["role"], std::string(role_name(c->role)));
    EXPECT_EQ(entry["has_head"], c->role != Role::embed);
    EXPECT_EQ(entry.contains("embedding"), c->role == Role::embed);
    EXPECT_EQ(entry.contains("rerank"), c->role == Role::rerank);
    EXPECT_EQ(entry["context"], c->context);
    EXPECT_EQ(entry["rope_theta"].get<double>(), double(c->rope_theta));
    EXPECT_EQ(entry["tied"], c->tied);
    EXPECT_EQ(entry["stop_ids"].get<std::vector<uint32_t>>(), c->stop_ids());
    EXPECT_EQ(entry["kv_bytes_per_token"], c->kv_bytes_per_token());
    EXPECT_EQ(entry["stores_tied_head"], c->stores_tied_head);
    EXPECT_EQ(entry["source_tensor_count"], c->source_tensor_count());
  }
}

}  // namespace
}  // namespace kipp
