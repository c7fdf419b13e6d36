// `kipp chat --model FILE [--system S] [--no-thinking] [--thinking-budget N] [--hide-thinking] [-n N] [sampling flags]
// [--json-schema F | --grammar F] [--tools T.json [--tool-choice C]]`: an interactive multi-turn
// chat (every answer follows the schema or grammar when one is given, after the thinking). Each
// turn renders the whole conversation with the chat template, keeps the longest prefix of it
// already in the KV cache and evaluates only the rest. Thinking is shown dimmed (or hidden);
// /reset starts over, /exit (or end of input) quits, and Ctrl-C stops the answer being written
// without leaving. With tools, the model's calls are shown and the user types each result, which
// goes back as a tool message before the model answers again: a tool loop by hand.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <deque>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "chat/chat_messages.h"
#include "chat/chat_template.h"
#include "chat/coder_call_grammar.h"
#include "chat/tool_calls.h"
#include "cli/backend_flags.h"
#include "cli/chat_command.h"
#include "cli/commands.h"
#include "cli/constraint_flags.h"
#include "cli/report.h"
#include "cli/sampling_flags.h"
#include "engine/generator.h"
#include "engine/token_constraint.h"
#include "grammar/json_schema.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"

namespace kipp::cli {
namespace {

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted.store(true); }

// Writes an answer's streamed text, showing its think block dimmed (on a terminal) or not at all.
// Where the block begins and ends is the decoder's AnswerLayout's to say (the PartStarts that come
// with the text), so <think> spelled by ordinary tokens is only text.
class AnswerPrinter {
 public:
  AnswerPrinter(bool hide, bool terminal) : hide_(hide), terminal_(terminal) {}
  void print(std::string_view piece, std::span<const PartStart> starts) {
    for (const PartStart& start : starts)  // a call's tags are text here
      if (start.part == PartStart::Part::thought || start.part == PartStart::Part::answer) starts_.push_back(start);
    while (true) {
      if (!starts_.empty() && starts_.front().offset <= offset_) {
        if (starts_.front().part == PartStart::Part::thought) enter_thinking();
        else leave_thinking();
        tag_left_ = starts_.front().tag_bytes;  // written by enter/leave_thinking, dimmed
        starts_.pop_front();
        continue;
      }
      if (piece.empty()) break;
      const size_t length = starts_.empty() ? piece.size() : std::min(piece.size(), starts_.front().offset - offset_);
      const size_t tag = std::min(tag_left_, length);
      tag_left_ -= tag;
      write(piece.substr(tag, length - tag));
      piece.remove_prefix(length);
      offset_ += length;
    }
    std::fflush(stdout);
  }
  void finish() {
    leave_thinking();
    std::fputs("\n", stdout);
    std::fflush(stdout);
  }

