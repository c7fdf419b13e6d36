// Where unit tests find the real tokenizer files, the fixture models and a scratch directory.
// KIPP_TEST_MODELS / KIPP_TEST_TMP in the environment override the compiled-in paths, so the
// sanitizer build can run against the main build's fixture.
#pragma once

#include <string>

#include "published_files.h"

namespace kipp::testing {

std::string tokenizer_dir();
// What the fixture generator reads: the tokenizer files, the fact sheet, the Apache-2.0 text.
PublishedSources published_sources();
std::string test_models_dir();
// A fresh, empty directory for one test, under the build tree, removed when the process exits.
std::string scratch_dir(const std::string& test_name);

}  // namespace kipp::testing
