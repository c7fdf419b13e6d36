#include "server/responses_request.h"

#include <algorithm>
#include <functional>
#include <set>

#include "chat/chat_messages.h"
#include "server/request_fields.h"

namespace kipp::server {
namespace {

using Json = nlohmann::ordered_json;  // the client's key order: the template prints tool schemas as sent

// Fields that cannot change the answer here: bookkeeping, routing and caching hints for OpenAI's
// own service (the prefix pool caches without being asked); client_metadata is Codex's.
const std::set<std::string, std::less<>> kIgnored = {"metadata",
                                                     "user",
                                                     "safety_identifier",
                                                     "prompt_cache_key",
                                                     "prompt_cache_retention",
                                                     "service_tier",
                                                     "client_metadata",
                                                     "stream_options"};
// Responses fields Kipp does not implement.
const std::set<std::string, std::less<>> kUnsupported = {"prompt", "top_logprobs", "max_tool_calls"};
// Fields of /v1/responses that /v1/responses/input_tokens does not take.
const std::set<std::string, std::less<>> kCreateOnly = {"max_output_tokens",
                                                        "stream",
                                                        "stream_options",
                                                        "temperature",
                                                        "top_p",
                                                        "seed",
                                                        "top_k",
                                                        "store",
                                                        "include",
                                                        "metadata",
                                                        "user",
                                                        "background",
                                                        "service_tier",
                                                        "safety_identifier",
                                                        "prompt_cache_key",
                                                        "prompt_cache_retention",
                                                        "client_metadata"};
// What `include` may ask for. The items these name never occur here (no hosted tools, no
// images), and reasoning comes back as its text, so there is nothing to encrypt: each is accepted
// and adds nothing. Logprobs are not implemented on this endpoint.
const std::set<std::string, std::less<>> kIncludable = {
    "reasoning.encrypted_content",   "web_search_call.action.sources",        "web_search_call.results",
    "code_interpreter_call.outputs", "computer_call_output.output.image_url", "file_search_call.results",
    "message.input_image.image_url"};

std::string at(const std::string& where, size_t index) { return where + "[" + std::to_string(index) + "]"; }

// A string field of an object, or an error naming it.
ApiResult<std::string> string_member(const Json& object, const std::string& name, const std::string& where) {
  const auto found = object.find(name);
  if (found == object.end() || !found->is_string()) return field_error(where + "." + name, "must be a string");
  return found->get<std::string>();
}

// Text parts joined with "\n" (a string stands for one part), as the chat endpoint joins its text
// parts; `kinds` are the part types that hold text here (`refusal` holds it in its own key).
ApiResult<std::string> text_of(const Json& content, const std::string& where,
                               std::initializer_list<const char*> kinds) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return field_error(where, "must be a string or an array of content parts");
  std::string joined;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const Json type = part.is_object() ? part.value("type", Json()) : Json();
    if (!type.is_string()) return field_error(at(where, i), "a content part must be an object with a string type");
    const std::string kind = type.get<std::string>();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      return field_error(at(where, i),
                         "parts of type '" + kind + "' are not supported here (these checkpoints read text)");
    KIPP_ASSIGN(auto text, string_member(part, kind == "refusal" ? "refusal" : "text", at(where, i)));
    if (i > 0) joined += '\n';
    joined += text;
  }
  return joined;
}

class Reader {
 public:
  Reader(const ApiLimits& limits, bool input_tokens, ApiRequest& out)
      : limits_(limits), input_tokens_(input_tokens), out_(out) {}

  ApiStatus read(const Json& body) {
    if (!body.is_object()) return ApiError{400, "the request body must be a JSON object", ""};
    out_.responses.emplace();
    out_.json_form = limits_.json_form;
    out_.call_syntax = limits_.call_syntax;
    Json& echo = out_.responses->echo;
    for (const auto& [key, value] : body.items()) {
      if (input_tokens_ && kCreateOnly.count(key))
        return field_error(key, "is not a field of /v1/responses/input_tokens");
      if (key == "metadata" && !value.is_null()) echo["metadata"] = value;
      if (kIgnored.count(key)) continue;
      if (value.is_null() && key != "input" && key != "model") continue;  // null = absent
      KIPP_TRY(read_field(key, value));
    }
    if (!body.contains("model")) return field_error("model", "is required");
    if (!body.contains("input")) return field_error("input", "is required (Kipp keeps no conversation to continue)");
    if (out_.messages.empty() || out_.messages.back().role == "assistant")
      return field_error("input",
                         "ends with an assistant turn: Kipp does not continue a prefilled answer (the checkpoint's "
                         "template closes every assistant turn); end with a user message or a function_call_output");
    if (!instructions_.empty())
      out_.messages.insert(out_.messages.begin(), ChatMessage{"system", instructions_, {}, {}});
    return {};
  }

