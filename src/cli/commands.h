// Each `kipp` subcommand registers its flags on the CLI11 app and returns the function that runs
// it. Runners return the process exit status; they print errors as one line on stderr
// (cli/report.h).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace kipp::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_registry_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_pull_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_list_command(CLI::App& app);
Command add_rm_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_detokenize_command(CLI::App& app);
Command add_logits_command(CLI::App& app);
Command add_embed_command(CLI::App& app);
Command add_rerank_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_template_command(CLI::App& app);
Command add_perplexity_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_grammar_command(CLI::App& app);

}  // namespace kipp::cli