 private:
  void write(std::string_view text) {
    if (thinking_ && hide_) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  void enter_thinking() {
    thinking_ = true;
    if (!hide_) std::fputs(terminal_ ? "\x1b[2m<think>" : "<think>", stdout);
  }
  void leave_thinking() {
    if (thinking_ && !hide_) std::fputs(terminal_ ? "</think>\x1b[0m" : "</think>", stdout);
    thinking_ = false;
  }
  const bool hide_, terminal_;
  bool thinking_ = false;
  std::deque<PartStart> starts_;  // ahead of the text written
  size_t offset_ = 0;             // bytes of the answer looked at
  size_t tag_left_ = 0;           // bytes of the last tag still to skip
};

// The tools of `kipp chat --tools`, and how answers may call them.
struct ChatToolSetup {
  std::vector<ChatTool> tools;  // empty: no tools
  CallTokens tokens;
  bool calls_possible = false;                  // tool_choice is not "none"
  std::shared_ptr<grammar::TokenMasks> forced;  // required or a named function: every answer is a call
  std::optional<TokenFrame> frame;
};

Result<ChatToolSetup> set_up_tools(const ChatArgs& args, Variant variant, const Tokenizer& tokenizer,
                                   SamplingParams& sampling) {
  ChatToolSetup setup;
  if (args.tools.empty()) {
    if (args.tool_choice != "auto") return fail("--tool-choice needs --tools");
    return setup;
  }
  KIPP_ASSIGN(const std::string text, read_text_file(args.tools));
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return fail(args.tools, ": not valid JSON");
  auto tools = parse_chat_tools(json);
  if (!tools) return with_context(args.tools, tools.error());
  setup.tools = std::move(*tools);
  KIPP_ASSIGN(setup.tokens, find_call_tokens(tokenizer));
  setup.calls_possible = args.tool_choice != "none";
  if (args.tool_choice == "none") sampling.banned.push_back(setup.tokens.open);
  if (args.tool_choice == "auto" || args.tool_choice == "none") return setup;
  if (args.constraint.given())
    return fail("--tool-choice ", args.tool_choice, " and a schema or grammar cannot both shape the answer");
  const bool any = args.tool_choice == "required";
  const std::string only = any ? "" : args.tool_choice;
  grammar::Grammar call_grammar;
  if (call_syntax(variant) == CallSyntax::xml) {
    KIPP_ASSIGN(CoderForcedCall forced, coder_forced_call(setup.tools, only, args.constraint.form()));
    call_grammar = std::move(forced.grammar);
  } else {
    KIPP_ASSIGN(ForcedCall forced, forced_call_schema(setup.tools, only));
    grammar::SchemaOptions options;
    options.strict = forced.strict;
    options.form = args.constraint.form();
    KIPP_ASSIGN(grammar::CompiledSchema compiled, grammar::compile_json_schema(nlohmann::json(forced.schema), options));
    call_grammar = std::move(compiled.grammar);
  }
  KIPP_ASSIGN(std::shared_ptr<grammar::Automaton> automaton, grammar::Automaton::create(std::move(call_grammar)));
  setup.forced = std::make_shared<grammar::TokenMasks>(std::move(automaton), constrained_vocabulary(tokenizer));
  setup.frame = TokenFrame{setup.tokens.open, setup.tokens.close, any};
  return setup;
}

class Chat {
 public:
  Chat(const ChatArgs& args, const ModelFile& model, BackendModel& backend, BackendSession& session,
       const Tokenizer& tokenizer, SamplingParams sampling, std::shared_ptr<grammar::TokenMasks> constraint,
       ChatToolSetup tools)
      : args_(args),
        c_(model.checkpoint()),
        backend_(backend),
        session_(session),
        tokenizer_(tokenizer),
        sampling_(std::move(sampling)),
        stop_ids_(c_.stop_ids()),
        constraint_(std::move(constraint)),
        tools_(std::move(tools)) {
    for (const ChatTool& tool : tools_.tools) tool_declarations_.push_back(tool.declaration);
    if (tools_.forced) constraint_ = tools_.forced;
    reset();
  }

  void reset() {
    messages_.clear();
    if (!args_.system.empty()) messages_.push_back({"system", args_.system, std::nullopt, {}});
    session_.reset();
    cached_.clear();
  }

  // One user turn: the answer streamed to stdout, the reuse figures to stderr. While the model
  // calls tools, each call's result is read from the user and the model answers again (freely:
  // --tool-choice forces only the answer to the user's message, or the loop would never end).
  Status turn(const std::string& text) {
    messages_.push_back({"user", text, std::nullopt, {}});
    KIPP_ASSIGN(std::vector<ChatToolCall> calls, answer(true));
    while (!calls.empty()) {
      for (const ChatToolCall& call : calls) {
        std::printf("result of %s> ", call.name.c_str());
        std::fflush(stdout);
        std::string result;
        if (!std::getline(std::cin, result)) return {};
        messages_.push_back({"tool", result, std::nullopt, {}});
      }
      KIPP_ASSIGN(calls, answer(false));
    }
    return {};
  }

