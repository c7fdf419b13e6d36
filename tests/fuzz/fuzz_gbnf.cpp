// libFuzzer target: llama.cpp's `grammar` field hands the GBNF compiler text from a request.
// Bytes are one grammar file, compiled with its root rule and walked as generation would.
#include <cstdint>
#include <string_view>
#include <utility>

#include "fuzz_support.h"
#include "grammar/gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = kipp::fuzz::text_of(data, size);
  auto grammar = kipp::grammar::compile_gbnf(text);
  if (!grammar) return 0;
  kipp::fuzz::walk_grammar(std::move(*grammar), text);
  return 0;
}
