#include "server/openai_responder.h"

#include <vector>

namespace kipp::server {
namespace {

class OpenAiResponder : public Responder {
 public:
  OpenAiResponder(ResponseHeader header, const ApiRequest& request, const Tokenizer& tokenizer,
                  std::shared_ptr<HttpExchange> exchange, const AnswerOptions& answer, ToolCallCounts& counts,
                  uint32_t choice_count)
      : Responder(request, std::move(exchange)),
        header_(std::move(header)),
        include_usage_(request.include_usage),
        logprobs_(request.logprobs),
        tokenizer_(tokenizer) {
    if (request.structured && !request.structured->unenforced.empty()) {
      unenforced_ = Json::array();
      for (const grammar::Unenforced& u : request.structured->unenforced)
        unenforced_.push_back({{"keyword", u.keyword}, {"pointer", u.pointer}});
    }
    choices_.reserve(choice_count);
    for (uint32_t i = 0; i < choice_count; ++i) choices_.push_back({Answer(answer, counts)});
  }

 private:
  struct Choice {
    Answer answer;
    bool announced = false;  // chat: the role went out with the first delta
    // "tool_calls" when the answer called and ended by itself; a cut answer stays "length".
    const char* finish_text() const {
      return !answer.calls.empty() && answer.finish != FinishReason::length ? "tool_calls"
                                                                            : finish_reason_text(answer.finish);
    }
  };

  bool chat() const { return header_.endpoint == Endpoint::chat; }

  void on_update(const ChoiceUpdate& update) override {
    Choice& choice = choices_[update.choice];
    const AnswerPiece piece = choice.answer.take(update);
    if (!stream_) return;
    if (chat())
      for (size_t k = piece.first_new_call; k < choice.answer.calls.size(); ++k) send_call(update.choice, choice, k);
    if (piece.reasoning.empty() && piece.content.empty() && update.tokens.empty())
      return;  // a finish alone waits for done()
    Json chunk = response_envelope(header_, true);
    Json entry = {{"index", update.choice}, {"finish_reason", nullptr}};
    if (chat()) {
      Json delta = Json::object();
      if (!choice.announced) delta["role"] = "assistant";
      choice.announced = true;
      if (!piece.reasoning.empty()) delta["reasoning_content"] = piece.reasoning;
      delta["content"] = piece.content;
      entry["delta"] = std::move(delta);
      entry["logprobs"] = logprobs_ ? chat_logprobs_json(update.tokens, tokenizer_) : Json(nullptr);
    } else {
      entry["text"] = update.text;
      entry["logprobs"] =
          logprobs_ ? completion_logprobs_json(update.tokens, tokenizer_, piece.text_offset) : Json(nullptr);
    }
    chunk["choices"].push_back(std::move(entry));
    send(sse_event(chunk));
  }

  void on_done(const RequestReport& report) override {
    if (report.error) {
      const ApiError error = generation_error(*report.error, "server_error");
      if (!stream_) return exchange_->respond(error_response(ApiDialect::openai, error));
      send(sse_event(error_json(error)));
      send("data: [DONE]\n\n");
      end_stream();
      return;
    }
    if (stream_) return finish_stream(report);
    Json body = response_envelope(header_, false);
    for (uint32_t i = 0; i < choices_.size(); ++i) {
      const Answer& answer = choices_[i].answer;
      Json entry = {{"index", i}, {"finish_reason", choices_[i].finish_text()}};
      if (chat()) {
        // A turn that only calls has no content: null, as OpenAI answers it.
        Json message = {{"role", "assistant"},
                        {"content",
                         answer.content.empty() && !answer.calls.empty() ? Json(nullptr) : Json(answer.content)}};
        if (!answer.reasoning.empty()) message["reasoning_content"] = answer.reasoning;
        if (!answer.calls.empty()) {
          message["tool_calls"] = Json::array();
          for (const IdentifiedCall& call : answer.calls)
            message["tool_calls"].push_back(
                {{"id", call.id},
                 {"type", "function"},
                 {"function", {{"name", call.call.name}, {"arguments", call.call.arguments}}}});
        }
        entry["message"] = std::move(message);
        entry["logprobs"] = logprobs_ ? chat_logprobs_json(answer.tokens, tokenizer_) : Json(nullptr);
      } else {
        entry["text"] = answer.text;
        entry["logprobs"] = logprobs_ ? completion_logprobs_json(answer.tokens, tokenizer_, 0) : Json(nullptr);
      }
      body["choices"].push_back(std::move(entry));
    }
    body["usage"] = usage_json(report, reasoning_tokens());
    body["timings"] = timings_json(report);
    if (!unenforced_.is_null()) body["x_kipp_unenforced"] = unenforced_;
    exchange_->respond(json_response(200, body, headers_));
  }

