#include "server/api_request.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <functional>
#include <set>

#include "chat/chat_messages.h"
#include "chat/coder_call_grammar.h"
#include "chat/tool_calls.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "server/request_fields.h"
#include "util/json_fields.h"

namespace kipp::server {
namespace {

using Json = nlohmann::ordered_json;  // the client's key order: the chat template prints tools as sent

// OpenAI fields that cannot change the output here (bookkeeping, routing and caching hints for
// OpenAI's own service): accepted, ignored. docs/SERVER.md's field table lists every field.
const std::set<std::string, std::less<>> kIgnored = {"user",         "metadata",         "store",
                                                     "service_tier", "prompt_cache_key", "safety_identifier",
                                                     "prediction"};

// OpenAI fields Kipp does not implement, for either endpoint.
const std::set<std::string, std::less<>> kUnsupported = {"echo",
                                                         "best_of",
                                                         "suffix",
                                                         "functions",
                                                         "function_call",
                                                         "audio",
                                                         "web_search_options",
                                                         "logprobs_format",
                                                         "verbosity",
                                                         "stream_format"};

// The sampling settings that are one real number in a range, for both endpoints.
struct RealField {
  std::string_view key;
  double low, high;
  bool open_low;  // the range excludes `low`
  std::optional<float> ApiRequest::*target;
};
constexpr RealField kRealFields[] = {
    {"temperature", 0, 2, false, &ApiRequest::temperature},
    {"top_p", 0, 1, true, &ApiRequest::top_p},
    {"min_p", 0, 1, false, &ApiRequest::min_p},
    {"frequency_penalty", -2, 2, false, &ApiRequest::frequency_penalty},
    {"presence_penalty", -2, 2, false, &ApiRequest::presence_penalty},
    {"repetition_penalty", 0, 2, true, &ApiRequest::repetition_penalty},
};

class Reader {
 public:
  Reader(Endpoint endpoint, const ApiLimits& limits, ApiRequest& out)
      : endpoint_(endpoint), limits_(limits), out_(out) {}

  ApiStatus read(const Json& body) {
    if (!body.is_object()) return ApiError{400, "the request body must be a JSON object", ""};
    out_.json_form = limits_.json_form;
    out_.call_syntax = limits_.call_syntax;
    bool has_prompt = false;
    for (const auto& [key, value] : body.items()) {
      if (kIgnored.count(key)) continue;
      if (value.is_null() && key != "prompt" && key != "messages" && key != "model") continue;  // null = absent
      KIPP_TRY(read_field(key, value));
      has_prompt |= key == (endpoint_ == Endpoint::chat ? "messages" : "prompt");
    }
    if (!body.contains("model")) return field_error("model", "is required");
    if (!has_prompt)
      return endpoint_ == Endpoint::chat ? field_error("messages", "is required")
                                         : field_error("prompt", "is required");
    if (out_.include_usage && !out_.stream) return field_error("stream_options", "is only allowed with stream: true");
    if (endpoint_ == Endpoint::chat && out_.top_logprobs > 0 && !out_.logprobs)
      return field_error("top_logprobs", "needs logprobs: true");
    return {};
  }

