// The `kipp` binary: one subcommand per user task (README.md, "The CLI at a glance").
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace kipp::cli;
  CLI::App app{"Kipp: an inference engine for the pinned Qwen3 checkpoints", "kipp"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kipp 0.1.0");
  std::vector<Command> commands = {
      add_run_command(app),        add_list_command(app),    add_rm_command(app),         add_registry_command(app),
      add_pull_command(app),       add_convert_command(app), add_inspect_command(app),    add_tokenize_command(app),
      add_detokenize_command(app), add_logits_command(app),  add_template_command(app),   add_grammar_command(app),
      add_generate_command(app),   add_chat_command(app),    add_perplexity_command(app), add_embed_command(app),
      add_rerank_command(app),     add_serve_command(app),   add_bench_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  for (const Command& command : commands)
    if (command.app->parsed()) return command.run();
  return 2;
}
