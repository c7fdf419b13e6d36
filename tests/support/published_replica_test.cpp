// The fixture generator against the published files: every byte of a pinned checkpoint that the
// fact sheet (../shared/CHECKPOINTS-AS-PUBLISHED.md) establishes by SHA-256 or size, the generator
// reproduces at that checkpoint's real dimensions. The hashes below are the sheet's (published
// SHA-256s, §2-§6); a replica that drifts from the hub's files fails here, naming the file.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "published_files.h"
#include "published_layout.h"
#include "registry/registry.h"
#include "test_paths.h"
#include "util/sha256.h"

namespace kipp::testing {
namespace {

struct PublishedFile {
  const char* checkpoint;
  const char* file;
  uint64_t bytes;
  const char* sha256;  // "" where only the size is published
};

constexpr const char* kPostTrainedGeneration = "2325da0f15bb848e018c5ae071b7943332e9f871d6b60e2ed22ca97d4cb993d2";
constexpr const char* kBaseGeneration = "8c970692323e3ea0e9b8b0a4dca79388d31226e41f83c9fd6014804280ebf6e8";
constexpr const char* kPostTrainedTokenizerConfig = "d5d09f07b48c3086c508b30d1c9114bd1189145b74e982a265350c923acd8101";
constexpr const char* kBaseTokenizerConfig = "3c04ed3ca964ea2f6b2b5faf0dc4d31aec1cb1e8b4bcf63f402d295046b422b5";
constexpr const char* kPostTrainedTokenizer = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4";
constexpr const char* kVocab = "ca10d7e9fb3ed18575dd1e277a2579c16d108e32f27439684afa0e10b1440910";
constexpr const char* kQwen3Merges = "8831e4f1a044471340f7c0a83d7bd71306a5b867e95fd870f74d0c5308a904d5";
constexpr const char* kQwen25Merges = "599bab54075088774b1733fde865d5bd747cbcc7a547c5bc12610e874e26f5e3";
constexpr const char* kLicense = "832dd9e00a68dd83b3c3fb9f5588dad7dcf337a0db50f7d9483f310cd292e92e";
// 30B-A3B-Instruct-2507 and -Thinking-2507 publish the same config.json.
constexpr const char* kMoe2507Config = "a1ee086a68d0cbfc87316da00ba4b8507bd1292978108e2496201a30a450f438";
constexpr const char* kPostTrainedGitattributes = "34448b82c17d60fec9b65b1f093c115ddbaadc04beb1b0140b6bfed2e012a930";

constexpr PublishedFile kPublished[] = {
    // Qwen3-0.6B-Base §3.1
    {"qwen3-0.6b-base", "config.json", 727, "504a6b58c4271583724e66584b6b7698aea18450209df6b2f7582df0e89cee59"},
    {"qwen3-0.6b-base", "generation_config.json", 138, kBaseGeneration},
    {"qwen3-0.6b-base", "tokenizer_config.json", 9678, kBaseTokenizerConfig},
    {"qwen3-0.6b-base", "tokenizer.json", 7031645, ""},  // c0382117…: the Qwen2.5 file, bytes not reproduced
    {"qwen3-0.6b-base", "vocab.json", 2776833, kVocab},
    {"qwen3-0.6b-base", "merges.txt", 1671853, kQwen3Merges},
    {"qwen3-0.6b-base", "LICENSE", 11343, kLicense},
    {"qwen3-0.6b-base", "README.md", 2973, ""},
    {"qwen3-0.6b-base", ".gitattributes", 1519, ""},
    // Qwen3-0.6B §3.2
    {"qwen3-0.6b", "config.json", 726, "660db3b73d788119c04535e48cf9be5f55bc3100841a718637ae695b442f27dd"},
    {"qwen3-0.6b", "generation_config.json", 239, kPostTrainedGeneration},
    {"qwen3-0.6b", "tokenizer_config.json", 9732, kPostTrainedTokenizerConfig},
    {"qwen3-0.6b", "tokenizer.json", 11422654, kPostTrainedTokenizer},
    {"qwen3-0.6b", "vocab.json", 2776833, kVocab},
    {"qwen3-0.6b", "merges.txt", 1671853, kQwen3Merges},
    {"qwen3-0.6b", "LICENSE", 11343, kLicense},
    // Qwen3-1.7B-Base §3.3 and Qwen3-1.7B §3.4
    {"qwen3-1.7b-base", "config.json", 727, "1bb33a92c3548fbc68b889b490e810440435253598835bd71dff0396060c12db"},
    {"qwen3-1.7b-base", "tokenizer_config.json", 9678, kBaseTokenizerConfig},
    {"qwen3-1.7b", "config.json", 726, "1ddb5b89ebc90dcb417a45c213d818577e65976454d29385c8f6140771d95197"},
    {"qwen3-1.7b", ".gitattributes", 1570, kPostTrainedGitattributes},
    {"qwen3-1.7b", "README.md", 13963, ""},
    // Qwen3-4B-Base §3.5, Qwen3-4B §3.6
    {"qwen3-4b-base", "config.json", 727, "304b2545a258d35620f1d4bf46940c0471d9baa00715ff8e77f84c2fca5057c1"},
    {"qwen3-4b-base", "generation_config.json", 138, kBaseGeneration},
    {"qwen3-4b", "config.json", 726, "8ba006f74fecfaaeb392872a60f4a480e7ec9860153d2e1b769ec81f9a147f8a"},
    {"qwen3-4b", "tokenizer_config.json", 9732, kPostTrainedTokenizerConfig},
    // Qwen3-4B-Instruct-2507 §3.7 and Qwen3-4B-Thinking-2507 §3.8
    {"qwen3-4b-instruct-2507", "config.json", 727, "5beea1a4a34c62782bfb2f911c606741a3bab8f92d80a118fa053c28af12e8ba"},
    {"qwen3-4b-instruct-2507", "generation_config.json", 238,
     "835fffe355c9438e7a25be099b3fccaa98350b83451f9fd2d99512e74f1ade48"},
    {"qwen3-4b-instruct-2507", "tokenizer_config.json", 9377,
     "a62ff0a2472a0fa1b8eaabcb57c59b58afa42a22831dc141400b6e0cf2b65ce3"},
    {"qwen3-4b-instruct-2507", "tokenizer.json", 11422654, kPostTrainedTokenizer},
    {"qwen3-4b-instruct-2507", "merges.txt", 1671839, kQwen25Merges},
    {"qwen3-4b-instruct-2507", ".gitattributes", 1570, kPostTrainedGitattributes},
    {"qwen3-4b-thinking-2507", "tokenizer_config.json", 10834,
     "60adcfc35f5f251e19a196ec977b4ca0fcfb534852911b3196d68d5e3b146aa0"},
    // Qwen3-8B-Base §3.9, Qwen3-8B §3.10, Qwen3-14B §3.12, Qwen3-32B §3.13
    {"qwen3-8b-base", "config.json", 729, "3bd01d7ad7a2e203ecbbe84e24087a51c6d2a108ee4bcc42d0016bf49564983a"},
    {"qwen3-8b-base", "merges.txt", 1671853, kQwen3Merges},
    {"qwen3-8b", "config.json", 728, "f7c4eadfbbf522470667b797a3c89be2524832d2d599797248dc304fff447c30"},
    {"qwen3-8b", "generation_config.json", 239, kPostTrainedGeneration},
    {"qwen3-14b", "config.json", 728, "e73c3664ca09b10a673fef0c22e8a6b456201d49bd4713c9691f775720e8857a"},
    {"qwen3-32b", "config.json", 728, "97e295b63283935788fac5e4f8860862a56d4089538cafc93f0431f2ebe483bb"},
    {"qwen3-32b", "tokenizer.json", 11422654, kPostTrainedTokenizer},
    // The MoE repositories (QWEN3-MOE-EMBED-AS-PUBLISHED.md §2.2; the others' hashes as docs/MODELS.md cites them)
    {"qwen3-30b-a3b", "config.json", 963, "2850ddb3bf7aecad20b611e2d44f3077fc8193f4827c93beddd4c02ad63c2297"},
    {"qwen3-30b-a3b-base", "config.json", 964, "7e4142150e976c6b4796adf88fce0a2a23e581ed63bcede7e1d69a645e73b362"},
    {"qwen3-30b-a3b-base", "generation_config.json", 138, kBaseGeneration},
    {"qwen3-30b-a3b-base", "tokenizer_config.json", 9678, kBaseTokenizerConfig},
    {"qwen3-30b-a3b-base", "merges.txt", 1671853, kQwen3Merges},
    {"qwen3-30b-a3b-instruct-2507", "config.json", 963, kMoe2507Config},
    {"qwen3-30b-a3b-instruct-2507", "generation_config.json", 239,
     "19d306dd769db12a9d710b44cf7f83b635efbe5166b84fb4358a08fb7d88bb53"},
    {"qwen3-30b-a3b-instruct-2507", "tokenizer_config.json", 9377,
     "a62ff0a2472a0fa1b8eaabcb57c59b58afa42a22831dc141400b6e0cf2b65ce3"},
    {"qwen3-30b-a3b-instruct-2507", "tokenizer.json", 11422654, kPostTrainedTokenizer},
    {"qwen3-30b-a3b-instruct-2507", "merges.txt", 1671839, kQwen25Merges},
    {"qwen3-30b-a3b-thinking-2507", "config.json", 963, kMoe2507Config},
    {"qwen3-coder-30b-a3b-instruct", "config.json", 963,
     "e2c8d8eea39471785cd93379d8b48241ad7dcda299013155dd02526e34a0de62"},
    {"qwen3-coder-30b-a3b-instruct", "generation_config.json", 180,
     "c99723ab3ba28630d26ae23def77603b540a46924895af5cf234740d3b27b51d"},
    {"qwen3-235b-a22b", "config.json", 965, "0ecd5d6fe6f2db6739e4e36ab06b88ebe7bd013ef31b9583f43796059a2b23a4"},
};

struct PublishedWeights {
  const char* checkpoint;
  std::vector<uint64_t> shard_bytes;  // one entry: a single model.safetensors
  const char* index_sha256;           // "" for a single file or where unknown
};

const std::vector<uint64_t> kMoe30BShards = {3999417504, 3999974192, 3997360832, 3999975056, 3999975400, 3999975400,
                                             3999975472, 3997362064, 3999975408, 3999975400, 3999975408, 3987400496,
                                             3997353632, 3999975400, 3999975400, 1087928584};

const std::vector<PublishedWeights> kPublishedWeights = {
    {"qwen3-0.6b-base", {1192135096}, ""},
    {"qwen3-0.6b", {1503300328}, ""},
    {"qwen3-1.7b-base", {3441185608}, ""},
    {"qwen3-1.7b", {3441185608, 622329984}, "0d660e94b165eb912669a5249dff44b83188c4777a07ddb9611fb78d91b0578d"},
    {"qwen3-4b-base",
     {3957900840, 3987450520, 99630640},
     "d6c42883a895dfef5b0080ed2116a1bcd764f558406b98923d675978a1abf29c"},
    {"qwen3-4b",
     {3957900840, 3987450520, 99630640},
     "6dc0981b8829fead746441f68f38f24c5ca4a3a66351f652c26c6df0efc43ab2"},
    {"qwen3-4b-instruct-2507",
     {3957900840, 3987450520, 99630640},
     "d6c42883a895dfef5b0080ed2116a1bcd764f558406b98923d675978a1abf29c"},
    {"qwen3-8b-base",
     {3996250744, 3993160032, 3959604768, 3187841392, 1244659840},
     "cd39d5e44c5aadfd1954b598883aea1c4a98822a2f7723d214ef2278b7fec2e4"},
    {"qwen3-8b",
     {3996250744, 3993160032, 3959604768, 3187841392, 1244659840},
     "f9fdbcb91c23971c13ec5d5f2573d2349e8f61f2f049371ec699281748fdb1bc"},
    {"qwen3-14b",
     {3841788544, 3963750816, 3963750880, 3963750880, 3963750880, 3963750880, 3963750880, 1912371880},
     "62d7ad35757bae5e7baa452cb1483178b7daa50e869e923226b8da10871f7ebc"},
    {"qwen3-32b",
     {3957109648, 3900791760, 3900791760, 3900791800, 3900791800, 3900791800, 3900791800, 3900791800, 3900791800,
      3900791800, 3900791800, 3900791800, 3900791800, 3900791800, 3900791800, 3900791800, 3055341992},
     "bed42c6c55274bc08a1f616bceb3bcb84b3f02cb6584c573bd18c6519291ecd0"},
    // QWEN3-MOE-EMBED-AS-PUBLISHED.md §2.3: 30B-A3B and its Base share the split and the index.
    {"qwen3-30b-a3b", kMoe30BShards, "df0d481ec595c55a0ba58426d517390c6214a566ec4ff1c8fc4bbce9f57b3c24"},
    {"qwen3-30b-a3b-base", kMoe30BShards, "df0d481ec595c55a0ba58426d517390c6214a566ec4ff1c8fc4bbce9f57b3c24"},
    // The embedding and reranker repositories' file sizes (docs/MODELS.md names the listings), each
    // reproduced to the byte: 151,665 or 151,669 rows, no head and no "model." prefix in the
    // embedding files, the 5GB split. (Reranker-4B's and -8B's splits follow another order, which
    // their layouts note; only their shard counts are kept.)
    {"qwen3-embedding-0.6b", {1191586416}, ""},
    {"qwen3-reranker-0.6b", {1191588280}, ""},
    {"qwen3-embedding-4b", {4965826464, 3077765624}, ""},
    {"qwen3-embedding-8b", {4900037024, 4915959512, 4983067656, 335570376}, ""},
};

const PublishedLayout& layout_of(const char* id) {
  const PublishedLayout* layout = find_published_layout(id);
  if (!layout) throw std::logic_error(std::string("no layout for ") + id);
  return *layout;
}

// The small files of a layout at its checkpoint's dimensions, made once per test process.
const std::map<std::string, std::string>& small_files_of(const PublishedLayout& layout) {
  static std::map<std::string_view, std::map<std::string, std::string>> made;
  auto& files = made[layout.id];
  if (files.empty()) {
    auto written = published_small_files(layout_checkpoint(layout), layout, published_sources());
    if (!written) throw std::runtime_error(written.error().message);
    files = std::move(*written);
  }
  return files;
}

TEST(PublishedReplica, SmallFilesHaveThePublishedBytes) {
  for (const PublishedFile& expected : kPublished) {
    const auto& files = small_files_of(layout_of(expected.checkpoint));
    auto it = files.find(expected.file);
    ASSERT_NE(it, files.end()) << expected.checkpoint << ": no " << expected.file;
    EXPECT_EQ(it->second.size(), expected.bytes) << expected.checkpoint << " " << expected.file;
    if (*expected.sha256) {
      EXPECT_EQ(sha256_hex(it->second), expected.sha256) << expected.checkpoint << " " << expected.file;
    }
  }
}

TEST(PublishedReplica, FileSetsFollowTheRepositories) {
  for (const PublishedLayout* layout : all_published_layouts()) {
    std::vector<std::string> names;
    for (const auto& [name, content] : small_files_of(*layout)) names.push_back(name);
    std::vector<std::string> want = {".gitattributes", "README.md",  "config.json",          "merges.txt",
                                     "tokenizer.json", "vocab.json", "tokenizer_config.json"};
    if (layout->has_license) want.push_back("LICENSE");
    if (layout->generation_config != GenerationConfigForm::none) want.push_back("generation_config.json");
    if (layout->sentence_transformers)  // §6.2: the embedding repositories' pipeline, pooling and prompts
      want.insert(want.end(), {"1_Pooling/config.json", "config_sentence_transformers.json", "modules.json"});
    std::sort(want.begin(), want.end());
    EXPECT_EQ(names, want) << layout->id;
  }
  EXPECT_FALSE(layout_of("qwen3-8b-base").has_license) << "§3.9: the byte totals leave no room for a LICENSE";
}

TEST(PublishedReplica, WeightsSplitIntoThePublishedShards) {
  for (const PublishedWeights& expected : kPublishedWeights) {
    const PublishedLayout& layout = layout_of(expected.checkpoint);
    const Checkpoint& c = layout_checkpoint(layout);
    const std::vector<PlannedShard> shards = plan_shards(c, layout);
    std::vector<uint64_t> sizes;
    size_t tensors = 0;
    for (const PlannedShard& shard : shards) {
      sizes.push_back(shard.file_bytes);
      tensors += shard.tensors.size();
    }
    EXPECT_EQ(sizes, expected.shard_bytes) << expected.checkpoint;
    EXPECT_EQ(tensors, c.source_tensor_count()) << expected.checkpoint;
    if (shards.size() == 1) {
      EXPECT_EQ(shards[0].file_name, "model.safetensors");
    } else {
      char last[64];
      std::snprintf(last, sizeof last, "model-%05zu-of-%05zu.safetensors", shards.size(), shards.size());
      EXPECT_EQ(shards.back().file_name, last);
      if (*expected.index_sha256) {
        EXPECT_EQ(sha256_hex(safetensors_index(shards, layout)), expected.index_sha256) << expected.checkpoint;
      }
    }
  }
}

TEST(PublishedReplica, TheStoredTiedHeadSitsWherePublished) {
  // §2: Qwen3-1.7B's second shard is lm_head.weight alone; Qwen3-0.6B's one file has 311 tensors.
  const auto plan = plan_shards(*find_checkpoint("qwen3-1.7b"), layout_of("qwen3-1.7b"));
  ASSERT_EQ(plan.size(), 2u);
  ASSERT_EQ(plan[1].tensors.size(), 1u);
  EXPECT_EQ(plan[1].tensors[0].hf_name, "lm_head.weight");
  EXPECT_EQ(plan_shards(*find_checkpoint("qwen3-0.6b"), layout_of("qwen3-0.6b"))[0].tensors.size(), 311u);
  // A tiny replica keeps the published shard count and what the last shard holds.
  const Checkpoint& tiny = *find_checkpoint("kipp-test/qwen3-tiny");
  const auto tiny_plan = plan_shards(tiny, layout_of("qwen3-1.7b"));
  ASSERT_EQ(tiny_plan.size(), 2u);
  EXPECT_EQ(tiny_plan[1].tensors.size(), 1u);
  EXPECT_EQ(tiny_plan[1].tensors[0].hf_name, "lm_head.weight");
  const auto untied_plan = plan_shards(*find_checkpoint("kipp-test/qwen3-tiny-untied"), layout_of("qwen3-8b-base"));
  ASSERT_EQ(untied_plan.size(), 5u);
  EXPECT_EQ(untied_plan.back().tensors[0].hf_name, "lm_head.weight");
  for (const PlannedShard& shard : untied_plan) EXPECT_FALSE(shard.tensors.empty()) << shard.file_name;
}

TEST(PublishedReplica, TestEntriesMirrorAPublishedSibling) {
  for (const Checkpoint& c : all_checkpoints()) {
    const Checkpoint& published = layout_checkpoint(default_layout_for(c));
    EXPECT_FALSE(published.synthetic) << c.id;
    EXPECT_EQ(published.variant, c.variant) << c.id;
    EXPECT_EQ(published.tied, c.tied) << c.id;
    EXPECT_EQ(published.stores_tied_head, c.stores_tied_head) << c.id << " and " << published.id;
  }
}

}  // namespace
}  // namespace kipp::testing
