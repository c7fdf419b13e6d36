// Writes the seed corpora of the text fuzzers under OUT_DIR/<target>/, from what the repository,
// its npm packages and the shared folder already hold (read in place, never copied into git):
//   json_schema      every JSONSchemaBench schema and every schema of JSON-Schema-Test-Suite's
//                    draft2020-12 files, compact;
//   regex            every `pattern` and patternProperties key of those schemas, plus the
//                    hand-written seeds-src/regex;
//   gbnf             llama.cpp's example grammars;
//   api_request      each conversation of tests/fixtures/anthropic_openai_conversations.json as a
//                    body of both APIs, Codex's requests of tests/fixtures/codex_request.json, plus
//                    the hand-written seeds-src/api_request;
//   convert_readers  a small safetensors file, the tiny test checkpoint's config.json, and the
//                    family's tokenizer.json cut down to its first 1,000 ids with its
//                    tokenizer_config.json.
// A seed is named by its content's SHA-256, so duplicates collapse. The route byte that the
// api_request and convert_readers harnesses read first is written here as a digit ('0', '1', ...).
// Usage: kipp_fuzz_corpora OUT_DIR SHARED_DATA_DIR FIXTURES_DIR TOKENIZER_DIR SEEDS_SRC_DIR
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "published_files.h"
#include "registry/registry.h"
#include "util/sha256.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;  // request bodies keep the client's key order

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The regular files of `dir` with the extension `ext` ("" for all), sorted, so runs are repeatable.
std::vector<fs::path> files_in(const fs::path& dir, std::string_view ext) {
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": not a directory");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && (ext.empty() || entry.path().extension() == ext)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

class Corpus {
 public:
  // Replaces whatever an earlier run left in OUT_DIR/<target> (other targets' corpora stay).
  Corpus(const fs::path& out, const std::string& target) : dir_(out / target) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Corpus() { std::printf("%s: %zu seeds\n", dir_.string().c_str(), count_); }

  void add(std::string_view bytes) {
    const std::string name = kipp::sha256_hex(bytes).substr(0, 16);
    if (!written_.insert(name).second) return;
    std::ofstream(dir_ / name, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    ++count_;
  }
  void add(char route, std::string_view body) { add(std::string(1, route) + std::string(body)); }
  void add_files(const fs::path& dir, std::string_view ext = "") {
    for (const auto& path : files_in(dir, ext)) add(read_file(path));
  }

 private:
  fs::path dir_;
  std::unordered_set<std::string> written_;
  size_t count_ = 0;
};

// Every schema the grammar tests read: JSONSchemaBench's files, and the "schema" of each case
// group of the suite's draft2020-12 files.
std::vector<Json> shared_schemas(const fs::path& data) {
  std::vector<Json> schemas;
  for (const auto& path : files_in(data / "jsonschemabench", ".json")) schemas.push_back(Json::parse(read_file(path)));
  for (const auto& path : files_in(data / "json-schema-test-suite/tests/draft2020-12", ".json"))
    for (const Json& group : Json::parse(read_file(path))) schemas.push_back(group.at("schema"));
  return schemas;
}

// The regular expressions a schema holds: `pattern` values and patternProperties' keys, at any depth.
void collect_patterns(const Json& value, Corpus& corpus) {
  if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      if (key == "pattern" && member.is_string()) corpus.add(member.get<std::string>());
      if (key == "patternProperties" && member.is_object())
        for (const auto& [pattern, ignored] : member.items()) corpus.add(pattern);
    }
  }
  if (value.is_structured())
    for (const Json& member : value) collect_patterns(member, corpus);
}