 private:
  ApiStatus read_field(const std::string& key, const Json& value) {
    Json& echo = out_.responses->echo;
    if (key == "model") {
      if (!value.is_string()) return field_error(key, "must be a string");
      out_.model = value.get<std::string>();
    } else if (key == "input") {
      return read_input(value);
    } else if (key == "instructions") {
      if (!value.is_string()) return field_error(key, "must be a string");
      instructions_ = value.get<std::string>();
      echo[key] = value;
    } else if (key == "max_output_tokens") {
      echo[key] = value;
      return assign_whole(key, value, 1, INT32_MAX, [&](int64_t v) { out_.max_tokens = uint32_t(v); });
    } else if (key == "temperature") {
      echo[key] = value;
      return assign_real(key, value, 0, 2, false, out_.temperature);
    } else if (key == "top_p") {
      echo[key] = value;
      return assign_real(key, value, 0, 1, true, out_.top_p);
    } else if (key == "top_k") {  // Kipp's, as on the chat endpoint
      return assign_whole(key, value, -1, limits_.vocab,
                          [&](int64_t v) { out_.top_k = uint32_t(std::max<int64_t>(v, 0)); });
    } else if (key == "json_form") {  // Kipp's
      return read_json_form(value, out_.json_form);
    } else if (key == "seed") {  // Kipp's: the Responses API has no seed
      return assign_whole(key, value, INT64_MIN, INT64_MAX, [&](int64_t v) { out_.seed = uint64_t(v); });
    } else if (key == "stream") {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      out_.stream = value.get<bool>();
    } else if (key == "tools") {
      return read_tools(value);
    } else if (key == "tool_choice") {
      echo[key] = value;
      return read_tool_choice(value);
    } else if (key == "parallel_tool_calls") {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      out_.parallel_tool_calls = value.get<bool>();
    } else if (key == "text") {
      echo[key] = value;
      return read_text(value);
    } else if (key == "reasoning") {
      echo[key] = value;
      return read_reasoning(value);
    } else if (key == "include") {
      return read_include(value);
    } else if (key == "truncation") {
      if (value != "disabled" && value != "auto") return field_error(key, "must be \"disabled\" or \"auto\"");
      if (value == "auto")
        return field_error(key,
                           "\"auto\" would drop items from the start of a long input; Kipp answers a conversation "
                           "whole or refuses it (send \"disabled\")");
    } else if (key == "store" || key == "background") {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      if (value.get<bool>())
        return field_error(key, key == "store" ? "Kipp keeps no responses: send store: false and the whole "
                                                 "conversation in input with every request"
                                               : "Kipp has no background responses: send background: false");
    } else if (key == "previous_response_id" || key == "conversation") {
      return field_error(key,
                         "Kipp keeps no responses or conversations: send the whole conversation in input "
                         "(its output items included) with every request");
    } else {
      return unknown_field(key, kUnsupported.count(key) > 0,
                           input_tokens_ ? "/v1/responses/input_tokens" : "/v1/responses", limits_, out_);
    }
    return {};
  }

  ApiStatus read_input(const Json& value) {
    if (value.is_string()) {
      out_.messages.push_back({"user", value.get<std::string>(), {}, {}});
      return {};
    }
    if (!value.is_array() || value.empty())
      return field_error("input", "must be a string or a non-empty array of input items");
    for (size_t i = 0; i < value.size(); ++i) KIPP_TRY(read_item(value[i], at("input", i)));
    flush_assistant();
    return {};
  }