  void finish_stream(const RequestReport& report) {
    for (uint32_t i = 0; i < choices_.size(); ++i) {
      Json chunk = response_envelope(header_, true);
      Json entry = {{"index", i}, {"finish_reason", choices_[i].finish_text()}, {"logprobs", nullptr}};
      if (chat())
        entry["delta"] = choices_[i].announced ? Json::object() : Json{{"role", "assistant"}, {"content", ""}};
      else entry["text"] = "";
      chunk["choices"].push_back(std::move(entry));
      if (i + 1 == choices_.size()) {
        chunk["timings"] = timings_json(report);
        if (!unenforced_.is_null()) chunk["x_kipp_unenforced"] = unenforced_;
      }
      send(sse_event(chunk));
    }
    if (include_usage_) {
      Json chunk = response_envelope(header_, true);
      chunk["usage"] = usage_json(report, reasoning_tokens());
      send(sse_event(chunk));
    }
    send("data: [DONE]\n\n");
    end_stream();
  }

  // usage.completion_tokens_details.reasoning_tokens, for chat answers.
  std::optional<uint32_t> reasoning_tokens() const {
    if (!chat()) return std::nullopt;
    uint32_t total = 0;
    for (const Choice& choice : choices_) total += choice.answer.reasoning_tokens.value_or(0);
    return total;
  }

  // A call streams as OpenAI streams one: its index, id and name first, then its arguments. Kipp
  // sends the call once its closing token has come and its JSON has been read, so a call that
  // turns out unreadable is never half sent (it arrives as content instead).
  void send_call(uint32_t index, Choice& choice, size_t k) {
    const IdentifiedCall& call = choice.answer.calls[k];
    Json opening = {{"index", k},
                    {"id", call.id},
                    {"type", "function"},
                    {"function", {{"name", call.call.name}, {"arguments", ""}}}};
    Json pieces = {{"index", k}, {"function", {{"arguments", call.call.arguments}}}};
    for (Json* part : {&opening, &pieces}) {
      Json delta = {{"tool_calls", Json::array({std::move(*part)})}};
      if (!choice.announced) delta["role"] = "assistant";
      choice.announced = true;
      Json chunk = response_envelope(header_, true);
      chunk["choices"].push_back(
          {{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
      send(sse_event(chunk));
    }
  }

  const ResponseHeader header_;
  const bool include_usage_, logprobs_;
  const Tokenizer& tokenizer_;
  Json unenforced_;  // what a non-strict schema left unenforced, for the body's x_kipp_unenforced
  std::vector<Choice> choices_;
};

}  // namespace

std::shared_ptr<Responder> make_openai_responder(ResponseHeader header, const ApiRequest& request,
                                                 const Tokenizer& tokenizer, std::shared_ptr<HttpExchange> exchange,
                                                 const AnswerOptions& answer, ToolCallCounts& counts,
                                                 uint32_t choices) {
  return std::make_shared<OpenAiResponder>(std::move(header), request, tokenizer, std::move(exchange), answer, counts,
                                           choices);
}

}  // namespace kipp::server