// The fixture's conversations as request bodies: OpenAI chat ('0'), Anthropic messages ('2') and
// count_tokens ('3'), with the model and max_tokens each reader requires and the fixture's tools
// where the conversation uses them; Codex's requests for the Responses API ('4', '5').
void fixture_bodies(const fs::path& fixtures, Corpus& corpus) {
  const OrderedJson all = OrderedJson::parse(read_file(fixtures / "anthropic_openai_conversations.json"));
  for (const OrderedJson& conversation : all.at("conversations")) {
    OrderedJson openai = conversation.at("openai"), anthropic = conversation.at("anthropic");
    openai["model"] = anthropic["model"] = "m";
    if (conversation.value("tools", false)) {
      openai["tools"] = all.at("tools").at("openai");
      anthropic["tools"] = all.at("tools").at("anthropic");
    }
    corpus.add('0', openai.dump());
    corpus.add('3', anthropic.dump());
    anthropic["max_tokens"] = 16;
    corpus.add('2', anthropic.dump());
  }
  // Codex's two Responses requests as it sends them ('4'), and as input_tokens takes them ('5').
  const OrderedJson codex = OrderedJson::parse(read_file(fixtures / "codex_request.json"));
  for (OrderedJson responses : codex.at("requests")) {
    corpus.add('4', responses.dump());
    for (const char* create_only : {"stream", "store", "include", "prompt_cache_key", "client_metadata"})
      responses.erase(create_only);
    corpus.add('5', responses.dump());
  }
  // The embeddings and rerank bodies the official SDKs and RAG frameworks send ('6', '7').
  corpus.add('6', R"({"model":"m","input":["The capital of China is Beijing.","Gravity"],"encoding_format":"base64"})");
  corpus.add('6', R"({"model":"m","input":[[9707,11,1879],[151643]],"dimensions":64})");
  corpus.add('7', R"({"model":"m","query":"capital?","documents":["Beijing",{"text":"Paris"}],"top_n":1,)"
                  R"("return_documents":true,"instruction":"Find cities"})");
}

// A safetensors file: the header's length (8 bytes, little-endian), the JSON header padded with
// spaces to 8 bytes as the reference writer pads it, then the tensors' bytes.
std::string safetensors_file(const OrderedJson& header, size_t data_bytes) {
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string file;
  for (int shift = 0; shift < 64; shift += 8) file.push_back(char(uint64_t(text.size()) >> shift));
  file += text;
  for (size_t i = 0; i < data_bytes; ++i) file.push_back(char(i * 37));
  return file;
}

void convert_seeds(const fs::path& tokenizer_dir, Corpus& corpus) {
  const OrderedJson bf16 = {{"dtype", "BF16"}, {"shape", {2, 3}}, {"data_offsets", {0, 12}}};
  const OrderedJson f32 = {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {12, 28}}};
  corpus.add('0', safetensors_file({{"__metadata__", {{"format", "pt"}}}, {"model.norm.weight", bf16}}, 12));
  corpus.add('0', safetensors_file({{"a", bf16}, {"b", f32}}, 28));
  corpus.add('0', safetensors_file(OrderedJson::object(), 0));

  const kipp::Checkpoint& tiny = *kipp::find_checkpoint("kipp-test/qwen3-tiny");
  corpus.add('1', kipp::testing::config_json(tiny, kipp::testing::ConfigForm::post_trained));

  // The real tokenizer.json with the ids below 1,000 and the merges among them: every part the
  // converter reads, small enough for a fuzzer's input.
  constexpr uint64_t kKeptIds = 1000;
  OrderedJson tokenizer = OrderedJson::parse(read_file(tokenizer_dir / "tokenizer.json"));
  OrderedJson& model = tokenizer.at("model");
  OrderedJson vocab = OrderedJson::object();
  for (const auto& [text, id] : model.at("vocab").items())
    if (id.get<uint64_t>() < kKeptIds) vocab[text] = id;
  OrderedJson merges = OrderedJson::array();
  for (const OrderedJson& merge : model.at("merges")) {
    const std::string left = merge[0], right = merge[1];
    if (vocab.contains(left) && vocab.contains(right) && vocab.contains(left + right)) merges.push_back(merge);
  }
  model["vocab"] = std::move(vocab);
  model["merges"] = std::move(merges);
  const std::string config = read_file(tokenizer_dir / "tokenizer_config.json");
  corpus.add('2', tokenizer.dump() + std::string(1, '\0') + config);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s OUT_DIR SHARED_DATA_DIR FIXTURES_DIR TOKENIZER_DIR SEEDS_SRC_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1], data = argv[2], fixtures = argv[3], tokenizer_dir = argv[4], seeds_src = argv[5];
  try {
    const std::vector<Json> schemas = shared_schemas(data);
    Corpus json_schema(out, "json_schema"), regex(out, "regex"), gbnf(out, "gbnf");
    for (const Json& schema : schemas) {
      json_schema.add(schema.dump());
      collect_patterns(schema, regex);
    }
    regex.add_files(seeds_src / "regex");
    gbnf.add_files(data / "llama.cpp-grammars", ".gbnf");

    Corpus api_request(out, "api_request");
    fixture_bodies(fixtures, api_request);
    api_request.add_files(seeds_src / "api_request");

    Corpus convert_readers(out, "convert_readers");
    convert_seeds(tokenizer_dir, convert_readers);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kipp_fuzz_corpora: %s\n", error.what());
    return 1;
  }
  return 0;
}
