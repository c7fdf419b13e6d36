// The OpenAI request bodies Kipp accepts, read and checked before anything else happens: a body
// either becomes an ApiRequest or an ApiError that names the offending field. The field policy:
//   - fields Kipp implements are read with their OpenAI types and ranges (null means absent);
//   - OpenAI fields that cannot change the output (user, metadata, store, service_tier) are
//     accepted and ignored;
//   - OpenAI fields Kipp does not implement (echo, best_of, suffix, ...) and names that are not
//     OpenAI fields at all are refused, naming the field.
// Structured output (response_format, and llama.cpp's json_schema and grammar) and forced tool
// calls are compiled before any work (compile_constraints), so that a schema Kipp cannot enforce is
// refused naming the keyword. Reading and compiling are two steps because compiling can cost up to
// the grammar limits' worth of time: the server compiles on threads of its own, so that plain
// requests never wait behind a costly schema. Anthropic's Messages bodies are read into the same
// ApiRequest (anthropic_request.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_messages.h"
#include "chat/chat_template.h"
#include "chat/tool_calls.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "server/api_error.h"
#include "util/json_fields.h"

namespace kipp::server {

// messages: Anthropic's /v1/messages; responses: OpenAI's /v1/responses.
enum class Endpoint { completions, chat, messages, responses };

struct ApiLimits {
  uint32_t vocab = 0;  // token ids must be below it
  uint32_t max_json_depth = 64;
  uint32_t max_object_members = json::kMaxObjectMembers;
  uint32_t max_n = 8;
  uint32_t max_prompts = 32;  // completions: prompts in one request
  uint32_t max_stop_strings = 4;
  uint32_t max_stop_bytes = 256;
  // Accept fields Kipp does not know or implement instead of a 400 (kipp serve
  // --ignore-unknown-fields); they are listed in ApiRequest::ignored_fields.
  bool ignore_unknown_fields = false;
  // The JSON form of a request that names none (kipp serve --json-form).
  grammar::JsonForm json_form = grammar::JsonForm::tidy;
  // How the served checkpoint writes a tool call, which decides the grammar of a forced one.
  CallSyntax call_syntax = CallSyntax::json;
};

// The constraint a request asked for, compiled.
struct StructuredOutput {
  std::string field;  // the request field that asked: response_format, json_schema, grammar or tool_choice
  // Its matcher, built here so that a grammar whose first state is beyond the matcher's limits is
  // a 400 before any work, and so that the scheduler thread never pays for building it.
  std::shared_ptr<grammar::Automaton> automaton;
  std::vector<grammar::Unenforced> unenforced;  // what a json_schema with strict: false left out
  // tool_choice "required" or a named function: the grammar is a call's text (JSON, or Qwen3-Coder's
  // XML), framed by the <tool_call> tokens (several calls when parallel_tool_calls allows).
  bool tool_call = false;
};

// A constraint as the body gave it, not yet compiled: a JSON Schema or a GBNF grammar.
struct ConstraintSource {
  std::string field;  // where errors point: "response_format.json_schema.schema", "grammar", ...
  enum class Kind { json_schema, gbnf } kind = Kind::json_schema;
  nlohmann::ordered_json schema;
  std::string gbnf;
  bool strict = true;  // a schema keyword Kipp cannot enforce is refused (false: listed as unenforced)
};

// tool_choice: "auto" (the model decides), "none" (no call can start), "required" (at least one
// call), or {"type": "function", "function": {"name": ...}} (that function, once).
enum class ToolChoice { automatic, none, required, named };

// What a /v1/responses request keeps for its answer: the fields the Response object repeats
// (instructions, tools, tool_choice, text, reasoning, ...), and the namespace group of each
// function offered inside one (its calls name it).
struct ResponsesFields {
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  std::map<std::string, std::string> namespaces;  // function name -> namespace
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;
  // completions: the prompts, each as text or as token ids (several: their choices come in
  // order, prompt by prompt); chat: the conversation.
  struct Prompt {
    std::optional<std::string> text;
    std::vector<uint32_t> ids;
  };
  std::vector<Prompt> prompts;
  std::vector<ChatMessage> messages;
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  bool omit_thinking = false;           // Anthropic's thinking.display "omitted": thinking blocks without their text
  // Most tokens inside the think block (thinking_budget, reasoning_effort; Anthropic's thinking).
  std::optional<uint32_t> thinking_budget;
  std::optional<uint32_t> max_tokens;  // absent: the endpoint's default
  uint32_t n = 1;
  // Sampling fields the client set; the rest come from the checkpoint's recommended defaults.
  std::optional<float> temperature, top_p, min_p, repetition_penalty, frequency_penalty, presence_penalty;
  std::optional<uint32_t> top_k;
  std::vector<LogitBias> logit_bias;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;
  uint32_t top_logprobs = 0;                              // completions: logprobs = N; chat: top_logprobs
  std::optional<ConstraintSource> constraint;             // as read; compile_constraints turns it into `structured`
  grammar::JsonForm json_form = grammar::JsonForm::tidy;  // what schemas and forced calls compile to (json_form)
  CallSyntax call_syntax = CallSyntax::json;              // the checkpoint's (ApiLimits)
  std::optional<StructuredOutput> structured;
  // chat: the functions offered (rendered into the prompt), and how the answer may call them.
  std::vector<ChatTool> tools;
  ToolChoice tool_choice = ToolChoice::automatic;
  std::string tool_choice_name;              // ToolChoice::named
  bool parallel_tool_calls = true;           // false: at most one call is returned
  std::vector<std::string> ignored_fields;   // accepted unhonoured (ApiLimits::ignore_unknown_fields)
  std::optional<ResponsesFields> responses;  // /v1/responses only
};

// A request body as JSON (empty, too deeply nested or malformed bodies are refused), in the
// client's key order.
ApiResult<nlohmann::ordered_json> parse_request_json(std::string_view body, const ApiLimits& limits);

// Reads and checks one request body for `endpoint` (completions or chat), leaving its constraint
// uncompiled.
ApiResult<ApiRequest> read_api_request(Endpoint endpoint, std::string_view body, const ApiLimits& limits);
// read_api_request, then compile_constraints.
ApiResult<ApiRequest> parse_api_request(Endpoint endpoint, std::string_view body, const ApiLimits& limits);

// Whether a request read has a constraint to compile: its own schema or grammar, or a call that
// tool_choice forces.
bool has_constraints(const ApiRequest& request);
// Compiles the request's constraint into request.structured, then the call tool_choice forces; an
// error names the field and the limit or keyword. Costs up to the grammar limits' worth of time.
ApiStatus compile_constraints(ApiRequest& request);

// A field the endpoint does not read: listed as ignored under ApiLimits::ignore_unknown_fields,
// else refused as "not supported" (`known`: a field of the API that Kipp does not implement) or
// as "not a field of `route`".
ApiStatus unknown_field(const std::string& key, bool known, const std::string& route, const ApiLimits& limits,
                        ApiRequest& request);

// OpenAI's tool_choice words, "auto", "none" and "required", into `choice`; any other word is an
// error that gives `named_form`, the endpoint's spelling of a named choice.
ApiStatus read_tool_choice_word(const std::string& word, std::string_view named_form, ToolChoice& choice);

// The thinking budget a reasoning effort stands for (both APIs' names: none, minimal, low, medium,
// high, xhigh, max; max is no budget at all). False for a name that is not an effort.
bool effort_thinking_budget(std::string_view effort, std::optional<uint32_t>& budget);
// The documented table, for error messages: "none (0), minimal (256), ...".
std::string effort_names();

// The sampling settings of a request: the client's fields over `defaults`.
SamplingParams sampling_for(const ApiRequest& request, const SamplingParams& defaults);

}  // namespace kipp::server