 private:
  ApiStatus read_field(const std::string& key, const Json& value) {
    const bool chat = endpoint_ == Endpoint::chat;
    for (const RealField& real : kRealFields)
      if (key == real.key) return assign_real(key, value, real.low, real.high, real.open_low, out_.*real.target);
    if (key == "model") {
      if (!value.is_string()) return field_error(key, "must be a string");
      out_.model = value.get<std::string>();
    } else if (key == "prompt" && !chat) {
      return read_prompt(value);
    } else if (key == "messages" && chat) {
      auto messages = parse_chat_messages(value);
      if (!messages) return field_error("messages", messages.error().message);
      if (messages->empty()) return field_error("messages", "must hold at least one message");
      out_.messages = std::move(*messages);
    } else if (key == "max_tokens" || (chat && key == "max_completion_tokens")) {
      return assign_whole(key, value, 1, INT32_MAX, [&](int64_t v) { out_.max_tokens = uint32_t(v); });
    } else if (key == "n") {
      return assign_whole(key, value, 1, limits_.max_n, [&](int64_t v) { out_.n = uint32_t(v); });
    } else if (key == "top_k") {
      // -1 is how vLLM and llama.cpp clients say "off"; so is 0.
      return assign_whole(key, value, -1, limits_.vocab,
                          [&](int64_t v) { out_.top_k = uint32_t(std::max<int64_t>(v, 0)); });
    } else if (key == "seed") {
      return assign_whole(key, value, INT64_MIN, INT64_MAX, [&](int64_t v) { out_.seed = uint64_t(v); });
    } else if (key == "logit_bias") {
      return read_logit_bias(value);
    } else if (key == "stop") {
      return read_stop(value);
    } else if (key == "stream") {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      out_.stream = value.get<bool>();
    } else if (key == "stream_options") {
      return read_stream_options(value);
    } else if (key == "logprobs") {
      if (chat) {
        if (!value.is_boolean()) return field_error(key, "must be true or false");
        out_.logprobs = value.get<bool>();
        return {};
      }
      return assign_whole(key, value, 0, 5, [&](int64_t v) {
        out_.logprobs = true;
        out_.top_logprobs = uint32_t(v);
      });
    } else if (key == "top_logprobs" && chat) {
      return assign_whole(key, value, 0, 20, [&](int64_t v) { out_.top_logprobs = uint32_t(v); });
    } else if (key == "chat_template_kwargs" && chat) {
      return read_template_kwargs(value);
    } else if ((key == "thinking_budget" || key == "reasoning_effort") && chat) {
      return read_thinking_budget(key, value);
    } else if (key == "tools" && chat) {
      auto tools = parse_chat_tools(value);
      if (!tools) return field_error(key, tools.error().message);
      out_.tools = std::move(*tools);
    } else if (key == "tool_choice" && chat) {
      return read_tool_choice(value);
    } else if (key == "parallel_tool_calls" && chat) {
      if (!value.is_boolean()) return field_error(key, "must be true or false");
      out_.parallel_tool_calls = value.get<bool>();
    } else if (key == "modalities" && chat) {
      // ["text"] is what these checkpoints do anyway; audio output would change the answer.
      if (value != Json::array({"text"}))
        return field_error(key, "only [\"text\"] is supported (these checkpoints write text)");
    } else if (key == "response_format" || key == "json_schema" || key == "grammar") {
      return read_structured(key, value);
    } else if (key == "json_form") {  // Kipp's
      return read_json_form(value, out_.json_form);
    } else {
      return unknown_field(key, kUnsupported.count(key) > 0, chat ? "/v1/chat/completions" : "/v1/completions", limits_,
                           out_);
    }
    return {};
  }

  // thinking_budget (tokens) or reasoning_effort (a name for a budget): one of them, not both.
  ApiStatus read_thinking_budget(const std::string& key, const Json& value) {
    if (thinking_field_) return field_error(key, "and " + *thinking_field_ + " both set the thinking budget: send one");
    thinking_field_ = key;
    if (key == "thinking_budget")
      return assign_whole(key, value, 0, INT32_MAX, [&](int64_t v) { out_.thinking_budget = uint32_t(v); });
    if (!value.is_string() || !effort_thinking_budget(value.get<std::string>(), out_.thinking_budget))
      return field_error(key, "must be one of " + effort_names());
    return {};
  }

  ApiStatus read_prompt(const Json& value) {
    // One prompt (a string, or an array of token ids), or several (an array of those).
    const bool several = value.is_array() && !value.empty() && (value[0].is_string() || value[0].is_array());
    if (!several) {
      ApiRequest::Prompt prompt;
      KIPP_TRY(read_one_prompt(value, "prompt", prompt));
      out_.prompts.push_back(std::move(prompt));
      return {};
    }
    if (value.size() > limits_.max_prompts)
      return field_error("prompt", "at most " + std::to_string(limits_.max_prompts) + " prompts in one request, not " +
                                       std::to_string(value.size()));
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string() && !value[i].is_array())
        return field_error("prompt", "prompt[" + std::to_string(i) + "] must be a string or an array of token ids");
      ApiRequest::Prompt prompt;
      KIPP_TRY(read_one_prompt(value[i], "prompt[" + std::to_string(i) + "]", prompt));
      out_.prompts.push_back(std::move(prompt));
    }
    return {};
  }

