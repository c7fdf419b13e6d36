// `kipp convert --checkpoint ID --source DIR [--quant Q] [--head q8_0] --out FILE`
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/report.h"
#include "convert/converter.h"

namespace kipp::cli {

namespace {
struct ConvertArgs {
  std::string checkpoint, source, quant = "bf16", head = "bf16", out;
};
}  // namespace

Command add_convert_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("convert", "Convert a Hugging Face Qwen3 checkpoint directory to a Kipp GGUF artifact");
  auto args = std::make_shared<ConvertArgs>();
  sub->add_option("--checkpoint", args->checkpoint, "Registry id, e.g. qwen3-0.6b")->required();
  sub->add_option("--source", args->source, "Directory with config.json, tokenizer files and safetensors")->required();
  sub->add_option("--quant", args->quant, "Projection weights: bf16, q8_0 or affine4_gs32")
      ->check(CLI::IsMember({"bf16", "q8_0", "affine4_gs32"}));
  sub->add_option("--head", args->head,
                  "Output head (the tied embedding or the untied lm_head): bf16 (default) or q8_0, which halves "
                  "the bytes decode reads for it (docs/MODELS.md gives its measured error)")
      ->check(CLI::IsMember({"bf16", "q8_0"}));
  sub->add_option("--out", args->out, "Output .gguf path")->required();
  return {sub, [args] {
            ConvertOptions options;
            options.checkpoint_id = args->checkpoint;
            options.source_dir = args->source;
            options.scheme = *parse_quant_scheme(args->quant);
            options.head = *parse_head_scheme(args->head);
            options.out_path = args->out;
            ProgressDisplay progress(ProgressDisplay::mode_for(stderr), stderr);
            options.on_progress = show_progress_on(progress);
            auto report = convert_checkpoint(options);
            progress.finish();
            if (!report) return cli::report(report.error());
            if (auto line = describe_stored_tied_head(report->stored_tied_head, args->checkpoint); !line.empty())
              std::fprintf(stderr, "%s\n", line.c_str());
            if (report->long_context_config_beside)
              std::fprintf(stderr, "%s\n", describe_long_context_config(args->checkpoint).c_str());
            std::fprintf(stderr, "converted %s (%s): %llu tensors, %.1f MiB in %.2f s, peak RSS %.1f MiB -> %s\n",
                         args->checkpoint.c_str(), args->quant.c_str(), (unsigned long long)report->tensors,
                         double(report->bytes_written) / (1 << 20), report->seconds,
                         double(report->peak_rss_bytes) / (1 << 20), args->out.c_str());
            return 0;
          }};
}

}  // namespace kipp::cli
