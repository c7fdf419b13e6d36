// Anthropic's Messages API request bodies (POST /v1/messages and /v1/messages/count_tokens),
// read into the same ApiRequest the OpenAI endpoints make, so that rendering, tool calls,
// constraints and scheduling are the chat endpoint's own code, not a second copy:
//   - `system` (a string or text blocks, joined with "\n") opens the conversation;
//   - user turns: text blocks are the user's message; each `tool_result` block becomes a tool
//     message (a <tool_response> turn), in order; a `tool_reference` block in a tool_result (what
//     a tool search returns) loads the deferred tool it names into the prompt;
//   - assistant turns: `thinking` blocks are the reasoning, text blocks the content, `tool_use`
//     blocks its calls (`input` printed as Python's json.dumps writes it, as the template does);
//   - `tools` become functions {name, description, parameters: input_schema}; those with
//     defer_loading stay out of the prompt until a tool_reference names them;
//   - `tool_choice` auto / any / tool / none map to auto / required / named / none, and
//     disable_parallel_tool_use to parallel_tool_calls false;
//   - `thinking` enabled sets a thinking budget, disabled turns thinking off (and closes a
//     thinking-2507 block at once), adaptive and absent leave the checkpoint's default;
//     `output_config.effort` sets a budget by name; `output_config.format` a JSON Schema.
// The field policy is the OpenAI side's: fields that cannot change the answer (metadata,
// cache_control, service_tier, ...) are accepted and ignored, fields Kipp does not implement and
// names that are not fields are refused, naming them. Kipp adds `seed` and `json_form`.
#pragma once

#include <string_view>

#include "server/api_request.h"

namespace kipp::server {

// `count_tokens`: the body of /v1/messages/count_tokens (no max_tokens, no sampling fields). Reads
// and checks the body, leaving its constraint uncompiled (compile_constraints, api_request.h).
ApiResult<ApiRequest> read_anthropic_request(std::string_view body, const ApiLimits& limits, bool count_tokens);
// read_anthropic_request, then compile_constraints.
ApiResult<ApiRequest> parse_anthropic_request(std::string_view body, const ApiLimits& limits, bool count_tokens);

}  // namespace kipp::server
