#include "cli/constraint_flags.h"

#include <cstdio>
#include <string>

#include "engine/token_constraint.h"
#include "grammar/gbnf.h"
#include "util/files.h"
#include "util/json_fields.h"

namespace kipp::cli {

CLI::Validator json_form_words() {
  // Each word becomes the enum's number, which CLI11 then reads into the JsonForm option.
  return CLI::Validator(
      [](std::string& word) -> std::string {
        if (word == "tidy") word = std::to_string(int(grammar::JsonForm::tidy));
        else if (word == "exact") word = std::to_string(int(grammar::JsonForm::exact));
        else return "must be tidy or exact, not '" + word + "'";
        return {};
      },
      "tidy|exact");
}

void ConstraintFlags::add_to(CLI::App& app, grammar::JsonForm form) {
  form_ = form;
  auto* schema = app.add_option("--json-schema", json_schema_,
                                "Constrain the output to this JSON Schema (draft 2020-12 or draft-07), exactly");
  auto* gbnf = app.add_option("--grammar", gbnf_,
                              "Constrain the output to this GBNF grammar (llama.cpp's syntax; root rule 'root')");
  schema->excludes(gbnf);
  app.add_flag("--not-strict", not_strict_,
               "JSON Schema: enforce what Kipp can and list the rest instead of refusing (json_schema.strict=false)");
  app.add_option("--json-form", form_,
                 std::string("JSON Schema and forced calls: tidy (no member or item the schema does not list unless "
                             "it needs one, json.dumps spacing: what a model should write) or exact (every instance "
                             "the schema accepts) (default ") +
                     (form == grammar::JsonForm::tidy ? "tidy" : "exact") + "; docs/STRUCTURED.md)")
      ->transform(json_form_words());
}

Result<CompiledConstraint> ConstraintFlags::compile() const {
  if (!gbnf_.empty()) {
    KIPP_ASSIGN(const std::string text, read_text_file(gbnf_));
    auto compiled = grammar::compile_gbnf(text);
    if (!compiled) return with_context(gbnf_, compiled.error());
    return CompiledConstraint{std::move(compiled).value(), {}};
  }
  KIPP_ASSIGN(const std::string text, read_text_file(json_schema_));
  KIPP_ASSIGN(const json::Json schema, json::parse(text, json_schema_));
  grammar::SchemaOptions options;
  options.strict = !not_strict_;
  options.form = form_;
  auto compiled = grammar::compile_json_schema(schema, options);
  if (!compiled) return with_context(json_schema_, compiled.error());
  return CompiledConstraint{std::move(compiled->grammar), std::move(compiled->unenforced)};
}

Result<std::shared_ptr<grammar::TokenMasks>> ConstraintFlags::masks_for(const Tokenizer& tokenizer) const {
  if (!given()) return std::shared_ptr<grammar::TokenMasks>();
  KIPP_ASSIGN(CompiledConstraint compiled, compile());
  for (const grammar::Unenforced& u : compiled.unenforced)
    std::fprintf(stderr, "kipp: %s: not enforced: keyword '%s' at %s\n", file().c_str(), u.keyword.c_str(),
                 u.pointer.empty() ? "/" : u.pointer.c_str());
  KIPP_ASSIGN(std::shared_ptr<grammar::Automaton> automaton, grammar::Automaton::create(std::move(compiled.grammar)));
  return std::make_shared<grammar::TokenMasks>(std::move(automaton), constrained_vocabulary(tokenizer));
}

}  // namespace kipp::cli