  ApiStatus read_one_prompt(const Json& value, const std::string& where, ApiRequest::Prompt& prompt) {
    if (value.is_string()) {
      prompt.text = value.get<std::string>();
      return {};
    }
    if (!value.is_array()) return field_error("prompt", where + " must be a string or an array of token ids");
    if (value.empty()) return field_error("prompt", where + " is empty");
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      if (!value[i].is_number_integer())
        return field_error("prompt", at + " must be a token id (an integer), not " + value[i].dump());
      if (value[i].is_number_unsigned() ? value[i].get<uint64_t>() >= limits_.vocab
                                        : (value[i].get<int64_t>() < 0 || value[i].get<int64_t>() >= limits_.vocab))
        return field_error("prompt", at + " = " + value[i].dump() + " is not a token id: the vocabulary has " +
                                         std::to_string(limits_.vocab) + " tokens");
      prompt.ids.push_back(uint32_t(value[i].get<int64_t>()));
    }
    return {};
  }

  ApiStatus read_logit_bias(const Json& value) {
    if (!value.is_object()) return field_error("logit_bias", "must be an object of token id -> bias");
    for (const auto& [key, bias] : value.items()) {
      uint64_t id = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || key.empty() || id >= limits_.vocab)
        return field_error("logit_bias",
                           "key \"" + key + "\" is not a token id below " + std::to_string(limits_.vocab));
      KIPP_ASSIGN(auto number, real_number(bias, "logit_bias", -100, 100));
      out_.logit_bias.push_back({uint32_t(id), number});
    }
    return {};
  }

  ApiStatus read_stop(const Json& value) {
    KIPP_ASSIGN(out_.stop, stop_strings(value, "stop", limits_.max_stop_strings, limits_.max_stop_bytes, true));
    return {};
  }

  ApiStatus read_tool_choice(const Json& value) {
    if (value.is_string())
      return read_tool_choice_word(value.get<std::string>(), "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                                   out_.tool_choice);
    if (!value.is_object() || value.value("type", Json()) != "function" || !value.contains("function") ||
        !value["function"].is_object() || !value["function"].contains("name") || !value["function"]["name"].is_string())
      return field_error("tool_choice", "a named choice is {\"type\": \"function\", \"function\": {\"name\": ...}}");
    out_.tool_choice = ToolChoice::named;
    out_.tool_choice_name = value["function"]["name"].get<std::string>();
    return {};
  }

  ApiStatus read_stream_options(const Json& value) {
    if (!value.is_object()) return field_error("stream_options", "must be an object");
    for (const auto& [key, option] : value.items()) {
      if (key != "include_usage" && key != "include_obfuscation")
        return field_error("stream_options." + key, "is not supported by Kipp");
      if (!option.is_boolean()) return field_error("stream_options." + key, "must be true or false");
      // include_obfuscation pads chunks against length side channels on OpenAI's service; no
      // padding is added here, and the text is the same either way.
      if (key == "include_usage") out_.include_usage = option.get<bool>();
    }
    return {};
  }

  ApiStatus read_template_kwargs(const Json& value) {
    if (!value.is_object()) return field_error("chat_template_kwargs", "must be an object");
    for (const auto& [key, option] : value.items()) {
      if (key != "enable_thinking")
        return field_error("chat_template_kwargs." + key, "is not supported by Kipp's chat renderer");
      if (!option.is_boolean()) return field_error("chat_template_kwargs.enable_thinking", "must be true or false");
      out_.enable_thinking = option.get<bool>();
    }
    return {};
  }

  // The structured-output fields, compiled once all are read (at most one may constrain).
  ApiStatus read_structured(const std::string& key, const Json& value) {
    ConstraintSource field{key, ConstraintSource::Kind::json_schema, Json(), "", true};
    if (key == "grammar") {
      if (!value.is_string()) return field_error(key, "must be a string holding a GBNF grammar");
      field.kind = ConstraintSource::Kind::gbnf;
      field.gbnf = value.get<std::string>();
    } else if (key == "json_schema") {  // llama.cpp's extension: the schema itself, enforced exactly
      if (!value.is_object() && !value.is_boolean()) return field_error(key, "must be a JSON Schema (an object)");
      field.schema = value;
    } else {
      if (!value.is_object()) return field_error(key, "must be an object such as {\"type\": \"json_object\"}");
      const auto type = value.find("type");
      if (type == value.end() || !type->is_string())
        return field_error("response_format.type", "is required: \"text\", \"json_object\" or \"json_schema\"");
      const std::string kind = type->get<std::string>();
      for (const auto& [name, entry] : value.items())
        if (name != "type" && !(name == "json_schema" && kind == "json_schema"))
          return field_error("response_format." + name, "is not a field of a " + kind + " response_format");
      if (kind == "text") return {};
      if (kind == "json_object") {
        field.field = "response_format";
        field.schema = Json{{"type", "object"}};
      } else if (kind == "json_schema") {
        const auto spec = value.find("json_schema");
        if (spec == value.end() || !spec->is_object())
          return field_error("response_format.json_schema",
                             "is required with type json_schema: {\"name\", \"schema\", \"strict\"}");
        for (const auto& [name, entry] : spec->items()) {
          if (name == "name" || name == "description") {
            if (!entry.is_string()) return field_error("response_format.json_schema." + name, "must be a string");
          } else if (name == "strict") {
            if (!entry.is_boolean() && !entry.is_null())
              return field_error("response_format.json_schema.strict", "must be true or false");
            field.strict = entry.is_boolean() && entry.get<bool>();
          } else if (name != "schema") {
            return field_error("response_format.json_schema." + name, "is not a field of json_schema");
          }
        }
        if (!spec->contains("strict")) field.strict = false;  // OpenAI's default
        // No schema: any JSON value, as OpenAI takes it.
        field.schema = spec->contains("schema") ? spec->at("schema") : Json::object();
        field.field = "response_format.json_schema.schema";
      } else {
        return field_error("response_format.type",
                           "must be \"text\", \"json_object\" or \"json_schema\", not \"" + kind + "\"");
      }
    }
    if (out_.constraint)
      return field_error(key, "only one of response_format, json_schema and grammar may constrain the answer (" +
                                  out_.constraint->field + " does already)");
    out_.constraint = std::move(field);
    return {};
  }

  Endpoint endpoint_;
  const ApiLimits& limits_;
  ApiRequest& out_;
  std::optional<std::string> thinking_field_;  // thinking_budget or reasoning_effort, whichever came
};

