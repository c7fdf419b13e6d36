#include "server/anthropic_request.h"

#include <algorithm>
#include <functional>
#include <set>

#include "chat/chat_messages.h"
#include "server/request_fields.h"
#include "util/python_json.h"

namespace kipp::server {
namespace {

using Json = nlohmann::ordered_json;  // the client's key order: the template prints tool schemas as sent

// Fields that cannot change the answer here: bookkeeping and caching hints for Anthropic's own
// service (the prefix pool caches without being asked).
const std::set<std::string, std::less<>> kIgnored = {"metadata", "cache_control", "service_tier", "inference_geo",
                                                     "speed"};
// Anthropic fields Kipp does not implement.
const std::set<std::string, std::less<>> kUnsupported = {"container", "mcp_servers", "diagnostics"};
// Fields of /v1/messages that /v1/messages/count_tokens does not take.
const std::set<std::string, std::less<>> kCreateOnly = {"max_tokens",    "stream", "stop_sequences",
                                                        "temperature",   "top_p",  "top_k",
                                                        "metadata",      "seed",   "service_tier",
                                                        "inference_geo", "speed"};

std::string at(const std::string& where, size_t index) { return where + "[" + std::to_string(index) + "]"; }

// The block's type, or an error naming the block.
ApiResult<std::string> block_type(const Json& block, const std::string& where) {
  if (!block.is_object() || !block.contains("type") || !block["type"].is_string())
    return field_error(where, "a content block must be an object with a string type");
  return block["type"].get<std::string>();
}

// The text of one text block.
ApiResult<std::string> block_text(const Json& block, const std::string& where) {
  const Json& text = block.value("text", Json());
  if (!text.is_string()) return field_error(where + ".text", "must be a string");
  return text.get<std::string>();
}

// Text blocks joined with "\n" (a string stands for one block), as the OpenAI side joins text
// parts; other blocks are refused.
ApiResult<std::string> text_of(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return field_error(where, "must be a string or an array of text blocks");
  std::string joined;
  for (size_t i = 0; i < content.size(); ++i) {
    KIPP_ASSIGN(auto type, block_type(content[i], at(where, i)));
    if (type != "text")
      return field_error(at(where, i),
                         "blocks of type '" + type + "' are not supported here (these checkpoints read text)");
    KIPP_ASSIGN(auto text, block_text(content[i], at(where, i)));
    if (i > 0) joined += '\n';
    joined += text;
  }
  return joined;
}

class Reader {
 public:
  Reader(const ApiLimits& limits, bool count_tokens, ApiRequest& out)
      : limits_(limits), count_tokens_(count_tokens), out_(out) {}

  ApiStatus read(const Json& body) {
    if (!body.is_object()) return ApiError{400, "the request body must be a JSON object", ""};
    out_.json_form = limits_.json_form;
    out_.call_syntax = limits_.call_syntax;
    for (const auto& [key, value] : body.items()) {
      if (count_tokens_ && kCreateOnly.count(key))
        return field_error(key, "is not a field of /v1/messages/count_tokens");
      if (kIgnored.count(key)) continue;
      if (value.is_null() && key != "messages" && key != "model" && key != "max_tokens") continue;  // null = absent
      KIPP_TRY(read_field(key, value));
    }
    if (!body.contains("model")) return field_error("model", "is required");
    if (!body.contains("messages")) return field_error("messages", "is required");
    if (!count_tokens_ && !out_.max_tokens) return field_error("max_tokens", "is required");
    if (thinking_enabled_ && out_.max_tokens && out_.thinking_budget && *out_.thinking_budget >= *out_.max_tokens)
      return field_error("thinking.budget_tokens",
                         "must be less than max_tokens (" + std::to_string(*out_.max_tokens) + ")");
    KIPP_TRY(load_referenced_tools());
    KIPP_TRY(apply_thinking_contract());
    if (!system_.empty()) out_.messages.insert(out_.messages.begin(), ChatMessage{"system", system_, {}, {}});
    if (!format_.is_null())
      out_.constraint = ConstraintSource{"output_config.format.schema", ConstraintSource::Kind::json_schema,
                                         std::move(format_), "", true};
    return {};
  }

