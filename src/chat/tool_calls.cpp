#include "chat/tool_calls.h"

#include <nlohmann/json.hpp>

#include "chat/coder_calls.h"
#include "util/json_fields.h"
#include "util/python_json.h"

namespace kipp {

namespace {

using Json = nlohmann::ordered_json;

// A tool's parameters as a resource of their own inside the call's schema: with an $id (unless they
// have one), the local references that libraries write ("#/$defs/Pet" from pydantic and zod,
// "#/definitions/Pet" from older ones, "#" for a recursive type) resolve against the parameters,
// where those definitions are, and not against the call's root. Parameters that declare draft 4
// get its "id" too: their "$id" makes the embedded "$schema" count, and draft 4 then reads "id".
Json embedded_parameters(const ChatTool& tool, size_t index) {
  Json parameters = tool.parameters.empty() ? Json{{"type", "object"}} : tool.parameters;
  if (!parameters.is_object() || parameters.contains("$id") || parameters.contains("id")) return parameters;
  const std::string id = "urn:kipp:tool-parameters:" + std::to_string(index);
  parameters["$id"] = id;
  const Json dialect = parameters.value("$schema", Json());
  if (dialect.is_string() && dialect.get<std::string>().find("draft-04") != std::string::npos) parameters["id"] = id;
  return parameters;
}

// A call's JSON: {"name": string, "arguments": object}.
std::optional<ChatToolCall> read_json_call(std::string_view body) {
  // The model's text, which a prompt can steer: nested deeper than any file Kipp reads (reading its
  // arguments recurses once per level), or with more members in an object than a request may send
  // (read in quadratic time), it stays text.
  const json::ShapeLimits readable_shape{.depth = json::kMaxFileDepth, .members = json::kMaxObjectMembers};
  if (json::shape_of(body, readable_shape) != json::Shape::fits) return std::nullopt;
  const Json call = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const bool readable = call.is_object() && call.contains("name") && call["name"].is_string() &&
                        call.contains("arguments") && call["arguments"].is_object();
  if (!readable) return std::nullopt;
  return ChatToolCall{call["name"].get<std::string>(), python_json_dumps(call["arguments"])};
}

}  // namespace

CallSyntax call_syntax(Variant variant) { return variant == Variant::coder ? CallSyntax::xml : CallSyntax::json; }

CallReader call_reader(CallSyntax syntax, std::vector<ChatTool> tools) {
  if (syntax == CallSyntax::json) return read_json_call;
  return [tools = std::move(tools)](std::string_view body) { return read_coder_call(body, tools); };
}

Result<ForcedCall> forced_call_schema(const std::vector<ChatTool>& tools, const std::string& only) {
  if (tools.empty()) return fail("a call is forced, but no tools are offered");
  ForcedCall forced;
  Json alternatives = Json::array();
  for (size_t index = 0; index < tools.size(); ++index) {
    const ChatTool& tool = tools[index];
    if (!only.empty() && tool.name != only) continue;
    alternatives.push_back(
        {{"type", "object"},
         {"properties", {{"name", {{"const", tool.name}}}, {"arguments", embedded_parameters(tool, index)}}},
         {"required", {"name", "arguments"}},
         {"additionalProperties", false}});
    forced.strict = forced.strict && tool.strict;
  }
  if (alternatives.empty()) return fail("names the function '", only, "', which the tools do not offer");
  forced.schema = alternatives.size() == 1 ? alternatives[0] : Json{{"anyOf", alternatives}};
  return forced;
}

void ToolCallExtractor::push(std::string_view text, std::span<const PartStart> starts, Output& out) {
  starts_.insert(starts_.end(), starts.begin(), starts.end());
  buffer_ += text;
  out_base_ = out.text.size();
  drain(out);
  handed_on_ += out.text.size() - out_base_;
}

void ToolCallExtractor::drain(Output& out) {
  while (!buffer_.empty() || (!starts_.empty() && starts_.front().offset == buffer_offset_)) {
    if (!starts_.empty() && starts_.front().offset == buffer_offset_) {
      const PartStart start = starts_.front();
      if (start.part == PartStart::Part::call || start.part == PartStart::Part::after_call) {
        if (buffer_.size() < start.tag_bytes) return;  // the tag's text is still held back upstream
        starts_.pop_front();
        take_call_tag(start, out);
      } else {
        starts_.pop_front();
        pass_start(start, out);
      }
      continue;
    }
    const size_t until =
        starts_.empty() ? buffer_.size() : std::min(buffer_.size(), starts_.front().offset - buffer_offset_);
    plain(std::string_view(buffer_).substr(0, until), out);
    buffer_.erase(0, until);
    buffer_offset_ += until;
  }
}

void ToolCallExtractor::take_call_tag(const PartStart& start, Output& out) {
  const std::string tag = buffer_.substr(0, start.tag_bytes);
  buffer_.erase(0, start.tag_bytes);
  buffer_offset_ += start.tag_bytes;
  if (start.part == PartStart::Part::call) {
    in_call_ = true;
    after_call_ = false;
    call_text_ = newlines_ + tag;  // the newlines before a call are the template's, not the answer's
    newlines_.clear();
    body_.clear();
    return;
  }
  call_text_ += tag;
  close_call(out);
}

// The reasoning's or the answer's start goes where the text that follows it will be handed on:
// after the newlines held back (its tag follows, so they are handed on, not given to a call). A
// think tag inside a call cut the call: it is handed on as text first.
void ToolCallExtractor::pass_start(PartStart start, Output& out) {
  if (in_call_) hand_on_call(out);
  start.offset = handed_on_ + (out.text.size() - out_base_) + newlines_.size();
  out.starts.push_back(start);
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
  std::optional<ChatToolCall> call = reader_(body_);
  if (!call) {
    hand_on_call(out);
    return;
  }
  out.calls.push_back(std::move(*call));
  call_text_.clear();
  after_call_ = true;
}

void ToolCallExtractor::hand_on_call(Output& out) {
  in_call_ = false;
  ++out.unparsed;
  out.text += call_text_;
  call_text_.clear();
}

void ToolCallExtractor::finish(Output& out) {
  starts_.clear();  // starts the text never reached (a stop string cut it before them)
  out_base_ = out.text.size();
  drain(out);
  if (in_call_) hand_on_call(out);  // cut off by the answer's end
  out.text += newlines_;
  newlines_.clear();
  call_text_.clear();
}

}  // namespace kipp
