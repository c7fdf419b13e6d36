// `kipp rerank --model FILE --query Q (--documents FILE | --document D ...) [--instruct TASK]
// [--max-tokens N] [--json]`: each document's relevance to the query, P("yes"), from a Qwen3-Reranker checkpoint
// (engine/rerank.h), sorted from the most relevant. A document too long for the context is cut at
// its end, and the output says by how many tokens.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "engine/rerank.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

namespace kipp::cli {
namespace {

struct RerankArgs {
  std::string model, query, documents_file;
  std::vector<std::string> documents;
  std::string instruct = std::string(kDefaultRerankInstruction);
  uint32_t max_tokens = 0;  // 0: the checkpoint's context
  bool json = false;
  BackendFlags backend;
};

// One document per line of the file; blank lines are not documents.
Result<std::vector<std::string>> read_documents(const std::string& path) {
  KIPP_ASSIGN(std::string text, read_text_file(path));
  std::vector<std::string> documents;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) documents.push_back(std::move(line));
  }
  if (documents.empty()) return fail(path, ": no documents (one per line)");
  return documents;
}

// A document's first line, at most 60 bytes of it, for the plain listing.
std::string preview(const std::string& document) {
  std::string line = document.substr(0, document.find('\n'));
  if (line.size() <= 60) return line;
  size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return line.substr(0, cut) + "...";
}

Status run_rerank(const RerankArgs& args) {
  if (args.documents.empty() == args.documents_file.empty())
    return fail("give the documents one way: --document (repeatable) or --documents FILE");
  std::vector<std::string> documents = args.documents;
  if (!args.documents_file.empty()) {
    KIPP_ASSIGN(documents, read_documents(args.documents_file));
  }
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
  if (std::string refusal = role_refusal(c, Role::rerank, "kipp rerank"); !refusal.empty()) return fail(refusal);
  if (args.max_tokens > c.context)
    return fail("--max-tokens ", args.max_tokens, " is past ", c.id, "'s context of ", c.context);
  const uint32_t max_tokens = args.max_tokens ? args.max_tokens : c.context;
  KIPP_ASSIGN(Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  std::vector<RerankPrompt> prompts;
  std::vector<std::vector<uint32_t>> ids;
  for (size_t i = 0; i < documents.size(); ++i) {
    auto prompt = rerank_prompt(tokenizer, args.instruct, args.query, documents[i], max_tokens);
    if (!prompt) return with_context("document " + std::to_string(i), prompt.error());
    ids.push_back(prompt->tokens);
    prompts.push_back(std::move(*prompt));
  }
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  KIPP_ASSIGN(std::vector<double> scores, rerank_scores(*backend, *model, ids));
  std::vector<size_t> order(documents.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (!args.json) {
    for (size_t i : order) {
      std::printf("%.6f\t%zu\t%s", scores[i], i, preview(documents[i]).c_str());
      if (prompts[i].document_tokens_dropped)
        std::printf("\t(the last %u tokens cut to fit %u)", prompts[i].document_tokens_dropped, max_tokens);
      std::printf("\n");
    }
    return {};
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  uint64_t tokens = 0;
  for (size_t i : order) {
    nlohmann::ordered_json result = {{"index", i}, {"relevance_score", scores[i]}};
    if (prompts[i].document_tokens_dropped) result["truncated_tokens"] = prompts[i].document_tokens_dropped;
    results.push_back(std::move(result));
  }
  for (const auto& prompt : ids) tokens += prompt.size();
  const nlohmann::ordered_json out = {{"model", c.id},
                                      {"object", "list"},
                                      {"results", results},
                                      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  std::printf("%s\n", out.dump().c_str());
  return {};
}

}  // namespace

Command add_rerank_command(CLI::App& app) {
  auto* sub = app.add_subcommand("rerank", "Score documents against a query with a Qwen3-Reranker checkpoint");
  auto args = std::make_shared<RerankArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact of a reranker checkpoint")->required();
  sub->add_option("--query", args->query, "The query")->required();
  sub->add_option("--document", args->documents, "A document (repeat for several)");
  sub->add_option("--documents", args->documents_file, "A file of documents, one per line");
  sub->add_option("--instruct", args->instruct, "The task instruction of the prompt")->capture_default_str();
  sub->add_option("--max-tokens", args->max_tokens,
                  "The longest prompt: a longer document is cut at its end to fit (default: the checkpoint's context; "
                  "the model card's examples use 8192)");
  sub->add_flag("--json", args->json, "Print one JSON object in the shape of the Jina and Cohere /v1/rerank responses");
  args->backend.add_to(*sub);
  return {sub, [args] {
            if (auto done = run_rerank(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