 private:
  ApiStatus read_field(const std::string& key, const Json& value) {
    if (key == "model") {
      if (!value.is_string()) return field_error(key, "must be a string");
      out_.model = value.get<std::string>();
    } else if (key == "max_tokens") {
      return assign_whole(key, value, 1, INT32_MAX, [&](int64_t v) { out_.max_tokens = uint32_t(v); });
    } else if (key == "messages") {
      return read_messages(value);
    } else if (key == "system") {
      KIPP_ASSIGN(system_, text_of(value, "system"));
    } else if (key == "stop_sequences") {
      KIPP_ASSIGN(out_.stop, stop_strings(value, key, limits_.max_stop_strings, limits_.max_stop_bytes, false));
    } else if (key == "temperature") {
      return assign_real(key, value, 0, 1, false, out_.temperature);
    } else if (key == "top_p") {
      return assign_real(key, value, 0, 1, true, out_.top_p);
    } else if (key == "top_k") {
      return assign_whole(key, value, 0, limits_.vocab, [&](int64_t v) { out_.top_k = uint32_t(v); });
    } else if (key == "seed") {  // Kipp's: Anthropic's API has no seed
      return assign_whole(key, value, INT64_MIN, INT64_MAX, [&](int64_t v) { out_.seed = uint64_t(v); });
    } else if (key == "stream") {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      out_.stream = value.get<bool>();
    } else if (key == "tools") {
      return read_tools(value);
    } else if (key == "tool_choice") {
      return read_tool_choice(value);
    } else if (key == "thinking") {
      return read_thinking(value);
    } else if (key == "output_config") {
      return read_output_config(value);
    } else if (key == "context_management") {
      return read_context_management(value);
    } else if (key == "json_form") {  // Kipp's
      return read_json_form(value, out_.json_form);
    } else {
      return unknown_field(key, kUnsupported.count(key) > 0,
                           count_tokens_ ? "/v1/messages/count_tokens" : "/v1/messages", limits_, out_);
    }
    return {};
  }

  ApiStatus read_messages(const Json& value) {
    if (!value.is_array() || value.empty())
      return field_error("messages", "must be a non-empty array of {\"role\", \"content\"} objects");
    for (size_t i = 0; i < value.size(); ++i) {
      const Json& message = value[i];
      const std::string where = at("messages", i);
      if (!message.is_object()) return field_error(where, "must be an object with role and content");
      const Json role = message.value("role", Json());
      if (role != "user" && role != "assistant" && role != "system")
        return field_error(where + ".role", "must be \"user\", \"assistant\" or \"system\"");
      for (const auto& [name, entry] : message.items())
        if (name != "role" && name != "content") return field_error(where + "." + name, "is not a field of a message");
      if (!message.contains("content")) return field_error(where + ".content", "is required");
      const Json& content = message["content"];
      if (role == "system") {  // an instruction in the conversation (Claude Code sends one), rendered where it stands
        KIPP_ASSIGN(std::string text, text_of(content, where + ".content"));
        out_.messages.push_back({"system", std::move(text), {}, {}});
        continue;
      }
      KIPP_TRY(role == "user" ? read_user(content, where + ".content") : read_assistant(content, where + ".content"));
    }
    if (out_.messages.back().role == "assistant")
      return field_error("messages",
                         "ends with an assistant turn: Kipp does not continue a prefilled answer (the "
                         "checkpoint's template closes every assistant turn); end with a user turn");
    return {};
  }

  // A user turn: its text blocks are one user message, each tool_result a tool message, in order.
  ApiStatus read_user(const Json& content, const std::string& where) {
    if (content.is_string()) {
      out_.messages.push_back({"user", content.get<std::string>(), {}, {}});
      return {};
    }
    if (!content.is_array()) return field_error(where, "must be a string or an array of content blocks");
    std::optional<std::string> text;
    const auto flush = [&] {
      if (text) out_.messages.push_back({"user", std::move(*text), {}, {}});
      text.reset();
    };
    for (size_t j = 0; j < content.size(); ++j) {
      const std::string here = at(where, j);
      KIPP_ASSIGN(const std::string kind, block_type(content[j], here));
      if (kind == "text") {
        KIPP_ASSIGN(auto piece, block_text(content[j], here));
        text = text ? *text + "\n" + piece : piece;
      } else if (kind == "tool_result") {
        const Json& block = content[j];
        if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string())
          return field_error(here + ".tool_use_id", "must be a string");
        if (!called_ids_.count(block["tool_use_id"].get<std::string>()))
          return field_error(here + ".tool_use_id", "'" + block["tool_use_id"].get<std::string>() +
                                                        "' names no tool_use block of an earlier assistant turn");
        std::string result;
        if (block.contains("content") && !block["content"].is_null()) {
          KIPP_ASSIGN(result, tool_result_text(block["content"], here + ".content"));
        }
        flush();
        out_.messages.push_back({"tool", std::move(result), {}, {}});
      } else {
        return field_error(here, "blocks of type '" + kind +
                                     "' are not supported in a user turn (text and "
                                     "tool_result are: these checkpoints read text)");
      }
    }
    flush();
    if (content.empty()) out_.messages.push_back({"user", "", {}, {}});
    return {};
  }

