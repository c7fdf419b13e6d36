// `kipp-grammar-walk --model ARTIFACT --json-schema FILE... [--walks N] [--seed S] [--max-tokens M]
// [--json-form tidy|exact]`:
// random walks through the token sets a schema allows over an artifact's vocabulary, the way a
// sampler would take them but with no model: at every step one allowed token, chosen at random.
// Half the time the choice is among the tokens that close something (a quote, a bracket, a
// brace), so that walks end in a few hundred tokens instead of wandering in strings. One JSON line
// per walk on stdout: {"schema": FILE, "finished": true, "text": ...} when the walk took a stop token (the text is
// then a whole answer), {"finished": false, ...} when it ran out of tokens. A refused schema is
// one line {"schema": FILE, "refused": message}. An empty token set before the text is whole is an error (exit 1):
// the mask must never strand a generation.
#include <algorithm>
#include <bit>
#include <map>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/token_constraint.h"
#include "grammar/json_schema.h"
#include "model/model_file.h"
#include "scheduler/constraint_cache.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

namespace kipp {
namespace {

struct WalkArgs {
  std::string model;
  std::vector<std::string> schemas;
  uint32_t walks = 4, max_tokens = 400;
  uint64_t seed = 1;
  grammar::JsonForm form = grammar::JsonForm::tidy;  // as the server generates
};

bool closes_something(std::string_view bytes) { return bytes.find_first_of("\"]}") != std::string_view::npos; }

Status walk_schema(const WalkArgs& args, const std::string& path, const Tokenizer& tokenizer,
                   const std::vector<bool>& closing_tokens, ConstraintCache& cache, std::span<const uint32_t> stop,
                   std::mt19937_64& random) {
  KIPP_ASSIGN(const std::string text, read_text_file(path));
  nlohmann::json schema;
  try {
    schema = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    return fail(path, ": not JSON: ", error.what());
  }
  grammar::SchemaOptions options;
  options.form = args.form;
  auto compiled = grammar::compile_json_schema(schema, options);
  if (!compiled) {
    std::printf("%s\n", nlohmann::json{{"schema", path}, {"refused", compiled.error().message}}.dump().c_str());
    return {};
  }
  KIPP_ASSIGN(std::shared_ptr<grammar::Automaton> automaton, grammar::Automaton::create(std::move(compiled->grammar)));
  const std::shared_ptr<grammar::TokenMasks> masks = cache.masks_for(std::move(automaton));
  std::vector<uint32_t> any, closing;
  const AnswerLayout answering(AnswerStart::at_once, ThinkTokens{});  // no thinking: all of it is constrained
  for (uint32_t walk = 0; walk < args.walks; ++walk) {
    TokenConstraint constraint(masks, stop);
    std::string out;
    bool finished = false;
    // Matcher steps (parse stacks visited) one token cost at most, and the walk's sum: what the
    // limits per token set (TokenMasks::kMaxStepsPerSet) and per answer
    // (TokenConstraint::kMaxStepsPerAnswer) are measured against.
    uint64_t most_steps = 0, steps = 0;
    const auto count_steps = [&](uint64_t before) {
      const uint64_t taken = masks->automaton().steps() - before;
      most_steps = std::max(most_steps, taken);
      steps += taken;
    };
    for (uint32_t step = 0; step < args.max_tokens && !finished; ++step) {
      const uint64_t steps_before = masks->automaton().steps();
      KIPP_ASSIGN(const AllowedTokens* allowed, constraint.allowed(answering));
      if (allowed->count() == 0) return fail(path, ": no token allowed after ", nlohmann::json(out).dump());
      any.clear();
      closing.clear();
      if (allowed->set) {
        const std::span<const uint64_t> words = allowed->set->words();
        for (size_t w = 0; w < words.size(); ++w)
          for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
            const uint32_t id = uint32_t(w * 64 + size_t(std::countr_zero(bits)));
            any.push_back(id);
            if (closing_tokens[id]) closing.push_back(id);
          }
      }
      if (allowed->has(stop[0]) && (any.empty() || random() % 3 == 0)) {
        count_steps(steps_before);
        finished = true;
        break;
      }
      const std::vector<uint32_t>& pool = !closing.empty() && random() % 2 == 0 ? closing : any;
      const uint32_t token = pool[random() % pool.size()];
      KIPP_TRY(constraint.accept(token, tokenizer.token_bytes(token), TokenRole::answer));
      count_steps(steps_before);
      out += tokenizer.token_bytes(token);
    }
    std::printf("%s\n", nlohmann::json{{"schema", path},
                                       {"finished", finished},
                                       {"text", out},
                                       {"most_steps_per_token", most_steps},
                                       {"steps", steps}}
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  }
  return {};
}

Status run(const WalkArgs& args) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  KIPP_ASSIGN(const Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  const std::vector<uint32_t> stop = model->checkpoint().stop_ids();
  if (stop.empty()) return fail(args.model, ": the checkpoint has no stop token");
  ConstraintCache cache(tokenizer);
  std::vector<bool> closing_tokens(tokenizer.vocab_size());
  for (uint32_t id = 0; id < tokenizer.vocab_size(); ++id)
    closing_tokens[id] = closes_something(tokenizer.token_bytes(id));
  std::mt19937_64 random(args.seed);
  for (const std::string& path : args.schemas)
    KIPP_TRY(walk_schema(args, path, tokenizer, closing_tokens, cache, stop, random));
  return {};
}

}  // namespace
}  // namespace kipp

int main(int argc, char** argv) {
  kipp::WalkArgs args;
  CLI::App app{"Random walks through a JSON Schema's token sets (a test tool)"};
  app.add_option("--model", args.model, "A Kipp .gguf artifact (its vocabulary)")->required();
  app.add_option("--json-schema", args.schemas, "Schema files, one walk series each")->required();
  app.add_option("--walks", args.walks, "Walks to take");
  app.add_option("--seed", args.seed, "Seed of the random choices");
  app.add_option("--max-tokens", args.max_tokens, "Tokens per walk at most");
  app.add_option("--json-form", args.form, "The JSON form schemas compile to: tidy (default) or exact")
      ->transform(CLI::CheckedTransformer(std::map<std::string, kipp::grammar::JsonForm>{
          {"tidy", kipp::grammar::JsonForm::tidy}, {"exact", kipp::grammar::JsonForm::exact}}));
  CLI11_PARSE(app, argc, argv);
  if (auto done = run(args); !done) {
    std::fprintf(stderr, "kipp-grammar-walk: %s\n", done.error().message.c_str());
    return 1;
  }
  return 0;
}
