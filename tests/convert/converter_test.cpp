// `kipp convert` rejections and guarantees: every input checked against the registry before
// anything is written, the tokenizer merge, NaN detection, and atomic output.
#include <gtest/gtest.h>

#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/converter.h"
#include "convert/hf_tokenizer.h"
#include "model/artifact_layout.h"
#include "model/model_file.h"
#include "synthetic_checkpoint.h"
#include "test_paths.h"
#include "util/files.h"

namespace kipp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string tiny_source() { return testing::test_models_dir() + "/src/qwen3-tiny"; }

// A copy of the tiny source directory whose large files are symlinks: tests mutate the small ones.
std::string mutable_source(const std::string& name) {
  const std::string dir = testing::scratch_dir(name) + "/src";
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(tiny_source())) {
    const auto target = fs::path(dir) / entry.path().filename();
    if (entry.path().extension() == ".safetensors") fs::create_symlink(entry.path(), target);
    else fs::copy_file(entry.path(), target);
  }
  return dir;
}

void edit_json(const std::string& path, const std::function<void(json&)>& edit) {
  json doc = json::parse(read_text_file(path, 1ull << 30).value());
  edit(doc);
  std::ofstream(path) << doc.dump(1);
}

Result<ConvertReport> convert(const std::string& source, const std::string& out,
                              const std::string& id = "kipp-test/qwen3-tiny", QuantScheme scheme = QuantScheme::bf16) {
  ConvertOptions options;
  options.checkpoint_id = id;
  options.source_dir = source;
  options.scheme = scheme;
  options.out_path = out;
  return convert_checkpoint(options);
}

// The tiny entry's tensors with the fixture's values (seed 1), made once: tests copy and edit them.
const std::vector<testing::RawTensor>& tiny_tensors() {
  static const std::vector<testing::RawTensor> tensors = [] {
    std::vector<testing::RawTensor> made;
    for (const ExpectedTensor& t : expected_tensors(*find_checkpoint("kipp-test/qwen3-tiny"))) {
      std::vector<uint16_t> values(t.rows * t.cols);
      testing::SyntheticTensor(1, t.hf_name, t.rows, t.cols).fill(0, values.data(), values.size());
      testing::RawTensor raw{t.hf_name, "BF16", t.hf_shape(), std::vector<uint8_t>(values.size() * 2)};
      std::memcpy(raw.data.data(), values.data(), raw.data.size());
      made.push_back(std::move(raw));
    }
    return made;
  }();
  return tensors;
}

// Rewrites model.safetensors with the expected tensors, letting `edit` change the list first.
void rewrite_safetensors(const std::string& dir, const std::function<void(std::vector<testing::RawTensor>&)>& edit) {
  std::vector<testing::RawTensor> tensors = tiny_tensors();
  edit(tensors);
  fs::remove(dir + "/model.safetensors");
  ASSERT_TRUE(testing::write_safetensors(dir + "/model.safetensors", tensors).ok());
}