 private:
  // One answer to the conversation so far, kept in it; the calls it made (none without tools).
  Result<std::vector<ChatToolCall>> answer(bool to_user) {
    ChatOptions options;
    options.enable_thinking = !args_.no_thinking;
    options.tools = tool_declarations_;
    auto prompt_text = render_chat(c_.variant, messages_, options);
    if (!prompt_text) return drop_turn(prompt_text.error());
    auto prompt = tokenizer_.encode(*prompt_text);
    if (!prompt) return drop_turn(prompt.error());
    if (prompt->size() >= session_.capacity())
      return drop_turn(fail("the conversation (", prompt->size(), " tokens) fills the ", session_.capacity(),
                            "-token context: /reset to start over"));
    // Keep what the cache already holds of this prompt; evaluate only the rest.
    size_t reused = 0;
    while (reused < cached_.size() && reused + 1 < prompt->size() && cached_[reused] == (*prompt)[reused]) ++reused;
    if (auto cut = session_.truncate(uint32_t(reused)); !cut) return drop_turn(cut.error());
    cached_.resize(reused);  // kept in step with the session, whatever happens below
    const std::span<const uint32_t> suffix = std::span(*prompt).subspan(reused);

    GenerateOptions generate_options;
    generate_options.max_tokens = args_.max_tokens;
    generate_options.sampling = sampling_;
    generate_options.sampling.seed += turns_++;  // a fresh draw each turn, still reproducible
    generate_options.cancelled = [] { return interrupted.load(); };
    const bool forced = tools_.forced && to_user;
    generate_options.constraint = tools_.forced && !forced ? nullptr : constraint_;
    generate_options.answer_start = chat_answer_start(c_.variant, !args_.no_thinking);
    if (forced) generate_options.constraint_frame = tools_.frame;
    generate_options.thinking_budget = args_.thinking_budget;
    GenerateContext context{backend_, session_, tokenizer_, stop_ids_};
    AnswerPrinter printer(args_.hide_thinking, isatty(STDOUT_FILENO));
    auto answer =
        generate(context, suffix, generate_options,
                 [&](std::string_view piece, std::span<const PartStart> starts) { printer.print(piece, starts); });
    if (!answer) return drop_turn(answer.error());
    printer.finish();

    // What the cache holds now: the prompt, then every sampled token that was evaluated.
    cached_.assign(prompt->begin(), prompt->end());
    cached_.insert(cached_.end(), answer->tokens.begin(), answer->tokens.end());
    cached_.resize(session_.length());
    std::string content = answer->text;
    std::vector<ChatToolCall> calls;
    if (tools_.calls_possible) content = take_calls(*answer, call_reader(call_syntax(c_.variant), tools_.tools), calls);
    if (c_.variant == Variant::thinking_2507) content = "<think>\n" + content;  // the prompt opened it
    ChatMessage said{"assistant", content, std::nullopt, {}};
    for (const ChatToolCall& call : calls) std::printf("[call %s %s]\n", call.name.c_str(), call.arguments.c_str());
    said.tool_calls = calls;
    messages_.push_back(std::move(said));
    const GenerationTimings& t = answer->timings;
    std::fprintf(stderr, "[%zu prompt tokens reused, %u evaluated; %u generated at %.1f tok/s; %s]\n", reused,
                 t.prompt_tokens, t.generated_tokens,
                 t.decode_seconds > 0 ? t.generated_tokens / t.decode_seconds : 0.0,
                 std::string(finish_reason_name(answer->finish)).c_str());
    return calls;
  }

  // The answer's text without its calls, found by token (the layout's part starts), through the
  // same extractor the server uses.
  static std::string take_calls(const Generation& answer, CallReader reader, std::vector<ChatToolCall>& calls) {
    ToolCallExtractor extractor(std::move(reader));
    ToolCallExtractor::Output found;
    extractor.push(answer.text, answer.parts, found);
    extractor.finish(found);
    calls = std::move(found.calls);
    return std::move(found.text);
  }

  // An answer that could not run leaves the conversation as it was.
  Error drop_turn(Error error) {
    messages_.pop_back();
    return error;
  }

