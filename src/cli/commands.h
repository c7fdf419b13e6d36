// Each `kipp` subcommand registers its flags on the CLI11 app and returns the function that runs
// it. Runners return the process exit status; they print errors as one line on stderr.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "util/error.h"

namespace kipp::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_registry_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_pull_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_detokenize_command(CLI::App& app);
Command add_logits_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_template_command(CLI::App& app);
Command add_perplexity_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_grammar_command(CLI::App& app);

// Prints "kipp: <message>" to stderr and returns the exit status: 1, or kExitUnreachable when a
// host could not be reached (scripts such as `make quickstart` tell being offline apart by it).
inline constexpr int kExitUnreachable = 3;
int report(const Error& error);

}  // namespace kipp::cli
