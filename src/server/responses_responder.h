// The Responses API's shapes of an answer: a `response` object whose output is a list of items
// (reasoning with its reasoning_text, assistant messages with output_text, function calls with
// their call_id and arguments), status completed or incomplete (max_output_tokens) and usage; or
// its stream, the event sequence response.created, response.in_progress, then per item
// output_item.added, content_part.added, the deltas (reasoning_text, output_text or
// function_call_arguments) and their done events, content_part.done, output_item.done, and last
// response.completed (or .incomplete, or .failed) with the whole response. Every event carries
// its sequence_number. Items are laid out once, as the answer grows, and both shapes are written
// from that one layout, so a stream put back together is the response.
#pragma once

#include <memory>
#include <string>

#include "server/answer.h"
#include "server/responder.h"

namespace kipp::server {

std::shared_ptr<Responder> make_responses_responder(const ApiRequest& request, std::string model,
                                                    std::shared_ptr<HttpExchange> exchange, const AnswerOptions& answer,
                                                    ToolCallCounts& counts);

}  // namespace kipp::server
