#include "server/responses_responder.h"

#include <ctime>
#include <vector>

#include "server/api_response.h"

namespace kipp::server {
namespace {

class ResponsesResponder : public Responder {
 public:
  ResponsesResponder(const ApiRequest& request, std::string model, std::shared_ptr<HttpExchange> exchange,
                     const AnswerOptions& answer, ToolCallCounts& counts)
      : Responder(request, std::move(exchange)),
        id_(random_id("resp_", 48)),
        created_(int64_t(std::time(nullptr))),
        model_(std::move(model)),
        fields_(request.responses.value_or(ResponsesFields{})),
        parallel_tool_calls_(request.parallel_tool_calls),
        answer_(answer, counts) {
    if (!stream_) return;
    event("response.created", {{"response", response_json("in_progress", nullptr)}});
    event("response.in_progress", {{"response", response_json("in_progress", nullptr)}});
  }

 private:
  enum class Kind { reasoning, message, function_call };
  struct Item {
    Kind kind;
    std::string id;
    std::string text;  // reasoning or message
    size_t call = 0;   // function_call: index into the answer's calls
  };

  void on_update(const ChoiceUpdate& update) override {
    const AnswerPiece piece = answer_.take(update);
    if (!piece.reasoning.empty()) extend(Kind::reasoning, piece.reasoning);
    if (!piece.content.empty()) extend(Kind::message, piece.content);
    for (size_t k = piece.first_new_call; k < answer_.calls.size(); ++k) add_call(k);
  }

  void on_done(const RequestReport& report) override {
    if (report.error) {
      const ApiError error = generation_error(*report.error, "server_error");
      if (!stream_) return exchange_->respond(error_response(ApiDialect::openai, error));
      Json response = response_json("failed", &report);
      response["error"] = {{"code", error.status == 400 ? "invalid_prompt" : "server_error"},
                           {"message", error.message}};
      event("response.failed", {{"response", std::move(response)}});
      end_stream();
      return;
    }
    close_item();
    const bool cut = answer_.finish == FinishReason::length;
    Json response = response_json(cut ? "incomplete" : "completed", &report);
    if (!stream_) return exchange_->respond(json_response(200, response, headers_));
    event(cut ? "response.incomplete" : "response.completed", {{"response", std::move(response)}});
    end_stream();
  }