  const ChatArgs& args_;
  const Checkpoint& c_;
  BackendModel& backend_;
  BackendSession& session_;
  const Tokenizer& tokenizer_;
  SamplingParams sampling_;
  std::vector<uint32_t> stop_ids_;
  std::vector<ChatMessage> messages_;
  std::vector<uint32_t> cached_;                     // the tokens in the session's KV cache, in order
  std::shared_ptr<grammar::TokenMasks> constraint_;  // every answer follows it, when given
  ChatToolSetup tools_;
  std::vector<nlohmann::ordered_json> tool_declarations_;  // as the template prints them
  uint64_t turns_ = 0;
};

}  // namespace

Status run_chat(const ChatArgs& args) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
  if (std::string refusal = role_refusal(c, Role::generate, "kipp chat"); !refusal.empty()) return fail(refusal);
  if (c.variant == Variant::base)
    return fail(c.id, " is a base checkpoint: it has no chat template (continue raw text with `kipp generate`)");
  KIPP_ASSIGN(SamplingParams sampling, args.sampling.resolve(c.variant));
  KIPP_ASSIGN(Tokenizer tokenizer, Tokenizer::create(model->tokenizer()));
  KIPP_TRY(validate(sampling, uint32_t(tokenizer.vocab_size())));
  if (args.context < 2) return fail("--context must be at least 2 tokens");
  KIPP_ASSIGN(std::unique_ptr<BackendModel> backend, args.backend.create(*model));
  KIPP_ASSIGN(std::unique_ptr<BackendSession> session, backend->create_session(std::min(args.context, c.context)));

  struct sigaction action {};
  action.sa_handler = on_interrupt;
  action.sa_flags = SA_RESTART;  // a Ctrl-C at the prompt does not end the read
  sigaction(SIGINT, &action, nullptr);

  KIPP_ASSIGN(std::shared_ptr<grammar::TokenMasks> constraint, args.constraint.masks_for(tokenizer));
  KIPP_ASSIGN(ChatToolSetup tools, set_up_tools(args, c.variant, tokenizer, sampling));
  Chat chat(args, *model, *backend, *session, tokenizer, sampling, std::move(constraint), std::move(tools));
  std::fprintf(stderr, "kipp chat: %s on %s, seed %llu. /reset starts over, /exit quits, Ctrl-C stops an answer.\n",
               std::string(c.id).c_str(), backend->describe().c_str(), static_cast<unsigned long long>(sampling.seed));
  std::string line;
  while (true) {
    std::fputs("> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    interrupted.store(false);  // a Ctrl-C typed at the prompt stops nothing
    if (line == "/exit") break;
    if (line == "/reset") {
      chat.reset();
      std::fputs("(conversation cleared)\n", stdout);
      continue;
    }
    if (line.empty()) continue;
    if (auto done = chat.turn(line); !done) std::fprintf(stderr, "kipp: %s\n", done.error().message.c_str());
  }
  std::fputs("\n", stdout);
  return {};
}

void add_chat_options(CLI::App& sub, ChatArgs& args) {
  sub.add_option("--system", args.system, "A system message that opens the conversation");
  sub.add_flag("--no-thinking", args.no_thinking, "enable_thinking=false (hybrid checkpoints answer directly)");
  sub.add_flag("--hide-thinking", args.hide_thinking, "Do not print the thinking (it is shown dimmed by default)");
  sub.add_option("-n,--max-tokens", args.max_tokens, "Most tokens per answer (default 2048)");
  sub.add_option("--thinking-budget", args.thinking_budget,
                 "Most tokens of thought per answer: then </think> is written for the model and the answer begins");
  sub.add_option("--context", args.context,
                 "Tokens the conversation may hold, KV allocated once (default 8192, at most the checkpoint's)");
  sub.add_option("--tools", args.tools,
                 "A JSON file holding a request's tools array: the model may call them; you type each result");
  sub.add_option("--tool-choice", args.tool_choice,
                 "auto (default), none (no call can start), required (every answer is a call) or a function's name");
  args.sampling.add_to(sub);
  args.constraint.add_to(sub, grammar::JsonForm::tidy);
  args.backend.add_to(sub);
}

Command add_chat_command(CLI::App& app) {
  auto* sub = app.add_subcommand("chat", "Interactive multi-turn chat (instruct and thinking checkpoints)");
  auto args = std::make_shared<ChatArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact of an instruct or thinking checkpoint")->required();
  add_chat_options(*sub, *args);
  return {sub, [args] {
            if (auto done = run_chat(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
