// Responses API request bodies read into the chat endpoint's request: input items become the chat
// messages the same conversation has on /v1/chat/completions (rendered to the same prompt), tools
// and namespaces, efforts and formats map as documented, Codex's requests are read whole, and
// what Kipp cannot do is refused naming the field.
#include "server/responses_request.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/chat_template.h"

namespace kipp::server {
namespace {

using Json = nlohmann::ordered_json;

ApiLimits limits() {
  ApiLimits limits;
  limits.vocab = 151936;
  return limits;
}

std::string rendered(const ApiRequest& request) {
  ChatOptions options;
  options.enable_thinking = request.enable_thinking.value_or(true);
  for (const ChatTool& tool : request.tools) options.tools.push_back(tool.declaration);
  auto prompt = render_chat(Variant::instruct, request.messages, options);
  EXPECT_TRUE(prompt) << prompt.error().message;
  return prompt ? *prompt : "";
}

ApiRequest must_read(const Json& body, bool input_tokens = false) {
  auto read = read_responses_request(body.dump(), limits(), input_tokens);
  if (!read.ok()) ADD_FAILURE() << body.dump() << ": " << read.error().message;
  return read.ok() ? read.value() : ApiRequest{};
}

void expect_field_error(const Json& body, const std::string& param, bool input_tokens = false) {
  auto read = read_responses_request(body.dump(), limits(), input_tokens);
  ASSERT_TRUE(!read.ok()) << "accepted: " << body.dump();
  EXPECT_EQ(read.error().status, 400) << body.dump();
  EXPECT_EQ(read.error().param, param) << read.error().message;
}

Json with(Json fields) {
  Json body = {{"model", "m"}, {"input", "hi"}};
  body.update(fields);
  return body;
}

const Json kWeather = {{"type", "function"},
                       {"name", "get_weather"},
                       {"strict", true},
                       {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}};

// A conversation of every item kind against its chat twin: the same prompt, tools included.
TEST(ResponsesRequest, ItemsRenderAsTheirChatTwin) {
  const Json input = Json::parse(R"([
    {"role": "developer", "content": "Answer in French."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather"},
                                                    {"type": "input_text", "text": "in Paris?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "ignored: content is given"}],
     "content": [{"type": "reasoning_text", "text": "I should look."}], "encrypted_content": null},
    {"type": "message", "role": "assistant", "status": "completed", "phase": "commentary",
     "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "status": "completed", "call_id": "c1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}"},
    {"type": "function_call_output", "id": "fco_1", "call_id": "c1", "output": [{"type": "input_text", "text": "Sunny"}]},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "A summary only."}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Il fait beau."}]},
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "And tomorrow?"}])");
  const ApiRequest read =
      must_read({{"model", "m"}, {"instructions", "You help."}, {"input", input}, {"tools", Json::array({kWeather})}});
  const Json chat = {{"model", "m"},
                     {"tools",
                      Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type":
        "object", "properties": {"city": {"type": "string"}}}, "strict": true}}])")},
                     {"messages", Json::parse(R"([
    {"role": "system", "content": "You help."},
    {"role": "system", "content": "Answer in French."},
    {"role": "user", "content": "Weather\nin Paris?"},
    {"role": "assistant", "content": "Looking.", "reasoning_content": "I should look.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
    {"role": "assistant", "content": "Il fait beau.", "reasoning_content": "A summary only."},
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "And tomorrow?"}])")}};
  auto twin = parse_api_request(Endpoint::chat, chat.dump(), limits());
  ASSERT_TRUE(twin.ok()) << twin.error().message;
  EXPECT_EQ(rendered(read), rendered(twin.value()));
  EXPECT_EQ(read.endpoint, Endpoint::responses);
  // A string input is one user message.
  EXPECT_EQ(rendered(must_read(with(Json::object()))),
            rendered(must_read(with({{"input", Json::parse(R"([{"role": "user",
    "content": [{"type": "input_text", "text": "hi"}]}])")}}))));
}

TEST(ResponsesRequest, NamespacesAreFlattenedAndHostedToolsLeftOut) {
  const Json tools =
      Json::array({kWeather,
                   {{"type", "namespace"},
                    {"name", "crm"},
                    {"description", "Customers"},
                    {"tools", Json::array({{{"type", "function"}, {"name", "lookup"}},
                                           {{"type", "function"}, {"name", "later"}, {"defer_loading", true}}})}},
                   {{"type", "web_search"}, {"external_web_access", false}},
                   {{"type", "custom"}, {"name", "apply_patch"}}});
  const ApiRequest read = must_read(with({{"tools", tools}}));
  ASSERT_EQ(read.tools.size(), 2u);
  EXPECT_EQ(read.tools[0].name, "get_weather");
  EXPECT_EQ(read.tools[1].name, "lookup");
  ASSERT_TRUE(read.responses);
  EXPECT_EQ(read.responses->namespaces, (std::map<std::string, std::string>{{"lookup", "crm"}}));
  EXPECT_EQ(read.ignored_fields, (std::vector<std::string>{"tools[2] (web_search)", "tools[3] (custom)"}));
  EXPECT_EQ(read.responses->echo["tools"], tools) << "the response repeats the tools as sent";
  expect_field_error(
      with({{"tools",
             Json::array({kWeather, {{"type", "namespace"}, {"name", "n"}, {"tools", Json::array({kWeather})}}})}}),
      "tools[1].tools[0].name");
}

TEST(ResponsesRequest, ChoicesEffortsAndFormatsMapToTheChatEndpoints) {
  const ApiRequest named = must_read(with({{"tools", Json::array({kWeather})},
                                           {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
                                           {"parallel_tool_calls", false}}));
  EXPECT_EQ(named.tool_choice, ToolChoice::named);
  EXPECT_EQ(named.tool_choice_name, "get_weather");
  EXPECT_FALSE(named.parallel_tool_calls);
  EXPECT_EQ(must_read(with({{"tool_choice", "required"}})).tool_choice, ToolChoice::required);
  const ApiRequest none = must_read(with({{"reasoning", {{"effort", "none"}, {"summary", "auto"}}}}));
  EXPECT_EQ(none.enable_thinking, false);
  EXPECT_EQ(none.thinking_budget, 0u);
  const ApiRequest low = must_read(with({{"reasoning", {{"effort", "low"}}}}));
  EXPECT_EQ(low.enable_thinking, std::nullopt) << "the checkpoint's default";
  EXPECT_EQ(low.thinking_budget, 1024u);
  const ApiRequest limited = must_read(with({{"max_output_tokens", 40}, {"temperature", 0.5}, {"top_p", 0.9}}));
  EXPECT_EQ(limited.max_tokens, 40u);
  EXPECT_EQ(limited.temperature, 0.5f);
  const ApiRequest schema = must_read(
      with({{"text",
             {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "object"}}}, {"strict", true}}},
              {"verbosity", "low"}}}}));
  ASSERT_TRUE(schema.constraint);
  EXPECT_EQ(schema.constraint->field, "text.format.schema");
  EXPECT_TRUE(schema.constraint->strict);
  const ApiRequest object = must_read(with({{"text", {{"format", {{"type", "json_object"}}}}}}));
  ASSERT_TRUE(object.constraint);
  EXPECT_FALSE(object.constraint->strict);
  EXPECT_FALSE(must_read(with({{"text", {{"format", {{"type", "text"}}}}}})).constraint);
}

