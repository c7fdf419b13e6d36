// `kipp convert` on the embedding and reranker layouts (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md
// §6-§7): tensor names without "model." and no head, fewer rows than the family's 151,936, the
// sentence-transformers files checked for the computation Kipp performs (last-token pooling,
// then Normalize), the tokenizer's post-processor against the registry, and the metadata
// llama.cpp reads to embed the artifact.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/converter.h"
#include "model/artifact_layout.h"
#include "model/model_file.h"
#include "test_paths.h"
#include "util/files.h"

namespace kipp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kEmbedding = "kipp-test/qwen3-embedding-tiny";
constexpr const char* kReranker = "kipp-test/qwen3-reranker-tiny";

std::string source_of(const std::string& id) { return testing::test_models_dir() + "/src/" + id.substr(10); }

// A copy of a test source whose safetensors are symlinks: tests edit the small files.
std::string mutable_source(const std::string& id, const std::string& name) {
  const std::string dir = testing::scratch_dir(name) + "/src";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::recursive_directory_iterator(source_of(id))) {
    const fs::path target = fs::path(dir) / fs::relative(entry.path(), source_of(id));
    if (entry.is_directory()) fs::create_directories(target);
    else if (entry.path().extension() == ".safetensors") fs::create_symlink(entry.path(), target);
    else fs::copy_file(entry.path(), target);
  }
  return dir;
}

void edit_json(const std::string& path, const std::function<void(json&)>& edit) {
  json doc = json::parse(read_text_file(path, 1ull << 30).value());
  edit(doc);
  std::ofstream(path) << doc.dump(2);
}

Result<ConvertReport> convert(const std::string& id, const std::string& source, const std::string& out) {
  ConvertOptions options;
  options.checkpoint_id = id;
  options.source_dir = source;
  options.out_path = out;
  return convert_checkpoint(options);
}

// Converting `id` from `source` fails with a message containing `expected`, and writes nothing.
void expect_refusal(const std::string& id, const std::string& source, const std::string& expected) {
  const std::string out = fs::path(source).parent_path() / "out.gguf";
  auto result = convert(id, source, out);
  ASSERT_FALSE(result.ok()) << "expected: " << expected;
  EXPECT_NE(result.error().message.find(expected), std::string::npos) << result.error().message;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ConvertRetrieval, AnEmbeddingArtifactCarriesWhatLlamaCppReads) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-embedding-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  const gguf::File& g = (*file)->gguf();
  EXPECT_EQ(g.get_u32(keys::pooling_type).value(), keys::kPoolingLast);
  EXPECT_TRUE(g.get_bool(keys::add_eos_token).value());
  EXPECT_EQ((*file)->tokenizer().eos_id, 151643u) << "the token every input ends with";
  EXPECT_EQ((*file)->tokenizer().tokens.size(), 151665u) << "the tokenizer's own count, the embedding's rows";
  EXPECT_EQ(g.find_tensor("output.weight"), nullptr);
  EXPECT_EQ(g.find_tensor("token_embd.weight")->dims[1], 151665u);
  std::vector<std::string> files;
  for (const auto& f : (*file)->provenance().source_files) files.emplace_back(f.name);
  for (const char* name : {"modules.json", "1_Pooling/config.json", "config_sentence_transformers.json"})
    EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name << " is not in the provenance";
}

