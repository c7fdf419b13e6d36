// OpenAI's Responses API request bodies (POST /v1/responses and /v1/responses/input_tokens), read
// into the same ApiRequest the chat endpoint makes, so that rendering, tool calls, constraints and
// scheduling are the chat endpoint's own code. Kipp keeps no state: every request carries its
// whole conversation (previous_response_id, conversation, store: true and background are refused).
//   - `instructions` opens the conversation as a system message; `input` is a string (one user
//     message) or a list of items: `message` (user; system and developer as system messages,
//     rendered where they stand; assistant), `function_call` and `reasoning` (the assistant turn
//     they belong to), `function_call_output` (a tool message answering an earlier call_id);
//   - function tools become the chat endpoint's functions; a `namespace` group's functions are
//     offered by their own names (two with one name are refused), and a call returns its
//     namespace; tools that run on OpenAI's service (web_search, file_search, ...) or need a
//     format Kipp lacks (custom) are left out of the prompt and listed as ignored;
//   - `text.format` is structured output; `reasoning.effort` sets a thinking budget (none turns
//     thinking off); `max_output_tokens` is max_tokens.
// The field policy is the other endpoints': fields that cannot change the answer are accepted and
// ignored, fields Kipp does not implement and names that are not fields are refused, naming them.
// Item fields that only describe an item (id, status, phase) are not read. Kipp adds seed, top_k and
// json_form.
#pragma once

#include <string_view>

#include "server/api_request.h"

namespace kipp::server {

// `input_tokens`: the body of /v1/responses/input_tokens (no sampling or output fields). Reads and
// checks the body, leaving its constraint uncompiled (compile_constraints, api_request.h).
ApiResult<ApiRequest> read_responses_request(std::string_view body, const ApiLimits& limits, bool input_tokens);
// read_responses_request, then compile_constraints.
ApiResult<ApiRequest> parse_responses_request(std::string_view body, const ApiLimits& limits, bool input_tokens);

}  // namespace kipp::server