  ApiStatus read_item(const Json& item, const std::string& where) {
    if (!item.is_object()) return field_error(where, "must be an object (an input item)");
    // An item with a role and no type is a message, as OpenAI reads it ("easy input messages").
    const Json type = item.value("type", item.contains("role") ? Json("message") : Json());
    if (!type.is_string()) return field_error(where + ".type", "must be a string");
    const std::string kind = type.get<std::string>();
    if (kind == "message") return read_message(item, where);
    if (kind == "function_call") {
      KIPP_ASSIGN(auto call_id, string_member(item, "call_id", where));
      KIPP_ASSIGN(auto name, string_member(item, "name", where));
      KIPP_ASSIGN(auto arguments, string_member(item, "arguments", where));
      call_ids_.insert(call_id);
      assistant().tool_calls.push_back({std::move(name), std::move(arguments)});
      return {};
    }
    if (kind == "function_call_output") {
      KIPP_ASSIGN(auto call_id, string_member(item, "call_id", where));
      if (!call_ids_.count(call_id))
        return field_error(where + ".call_id", "'" + call_id + "' names no function_call item before it");
      if (!item.contains("output")) return field_error(where + ".output", "is required");
      KIPP_ASSIGN(auto output, text_of(item["output"], where + ".output", {"input_text"}));
      flush_assistant();
      out_.messages.push_back({"tool", std::move(output), {}, {}});
      return {};
    }
    if (kind == "reasoning") return read_reasoning_item(item, where);
    if (kind == "item_reference") return field_error(where, "Kipp keeps no items to refer to: send the item itself");
    return field_error(where + ".type", "items of type '" + kind +
                                            "' are not supported (message, function_call, function_call_output and "
                                            "reasoning are: Kipp runs function tools only)");
  }

  ApiStatus read_message(const Json& item, const std::string& where) {
    KIPP_ASSIGN(std::string role, string_member(item, "role", where));
    if (!item.contains("content")) return field_error(where + ".content", "is required");
    if (role == "assistant") {
      KIPP_ASSIGN(auto text, text_of(item["content"], where + ".content", {"output_text", "input_text", "refusal"}));
      ChatMessage& message = assistant();
      if (!message.content.empty()) message.content += '\n';
      message.content += text;
      return {};
    }
    if (role != "user" && role != "system" && role != "developer")
      return field_error(where + ".role", "must be \"user\", \"assistant\", \"system\" or \"developer\"");
    KIPP_ASSIGN(auto text, text_of(item["content"], where + ".content", {"input_text"}));
    flush_assistant();
    out_.messages.push_back({role == "user" ? "user" : "system", std::move(text), {}, {}});
    return {};
  }

  // The reasoning as text: its reasoning_text content (what Kipp returns), else its summary.
  // encrypted_content comes from OpenAI's service, and nothing here can read it.
  ApiStatus read_reasoning_item(const Json& item, const std::string& where) {
    std::string text;
    if (const auto content = item.find("content"); content != item.end() && !content->is_null()) {
      KIPP_ASSIGN(text, text_of(*content, where + ".content", {"reasoning_text"}));
    } else if (const auto summary = item.find("summary"); summary != item.end() && !summary->is_null()) {
      KIPP_ASSIGN(text, text_of(*summary, where + ".summary", {"summary_text"}));
    }
    ChatMessage& message = assistant();
    message.reasoning_content = message.reasoning_content.value_or("") + text;
    return {};
  }

  // The assistant turn items are gathered into: reasoning, messages and calls in a row are one turn.
  ChatMessage& assistant() {
    if (!assistant_) assistant_ = ChatMessage{"assistant", "", {}, {}};
    return *assistant_;
  }

  void flush_assistant() {
    if (assistant_) out_.messages.push_back(std::move(*assistant_));
    assistant_.reset();
  }

