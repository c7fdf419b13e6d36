// One choice's answer as the scheduler streams it, read the same way for every API: tool calls
// found by token (and given ids), the reasoning split from the content, the logprob tokens, the
// tokens spent thinking and how the answer ended. The OpenAI and Anthropic responders only shape
// what this gathers.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "chat/reasoning_split.h"
#include "chat/tool_calls.h"
#include "scheduler/scheduler.h"
#include "server/metrics.h"

namespace kipp::server {

struct IdentifiedCall {
  std::string id;
  ChatToolCall call;
};

// What one update added.
struct AnswerPiece {
  std::string reasoning, content;
  size_t first_new_call = 0;  // calls[first_new_call..] completed with this update
  size_t text_offset = 0;     // characters of logprob text before this update's (completions' text_offset)
};

struct AnswerOptions {
  bool find_calls = false;  // take calls out (not when the request offers none, or tool_choice none)
  CallReader read_call = call_reader(CallSyntax::json);  // reads a call's text in the checkpoint's syntax
  bool parallel_calls = true;                            // false: calls after the first are dropped (and counted)
  std::string call_id_prefix = "call_";                  // OpenAI's call_…, Anthropic's toolu_…
};

class Answer {
 public:
  Answer(const AnswerOptions& options, ToolCallCounts& counts);

  AnswerPiece take(const ChoiceUpdate& update);

  std::string text;  // everything, as generated
  std::string reasoning, content;
  std::vector<IdentifiedCall> calls;
  std::vector<TokenReport> tokens;
  std::optional<uint32_t> reasoning_tokens;  // set once the think block is closed (or never left)
  FinishReason finish = FinishReason::length;
  std::string stop;   // the stop string that ended it
  bool done = false;  // the last update came

 private:
  std::string new_call_id();

  ReasoningSplitter splitter_;
  std::optional<ToolCallExtractor> extractor_;
  const bool parallel_calls_;
  const std::string call_id_prefix_;
  ToolCallCounts& counts_;
  std::mt19937_64 call_ids_;
  size_t characters_ = 0;
};

}  // namespace kipp::server
