// `kipp inspect FILE`: what an artifact holds and whether the strict loader accepts it.
// It reports what it can read even from a file the loader rejects, then the verdict.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "backend/kv_store.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "gguf/gguf_reader.h"
#include "model/model_file.h"
#include "util/mapped_file.h"
#include "util/printable.h"

namespace kipp::cli {
namespace {

std::string shape_text(const gguf::TensorInfo& info) {
  std::string out;
  for (uint32_t d = 0; d < info.n_dims; ++d) out += (d ? " x " : "") + std::to_string(info.dims[d]);
  return out;
}

std::string string_or(const gguf::File& file, std::string_view key, const char* fallback) {
  auto value = file.get_string(key);
  return value ? printable(value.value(), 200) : fallback;
}

void print_summary(const gguf::File& file, uint64_t file_bytes) {
  std::printf("file size        %.2f MiB\n", double(file_bytes) / (1 << 20));
  std::printf("architecture     %s\n", string_or(file, keys::architecture, "(missing)").c_str());
  std::printf("checkpoint       %s\n", string_or(file, keys::kipp_checkpoint, "(missing)").c_str());
  std::printf("source           %s@%s\n", string_or(file, keys::kipp_repository, "?").c_str(),
              string_or(file, keys::kipp_revision, "?").c_str());
  std::printf("quant scheme     %s\n", string_or(file, keys::kipp_quant_scheme, "(missing)").c_str());
  std::printf("output head      %s\n", string_or(file, keys::kipp_quant_head, "bf16").c_str());
  std::printf("converter        %s\n", string_or(file, keys::kipp_converter, "(missing)").c_str());
  std::printf("metadata keys    %zu\n", file.metadata.size());
  std::printf("\n%-28s %-6s %-20s %12s\n", "tensor", "type", "shape", "bytes");
  uint64_t total = 0;
  for (const auto& info : file.tensors) {
    auto type = gguf::tensor_type_info(info.type);
    std::printf("%-28.*s %-6s %-20s %12llu\n", int(info.name.size()), info.name.data(),
                type ? std::string(type->name).c_str() : "?", shape_text(info).c_str(), (unsigned long long)info.bytes);
    total += info.bytes;
  }
  std::printf("%zu tensors, %.2f MiB of tensor data\n", file.tensors.size(), double(total) / (1 << 20));
}

void print_model_facts(const ValidatedArtifact& artifact) {
  const Checkpoint& c = *artifact.checkpoint;
  std::printf("\nrole             %s", std::string(role_name(c.role)).c_str());
  if (c.role == Role::embed)
    std::printf(" (no head: the vector is the final norm at the appended <|endoftext|>, %u to %u values)",
                family::matryoshka_min_dims, c.hidden);
  if (c.role == Role::rerank)
    std::printf(" (scores P(\"yes\") from head rows %u and %u)", family::token_yes, family::token_no);
  std::printf("\nvariant          %s\n", std::string(variant_name(c.variant)).c_str());
  std::printf("dimensions       %u layers, hidden %u, ffn %u, %u q heads / %u kv heads x %u, vocab %u\n", c.layers,
              c.hidden, c.ffn, c.q_heads, c.kv_heads, c.head_dim(), c.vocab());
  std::printf("context          %u tokens, rope theta %.0f, %s embeddings\n", c.context, double(c.rope_theta),
              c.tied ? "tied" : "untied");
  std::printf("parameters       %llu\n", (unsigned long long)c.parameter_count());
  for (const KvFormat format : {KvFormat::bf16, KvFormat::q8_0}) {
    const uint64_t bytes = kv_bytes_per_token(c, format);
    std::printf("KV bytes/token   %llu (%s K and V, all layers%s); %.1f MiB at full context\n",
                (unsigned long long)bytes, format == KvFormat::bf16 ? "BF16" : "Q8_0",
                format == KvFormat::bf16 ? "" : ", --kv-cache q8_0", double(bytes) * c.context / (1 << 20));
  }
  std::printf("tokenizer        %zu tokens, %zu merges, eos %u, chat template %s\n", artifact.tokenizer.tokens.size(),
              artifact.tokenizer.merges.size(), artifact.tokenizer.eos_id,
              artifact.tokenizer.chat_template.empty() ? "absent" : "present");
  for (const auto& source : artifact.provenance.source_files)
    std::printf("source file      %.*s sha256 %.*s\n", int(source.name.size()), source.name.data(),
                int(source.sha256.size()), source.sha256.data());
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "Show an artifact's checkpoint, tensors, sizes and validation verdict");
  auto path = std::make_shared<std::string>();
  sub->add_option("file", *path, "A Kipp .gguf artifact")->required();
  return {sub, [path] {
            using Clock = std::chrono::steady_clock;
            const auto started = Clock::now();
            auto mapping = MappedFile::open(*path);
            if (!mapping) return report(mapping.error());
            auto file = gguf::File::parse(mapping->bytes());
            auto artifact = file ? validate_artifact(file.value()) : Result<ValidatedArtifact>(file.error());
            const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
            if (!file) {
              std::printf("verdict          INVALID: %s\n", file.error().message.c_str());
              return report(with_context(*path, file.error()));
            }
            print_summary(file.value(), mapping->bytes().size());
            if (!artifact) {
              std::printf("\nverdict          INVALID: %s\n", artifact.error().message.c_str());
              return report(with_context(*path, artifact.error()));
            }
            print_model_facts(artifact.value());
            std::printf("load time        %.1f ms (mmap, parse, validation, weight binding)\n", load_ms);
            std::printf("\nverdict          OK: a valid %s artifact\n", std::string(artifact->checkpoint->id).c_str());
            return 0;
          }};
}

}  // namespace kipp::cli