  // Function tools, as the chat endpoint reads them; a namespace's functions by their own names.
  ApiStatus read_tools(const Json& value) {
    if (!value.is_array()) return field_error("tools", "must be an array");
    out_.responses->echo["tools"] = value;
    Json functions = Json::array();
    for (size_t i = 0; i < value.size(); ++i) {
      const Json& tool = value[i];
      const std::string where = at("tools", i);
      const Json type = tool.is_object() ? tool.value("type", Json()) : Json();
      if (!type.is_string()) return field_error(where, "must be an object with a string type");
      if (type == "namespace") {
        KIPP_ASSIGN(auto space, string_member(tool, "name", where));
        const Json members = tool.value("tools", Json());
        if (!members.is_array()) return field_error(where + ".tools", "must be an array of function tools");
        for (size_t j = 0; j < members.size(); ++j)
          KIPP_TRY(read_function(members[j], at(where + ".tools", j), space, functions));
      } else if (type == "function") {
        KIPP_TRY(read_function(tool, where, "", functions));
      } else {
        // Tools that run on OpenAI's service, and custom tools with their free-form formats: the
        // model is not told of them, so it cannot call them.
        out_.ignored_fields.push_back(where + " (" + type.get<std::string>() + ")");
      }
    }
    auto tools = parse_chat_tools(functions);
    if (!tools) return field_error("tools", tools.error().message);
    out_.tools = std::move(*tools);
    return {};
  }

  // One function tool (of namespace `space` unless empty), appended as the chat endpoint's
  // {"type": "function", "function": {...}} with its members in the chat API's order (name,
  // description, parameters, strict), since the template prints the tool as it stands; a deferred
  // one (found by a tool search on OpenAI's service) is left out.
  ApiStatus read_function(const Json& tool, const std::string& where, const std::string& space, Json& functions) {
    if (!tool.is_object() || tool.value("type", Json()) != "function")
      return field_error(where, "must be a function tool {\"type\": \"function\", \"name\", \"parameters\"}");
    for (const auto& [name, entry] : tool.items()) {
      if (name == "name" || name == "description") {
        if (!entry.is_string()) return field_error(where + "." + name, "must be a string");
      } else if (name == "parameters") {
        if (!entry.is_object() && !entry.is_null())
          return field_error(where + ".parameters", "must be a JSON Schema object");
      } else if (name == "strict" || name == "defer_loading") {
        if (!entry.is_boolean() && !entry.is_null()) return field_error(where + "." + name, "must be true or false");
      } else if (name != "type") {
        return field_error(where + "." + name, "is not a field of a function tool");
      }
    }
    Json function = Json::object();
    for (const char* name : {"name", "description", "parameters", "strict"})
      if (tool.contains(name) && !tool[name].is_null()) function[name] = tool[name];
    if (!function.contains("name")) return field_error(where + ".name", "is required");
    if (tool.value("defer_loading", Json(false)) == true) return {};
    const std::string name = function["name"].get<std::string>();
    if (!offered_.insert(name).second)
      return field_error(where + ".name", "'" + name +
                                              "' is offered twice (namespaces are flattened: names must be "
                                              "unique across them)");
    if (!space.empty()) out_.responses->namespaces[name] = space;
    functions.push_back({{"type", "function"}, {"function", std::move(function)}});
    return {};
  }

  ApiStatus read_tool_choice(const Json& value) {
    if (value.is_string())
      return read_tool_choice_word(value.get<std::string>(), "{\"type\": \"function\", \"name\": ...}",
                                   out_.tool_choice);
    const Json type = value.is_object() ? value.value("type", Json()) : Json();
    if (type != "function")
      return field_error("tool_choice", "Kipp forces function tools only: {\"type\": \"function\", \"name\": ...} (" +
                                            (type.is_string() ? type.get<std::string>() + " tools are not offered"
                                                              : std::string("no type given")) +
                                            ")");
    KIPP_ASSIGN(out_.tool_choice_name, string_member(value, "name", "tool_choice"));
    out_.tool_choice = ToolChoice::named;
    return {};
  }

  // text: {format: text | json_object | json_schema {name, schema, strict, description}, verbosity}.
  ApiStatus read_text(const Json& value) {
    if (!value.is_object()) return field_error("text", "must be an object such as {\"format\": {\"type\": \"text\"}}");
    for (const auto& [name, entry] : value.items()) {
      if (entry.is_null()) continue;
      if (name == "verbosity") {  // a hint OpenAI's models follow; these checkpoints have no such control
        if (entry != "low" && entry != "medium" && entry != "high")
          return field_error("text.verbosity", "must be \"low\", \"medium\" or \"high\"");
      } else if (name == "format") {
        KIPP_TRY(read_format(entry));
      } else {
        return field_error("text." + name, "is not a field of text");
      }
    }
    return {};
  }

