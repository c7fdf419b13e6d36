// The tiny instruct test checkpoint, opened with its tokenizer: where generation tests start.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "model/model_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kipp::testing {

struct TinyCheckpoint {
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<uint32_t> stop_ids;
};

// Fills `out`; a missing or broken fixture fails the calling test (wrap in ASSERT_NO_FATAL_FAILURE).
inline void open_tiny_checkpoint(TinyCheckpoint& out) {
  auto file = ModelFile::open(test_models_dir() + "/qwen3-tiny.bf16.gguf");
  ASSERT_TRUE(file) << file.error().message;
  out.file = std::move(*file);
  auto tokenizer = Tokenizer::create(out.file->tokenizer());
  ASSERT_TRUE(tokenizer) << tokenizer.error().message;
  out.tokenizer = std::make_unique<Tokenizer>(std::move(*tokenizer));
  out.stop_ids = out.file->checkpoint().stop_ids();
}

}  // namespace kipp::testing
