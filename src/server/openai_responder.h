// The OpenAI shapes of an answer: a chat.completion or text_completion at the end, or the
// chunks of its stream (deltas with reasoning_content, tool calls sent whole once read, a usage
// chunk when asked, then [DONE]).
#pragma once

#include <memory>

#include "server/answer.h"
#include "server/api_response.h"
#include "server/responder.h"
#include "tokenizer/tokenizer.h"

namespace kipp::server {

// `choices`: n times the prompts; every choice reads its answer with `answer`.
std::shared_ptr<Responder> make_openai_responder(ResponseHeader header, const ApiRequest& request,
                                                 const Tokenizer& tokenizer, std::shared_ptr<HttpExchange> exchange,
                                                 const AnswerOptions& answer, ToolCallCounts& counts, uint32_t choices);

}  // namespace kipp::server
