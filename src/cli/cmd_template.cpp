// `kipp template --model FILE --messages FILE.json [--tools TOOLS.json] [--no-thinking]
// [--no-generation-prompt]`: prints, byte for byte and with no newline added, the prompt the
// checkpoint's chat template makes of a conversation. FILE.json is an array of messages (which may
// hold tool_calls and tool turns) or an object with such a "messages" array (an OpenAI request
// body, whose "tools" are used too); "-" reads standard input. TOOLS.json is a request's `tools`
// array.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "chat/chat_messages.h"
#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "model/model_file.h"
#include "util/files.h"

namespace kipp::cli {
namespace {

struct TemplateArgs {
  std::string model, messages, tools;
  bool no_thinking = false, no_generation_prompt = false;
};

Result<std::string> read_messages_text(const std::string& path) {
  if (path != "-") return read_text_file(path);
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// Key order matters (the template prints tools and arguments as the client wrote them).
Result<nlohmann::ordered_json> read_ordered_json(const std::string& path) {
  KIPP_ASSIGN(std::string text, read_messages_text(path));
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return fail(path, ": not valid JSON");
  return parsed;
}

Status print_template(const TemplateArgs& args) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  KIPP_ASSIGN(nlohmann::ordered_json parsed, read_ordered_json(args.messages));
  const bool body = parsed.is_object() && parsed.contains("messages");
  auto messages = parse_chat_messages(body ? parsed["messages"] : parsed);
  if (!messages) return with_context(args.messages, messages.error());
  ChatOptions options;
  nlohmann::ordered_json tools_json;
  if (!args.tools.empty()) {
    KIPP_ASSIGN(tools_json, read_ordered_json(args.tools));
  } else if (body && parsed.contains("tools")) {
    tools_json = parsed["tools"];
  }
  if (!tools_json.is_null()) {
    auto tools = parse_chat_tools(tools_json);
    if (!tools) return with_context(args.tools.empty() ? args.messages : args.tools, tools.error());
    for (const ChatTool& tool : *tools) options.tools.push_back(tool.declaration);
  }
  options.enable_thinking = !args.no_thinking;
  options.add_generation_prompt = !args.no_generation_prompt;
  auto prompt = render_chat(model->checkpoint().variant, *messages, options);
  if (!prompt) return with_context(std::string(model->checkpoint().id), prompt.error());
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return {};
}

}  // namespace

Command add_template_command(CLI::App& app) {
  auto* sub = app.add_subcommand("template", "Print the exact chat prompt the checkpoint's template makes of messages");
  auto args = std::make_shared<TemplateArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact of an instruct or thinking checkpoint")->required();
  sub->add_option("--messages", args->messages,
                  "JSON: [{\"role\":…,\"content\":…}, …] or {\"messages\": […]}; - for stdin")
      ->required();
  sub->add_option("--tools", args->tools,
                  "JSON: a request's tools array ([{\"type\":\"function\",\"function\":{…}}, …])");
  sub->add_flag("--no-thinking", args->no_thinking, "enable_thinking=false (hybrid checkpoints: an empty think block)");
  sub->add_flag("--no-generation-prompt", args->no_generation_prompt, "Leave out the opening of the assistant's turn");
  return {sub, [args] {
            if (auto done = print_template(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
