// `kipp grammar (--json-schema FILE | --grammar FILE) [--check TEXTFILE] [--json] [--model FILE]
// [--not-strict]`: compiles a constraint without running a model, the way the server and
// `kipp generate` would (or refuses it, naming the keyword and where it is), and with --check says
// whether a text is a whole sentence of it (exit 0) or where it stops being a prefix of one
// (exit 1, with the byte offset). --model reads the artifact's vocabulary for token statistics:
// how many tokens the constraint allows at the start and, along the checked text, at each token,
// and what the token sets cost to find.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/constraint_flags.h"
#include "cli/report.h"
#include "engine/token_constraint.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"
#include "util/json_fields.h"
#include "util/stats.h"

namespace kipp::cli {
namespace {

struct GrammarArgs {
  ConstraintFlags constraint;
  std::string check, model;
  bool json = false;
};

// Token statistics along a text: its tokens (as the tokenizer splits it) taken one at a time.
struct TokenStats {
  size_t vocabulary = 0;  // tokens constrained text can use
  size_t allowed_at_start = 0;
  std::vector<size_t> allowed_along;  // before each token of the checked text
  Summary first_seconds;              // finding a state's token set the first time
  Summary cached_seconds;             // the same again, from the cache
  uint64_t most_steps = 0;            // matcher steps the costliest set took (TokenMasks::kMaxStepsPerSet bounds it)
  bool tokens_allowed = true;         // every token of the text was in its step's set
};

Result<TokenStats> token_stats(const std::string& model_path, grammar::Grammar g, const std::string* text) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(model_path));
  KIPP_ASSIGN(const Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  KIPP_ASSIGN(std::shared_ptr<grammar::Automaton> automaton, grammar::Automaton::create(std::move(g)));
  grammar::TokenMasks masks(automaton, constrained_vocabulary(tokenizer));
  TokenStats stats;
  stats.vocabulary = masks.trie().token_count();
  using Clock = std::chrono::steady_clock;
  std::vector<double> first, cached;
  // A state's set, timed: the first time is a walk over the trie, the second a cache lookup.
  const auto timed_set = [&](grammar::StateId state) -> Result<std::shared_ptr<const grammar::TokenSet>> {
    std::shared_ptr<const grammar::TokenSet> set;
    for (int round = 0; round < 2; ++round) {
      const uint64_t walks = masks.walks();
      const uint64_t steps = automaton->steps();
      const auto start = Clock::now();
      KIPP_ASSIGN(set, masks.allowed(state));
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      stats.most_steps = std::max(stats.most_steps, automaton->steps() - steps);
      (masks.walks() > walks ? first : cached).push_back(seconds);
    }
    return set;
  };
  KIPP_ASSIGN(auto start_set, timed_set(automaton->start()));
  stats.allowed_at_start = start_set->count();
  if (text) {
    KIPP_ASSIGN(const std::vector<TokenId> ids, tokenizer.encode(*text));
    grammar::StateId state = automaton->start();
    for (TokenId id : ids) {
      KIPP_ASSIGN(auto set, timed_set(state));
      stats.allowed_along.push_back(set->count());
      stats.tokens_allowed = stats.tokens_allowed && set->has(id);
      KIPP_ASSIGN(state, masks.after(state, tokenizer.token_bytes(id)));
      if (state == grammar::kDeadState) break;
    }
  }
  stats.first_seconds = summarize(first);
  stats.cached_seconds = summarize(cached);
  return stats;
}

json::Json tokens_json(const TokenStats& stats, bool along_text) {
  json::Json tokens = {{"vocabulary", stats.vocabulary},
                       {"allowed_at_start", stats.allowed_at_start},
                       {"first_set_seconds_median", stats.first_seconds.median},
                       {"cached_set_seconds_median", stats.cached_seconds.median},
                       {"most_set_steps", stats.most_steps},
                       {"max_set_steps", grammar::TokenMasks::kMaxStepsPerSet}};
  if (along_text) {
    tokens["allowed_along_text"] = stats.allowed_along;
    tokens["text_tokens_allowed"] = stats.tokens_allowed;
  }
  return tokens;
}

// The report for a person: what `out` (the --json object) says, in sentences.
void print_report(const GrammarArgs& args, const CompiledConstraint& compiled, const json::Json& out,
                  const std::optional<std::string>& text) {
  std::printf("compiled in %.1f ms: %zu rules, %zu items, digest %s\n", out["compile_seconds"].get<double>() * 1e3,
              compiled.grammar.rules.size(), compiled.grammar.item_count(), compiled.grammar.digest().c_str());
  for (const grammar::Unenforced& u : compiled.unenforced)
    std::printf("not enforced: keyword '%s' at %s\n", u.keyword.c_str(), u.pointer.empty() ? "/" : u.pointer.c_str());
  if (text) {
    const json::Json& check = out["check"];
    if (check["complete"].get<bool>())
      std::printf("%s: a whole sentence (%zu bytes)\n", args.check.c_str(), text->size());
    else if (check["prefix"].get<bool>())
      std::printf("%s: not a whole sentence: the text ends early (a prefix of %zu bytes)\n", args.check.c_str(),
                  text->size());
    else
      std::printf("%s: not a sentence: stops being a prefix at byte %zu\n", args.check.c_str(),
                  check["valid_bytes"].get<size_t>());
  }
  if (out.contains("tokens")) {
    const json::Json& tokens = out["tokens"];
    std::printf("tokens: %zu of %zu allowed at the start; token set %.1f us the first time, %.2f us cached (medians)\n",
                tokens["allowed_at_start"].get<size_t>(), tokens["vocabulary"].get<size_t>(),
                tokens["first_set_seconds_median"].get<double>() * 1e6,
                tokens["cached_set_seconds_median"].get<double>() * 1e6);
    std::printf("matcher steps: the costliest token set took %llu of its limit of %llu\n",
                static_cast<unsigned long long>(tokens["most_set_steps"].get<uint64_t>()),
                static_cast<unsigned long long>(tokens["max_set_steps"].get<uint64_t>()));
  }
}

int run_grammar(const GrammarArgs& args) {
  const auto compile_start = std::chrono::steady_clock::now();
  auto compiled = args.constraint.compile();
  const double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  if (!compiled) {
    if (args.json) {
      json::Json out = {{"compiled", false}, {"error", compiled.error().message}};
      std::printf("%s\n", out.dump().c_str());
      return 1;
    }
    return report(compiled.error());
  }
  json::Json out = {{"compiled", true},
                    {"rules", compiled->grammar.rules.size()},
                    {"items", compiled->grammar.item_count()},
                    {"digest", compiled->grammar.digest()},
                    {"compile_seconds", compile_seconds}};
  json::Json unenforced = json::Json::array();
  for (const grammar::Unenforced& u : compiled->unenforced)
    unenforced.push_back({{"keyword", u.keyword}, {"pointer", u.pointer}});
  out["unenforced"] = unenforced;

  std::optional<std::string> text;
  if (!args.check.empty()) {
    auto read = read_text_file(args.check);
    if (!read) return report(read.error());
    text = std::move(read).value();
  }
  int status = 0;
  if (text) {
    auto automaton = grammar::Automaton::create(compiled->grammar);
    if (!automaton) return report(automaton.error());
    auto checked = grammar::check_text(**automaton, *text);
    if (!checked) return report(checked.error());
    out["check"] = {{"complete", checked->complete},
                    {"prefix", checked->prefix},
                    {"valid_bytes", checked->valid_bytes},
                    {"bytes", text->size()}};
    status = checked->complete ? 0 : 1;
  }
  if (!args.model.empty()) {
    auto stats = token_stats(args.model, compiled->grammar, text ? &*text : nullptr);
    if (!stats) return report(stats.error());
    out["tokens"] = tokens_json(*stats, text.has_value());
  }
  if (args.json) std::printf("%s\n", out.dump().c_str());
  else print_report(args, *compiled, out, text);
  return status;
}
}  // namespace

Command add_grammar_command(CLI::App& app) {
  auto* sub = app.add_subcommand("grammar",
                                 "Compile a JSON Schema or GBNF grammar without a model, and check a text against it");
  auto args = std::make_shared<GrammarArgs>();
  args->constraint.add_to(*sub, grammar::JsonForm::exact);
  sub->add_option("--check", args->check, "A text file: is it a whole sentence of the grammar? (exit 0 yes, 1 no)");
  sub->add_option("--model", args->model, "A Kipp .gguf artifact: token statistics over its vocabulary");
  sub->add_flag("--json", args->json, "One JSON object on stdout");
  return {sub, [args] {
            if (!args->constraint.given())
              return report(fail("kipp grammar: give exactly one of --json-schema FILE and --grammar FILE"));
            return run_grammar(*args);
          }};
}

}  // namespace kipp::cli