  // An assistant turn: thinking blocks are its reasoning, text blocks its content, tool_use its calls.
  ApiStatus read_assistant(const Json& content, const std::string& where) {
    ChatMessage message{"assistant", "", {}, {}};
    if (content.is_string()) {
      message.content = content.get<std::string>();
      out_.messages.push_back(std::move(message));
      return {};
    }
    if (!content.is_array()) return field_error(where, "must be a string or an array of content blocks");
    bool has_text = false;
    for (size_t j = 0; j < content.size(); ++j) {
      const std::string here = at(where, j);
      KIPP_ASSIGN(const std::string kind, block_type(content[j], here));
      const Json& block = content[j];
      if (kind == "text") {
        KIPP_ASSIGN(auto piece, block_text(block, here));
        if (has_text) message.content += '\n';
        message.content += piece;
        has_text = true;
      } else if (kind == "thinking") {
        if (!block.contains("thinking") || !block["thinking"].is_string())
          return field_error(here + ".thinking", "must be a string");
        message.reasoning_content = message.reasoning_content.value_or("") + block["thinking"].get<std::string>();
      } else if (kind == "redacted_thinking") {
        continue;  // encrypted by Anthropic's service: nothing this model can read
      } else if (kind == "tool_use") {
        if (!block.contains("id") || !block["id"].is_string()) return field_error(here + ".id", "must be a string");
        if (!block.contains("name") || !block["name"].is_string())
          return field_error(here + ".name", "must be a string");
        if (!block.contains("input") || !block["input"].is_object())
          return field_error(here + ".input", "must be an object (the call's arguments)");
        called_ids_.insert(block["id"].get<std::string>());
        message.tool_calls.push_back({block["name"].get<std::string>(), python_json_dumps(block["input"])});
      } else {
        return field_error(here, "blocks of type '" + kind +
                                     "' are not supported in an assistant turn (text, "
                                     "thinking, redacted_thinking and tool_use are)");
      }
    }
    out_.messages.push_back(std::move(message));
    return {};
  }

  // A tool_result's content: its text blocks joined with "\n"; a tool_reference block (what a tool
  // search returns) loads the deferred tool it names into the prompt, as Anthropic expands it into
  // the tool's definition, and adds no text.
  ApiResult<std::string> tool_result_text(const Json& content, const std::string& where) {
    if (!content.is_array()) return text_of(content, where);
    Json texts = Json::array();
    for (size_t i = 0; i < content.size(); ++i) {
      KIPP_ASSIGN(auto type, block_type(content[i], at(where, i)));
      if (type != "tool_reference") {
        texts.push_back(content[i]);
        continue;
      }
      const Json name = content[i].value("tool_name", Json());
      if (!name.is_string()) return field_error(at(where, i) + ".tool_name", "must be a string");
      referenced_.push_back({name.get<std::string>(), at(where, i)});
    }
    return text_of(texts, where);
  }

  // Custom tools, as the OpenAI side reads functions (the template prints the same line); a
  // deferred one waits for a tool_reference (load_referenced_tools).
  ApiStatus read_tools(const Json& value) {
    if (!value.is_array()) return field_error("tools", "must be an array");
    for (size_t i = 0; i < value.size(); ++i) {
      const Json& tool = value[i];
      const std::string where = at("tools", i);
      if (!tool.is_object()) return field_error(where, "must be an object");
      if (tool.contains("type") && tool["type"] != "custom")
        return field_error(where + ".type",
                           tool["type"].dump() +
                               " is one of Anthropic's server tools, which run "
                               "on Anthropic's service; Kipp offers custom tools {name, description, input_schema}");
      Json function = Json::object();
      for (const auto& [name, entry] : tool.items()) {
        if (name == "name" || name == "description") {
          if (!entry.is_string()) return field_error(where + "." + name, "must be a string");
          function[name] = entry;
        } else if (name == "input_schema") {
          if (!entry.is_object()) return field_error(where + ".input_schema", "must be a JSON Schema object");
        } else if (name == "strict" || name == "defer_loading") {
          if (!entry.is_boolean()) return field_error(where + "." + name, "must be true or false");
        } else if (name != "type" && name != "cache_control") {
          return field_error(where + "." + name, "is not supported by Kipp");
        }
      }
      if (!tool.contains("name")) return field_error(where + ".name", "is required");
      if (!tool.contains("input_schema")) return field_error(where + ".input_schema", "is required");
      function["parameters"] = tool["input_schema"];
      if (tool.contains("strict")) function["strict"] = tool["strict"];
      // A deferred tool is not in the model's context until a tool search finds it, as Anthropic
      // has it: it is left out of the prompt unless a tool_reference names it.
      tools_.push_back({{{"type", "function"}, {"function", std::move(function)}}, tool.value("defer_loading", false)});
    }
    return {};
  }

