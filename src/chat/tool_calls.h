// Tool calls in a generated answer, found by token: Qwen3 writes each call as its <tool_call>
// token, a JSON object {"name": ..., "arguments": {...}}, and its </tool_call> token. Both tags are
// single added tokens, so a call starts only where the model sampled that token. The same
// characters spelled by ordinary tokens (an answer that talks about tool calls, JSON that quotes
// them) stay text. Calls are found wherever they sit, also inside a think block, as Qwen3 now and
// then puts them there.
//
// The extractor takes the answer's text as it is released, with the starts of its parts that the
// decoder's AnswerLayout reported (a call begins at its <tool_call> token and ends at its
// </tool_call>; a think tag inside a call cuts it), and hands on the text that is not part of a
// call, with the reasoning's and the answer's starts moved to where they fall in it, for the
// reasoning splitter and the client. The newlines the chat template puts between an answer and
// its calls (and between calls) go with the calls, so that rendering the returned message again
// gives the model's own text. A call whose JSON does not read as {"name": string, "arguments":
// object} is handed on as text, byte for byte, and counted, never dropped; so is a call the
// answer's end cut off. Qwen3-Coder writes the call between the same tags in XML instead
// (coder_calls.h): the extractor reads a call's text with the reader of the checkpoint's syntax.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_messages.h"
#include "engine/answer_layout.h"
#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

// The JSON Schema of a forced call (tool_choice "required", or one named function): an object
// {"name": <one of the tools>, "arguments": <that tool's parameters>}, as the chat template shows
// calls. `only` names the one function, or is empty for any of them. `strict` is set when every
// function included asked for strict enforcement. An error when `only` is not among the tools.
struct ForcedCall {
  nlohmann::ordered_json schema;
  bool strict = true;
};
Result<ForcedCall> forced_call_schema(const std::vector<ChatTool>& tools, const std::string& only);

// How a checkpoint writes a call between its tags: a JSON object, or Qwen3-Coder's XML.
enum class CallSyntax { json, xml };
CallSyntax call_syntax(Variant variant);

// Reads a call's text between its tags into a call, or nullopt when it is not one.
using CallReader = std::function<std::optional<ChatToolCall>(std::string_view body)>;
// The reader of `syntax`; XML values are converted by the types of the offered `tools`' parameters.
CallReader call_reader(CallSyntax syntax, std::vector<ChatTool> tools = {});

class ToolCallExtractor {
 public:
  explicit ToolCallExtractor(CallReader reader = call_reader(CallSyntax::json)) : reader_(std::move(reader)) {}

  struct Output {
    std::string text;                 // not part of any call, in order
    std::vector<ChatToolCall> calls;  // completed calls, in order; arguments as json.dumps writes them
    uint32_t unparsed = 0;            // calls handed on as text
    std::vector<PartStart> starts;    // the reasoning's and the answer's, offsets counted in the text handed on
  };
  // `text` continues the answer; `starts` are the part starts its layout reported since the last
  // push (offsets from the answer's start; a start may come before its text does).
  void push(std::string_view text, std::span<const PartStart> starts, Output& out);
  // At the answer's end: hands on what was held back (an unfinished call, as text).
  void finish(Output& out);

 private:
  void drain(Output& out);
  void take_call_tag(const PartStart& start, Output& out);
  void pass_start(PartStart start, Output& out);
  void plain(std::string_view text, Output& out);
  void close_call(Output& out);
  void hand_on_call(Output& out);

  CallReader reader_;
  std::deque<PartStart> starts_;  // still ahead of the text
  std::string buffer_;            // released text not yet looked at
  size_t buffer_offset_ = 0;      // where buffer_ starts in the answer
  size_t handed_on_ = 0;          // bytes handed on before this push's
  size_t out_base_ = 0;           // out.text's size when this push began
  bool in_call_ = false;
  bool after_call_ = false;  // newlines right after a call belong to it
  std::string newlines_;     // newlines held back: before a call they belong to it
  std::string call_text_;    // the call as written, tags and newlines around it included
  std::string body_;         // between the tags
};

}  // namespace kipp
