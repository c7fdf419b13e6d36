// libFuzzer target: a schema's `pattern` (and patternProperties' keys) reach the regular
// expression compiler straight from a request. Bytes are one pattern, compiled over plain UTF-8,
// checked as a grammar and walked, steered by the pattern's own text (a literal pattern matches it).
#include <cstdint>
#include <string_view>
#include <utility>

#include "fuzz_support.h"
#include "grammar/regex.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view pattern = kipp::fuzz::text_of(data, size);
  kipp::grammar::GrammarBuilder builder;
  auto rule = kipp::grammar::compile_pattern(builder, pattern, kipp::grammar::utf8_char_rule());
  if (!rule) return 0;
  auto grammar = std::move(builder).finish(*rule);
  if (!grammar) return 0;
  kipp::fuzz::walk_grammar(std::move(*grammar), pattern);
  return 0;
}
