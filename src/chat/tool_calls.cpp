#include "chat/tool_calls.h"

#include <nlohmann/json.hpp>

#include "engine/token_constraint.h"
#include "util/json_fields.h"
#include "util/python_json.h"

namespace kipp {

Result<ToolCallTokens> find_tool_call_tokens(const Tokenizer& tokenizer) {
  constexpr std::string_view without = "tool calls cannot be told apart from text";
  ToolCallTokens tokens;
  KIPP_ASSIGN(tokens.open, find_added_token(tokenizer, tokens.open_tag, without));
  KIPP_ASSIGN(tokens.close, find_added_token(tokenizer, tokens.close_tag, without));
  return tokens;
}

Result<ForcedCall> forced_call_schema(const std::vector<ChatTool>& tools, const std::string& only) {
  using Json = nlohmann::ordered_json;
  if (tools.empty()) return fail("a call is forced, but no tools are offered");
  ForcedCall forced;
  Json alternatives = Json::array();
  for (const ChatTool& tool : tools) {
    if (!only.empty() && tool.name != only) continue;
    Json arguments = tool.parameters.empty() ? Json{{"type", "object"}} : tool.parameters;
    alternatives.push_back({{"type", "object"},
                            {"properties", {{"name", {{"const", tool.name}}}, {"arguments", std::move(arguments)}}},
                            {"required", {"name", "arguments"}},
                            {"additionalProperties", false}});
    forced.strict = forced.strict && tool.strict;
  }
  if (alternatives.empty()) return fail("names the function '", only, "', which the tools do not offer");
  forced.schema = alternatives.size() == 1 ? alternatives[0] : Json{{"anyOf", alternatives}};
  return forced;
}

ToolCallExtractor::ToolCallExtractor(uint32_t open_token, uint32_t close_token, std::string open_tag,
                                     std::string close_tag)
    : open_token_(open_token),
      close_token_(close_token),
      open_tag_(std::move(open_tag)),
      close_tag_(std::move(close_tag)) {}

void ToolCallExtractor::push(std::string_view text, std::span<const AddedTokenMark> marks,
                             std::span<const PartStart> starts, Output& out) {
  for (const AddedTokenMark& mark : marks)
    if (mark.id == open_token_ || mark.id == close_token_) marks_.push_back(mark);
  starts_.insert(starts_.end(), starts.begin(), starts.end());
  buffer_ += text;
  out_base_ = out.text.size();
  drain(out);
  handed_on_ += out.text.size() - out_base_;
}

// A part start the text reached goes where that text will be handed on: after the newlines held
// back (the start's tag follows, so they are handed on, not given to a call). Inside a call, whose
// text is taken out, it goes where the call is, its tag taken out with the call.
void ToolCallExtractor::pass_start(Output& out) {
  PartStart start = starts_.front();
  starts_.pop_front();
  start.offset = handed_on_ + (out.text.size() - out_base_);
  if (in_call_) start.tag_bytes = 0;
  else start.offset += newlines_.size();
  out.starts.push_back(start);
}

void ToolCallExtractor::drain(Output& out) {
  while (!buffer_.empty() || (!starts_.empty() && starts_.front().offset == buffer_offset_)) {
    if (!starts_.empty() && starts_.front().offset == buffer_offset_) {
      pass_start(out);
      continue;
    }
    // Marks the text will never reach (a stop string cut it before them) are dropped at finish.
    if (!marks_.empty() && marks_.front().offset == buffer_offset_) {
      const bool opens = marks_.front().id == open_token_;
      const std::string& tag = opens ? open_tag_ : close_tag_;
      if (buffer_.size() < tag.size()) return;  // the tag's text is still held back upstream
      marks_.pop_front();
      buffer_.erase(0, tag.size());
      buffer_offset_ += tag.size();
      if (opens && !in_call_) {
        in_call_ = true;
        after_call_ = false;
        call_text_ = newlines_ + tag;  // the newlines before a call are the template's, not the answer's
        newlines_.clear();
        body_.clear();
      } else if (!opens && in_call_) {
        call_text_ += tag;
        close_call(out);
      } else {
        plain(tag, out);  // a tag out of place (</tool_call> outside a call, <tool_call> inside one) is text
      }
      continue;
    }
    size_t until = marks_.empty() ? buffer_.size() : std::min(buffer_.size(), marks_.front().offset - buffer_offset_);
    if (!starts_.empty()) until = std::min(until, starts_.front().offset - buffer_offset_);
    plain(std::string_view(buffer_).substr(0, until), out);
    buffer_.erase(0, until);
    buffer_offset_ += until;
  }
}

void ToolCallExtractor::plain(std::string_view text, Output& out) {
  if (in_call_) {
    body_ += text;
    call_text_ += text;
    return;
  }
  for (const char c : text) {
    if (c == '\n') {
      (after_call_ ? call_text_ : newlines_) += c;
      continue;
    }
    after_call_ = false;
    out.text += newlines_;
    newlines_.clear();
    out.text += c;
  }
}

void ToolCallExtractor::close_call(Output& out) {
  in_call_ = false;
  // The model's text, which a prompt can steer: nested deeper than any file Kipp reads (reading its
  // arguments recurses once per level), or with more members in an object than a request may send
  // (read in quadratic time), it stays text.
  const json::ShapeLimits readable_shape{.depth = json::kMaxFileDepth, .members = json::kMaxObjectMembers};
  const nlohmann::ordered_json call = json::shape_of(body_, readable_shape) != json::Shape::fits
                                          ? nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded)
                                          : nlohmann::ordered_json::parse(body_, nullptr, /*allow_exceptions=*/false);
  const bool readable = call.is_object() && call.contains("name") && call["name"].is_string() &&
                        call.contains("arguments") && call["arguments"].is_object();
  if (!readable) {
    ++out.unparsed;
    out.text += call_text_;
    call_text_.clear();
    return;
  }
  out.calls.push_back({call["name"].get<std::string>(), python_json_dumps(call["arguments"])});
  call_text_.clear();
  after_call_ = true;
}

void ToolCallExtractor::finish(Output& out) {
  marks_.clear();
  starts_.clear();
  out_base_ = out.text.size();
  drain(out);
  if (in_call_) {  // cut off by the answer's end
    in_call_ = false;
    ++out.unparsed;
    out.text += call_text_;
  }
  out.text += newlines_;
  newlines_.clear();
  call_text_.clear();
}

}  // namespace kipp
