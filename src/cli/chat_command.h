// `kipp chat`'s settings and its loop, which `kipp run` also opens, once it has the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/backend_flags.h"
#include "cli/constraint_flags.h"
#include "cli/sampling_flags.h"
#include "util/error.h"

namespace kipp::cli {

struct ChatArgs {
  std::string model, system, tools, tool_choice = "auto";
  uint32_t max_tokens = 2048, context = 8192;
  std::optional<uint32_t> thinking_budget;
  bool no_thinking = false, hide_thinking = false;
  SamplingFlags sampling;
  ConstraintFlags constraint;
  BackendFlags backend;
};

// Every flag of the chat but --model.
void add_chat_options(CLI::App& app, ChatArgs& args);

// The interactive chat on args.model until /exit or the end of input.
Status run_chat(const ChatArgs& args);

}  // namespace kipp::cli
