// `kipp chat --model FILE [--system S] [--no-thinking] [--hide-thinking] [-n N] [sampling flags]
// [--json-schema F | --grammar F]`: an interactive multi-turn chat (every answer follows the schema
// or grammar when one is given, after the thinking). Each turn renders the whole conversation with the chat
// template, keeps the longest prefix of it already in the KV cache and evaluates only the rest.
// Thinking is shown dimmed (or hidden); /reset starts over, /exit (or end of input) quits, and
// Ctrl-C stops the answer being written without leaving.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cli/backend_flags.h"
#include "cli/commands.h"
#include "cli/constraint_flags.h"
#include "cli/sampling_flags.h"
#include "engine/chat_template.h"
#include "engine/generator.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"

namespace kipp::cli {
namespace {

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted.store(true); }

struct ChatArgs {
  std::string model, system;
  uint32_t max_tokens = 2048, context = 8192;
  bool no_thinking = false, hide_thinking = false;
  SamplingFlags sampling;
  ConstraintFlags constraint;
  BackendFlags backend;
};

// Writes an answer's streamed text, showing what lies between <think> and </think> dimmed (on a
// terminal) or not at all. Both tags are single tokens, so each arrives whole in one piece.
class AnswerPrinter {
 public:
  AnswerPrinter(bool starts_thinking, bool hide, bool terminal)
      : thinking_(starts_thinking), hide_(hide), terminal_(terminal) {
    if (thinking_) enter_thinking();
  }
  void print(std::string_view piece) {
    while (!piece.empty()) {
      const std::string_view tag = thinking_ ? "</think>" : "<think>";
      const size_t at = piece.find(tag);
      write(piece.substr(0, at));
      if (at == std::string_view::npos) break;
      piece.remove_prefix(at + tag.size());
      if (thinking_) {
        leave_thinking();
      } else {
        enter_thinking();
      }
    }
    std::fflush(stdout);
  }
  void finish() {
    if (thinking_) leave_thinking();
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
    if (!hide_) std::fputs(terminal_ ? "</think>\x1b[0m" : "</think>", stdout);
    thinking_ = false;
  }
  bool thinking_, hide_, terminal_;
};

class Chat {
 public:
  Chat(const ChatArgs& args, const ModelFile& model, BackendModel& backend, BackendSession& session,
       const Tokenizer& tokenizer, SamplingParams sampling, std::shared_ptr<grammar::TokenMasks> constraint)
      : args_(args), c_(model.checkpoint()), backend_(backend), session_(session), tokenizer_(tokenizer),
        sampling_(std::move(sampling)), stop_ids_(c_.stop_ids()), constraint_(std::move(constraint)) {
    reset();
  }

  void reset() {
    messages_.clear();
    if (!args_.system.empty()) messages_.push_back({"system", args_.system, std::nullopt, {}});
    session_.reset();
    cached_.clear();
  }

  // One user turn: the answer streamed to stdout, the reuse figures to stderr.
  Status turn(const std::string& text) {
    messages_.push_back({"user", text, std::nullopt, {}});
    ChatOptions options;
    options.enable_thinking = !args_.no_thinking;
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
    generate_options.constraint = constraint_;
    generate_options.constraint_start = chat_constraint_start(c_.variant, !args_.no_thinking);
    GenerateContext context{backend_, session_, tokenizer_, stop_ids_};
    AnswerPrinter printer(c_.variant == Variant::thinking_2507, args_.hide_thinking, isatty(STDOUT_FILENO));
    auto answer = generate(context, suffix, generate_options, [&](std::string_view piece) { printer.print(piece); });
    if (!answer) return drop_turn(answer.error());
    printer.finish();

    // What the cache holds now: the prompt, then every sampled token that was evaluated.
    cached_.assign(prompt->begin(), prompt->end());
    cached_.insert(cached_.end(), answer->tokens.begin(), answer->tokens.end());
    cached_.resize(session_.length());
    std::string content = answer->text;
    if (c_.variant == Variant::thinking_2507) content = "<think>\n" + content;  // the prompt opened it
    messages_.push_back({"assistant", content, std::nullopt, {}});
    const GenerationTimings& t = answer->timings;
    std::fprintf(stderr, "[%zu prompt tokens reused, %u evaluated; %u generated at %.1f tok/s; %s]\n", reused,
                 t.prompt_tokens, t.generated_tokens,
                 t.decode_seconds > 0 ? t.generated_tokens / t.decode_seconds : 0.0,
                 std::string(finish_reason_name(answer->finish)).c_str());
    return {};
  }

 private:
  // A turn that could not run leaves the conversation as it was.
  Status drop_turn(Error error) {
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
  std::vector<uint32_t> cached_;  // the tokens in the session's KV cache, in order
  std::shared_ptr<grammar::TokenMasks> constraint_;  // every answer follows it, when given
  uint64_t turns_ = 0;
};

Status run_chat(const ChatArgs& args) {
  KIPP_ASSIGN(std::unique_ptr<ModelFile> model, ModelFile::open(args.model));
  const Checkpoint& c = model->checkpoint();
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
  Chat chat(args, *model, *backend, *session, tokenizer, sampling, std::move(constraint));
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

}  // namespace

Command add_chat_command(CLI::App& app) {
  auto* sub = app.add_subcommand("chat", "Interactive multi-turn chat (instruct and thinking checkpoints)");
  auto args = std::make_shared<ChatArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact of an instruct or thinking checkpoint")->required();
  sub->add_option("--system", args->system, "A system message that opens the conversation");
  sub->add_flag("--no-thinking", args->no_thinking, "enable_thinking=false (hybrid checkpoints answer directly)");
  sub->add_flag("--hide-thinking", args->hide_thinking, "Do not print the thinking (it is shown dimmed by default)");
  sub->add_option("-n,--max-tokens", args->max_tokens, "Most tokens per answer (default 2048)");
  sub->add_option("--context", args->context,
                  "Tokens the conversation may hold, KV allocated once (default 8192, at most the checkpoint's)");
  args->sampling.add_to(*sub);
  args->constraint.add_to(*sub);
  args->backend.add_to(*sub);
  return {sub, [args] {
            if (auto done = run_chat(*args); !done) return report(done.error());
            return 0;
          }};
}

}  // namespace kipp::cli
