// libFuzzer target: a JSON Schema from a request (response_format, tools, llama.cpp's json_schema)
// is the largest input an attacker hands the grammar compiler. Bytes are read as the server reads
// a body (refused past the default nesting limit, then parsed), compiled strictly and, when that
// refuses, leniently (what strict: false would do), and the grammar is walked as generation would.
#include <cstdint>
#include <string_view>
#include <utility>

#include "fuzz_support.h"
#include "grammar/json_schema.h"
#include "server/api_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = kipp::fuzz::text_of(data, size);
  auto parsed = kipp::server::parse_request_json(text, kipp::server::ApiLimits{});
  if (!parsed.ok()) return 0;
  const nlohmann::json schema(parsed.value());

  kipp::grammar::SchemaOptions options;
  auto compiled = kipp::grammar::compile_json_schema(schema, options);
  if (!compiled) {
    // Only a refusal by keyword compiles differently without strict; other errors are final.
    if (!kipp::grammar::parse_refusal(compiled.error().message)) return 0;
    options.strict = false;
    compiled = kipp::grammar::compile_json_schema(schema, options);
    if (!compiled) return 0;
  }
  kipp::fuzz::walk_grammar(std::move(compiled->grammar), text);
  return 0;
}