  ApiStatus read_format(const Json& format) {
    const Json type = format.is_object() ? format.value("type", Json()) : Json();
    if (!type.is_string())
      return field_error("text.format", "must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}");
    const std::string kind = type.get<std::string>();
    ConstraintSource source{"text.format", ConstraintSource::Kind::json_schema, Json(), "", false};
    for (const auto& [name, entry] : format.items()) {
      if (name == "type") continue;
      if (kind != "json_schema") return field_error("text.format." + name, "is not a field of a " + kind + " format");
      if (name == "name" || name == "description") {
        if (!entry.is_string()) return field_error("text.format." + name, "must be a string");
      } else if (name == "strict") {
        if (!entry.is_boolean() && !entry.is_null()) return field_error("text.format.strict", "must be true or false");
        source.strict = entry.is_boolean() && entry.get<bool>();
      } else if (name == "schema") {
        if (!entry.is_object() && !entry.is_boolean())
          return field_error("text.format.schema", "must be a JSON Schema");
        source.schema = entry;
        source.field = "text.format.schema";
      } else {
        return field_error("text.format." + name, "is not a field of a json_schema format");
      }
    }
    if (kind == "text") return {};
    if (kind == "json_object") {
      source.schema = Json{{"type", "object"}};
    } else if (kind != "json_schema") {
      return field_error("text.format.type",
                         "must be \"text\", \"json_object\" or \"json_schema\", not \"" + kind + "\"");
    } else if (!format.contains("schema")) {
      return field_error("text.format.schema", "is required with type json_schema");
    }
    out_.constraint = std::move(source);
    return {};
  }

  // reasoning: {effort, summary}. The effort names a thinking budget (none: no thinking). The
  // thought comes back whole as reasoning_text, whatever summary asks: there is no summarizer.
  ApiStatus read_reasoning(const Json& value) {
    if (!value.is_object()) return field_error("reasoning", "must be an object such as {\"effort\": \"low\"}");
    for (const auto& [name, entry] : value.items()) {
      if (entry.is_null()) continue;
      if (name == "effort") {
        if (!entry.is_string() || !effort_thinking_budget(entry.get<std::string>(), out_.thinking_budget))
          return field_error("reasoning.effort", "must be one of " + effort_names());
        if (entry == "none") out_.enable_thinking = false;
      } else if (name == "summary" || name == "generate_summary") {
        if (entry != "auto" && entry != "concise" && entry != "detailed")
          return field_error("reasoning." + name, "must be \"auto\", \"concise\" or \"detailed\"");
      } else {
        return field_error("reasoning." + name, "is not a field of reasoning");
      }
    }
    return {};
  }

  ApiStatus read_include(const Json& value) {
    if (!value.is_array()) return field_error("include", "must be an array of strings");
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string()) return field_error(at("include", i), "must be a string");
      if (value[i] == "message.output_text.logprobs")
        return field_error(at("include", i), "logprobs are not supported on /v1/responses (use /v1/chat/completions)");
      if (!kIncludable.count(value[i].get<std::string>()))
        return field_error(at("include", i), value[i].dump() + " is not something a response can include");
    }
    return {};
  }

  const ApiLimits& limits_;
  const bool input_tokens_;
  ApiRequest& out_;
  std::string instructions_;
  std::optional<ChatMessage> assistant_;  // the assistant turn being gathered
  std::set<std::string> call_ids_;        // function_call call_ids so far: an output must answer one
  std::set<std::string> offered_;         // function names offered so far
};

}  // namespace

ApiResult<ApiRequest> read_responses_request(std::string_view body, const ApiLimits& limits, bool input_tokens) {
  KIPP_ASSIGN(auto json, parse_request_json(body, limits));
  ApiRequest request;
  request.endpoint = Endpoint::responses;
  KIPP_TRY(Reader(limits, input_tokens, request).read(json));
  return request;
}

ApiResult<ApiRequest> parse_responses_request(std::string_view body, const ApiLimits& limits, bool input_tokens) {
  KIPP_ASSIGN(ApiRequest request, read_responses_request(body, limits, input_tokens));
  KIPP_TRY(compile_constraints(request));
  return request;
}

}  // namespace kipp::server
