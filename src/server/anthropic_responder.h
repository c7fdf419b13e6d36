// Anthropic's shapes of an answer: a `message` with content blocks (thinking, text, tool_use
// with its input as an object), stop_reason and usage; or its stream, the event sequence
// message_start, ping, content_block_start / _delta / _stop per block, message_delta (stop reason
// and final usage), message_stop. Blocks are laid out once, as the answer grows, and both shapes
// are written from that one layout, so a stream put back together is the message.
#pragma once

#include <memory>
#include <string>

#include "server/answer.h"
#include "server/responder.h"

namespace kipp::server {

// `prompt_tokens`: the rendered conversation's length, for message_start's usage (the final
// figures, with the cached prefix, come in message_delta).
std::shared_ptr<Responder> make_anthropic_responder(const ApiRequest& request, std::string model,
                                                    std::shared_ptr<HttpExchange> exchange, const AnswerOptions& answer,
                                                    ToolCallCounts& counts, uint32_t prompt_tokens);

}  // namespace kipp::server