// Thinking budgets per effort: Qwen3's thoughts run from a few hundred tokens on easy questions
// to tens of thousands on contest problems (its card suggests 32768 output tokens, 38912 for the
// hardest); each step roughly quadruples the one below.
struct Effort {
  std::string_view name;
  std::optional<uint32_t> budget;
};
constexpr Effort kEfforts[] = {{"none", 0},     {"minimal", 256}, {"low", 1024},        {"medium", 4096},
                               {"high", 16384}, {"xhigh", 32768}, {"max", std::nullopt}};

}  // namespace

ApiStatus unknown_field(const std::string& key, bool known, const std::string& route, const ApiLimits& limits,
                        ApiRequest& request) {
  if (limits.ignore_unknown_fields) {
    request.ignored_fields.push_back(key);  // the operator chose to accept what Kipp cannot honour
    return {};
  }
  if (known)
    return field_error(key, "is not supported by Kipp (kipp serve --ignore-unknown-fields accepts it, unhonoured)");
  return field_error(key, "is not a field of " + route);
}

ApiStatus read_tool_choice_word(const std::string& word, std::string_view named_form, ToolChoice& choice) {
  if (word == "auto") choice = ToolChoice::automatic;
  else if (word == "none") choice = ToolChoice::none;
  else if (word == "required") choice = ToolChoice::required;
  else return field_error("tool_choice", "must be \"auto\", \"none\", \"required\" or " + std::string(named_form));
  return {};
}

bool effort_thinking_budget(std::string_view effort, std::optional<uint32_t>& budget) {
  for (const Effort& known : kEfforts)
    if (known.name == effort) {
      budget = known.budget;
      return true;
    }
  return false;
}

std::string effort_names() {
  std::string names;
  for (const Effort& known : kEfforts)
    names += (names.empty() ? "" : ", ") + std::string(known.name) + " (" +
             (known.budget ? std::to_string(*known.budget) : std::string("no budget")) + ")";
  return names;
}

