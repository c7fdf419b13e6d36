// The structured-output flags `kipp generate`, `kipp chat` and `kipp grammar` share:
// --json-schema FILE or --grammar FILE (GBNF), --not-strict and --json-form for schemas.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp::cli {

struct CompiledConstraint {
  grammar::Grammar grammar;
  std::vector<grammar::Unenforced> unenforced;  // --not-strict: what the schema left out
};

// The words --json-form takes (tidy, exact), for every command with the flag (kipp serve too).
CLI::Validator json_form_words();

class ConstraintFlags {
 public:
  // `form`: the JSON form a schema compiles to unless --json-form says otherwise (tidy where a model
  // generates, exact where `kipp grammar` validates).
  void add_to(CLI::App& app, grammar::JsonForm form);
  // The form schemas compile to (--json-form): also that of `kipp chat`'s forced calls.
  grammar::JsonForm form() const { return form_; }
  bool given() const { return !json_schema_.empty() || !gbnf_.empty(); }
  // The compiled grammar of the file given (call only when given()); a schema Kipp cannot
  // enforce exactly is refused, naming the keyword, unless --not-strict.
  Result<CompiledConstraint> compile() const;
  // compile(), ready to run over `tokenizer`'s vocabulary; what --not-strict left unenforced is
  // listed on stderr. Null when no flag was given.
  Result<std::shared_ptr<grammar::TokenMasks>> masks_for(const Tokenizer& tokenizer) const;
  // For messages: the file given.
  const std::string& file() const { return gbnf_.empty() ? json_schema_ : gbnf_; }

 private:
  std::string json_schema_, gbnf_;
  bool not_strict_ = false;
  grammar::JsonForm form_ = grammar::JsonForm::tidy;
};

}  // namespace kipp::cli