  // The response object; `report` (usage and output) once the answer is done, else none yet.
  Json response_json(const char* status, const RequestReport* report) const {
    const Json& echo = fields_.echo;
    const Json reasoning = echo.value("reasoning", Json::object());
    Json output = Json::array();
    if (report)
      for (size_t i = 0; i < items_.size(); ++i) output.push_back(item_json(i, true));
    return {
        {"id", id_},
        {"object", "response"},
        {"created_at", created_},
        {"status", status},
        {"background", false},
        {"error", nullptr},
        {"incomplete_details",
         std::string_view(status) == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
        {"instructions", echo.value("instructions", Json())},
        {"max_output_tokens", echo.value("max_output_tokens", Json())},
        {"max_tool_calls", nullptr},
        {"model", model_},
        {"output", std::move(output)},
        {"parallel_tool_calls", parallel_tool_calls_},
        {"previous_response_id", nullptr},
        {"reasoning",
         {{"effort", reasoning.is_object() ? reasoning.value("effort", Json()) : Json()},
          {"summary", reasoning.is_object() ? reasoning.value("summary", Json()) : Json()}}},
        {"service_tier", "default"},
        {"store", false},
        {"temperature", echo.value("temperature", Json())},
        {"text", echo.value("text", Json{{"format", {{"type", "text"}}}})},
        {"tool_choice", echo.value("tool_choice", Json("auto"))},
        {"tools", echo.value("tools", Json::array())},
        {"top_p", echo.value("top_p", Json())},
        {"truncation", "disabled"},
        {"usage", report ? usage_json(*report) : Json(nullptr)},
        {"user", nullptr},
        {"metadata", echo.value("metadata", Json::object())},
    };
  }

  Json usage_json(const RequestReport& report) const {
    return {{"input_tokens", report.prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", report.cached_tokens}}},
            {"output_tokens", report.completion_tokens},
            {"output_tokens_details", {{"reasoning_tokens", answer_.reasoning_tokens.value_or(0)}}},
            {"total_tokens", report.prompt_tokens + report.completion_tokens}};
  }

  // Item `index` as the output holds it (`whole`), or as output_item.added opens it.
  Json item_json(size_t index, bool whole) const {
    const Item& item = items_[index];
    // The answer was cut at max_output_tokens in its last item.
    const bool cut = answer_.done && answer_.finish == FinishReason::length && index + 1 == items_.size();
    const char* status = !whole ? "in_progress" : cut ? "incomplete" : "completed";
    switch (item.kind) {
      case Kind::reasoning:
        return {{"id", item.id},
                {"type", "reasoning"},
                {"summary", Json::array()},
                {"content", whole ? Json::array({part_json(item)}) : Json::array()}};
      case Kind::message:
        return {{"id", item.id},
                {"type", "message"},
                {"status", status},
                {"role", "assistant"},
                {"content", whole ? Json::array({part_json(item)}) : Json::array()}};
      case Kind::function_call: {
        const ChatToolCall& call = answer_.calls[item.call].call;
        Json json = {{"id", item.id},
                     {"type", "function_call"},
                     {"status", status},
                     {"arguments", whole ? call.arguments : ""},
                     {"call_id", answer_.calls[item.call].id},
                     {"name", call.name}};
        if (const auto space = fields_.namespaces.find(call.name); space != fields_.namespaces.end())
          json["namespace"] = space->second;
        return json;
      }
    }
    return {};
  }

  // The content part of a reasoning or message item, with its text so far.
  static Json part_json(const Item& item) {
    if (item.kind == Kind::reasoning) return {{"type", "reasoning_text"}, {"text", item.text}};
    return {{"type", "output_text"}, {"text", item.text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
  }

  // Appends to the last item when it is an open one of this kind, else opens one.
  void extend(Kind kind, const std::string& text) {
    if (!open_ || items_.back().kind != kind)
      open({kind, random_id(kind == Kind::reasoning ? "rs_" : "msg_", 48), "", 0});
    items_.back().text += text;
    if (!stream_) return;
    Json delta = where(0);
    delta["delta"] = text;
    if (kind == Kind::message) delta["logprobs"] = Json::array();
    event(kind == Kind::reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", std::move(delta));
  }

  void open(Item item) {
    close_item();
    items_.push_back(std::move(item));
    open_ = true;
    if (!stream_) return;
    event("response.output_item.added",
          {{"output_index", items_.size() - 1}, {"item", item_json(items_.size() - 1, false)}});
    Json part = where(0);
    part["part"] = part_json({items_.back().kind, "", "", 0});
    event("response.content_part.added", std::move(part));
  }

  void close_item() {
    if (!open_) return;
    open_ = false;
    if (!stream_) return;
    const Item& item = items_.back();
    Json text = where(0);
    text["text"] = item.text;
    if (item.kind == Kind::message) text["logprobs"] = Json::array();
    event(item.kind == Kind::reasoning ? "response.reasoning_text.done" : "response.output_text.done", std::move(text));
    Json part = where(0);
    part["part"] = part_json(item);
    event("response.content_part.done", std::move(part));
    item_done();
  }

  // A call goes out whole: Kipp sends it once its closing token has come and its JSON has been
  // read, so a call that turns out unreadable is never half sent.
  void add_call(size_t call) {
    close_item();
    items_.push_back({Kind::function_call, random_id("fc_", 48), "", call});
    if (!stream_) return;
    event("response.output_item.added",
          {{"output_index", items_.size() - 1}, {"item", item_json(items_.size() - 1, false)}});
    const std::string& arguments = answer_.calls[call].call.arguments;
    Json delta = where(std::nullopt);
    delta["delta"] = arguments;
    event("response.function_call_arguments.delta", std::move(delta));
    Json done = where(std::nullopt);
    done["name"] = answer_.calls[call].call.name;
    done["arguments"] = arguments;
    event("response.function_call_arguments.done", std::move(done));
    item_done();
  }

  void item_done() {
    event("response.output_item.done",
          {{"output_index", items_.size() - 1}, {"item", item_json(items_.size() - 1, true)}});
  }

  // Where an event of the last item points: its id, its index in the output and, for text, the part.
  Json where(std::optional<size_t> content_index) const {
    Json json = {{"item_id", items_.back().id}, {"output_index", items_.size() - 1}};
    if (content_index) json["content_index"] = *content_index;
    return json;
  }

  // One event of the stream: its type, its place in the stream, then its fields.
  void event(const std::string& type, Json fields) {
    Json data = {{"type", type}, {"sequence_number", sequence_++}};
    data.update(fields);
    send(named_sse_event(type, data));
  }

  const std::string id_;
  const int64_t created_;
  const std::string model_;
  const ResponsesFields fields_;
  const bool parallel_tool_calls_;
  Answer answer_;
  std::vector<Item> items_;
  bool open_ = false;  // the last item is a reasoning or message item still growing
  uint64_t sequence_ = 0;
};

}  // namespace

std::shared_ptr<Responder> make_responses_responder(const ApiRequest& request, std::string model,
                                                    std::shared_ptr<HttpExchange> exchange, const AnswerOptions& answer,
                                                    ToolCallCounts& counts) {
  return std::make_shared<ResponsesResponder>(request, std::move(model), std::move(exchange), answer, counts);
}

}  // namespace kipp::server
