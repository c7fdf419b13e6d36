// The strict loader: maps a Kipp artifact read-only, matches it to its registry entry, requires
// every field to equal that entry, and binds the weight views and tokenizer data. Any mismatch is
// one error line before inference can start. What this does not do: compute anything.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_reader.h"
#include "model/artifact_layout.h"
#include "model/weights.h"
#include "registry/registry.h"
#include "util/mapped_file.h"

namespace kipp {

struct TokenizerData {
  std::span<const std::string_view> tokens;  // id -> byte-level token text, vocab entries
  std::vector<int32_t> token_types;          // gguf::TokenType per id
  std::span<const std::string_view> merges;  // "left right", by rank
  uint32_t eos_id = 0;
  uint32_t padding_id = 0;
  std::optional<uint32_t> bos_id;
  bool add_bos = false;
  std::string_view chat_template;  // empty when the checkpoint has none
};

struct SourceFileRecord {
  std::string_view name;
  std::string_view sha256;
};

struct Provenance {
  std::string_view converter_version;
  std::vector<SourceFileRecord> source_files;
};

// Everything the loader derives from a parsed file; all views point into that file's image.
struct ValidatedArtifact {
  const Checkpoint* checkpoint = nullptr;
  QuantScheme scheme = QuantScheme::bf16;
  HeadScheme head = HeadScheme::bf16;
  TokenizerData tokenizer;
  Provenance provenance;
  ModelWeights weights;
};

// Applies every rule of the strict loader to a parsed file (also used on in-memory images).
Result<ValidatedArtifact> validate_artifact(const gguf::File& file);

class ModelFile {
 public:
  static Result<std::unique_ptr<ModelFile>> open(const std::string& path);

  const std::string& path() const { return mapping_.path(); }
  uint64_t file_bytes() const { return mapping_.bytes().size(); }
  const Checkpoint& checkpoint() const { return *artifact_.checkpoint; }
  QuantScheme scheme() const { return artifact_.scheme; }
  HeadScheme head() const { return artifact_.head; }
  const ModelWeights& weights() const { return artifact_.weights; }
  const TokenizerData& tokenizer() const { return artifact_.tokenizer; }
  const Provenance& provenance() const { return artifact_.provenance; }
  const gguf::File& gguf() const { return gguf_; }

 private:
  ModelFile() = default;

  MappedFile mapping_;
  gguf::File gguf_;
  ValidatedArtifact artifact_;
};

}  // namespace kipp
