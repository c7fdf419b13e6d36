#include "server/anthropic_responder.h"

#include <vector>

#include "server/api_response.h"

namespace kipp::server {
namespace {

class AnthropicResponder : public Responder {
 public:
  AnthropicResponder(const ApiRequest& request, std::string model, std::shared_ptr<HttpExchange> exchange,
                     const AnswerOptions& answer, ToolCallCounts& counts, uint32_t prompt_tokens)
      : Responder(request, std::move(exchange)),
        id_(random_id("msg_", 24)),
        model_(std::move(model)),
        answer_(answer, counts),
        omit_thinking_(request.omit_thinking) {
    if (!stream_) return;
    Json message = message_json(Json::array(), nullptr, nullptr);
    message["usage"] = {{"input_tokens", prompt_tokens},
                        {"cache_creation_input_tokens", 0},
                        {"cache_read_input_tokens", 0},
                        {"output_tokens", 0}};
    send(named_sse_event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}));
    send(named_sse_event("ping", {{"type", "ping"}}));
  }

 private:
  enum class Kind { thinking, text, tool_use };
  struct Block {
    Kind kind;
    std::string text;  // thinking or text
    size_t call = 0;   // tool_use: index into the answer's calls
  };

  void on_update(const ChoiceUpdate& update) override {
    const AnswerPiece piece = answer_.take(update);
    if (!piece.reasoning.empty()) extend(Kind::thinking, piece.reasoning);
    if (!piece.content.empty()) extend(Kind::text, piece.content);
    for (size_t k = piece.first_new_call; k < answer_.calls.size(); ++k) {
      open({Kind::tool_use, "", k});
      // The input goes out whole: Kipp sends a call once its closing token has come and its JSON
      // has been read, so a call that turns out unreadable is never half sent.
      if (stream_)
        send(named_sse_event("content_block_delta",
                             {{"type", "content_block_delta"},
                              {"index", blocks_.size() - 1},
                              {"delta",
                               {{"type", "input_json_delta"}, {"partial_json", answer_.calls[k].call.arguments}}}}));
    }
  }

  void on_done(const RequestReport& report) override {
    if (report.error) {
      const ApiError error = generation_error(*report.error, "api_error");
      if (!stream_) return exchange_->respond(error_response(ApiDialect::anthropic, error));
      send(named_sse_event("error", anthropic_error_json(error)));
      end_stream();
      return;
    }
    const char* stop_reason = answer_.finish == FinishReason::length        ? "max_tokens"
                              : !answer_.calls.empty()                      ? "tool_use"
                              : answer_.finish == FinishReason::stop_string ? "stop_sequence"
                                                                            : "end_turn";
    const Json stop_sequence = answer_.finish == FinishReason::stop_string ? Json(answer_.stop) : Json(nullptr);
    if (!stream_) {
      Json content = Json::array();
      for (const Block& block : blocks_) content.push_back(block_json(block, true));
      Json message = message_json(std::move(content), stop_reason, stop_sequence);
      message["usage"] = usage(report);
      return exchange_->respond(json_response(200, message, headers_));
    }
    close_block();
    send(named_sse_event("message_delta", {{"type", "message_delta"},
                                           {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence}}},
                                           {"usage", usage(report)}}));
    send(named_sse_event("message_stop", {{"type", "message_stop"}}));
    end_stream();
  }

  Json message_json(Json content, Json stop_reason, Json stop_sequence) const {
    return {{"id", id_},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model_},
            {"content", std::move(content)},
            {"stop_reason", std::move(stop_reason)},
            {"stop_sequence", std::move(stop_sequence)}};
  }

  // Anthropic counts input as the tokens read fresh plus those read from the cache.
  Json usage(const RequestReport& report) const {
    return {{"input_tokens", report.prompt_tokens - report.cached_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", report.cached_tokens},
            {"output_tokens", report.completion_tokens},
            {"output_tokens_details", {{"thinking_tokens", answer_.reasoning_tokens.value_or(0)}}}};
  }

  // A block as the message holds it (`whole`), or as content_block_start opens it.
  Json block_json(const Block& block, bool whole) const {
    switch (block.kind) {
      case Kind::thinking: return {{"type", "thinking"}, {"thinking", whole ? block.text : ""}, {"signature", ""}};
      case Kind::text: return {{"type", "text"}, {"text", whole ? block.text : ""}};
      case Kind::tool_use: {
        const IdentifiedCall& call = answer_.calls[block.call];
        Json input = Json::object();
        if (whole) input = Json::parse(call.call.arguments, nullptr, false);  // read by the extractor already
        return {{"type", "tool_use"}, {"id", call.id}, {"name", call.call.name}, {"input", std::move(input)}};
      }
    }
    return {};
  }

  // Appends to the last block when it is of this kind, else opens one.
  void extend(Kind kind, const std::string& text) {
    if (blocks_.empty() || blocks_.back().kind != kind) open({kind, "", 0});
    if (kind == Kind::thinking && omit_thinking_) return;  // the block, without its text
    blocks_.back().text += text;
    if (!stream_) return;
    Json delta = kind == Kind::thinking ? Json{{"type", "thinking_delta"}, {"thinking", text}}
                                        : Json{{"type", "text_delta"}, {"text", text}};
    send(
        named_sse_event("content_block_delta",
                        {{"type", "content_block_delta"}, {"index", blocks_.size() - 1}, {"delta", std::move(delta)}}));
  }

  void open(Block block) {
    close_block();
    blocks_.push_back(std::move(block));
    if (!stream_) return;
    open_ = true;
    send(named_sse_event("content_block_start", {{"type", "content_block_start"},
                                                 {"index", blocks_.size() - 1},
                                                 {"content_block", block_json(blocks_.back(), false)}}));
  }

  void close_block() {
    if (!open_) return;
    open_ = false;
    send(named_sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", blocks_.size() - 1}}));
  }

  const std::string id_, model_;
  Answer answer_;
  const bool omit_thinking_;  // thinking.display "omitted"
  std::vector<Block> blocks_;
  bool open_ = false;  // streaming: the last block's stop has not been sent
};

}  // namespace

std::shared_ptr<Responder> make_anthropic_responder(const ApiRequest& request, std::string model,
                                                    std::shared_ptr<HttpExchange> exchange, const AnswerOptions& answer,
                                                    ToolCallCounts& counts, uint32_t prompt_tokens) {
  return std::make_shared<AnthropicResponder>(request, std::move(model), std::move(exchange), answer, counts,
                                              prompt_tokens);
}

}  // namespace kipp::server