namespace {

// The constraint of `field` from a compiled grammar; a grammar whose matcher cannot start is refused.
ApiResult<StructuredOutput> grammar_output(const std::string& field, grammar::Grammar compiled,
                                           std::vector<grammar::Unenforced> unenforced = {},
                                           const std::string& prefix = "") {
  auto automaton = grammar::Automaton::create(std::move(compiled));
  if (!automaton) return field_error(field, prefix + automaton.error().message);
  StructuredOutput structured;
  structured.field = field;
  structured.automaton = std::move(automaton).value();
  structured.unenforced = std::move(unenforced);
  return structured;
}

// A JSON Schema compiled into the constraint of `field` in `form`; strict: enforced exactly, or refused.
ApiResult<StructuredOutput> schema_output(const std::string& field, const nlohmann::ordered_json& schema, bool strict,
                                          grammar::JsonForm form) {
  grammar::SchemaOptions options;
  options.strict = strict;
  options.form = form;
  auto compiled = grammar::compile_json_schema(nlohmann::json(schema), options);
  if (!compiled) return field_error(field, compiled.error().message);
  return grammar_output(field, std::move(compiled->grammar), std::move(compiled->unenforced));
}

// The constraint a request's schema or GBNF grammar stands for; a grammar that cannot run is refused.
ApiResult<StructuredOutput> source_output(const ConstraintSource& source, grammar::JsonForm form) {
  if (source.kind == ConstraintSource::Kind::json_schema)
    return schema_output(source.field, source.schema, source.strict, form);
  const std::string unusable = "the GBNF grammar is not usable: ";
  auto compiled = grammar::compile_gbnf(source.gbnf);
  if (!compiled) return field_error(source.field, unusable + compiled.error().message);
  return grammar_output(source.field, std::move(compiled).value(), {}, unusable);
}

bool forces_call(ToolChoice choice) { return choice == ToolChoice::required || choice == ToolChoice::named; }

// Qwen3-Coder's forced call: the grammar of its XML form (coder_call_grammar.h).
ApiResult<StructuredOutput> coder_call_output(const std::string& field, const ApiRequest& request,
                                              const std::string& only) {
  auto forced = coder_forced_call(request.tools, only, request.json_form);
  if (!forced) return field_error(field, forced.error().message);
  return grammar_output(field, std::move(forced->grammar), std::move(forced->unenforced));
}

// A forced call is a grammar over the call's text as the chat template shows calls: JSON
// {"name": ..., "arguments": {...}}, or Qwen3-Coder's XML, one alternative per function offered.
// Both APIs name the field tool_choice.
ApiStatus force_tool_call(ApiRequest& request) {
  const std::string field = "tool_choice";
  if (request.tools.empty()) return field_error(field, "forces a call, but the request offers no tools");
  if (request.structured)
    return field_error(field, "a forced call and " + request.structured->field + " cannot both shape the answer");
  const std::string only = request.tool_choice == ToolChoice::named ? request.tool_choice_name : "";
  if (request.call_syntax == CallSyntax::xml) {
    KIPP_ASSIGN(request.structured, coder_call_output(field, request, only));
  } else {
    auto forced = forced_call_schema(request.tools, only);
    if (!forced) return field_error(field, forced.error().message);
    KIPP_ASSIGN(request.structured, schema_output(field, forced->schema, forced->strict, request.json_form));
  }
  request.structured->tool_call = true;
  return {};
}

}  // namespace

bool has_constraints(const ApiRequest& request) { return request.constraint || forces_call(request.tool_choice); }

ApiStatus compile_constraints(ApiRequest& request) {
  if (request.constraint) {
    KIPP_ASSIGN(request.structured, source_output(*request.constraint, request.json_form));
  }
  return forces_call(request.tool_choice) ? force_tool_call(request) : ApiStatus{};
}

ApiResult<nlohmann::ordered_json> parse_request_json(std::string_view body, const ApiLimits& limits) {
  if (body.empty()) return ApiError{400, "the request body is empty: expected a JSON object", ""};
  switch (json::shape_of(body, {.depth = limits.max_json_depth, .members = limits.max_object_members})) {
    case json::Shape::fits: break;
    case json::Shape::too_deep:
      return ApiError{400, "the JSON nests deeper than " + std::to_string(limits.max_json_depth) + " levels", ""};
    case json::Shape::too_many_members:
      return ApiError{400,
                      "a JSON object in the body has more than the limit of " +
                          std::to_string(limits.max_object_members) + " members",
                      ""};
  }
  try {
    return Json::parse(body);
  } catch (const Json::exception& error) {
    return ApiError{400, std::string("the body is not valid JSON: ") + error.what(), ""};
  }
}

ApiResult<ApiRequest> read_api_request(Endpoint endpoint, std::string_view body, const ApiLimits& limits) {
  KIPP_ASSIGN(auto json, parse_request_json(body, limits));
  ApiRequest request;
  request.endpoint = endpoint;
  KIPP_TRY(Reader(endpoint, limits, request).read(json));
  return request;
}

ApiResult<ApiRequest> parse_api_request(Endpoint endpoint, std::string_view body, const ApiLimits& limits) {
  KIPP_ASSIGN(ApiRequest request, read_api_request(endpoint, body, limits));
  KIPP_TRY(compile_constraints(request));
  return request;
}

SamplingParams sampling_for(const ApiRequest& request, const SamplingParams& defaults) {
  SamplingParams params = defaults;
  if (request.temperature) params.temperature = *request.temperature;
  if (request.top_p) params.top_p = *request.top_p;
  if (request.top_k) params.top_k = *request.top_k;
  if (request.min_p) params.min_p = *request.min_p;
  if (request.repetition_penalty) params.repetition_penalty = *request.repetition_penalty;
  if (request.frequency_penalty) params.frequency_penalty = *request.frequency_penalty;
  if (request.presence_penalty) params.presence_penalty = *request.presence_penalty;
  params.logit_bias = request.logit_bias;
  if (request.seed) params.seed = *request.seed;
  return params;
}

}  // namespace kipp::server
