// The bodies of the embedding and reranking endpoints, read and checked before any work:
// POST /v1/embeddings in OpenAI's shape, POST /v1/rerank and /rerank in Jina's and Cohere's
// (../shared/QWEN3-MOE-EMBED-AS-PUBLISHED.md §8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/api_request.h"

namespace kipp::server {

// Inputs one embeddings request may hold (OpenAI's limit), and documents one rerank request may.
inline constexpr uint32_t kMaxEmbeddingInputs = 2048;
inline constexpr uint32_t kMaxRerankDocuments = 1024;

struct EmbeddingsRequest {
  std::string model;
  // Each input: a text (tokenized by the caller, which appends <|endoftext|>) or token ids, used as
  // given.
  struct Input {
    std::optional<std::string> text;
    std::vector<uint32_t> ids;
  };
  std::vector<Input> inputs;
  bool base64 = false;      // encoding_format "base64": each vector's little-endian FP32 bytes
  uint32_t dimensions = 0;  // 0: the whole vector
  std::vector<std::string> ignored_fields;
};

// `input`: a string, an array of strings, an array of token ids, or an array of such arrays;
// `encoding_format`: "float" or "base64"; `dimensions`: a positive whole number (its range is the
// checkpoint's, checked by the caller); `user` is accepted and not used.
ApiResult<EmbeddingsRequest> read_embeddings_request(std::string_view body, const ApiLimits& limits);

struct RerankRequest {
  std::optional<std::string> model;  // optional in Jina's and Cohere's APIs
  std::string query;
  std::vector<std::string> documents;  // strings, or objects {"text": ...}
  std::optional<uint32_t> top_n;
  bool return_documents = false;
  std::optional<std::string> instruction;  // replaces the model card's default instruction
  std::vector<std::string> ignored_fields;
};

ApiResult<RerankRequest> read_rerank_request(std::string_view body, const ApiLimits& limits);

}  // namespace kipp::server