// Codex's two requests as it sends them: every field read, none refused.
TEST(ResponsesRequest, CodexsRequestsAreReadWhole) {
  std::ifstream in(std::string(KIPP_TEST_FIXTURES) + "/codex_request.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json requests = Json::parse(text.str())["requests"];
  ASSERT_EQ(requests.size(), 2u);
  const ApiRequest first = must_read(requests[0]);
  EXPECT_TRUE(first.stream);
  ASSERT_EQ(first.messages.size(), 4u);
  EXPECT_EQ(first.messages[0].role, "system");
  EXPECT_EQ(first.messages[1].role, "system");
  EXPECT_EQ(first.tools.size(), 5u) << "three functions and the namespace's two";
  EXPECT_EQ(first.ignored_fields, std::vector<std::string>{"tools[4] (web_search)"});
  const ApiRequest second = must_read(requests[1]);
  ASSERT_EQ(second.messages.size(), 6u);
  const ChatMessage& turn = second.messages[4];
  EXPECT_EQ(turn.role, "assistant");
  EXPECT_EQ(turn.reasoning_content, "I should run a command.");
  ASSERT_EQ(turn.tool_calls.size(), 1u);
  EXPECT_EQ(turn.tool_calls[0].name, "exec_command");
  EXPECT_EQ(second.messages[5].role, "tool");
}

TEST(ResponsesRequest, WhatKippCannotDoIsRefusedNamingTheField) {
  expect_field_error({{"input", "hi"}}, "model");
  expect_field_error({{"model", "m"}}, "input");
  expect_field_error(with({{"store", true}}), "store");
  expect_field_error(with({{"background", true}}), "background");
  expect_field_error(with({{"previous_response_id", "resp_1"}}), "previous_response_id");
  expect_field_error(with({{"conversation", "conv_1"}}), "conversation");
  expect_field_error(with({{"truncation", "auto"}}), "truncation");
  const auto input = [](const char* items) { return with({{"input", Json::parse(items)}}); };
  expect_field_error(with({{"include", Json::array({"message.output_text.logprobs"})}}), "include[0]");
  expect_field_error(with({{"include", Json::array({"everything"})}}), "include[0]");
  expect_field_error(with({{"prompt", {{"id", "pmpt_1"}}}}), "prompt");
  expect_field_error(with({{"max_output_tokens", 0}}), "max_output_tokens");
  expect_field_error(with({{"tool_choice", {{"type", "file_search"}}}}), "tool_choice");
  expect_field_error(input("[]"), "input");
  expect_field_error(input(R"([{"type": "item_reference", "id": "msg_1"}])"), "input[0]");
  expect_field_error(input(R"([{"type": "custom_tool_call", "call_id": "c"}])"), "input[0].type");
  expect_field_error(input(R"([{"role": "user", "content": [{"type": "input_file"}]}])"), "input[0].content[0]");
  expect_field_error(input(R"([{"role": "tool", "content": "x"}])"), "input[0].role");
  expect_field_error(input(R"([{"type": "function_call_output", "call_id": "c", "output": "x"}])"), "input[0].call_id");
  expect_field_error(input(R"([{"type": "function_call", "call_id": "c", "name": "f"}])"), "input[0].arguments");
  expect_field_error(input(R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "h"}])"), "input");
  expect_field_error(with({{"text", {{"format", {{"type", "json_schema"}}}}}}), "text.format.schema");
  expect_field_error(with({{"text", {{"format", {{"type", "text"}, {"schema", {}}}}}}}), "text.format.schema");
  expect_field_error(with({{"reasoning", {{"effort", "huge"}}}}), "reasoning.effort");
  expect_field_error(with({{"stream", true}}), "stream", true);
  expect_field_error(with({{"n", 2}}), "n");
  // What cannot change the answer is accepted.
  must_read(with({{"metadata", {{"k", "v"}}},
                  {"user", "u"},
                  {"prompt_cache_key", "k"},
                  {"service_tier", "auto"},
                  {"store", false},
                  {"include", Json::array({"reasoning.encrypted_content"})},
                  {"truncation", "disabled"}}));
  must_read(with({{"tools", Json::array({kWeather})}}), true);
}

}  // namespace
}  // namespace kipp::server