TEST(ConvertRetrieval, ARerankerArtifactKeepsItsTiedHeadAndVocabulary) {
  auto file = ModelFile::open(testing::test_models_dir() + "/qwen3-reranker-tiny.bf16.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ((*file)->tokenizer().tokens.size(), 151669u);
  EXPECT_EQ((*file)->tokenizer().tokens[9693], "yes");
  EXPECT_EQ((*file)->tokenizer().tokens[2152], "no");
  EXPECT_EQ((*file)->gguf().find(keys::pooling_type), nullptr) << "llama.cpp would take it for an embedding model";
  EXPECT_EQ((*file)->weights().lm_head.data, (*file)->weights().token_embedding.data) << "tied";
}

TEST(ConvertRetrieval, RefusesSentenceTransformersFilesOfAnotherComputation) {
  const std::string src = mutable_source(kEmbedding, "ConvertRetrieval.SentenceTransformers");
  edit_json(src + "/1_Pooling/config.json", [](json& j) {
    j["pooling_mode_lasttoken"] = false;
    j["pooling_mode_mean_tokens"] = true;
  });
  expect_refusal(kEmbedding, src, "pooling_mode_mean_tokens is true; Kipp pools the last token only");
  edit_json(src + "/1_Pooling/config.json", [](json& j) {
    j["pooling_mode_lasttoken"] = true;
    j["pooling_mode_mean_tokens"] = false;
    j["word_embedding_dimension"] = 1024;
  });
  expect_refusal(kEmbedding, src, "word_embedding_dimension is 1024, expected 256");
  edit_json(src + "/1_Pooling/config.json", [](json& j) { j["word_embedding_dimension"] = 256; });
  edit_json(src + "/modules.json", [](json& j) { j.erase(2); });
  expect_refusal(kEmbedding, src, "2 modules, expected Transformer, Pooling and Normalize");
  fs::remove(src + "/modules.json");
  expect_refusal(kEmbedding, src, "modules.json");
}

TEST(ConvertRetrieval, RefusesATokenizerThatDoesNotAppendEndOfText) {
  const std::string src = mutable_source(kEmbedding, "ConvertRetrieval.PostProcessor");
  edit_json(src + "/tokenizer.json", [](json& j) {
    j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}};
  });
  expect_refusal(kEmbedding, src, "does not append <|endoftext|>");
  edit_json(src + "/tokenizer.json", [](json& j) {
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single",
                            {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                             {{"SpecialToken", {{"id", "<|im_end|>"}, {"type_id", 0}}}}}}};
  });
  expect_refusal(kEmbedding, src, "expected $A <|endoftext|>");
  // A reranker's tokenizer adds nothing: its prompt ends as the model card writes it.
  const std::string reranker = mutable_source(kReranker, "ConvertRetrieval.RerankerPostProcessor");
  const std::string embedding_tokenizer = read_text_file(source_of(kEmbedding) + "/tokenizer.json", 1ull << 30).value();
  edit_json(reranker + "/tokenizer.json",
            [&](json& j) { j["post_processor"] = json::parse(embedding_tokenizer)["post_processor"]; });
  expect_refusal(kReranker, reranker, "adds no tokens");
}

TEST(ConvertRetrieval, RefusesTheOtherRolesNamingAndVocabulary) {
  // The embedding entry's files converted as the reranker (names without the prefix, 151,665
  // rows, no head) and the reverse: each fails on what differs, before anything is written.
  expect_refusal(kReranker, mutable_source(kEmbedding, "ConvertRetrieval.EmbeddingAsReranker"),
                 "vocab_size is 151665, expected 151669");
  const std::string src = mutable_source(kReranker, "ConvertRetrieval.RerankerAsEmbedding");
  edit_json(src + "/config.json", [](json& j) { j["vocab_size"] = 151665; });
  expect_refusal(kEmbedding, src, "does not append <|endoftext|>");
}

TEST(ConvertRetrieval, AnAddedTokenPastTheEmbeddingRowsIsRefused) {
  // Qwen3-Embedding-4B's tokenizer stops at id 151664; one that named <think> (151667) would give
  // an id the checkpoint has no row for.
  const std::string src = mutable_source(kEmbedding, "ConvertRetrieval.AddedTokenPastTheRows");
  edit_json(src + "/tokenizer_config.json", [](json& j) {
    j["added_tokens_decoder"]["151667"] = {{"content", "<think>"}, {"special", false}};
  });
  expect_refusal(kEmbedding, src, "token id 151667 is outside the vocabulary of 151665");
}

}  // namespace
}  // namespace kipp