void expect_error(const Result<ConvertReport>& result, const std::string& fragment) {
  ASSERT_FALSE(result.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(result.error().message.find(fragment), std::string::npos) << result.error().message;
}

TEST(Convert, RejectsACheckpointNotInTheRegistry) {
  expect_error(convert(tiny_source(), testing::scratch_dir("unknown") + "/x.gguf", "qwen3-99b"),
               "qwen3-99b is not in the Kipp registry");
}

TEST(Convert, RejectsASourceOfAnotherShape) {
  // The tiny source converted as the untied entry: config.json disagrees first.
  expect_error(convert(tiny_source(), testing::scratch_dir("shape") + "/x.gguf", "kipp-test/qwen3-tiny-untied"),
               "num_hidden_layers is 2, expected 3");
}

TEST(Convert, RejectsEachConfigFieldThatDiffers) {
  const std::vector<std::pair<std::string, json>> cases = {{"hidden_size", 512},
                                                           {"intermediate_size", 1},
                                                           {"num_attention_heads", 4},
                                                           {"num_key_value_heads", 4},
                                                           {"head_dim", 64},
                                                           {"vocab_size", 151643},
                                                           {"max_position_embeddings", 8192},
                                                           {"rope_theta", 10000.0},
                                                           {"rms_norm_eps", 1e-5},
                                                           {"tie_word_embeddings", false},
                                                           {"model_type", "qwen2"},
                                                           {"hidden_act", "gelu"},
                                                           {"attention_bias", true},
                                                           {"rope_scaling", json{{"type", "yarn"}}},
                                                           {"use_sliding_window", true},
                                                           {"torch_dtype", "float16"}};
  for (const auto& change : cases) {
    const std::string& field = change.first;
    const std::string dir = mutable_source("config_" + field);
    edit_json(dir + "/config.json", [&change](json& config) { config[change.first] = change.second; });
    expect_error(convert(dir, dir + "/../out.gguf"), field);
  }
  const std::string dir = mutable_source("config_missing");
  edit_json(dir + "/config.json", [](json& config) { config.erase("hidden_size"); });
  expect_error(convert(dir, dir + "/../out.gguf"), "\"hidden_size\" is missing");
}

TEST(Convert, RejectsMissingUnknownMistypedAndMisshapenTensors) {
  const std::string dir = mutable_source("tensors");
  rewrite_safetensors(dir, [](auto& t) { t.erase(t.begin() + 3); });
  expect_error(convert(dir, dir + "/../out.gguf"), "missing tensor model.layers.0.self_attn.k_proj.weight");

  rewrite_safetensors(dir, [](auto& t) {
    t.push_back({"model.layers.0.mlp.extra_proj.weight", "BF16", {4}, std::vector<uint8_t>(8)});
  });
  expect_error(convert(dir, dir + "/../out.gguf"), "unexpected tensor model.layers.0.mlp.extra_proj.weight");

  // A tied checkpoint may store lm_head.weight (the published 0.6B does), but only one that could
  // be the head: the embedding's dtype and shape.
  rewrite_safetensors(dir, [](auto& t) {
    t.push_back({"lm_head.weight", "F16", {151936, 256}, std::vector<uint8_t>(151936 * 256 * 2)});
  });
  expect_error(convert(dir, dir + "/../out.gguf"), "lm_head.weight (stored beside the tied embedding): dtype F16");
  rewrite_safetensors(dir, [](auto& t) {
    t.push_back({"lm_head.weight", "BF16", {151936, 128}, std::vector<uint8_t>(151936 * 128 * 2)});
  });
  expect_error(convert(dir, dir + "/../out.gguf"), "shape [151936, 128], expected [151936, 256]");

  rewrite_safetensors(dir, [](auto& t) {
    t[1].dtype = "F16";  // same byte size, wrong type
  });
  expect_error(convert(dir, dir + "/../out.gguf"), "dtype F16, expected BF16");

  rewrite_safetensors(dir, [](auto& t) { t[2].shape = {256, 1024}; });  // q_proj transposed
  expect_error(convert(dir, dir + "/../out.gguf"), "q_proj.weight: shape [256, 1024], expected [1024, 256]");
}

TEST(Convert, RejectsNonFiniteWeights) {
  const std::string dir = mutable_source("nan");
  rewrite_safetensors(dir, [](auto& t) {
    const uint16_t nan = 0x7fc0;
    std::memcpy(t[5].data.data() + 2 * 77, &nan, 2);
  });
  expect_error(convert(dir, dir + "/../out.gguf"), "element 77 is not finite");
}

TEST(Convert, RejectsAnEosThatDisagreesWithTheVariant) {
  const std::string dir = mutable_source("eos");
  edit_json(dir + "/tokenizer_config.json", [](json& config) { config["eos_token"] = "<|endoftext|>"; });
  expect_error(convert(dir, dir + "/../out.gguf"), "eos_token is id 151643, expected 151645");
}

TEST(Convert, RejectsATokenizerWithAnotherPreTokenizer) {
  const std::string dir = mutable_source("pretok");
  edit_json(dir + "/tokenizer.json",
            [](json& tok) { tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+"; });
  expect_error(convert(dir, dir + "/../out.gguf"), "pre_tokenizer is not the Qwen2 split regex");
}

TEST(Convert, RejectsMistypedTokenizerFieldsAsErrors) {
  // A number where a name or a flag belongs made nlohmann's value() throw out of the converter,
  // ending kipp convert and kipp pull (reproduced with kipp_fuzz_convert_readers).
  // The family's pipeline around a three-token vocabulary: every part the converter reads.
  const json family = json::parse(read_text_file(testing::tokenizer_dir() + "/tokenizer.json", 1ull << 30).value());
  const json tokenizer = {{"normalizer", family["normalizer"]},
                          {"pre_tokenizer", family["pre_tokenizer"]},
                          {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}},
                          {"added_tokens", {{{"id", 151645}, {"content", "<|im_end|>"}, {"special", true}}}}};
  const json config = {{"eos_token", "<|im_end|>"},
                       {"added_tokens_decoder", {{"151643", {{"content", "<|endoftext|>"}, {"special", true}}}}}};
  const Checkpoint& tiny = *find_checkpoint("kipp-test/qwen3-tiny");
  ASSERT_TRUE(convert_hf_tokenizer(tokenizer.dump(), config.dump(), tiny).ok());
  auto expect_refused = [&](const json& tok, const json& conf, const std::string& fragment) {
    auto converted = convert_hf_tokenizer(tok.dump(), conf.dump(), tiny);
    ASSERT_FALSE(converted.ok()) << "expected an error containing: " << fragment;
    EXPECT_NE(converted.error().message.find(fragment), std::string::npos) << converted.error().message;
  };
  const std::vector<std::pair<std::function<void(json&)>, std::string>> tokenizer_edits = {
      {[](json& tok) { tok["normalizer"]["type"] = 7; }, "expected NFC"},
      {[](json& tok) { tok["pre_tokenizer"]["pretokenizers"][0]["type"] = 1; }, "not the Qwen2 split regex"},
      {[](json& tok) { tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = 5; },
       "not the Qwen2 split regex"},
      {[](json& tok) { tok["model"]["type"] = json::array(); }, "model.type must be BPE"},
      {[](json& tok) { tok["added_tokens"][0]["special"] = 1; }, "added_tokens: special must be true or false, not 1"},
  };
  for (const auto& [edit, message] : tokenizer_edits) {
    json edited = tokenizer;
    edit(edited);
    expect_refused(edited, config, message);
  }
  json edited_config = config;
  edited_config["added_tokens_decoder"]["151643"]["special"] = "yes";
  expect_refused(tokenizer, edited_config, "added token 151643: special must be true or false");
}

TEST(Convert, MergesAddedTokensFromTokenizerConfig) {
  // tokenizer.json without <tool_response>, </tool_response>, <think>, </think>: the ids must still
  // arrive from tokenizer_config.json's added_tokens_decoder, as non-special (user-defined) tokens.
  const std::string dir = mutable_source("merge");
  edit_json(dir + "/tokenizer.json", [](json& tok) {
    json kept = json::array();
    for (const auto& token : tok["added_tokens"])
      if (token["id"].get<int>() < 151665) kept.push_back(token);
    tok["added_tokens"] = kept;
  });
  const std::string out = dir + "/../merged.gguf";
  ASSERT_TRUE(convert(dir, out).ok());
  auto model = ModelFile::open(out);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const TokenizerData& tokenizer = model.value()->tokenizer();
  EXPECT_EQ(tokenizer.tokens[151665], "<tool_response>");
  EXPECT_EQ(tokenizer.tokens[151666], "</tool_response>");
  EXPECT_EQ(tokenizer.tokens[151667], "<think>");
  EXPECT_EQ(tokenizer.tokens[151668], "</think>");
  EXPECT_EQ(tokenizer.token_types[151667], int32_t(gguf::TokenType::user_defined));
  EXPECT_EQ(tokenizer.token_types[151645], int32_t(gguf::TokenType::control));  // <|im_end|> is special
  EXPECT_EQ(tokenizer.tokens[151669], "[PAD151669]");
  EXPECT_EQ(tokenizer.token_types[151935], int32_t(gguf::TokenType::unused));
}

TEST(Convert, RejectsAnAddedTokenKeyThatIsNotADecimalId) {
  const char* keys[] = {" 151700", "-1", "+151700", "151700x", "0x10"};
  for (size_t i = 0; i < std::size(keys); ++i) {
    const std::string key = keys[i];
    const std::string dir = mutable_source("added-key-" + std::to_string(i));
    edit_json(dir + "/tokenizer_config.json", [&](json& config) {
      config["added_tokens_decoder"][key] = {{"content", "<odd>"}, {"special", false}};
    });
    expect_error(convert(dir, dir + "/../out.gguf"), "is not a token id");
  }
}

TEST(Convert, FailureLeavesAnExistingOutputUntouchedAndNoTemporary) {
  const std::string dir = mutable_source("atomic");
  const std::string out = dir + "/../precious.gguf";
  std::ofstream(out) << "the user's file";
  rewrite_safetensors(dir, [](auto& t) {
    const uint16_t inf = 0x7f80;
    std::memcpy(t.back().data.data(), &inf, 2);  // fails late: the last tensor written
  });
  expect_error(convert(dir, out), "not finite");
  EXPECT_EQ(read_text_file(out).value(), "the user's file");
  for (const auto& entry : fs::directory_iterator(fs::path(out).parent_path()))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST(Convert, RemovesTemporariesLeftByInterruptedRuns) {
  // A conversion killed by a signal never runs its cleanup; the next one of the same output does.
  const std::string dir = testing::scratch_dir("stale");
  const std::string out = dir + "/model.gguf";
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale = out + ".tmp." + std::to_string(gone);
  const std::string live = out + ".tmp." + std::to_string(::getppid());  // a running process: kept
  std::ofstream(stale) << "left by a killed run";
  std::ofstream(live) << "still being written";
  ASSERT_TRUE(convert(tiny_source(), out).ok());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
}

// Writes the tiny entry laid out as `layout_of` publishes it, into `dir`.
void write_tiny_as(const std::string& layout_of, const std::string& dir, bool head_equals_embedding = false) {
  testing::SyntheticOptions options;
  options.checkpoint = find_checkpoint("kipp-test/qwen3-tiny");
  options.layout = testing::find_published_layout(layout_of);
  options.out_dir = dir;
  options.sources = testing::published_sources();
  options.head_equals_embedding = head_equals_embedding;
  ASSERT_TRUE(testing::write_synthetic_checkpoint(options).ok());
}

void expect_same_tensors(const std::string& a_path, const std::string& b_path) {
  auto a = ModelFile::open(a_path);
  auto b = ModelFile::open(b_path);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a.value()->gguf().tensors.size(), b.value()->gguf().tensors.size());
  for (size_t i = 0; i < a.value()->gguf().tensors.size(); ++i) {
    const auto& x = a.value()->gguf().tensors[i];
    const auto& y = b.value()->gguf().tensors[i];
    ASSERT_EQ(x.name, y.name);
    ASSERT_TRUE(std::equal(x.data.begin(), x.data.end(), y.data.begin(), y.data.end())) << x.name;
  }
}

TEST(Convert, ShardedAndSingleFileSourcesGiveIdenticalTensors) {
  // Qwen3-4B's layout (three shards, an index whose total_size is the tensor bytes, no stored
  // head) against the fixture's single file with a stored head: the same artifact tensors.
  const std::string scratch = testing::scratch_dir("sharded");
  write_tiny_as("qwen3-4b", scratch + "/src");
  ASSERT_TRUE(fs::exists(scratch + "/src/model-00003-of-00003.safetensors"));
  auto report = convert(scratch + "/src", scratch + "/sharded.gguf");
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->stored_tied_head.present);
  expect_same_tensors(scratch + "/sharded.gguf", testing::test_models_dir() + "/qwen3-tiny.bf16.gguf");
}

TEST(Convert, AStoredTiedHeadIsComparedWithTheEmbeddingAndLeftOut) {
  // The fixture's source is laid out as Qwen3-0.6B: lm_head.weight stored beside the tied
  // embedding, with values of its own. Transformers ignores it; so does the artifact.
  const std::string scratch = testing::scratch_dir("stored_head");
  auto differing = convert(tiny_source(), scratch + "/differing.gguf");
  ASSERT_TRUE(differing.ok()) << differing.error().message;
  const StoredTiedHead& head = differing->stored_tied_head;
  EXPECT_TRUE(head.present);
  EXPECT_EQ(head.elements, 151936u * 256u);
  EXPECT_GT(head.differing_elements, head.elements / 2);
  EXPECT_NE(describe_stored_tied_head(head, "kipp-test/qwen3-tiny").find("differs from model.embed_tokens.weight in"),
            std::string::npos);
  EXPECT_EQ(differing->tensors, find_checkpoint("kipp-test/qwen3-tiny")->tensor_count());

  write_tiny_as("qwen3-0.6b", scratch + "/equal", /*head_equals_embedding=*/true);
  auto equal = convert(scratch + "/equal", scratch + "/equal.gguf");
  ASSERT_TRUE(equal.ok()) << equal.error().message;
  EXPECT_TRUE(equal->stored_tied_head.present);
  EXPECT_EQ(equal->stored_tied_head.differing_elements, 0u);
  EXPECT_NE(describe_stored_tied_head(equal->stored_tied_head, "kipp-test/qwen3-tiny")
                .find("bit for bit equal to model.embed_tokens.weight"),
            std::string::npos);
  expect_same_tensors(scratch + "/differing.gguf", scratch + "/equal.gguf");
  EXPECT_EQ(describe_stored_tied_head(StoredTiedHead{}, "kipp-test/qwen3-tiny"), "");
}

TEST(Convert, ShardIndexMustAgreeWithTheShards) {
  // Qwen3-1.7B's layout: two shards, the stored head alone in the second.
  const std::string scratch = testing::scratch_dir("index");
  write_tiny_as("qwen3-1.7b", scratch);
  const std::string index = scratch + "/model.safetensors.index.json";
  const std::string original = read_text_file(index).value();
  ASSERT_TRUE(convert(scratch, scratch + "/x.gguf").ok());

  edit_json(index, [](json& doc) { doc["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors"; });
  expect_error(convert(scratch, scratch + "/x.gguf"), "model.norm.weight is listed in model-00002-of-00002");

  std::ofstream(index) << original;
  edit_json(index, [](json& doc) { doc["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors"; });
  expect_error(convert(scratch, scratch + "/x.gguf"), "model.extra.weight is not in");

  std::ofstream(index) << original;
  edit_json(index, [](json& doc) { doc["weight_map"]["model.norm.weight"] = "../../etc/passwd"; });
  expect_error(convert(scratch, scratch + "/x.gguf"), "must name a file in the same directory");
}

}  // namespace
}  // namespace kipp