  // The tools in the prompt: those not deferred, and the deferred ones a tool_reference loaded.
  ApiStatus load_referenced_tools() {
    std::set<std::string, std::less<>> loaded;
    for (const auto& reference : referenced_) {
      const std::string& name = reference.first;
      const auto named = [&](const OfferedTool& tool) { return tool.function["function"]["name"] == name; };
      if (std::none_of(tools_.begin(), tools_.end(), named))
        return field_error(reference.second + ".tool_name", "'" + name + "' names no tool of the request");
      loaded.insert(name);
    }
    Json functions = Json::array();
    for (const OfferedTool& tool : tools_)
      if (!tool.deferred || loaded.count(tool.function["function"]["name"].get<std::string>()))
        functions.push_back(tool.function);
    auto tools = parse_chat_tools(functions);
    if (!tools) return field_error("tools", tools.error().message);
    out_.tools = std::move(*tools);
    return {};
  }

  ApiStatus read_tool_choice(const Json& value) {
    const Json type = value.is_object() ? value.value("type", Json()) : Json();
    if (!type.is_string())
      return field_error("tool_choice", "must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    const std::string kind = type.get<std::string>();
    for (const auto& [name, entry] : value.items()) {
      if (name == "type") continue;
      if (name == "disable_parallel_tool_use" && kind != "none") {
        if (!entry.is_boolean()) return field_error("tool_choice.disable_parallel_tool_use", "must be true or false");
        out_.parallel_tool_calls = !entry.get<bool>();
      } else if (!(name == "name" && kind == "tool")) {
        return field_error("tool_choice." + name, "is not a field of a tool_choice of type " + kind);
      }
    }
    if (kind == "auto") {
      out_.tool_choice = ToolChoice::automatic;
    } else if (kind == "any") {
      out_.tool_choice = ToolChoice::required;
    } else if (kind == "none") {
      out_.tool_choice = ToolChoice::none;
    } else if (kind == "tool") {
      if (!value.contains("name") || !value["name"].is_string())
        return field_error("tool_choice.name", "is required with type tool");
      out_.tool_choice = ToolChoice::named;
      out_.tool_choice_name = value["name"].get<std::string>();
    } else {
      return field_error("tool_choice.type", "must be \"auto\", \"any\", \"tool\" or \"none\", not \"" + kind + "\"");
    }
    return {};
  }

  ApiStatus read_thinking(const Json& value) {
    thinking_given_ = true;
    const Json type = value.is_object() ? value.value("type", Json()) : Json();
    if (!type.is_string())
      return field_error("thinking",
                         "must be {\"type\": \"enabled\", \"budget_tokens\": N}, {\"type\": \"disabled\"} or "
                         "{\"type\": \"adaptive\"}");
    const std::string kind = type.get<std::string>();
    for (const auto& [name, entry] : value.items()) {
      if (name == "type" || (name == "budget_tokens" && kind == "enabled")) continue;
      if (name == "display" && kind != "disabled") {
        // "summarized" returns the whole thought (there is no summarizer here); "omitted" returns
        // thinking blocks without their text.
        if (entry != "summarized" && entry != "omitted" && !entry.is_null())
          return field_error("thinking.display", "must be \"summarized\" or \"omitted\"");
        out_.omit_thinking = entry == "omitted";
        continue;
      }
      return field_error("thinking." + name, "is not a field of a thinking setting of type " + kind);
    }
    if (kind == "enabled") {
      if (!value.contains("budget_tokens"))
        return field_error("thinking.budget_tokens", "is required with type enabled");
      KIPP_TRY(claim_budget("thinking.budget_tokens"));
      KIPP_ASSIGN(auto budget, whole_number(value["budget_tokens"], "thinking.budget_tokens", 0, INT32_MAX));
      out_.thinking_budget = uint32_t(budget);
      out_.enable_thinking = true;
      thinking_enabled_ = true;
    } else if (kind == "disabled") {
      // Hybrid checkpoints answer directly; thinking-2507, whose prompt opens the block, closes it at once.
      KIPP_TRY(claim_budget("thinking"));
      out_.enable_thinking = false;
      out_.thinking_budget = 0;
    } else if (kind != "adaptive") {  // adaptive: the checkpoint decides, as it does anyway
      return field_error("thinking.type", "must be \"enabled\", \"disabled\" or \"adaptive\", not \"" + kind + "\"");
    }
    return {};
  }

  ApiStatus read_output_config(const Json& value) {
    if (!value.is_object()) return field_error("output_config", "must be an object");
    for (const auto& [name, entry] : value.items()) {
      if (entry.is_null()) continue;
      if (name == "effort") {
        KIPP_TRY(claim_budget("output_config.effort"));
        if (!entry.is_string() || !effort_thinking_budget(entry.get<std::string>(), out_.thinking_budget))
          return field_error("output_config.effort", "must be one of " + effort_names());
      } else if (name == "format") {
        if (!entry.is_object() || entry.value("type", Json()) != "json_schema" || !entry.contains("schema"))
          return field_error("output_config.format", "must be {\"type\": \"json_schema\", \"schema\": {...}}");
        for (const auto& [field, part] : entry.items())
          if (field != "type" && field != "schema")
            return field_error("output_config.format." + field, "is not a field of a json_schema format");
        format_ = entry["schema"];
      } else {
        return field_error("output_config." + name, "is not supported by Kipp");
      }
    }
    return {};
  }

  // Anthropic's contract, not the checkpoint's default: no thinking unless `thinking` enables it
  // (adaptive leaves it to the checkpoint), and none when tool_choice forces a tool, where enabling
  // it is an error, as Anthropic answers. Thinking off closes a thinking-2507 block at once, unless
  // output_config.effort named a budget for it.
  ApiStatus apply_thinking_contract() {
    const bool forced = out_.tool_choice == ToolChoice::required || out_.tool_choice == ToolChoice::named;
    if (forced && thinking_enabled_)
      return field_error("thinking", "may not be enabled when tool_choice forces tool use (any or tool)");
    if (thinking_given_ && !forced) return {};
    out_.enable_thinking = false;
    if (forced || !out_.thinking_budget) out_.thinking_budget = 0;
    return {};
  }

  // Context editing clears old thinking or tool results from a long conversation on Anthropic's
  // service. Kipp renders the history as the checkpoint's template does (which drops the thinking
  // of turns before the last user message), so an edit is accepted when it is well formed and is
  // not applied.
  ApiStatus read_context_management(const Json& value) {
    if (!value.is_object()) return field_error("context_management", "must be an object");
    for (const auto& [name, entry] : value.items()) {
      if (name != "edits") return field_error("context_management." + name, "is not supported by Kipp");
      if (!entry.is_array()) return field_error("context_management.edits", "must be an array");
      for (size_t i = 0; i < entry.size(); ++i)
        if (!entry[i].is_object() || !entry[i].value("type", Json()).is_string())
          return field_error(at("context_management.edits", i), "must be an object with a string type");
    }
    return {};
  }

  // One field may set the thinking budget.
  ApiStatus claim_budget(const std::string& field) {
    if (budget_field_) return field_error(field, "and " + *budget_field_ + " both set the thinking budget: send one");
    budget_field_ = field;
    return {};
  }

  const ApiLimits& limits_;
  const bool count_tokens_;
  ApiRequest& out_;
  std::string system_;
  bool thinking_enabled_ = false;
  bool thinking_given_ = false;  // the request has a `thinking` field
  std::optional<std::string> budget_field_;
  std::set<std::string> called_ids_;  // tool_use ids so far: a tool_result must answer one
  Json format_;
  struct OfferedTool {
    Json function;  // {"type": "function", "function": {...}}
    bool deferred;  // defer_loading
  };
  std::vector<OfferedTool> tools_;
  std::vector<std::pair<std::string, std::string>> referenced_;  // tool_reference names, where they stand
};

}  // namespace

ApiResult<ApiRequest> read_anthropic_request(std::string_view body, const ApiLimits& limits, bool count_tokens) {
  KIPP_ASSIGN(auto json, parse_request_json(body, limits));
  ApiRequest request;
  request.endpoint = Endpoint::messages;
  KIPP_TRY(Reader(limits, count_tokens, request).read(json));
  return request;
}

ApiResult<ApiRequest> parse_anthropic_request(std::string_view body, const ApiLimits& limits, bool count_tokens) {
  KIPP_ASSIGN(ApiRequest request, read_anthropic_request(body, limits, count_tokens));
  KIPP_TRY(compile_constraints(request));
  return request;
}

}  // namespace kipp::server
