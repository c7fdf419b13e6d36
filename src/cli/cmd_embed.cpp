// `kipp embed --model FILE (--text T ... | --file F | --jsonl IN) [--instruct TASK]
// [--dimensions D] [--json]`: one L2-normalised vector per input from a Qwen3-Embedding
// checkpoint (engine/embedding.h). Without --json each vector is one line of space-separated
// values (numpy.loadtxt reads it); with --json, one object in the shape of OpenAI's
// /v1/embeddings response.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "engine/embedding.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"
#include "util/json_fields.h"

namespace kipp::cli {
namespace {

struct EmbedArgs {
  std::string model;
  std::vector<std::string> texts;
  std::string file, jsonl;
  std::string instruct = {};  // set: every input is a query under this task
  uint32_t dimensions = 0;
  bool json = false;
  BackendFlags backend;
};

// A JSON Lines input: each line a string, or an object whose "text" is one; blank lines skipped.
Result<std::vector<std::string>> read_jsonl(const std::string& path) {
  KIPP_ASSIGN(std::string text, read_text_file(path));
  std::vector<std::string> inputs;
  size_t line_number = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + " line " + std::to_string(line_number);
    KIPP_ASSIGN(json::Json value, json::parse(line, where));
    if (value.is_string()) {
      inputs.push_back(value.get<std::string>());
      continue;
    }
    if (!value.is_object()) return fail(where, ": expected a string or an object with \"text\"");
    KIPP_ASSIGN(std::string input, json::get_string(value, "text", where));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

Result<std::vector<std::string>> gather_texts(const EmbedArgs& args) {
  const int sources = !args.texts.empty() + !args.file.empty() + !args.jsonl.empty();
  if (sources != 1) return fail("give the inputs one way: --text (repeatable), --file or --jsonl");
  if (!args.file.empty()) {
    KIPP_ASSIGN(std::string text, read_text_file(args.file));
    return std::vector<std::string>{std::move(text)};
  }
  if (!args.jsonl.empty()) {
    KIPP_ASSIGN(std::vector<std::string> inputs, read_jsonl(args.jsonl));
    if (inputs.empty()) return fail(args.jsonl, ": no inputs");
    return inputs;
  }
  return args.texts;
}

void print_vectors(const std::vector<std::vector<float>>& vectors) {
  for (const std::vector<float>& v : vectors) {
    for (size_t i = 0; i < v.size(); ++i) std::printf(i ? " %.9g" : "%.9g", double(v[i]));
    std::printf("\n");
  }
}

void print_json(const Checkpoint& c, const std::vector<std::vector<float>>& vectors,
                const std::vector<std::vector<uint32_t>>& inputs) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  uint64_t tokens = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vectors[i]}});
    tokens += inputs[i].size();
  }
  const nlohmann::ordered_json out = {{"object", "list"},
                                      {"data", data},
                                      {"model", c.id},
                                      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  std::printf("%s\n", out.dump().c_str());
}

Status run_embed(const EmbedArgs& args) {
  KIPP_ASSIGN(std::vector<std::string> texts, gather_texts(args));
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
  if (std::string refusal = role_refusal(c, Role::embed, "kipp embed"); !refusal.empty()) return fail(refusal);
  KIPP_ASSIGN(const uint32_t width, embedding_width(c, args.dimensions));
  KIPP_ASSIGN(Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  std::vector<std::vector<uint32_t>> inputs;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = args.instruct.empty() ? texts[i] : instructed_query(args.instruct, texts[i]);
    auto ids = embedding_tokens(tokenizer, c, text);
    if (!ids) return with_context("input " + std::to_string(i), ids.error());
    inputs.push_back(std::move(*ids));
  }
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  KIPP_ASSIGN(std::vector<std::vector<float>> vectors, embed(*backend, c, inputs, width));
  if (args.json) print_json(c, vectors, inputs);
  else print_vectors(vectors);
  return {};
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto* sub = app.add_subcommand("embed", "Embed texts with a Qwen3-Embedding checkpoint (one vector per input)");
  auto args = std::make_shared<EmbedArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact of an embedding checkpoint")->required();
  sub->add_option("--text", args->texts, "A text to embed (repeat for several)");
  sub->add_option("--file", args->file, "Embed this file's whole text as one input");
  sub->add_option("--jsonl", args->jsonl, "Embed each line of this JSON Lines file: a string, or {\"text\": ...}");
  sub->add_option("--instruct", args->instruct,
                  "Embed the inputs as queries for this task: \"Instruct: TASK\\nQuery:TEXT\" (documents take none; "
                  "the model card's default task is \"" +
                      std::string(kDefaultEmbeddingTask) + "\")");
  sub->add_option("--dimensions", args->dimensions,
                  "Keep the first D values of each vector before normalising (Matryoshka; 32 to the hidden width)");
  sub->add_flag("--json", args->json, "Print one JSON object in the shape of OpenAI's /v1/embeddings response");
  args->backend.add_to(*sub);
  return {sub, [args] {
            if (auto done = run_embed(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
