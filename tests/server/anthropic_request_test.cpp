// Anthropic request bodies read into the chat endpoint's request: every conversation of the
// shared fixture renders to exactly the prompt its OpenAI twin renders to, and the Anthropic
// fields map as documented (tool_choice, thinking, output_config), with refusals naming the field.
#include "server/anthropic_request.h"

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

Json fixture() {
  std::ifstream in(std::string(KIPP_TEST_FIXTURES) + "/anthropic_openai_conversations.json");
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

// The prompt a request renders to on a hybrid instruct checkpoint, as the server renders it.
std::string rendered(const ApiRequest& request) {
  ChatOptions options;
  options.enable_thinking = request.enable_thinking.value_or(true);
  for (const ChatTool& tool : request.tools) options.tools.push_back(tool.declaration);
  auto prompt = render_chat(Variant::instruct, request.messages, options);
  EXPECT_TRUE(prompt) << prompt.error().message;
  return prompt ? *prompt : "";
}

ApiRequest must_parse(ApiResult<ApiRequest> parsed, const std::string& what) {
  if (!parsed.ok()) ADD_FAILURE() << what << ": " << parsed.error().message;
  return parsed.ok() ? parsed.value() : ApiRequest{};
}

TEST(AnthropicRequest, EveryFixtureConversationRendersAsItsOpenAiTwin) {
  const Json all = fixture();
  ASSERT_GE(all["conversations"].size(), 6u);
  for (const Json& conversation : all["conversations"]) {
    const std::string name = conversation["name"];
    Json anthropic = conversation["anthropic"], openai = conversation["openai"];
    anthropic["model"] = openai["model"] = "m";
    anthropic["max_tokens"] = 16;
    if (conversation.value("tools", false)) {
      anthropic["tools"] = all["tools"]["anthropic"];
      openai["tools"] = all["tools"]["openai"];
    }
    const ApiRequest a = must_parse(parse_anthropic_request(anthropic.dump(), limits(), false), name);
    const ApiRequest o = must_parse(parse_api_request(Endpoint::chat, openai.dump(), limits()), name);
    EXPECT_EQ(rendered(a), rendered(o)) << name;
    // count_tokens reads the same body without max_tokens.
    anthropic.erase("max_tokens");
    EXPECT_EQ(rendered(must_parse(parse_anthropic_request(anthropic.dump(), limits(), true), name)), rendered(o))
        << name;
  }
}

ApiRequest parse_fields(const std::string& fields) {
  const std::string body = R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}])" +
                           std::string(fields.empty() ? "" : ",") + fields + "}";
  return must_parse(parse_anthropic_request(body, limits(), false), fields);
}

void expect_field_error(const std::string& body, const std::string& param, bool count_tokens = false) {
  auto parsed = parse_anthropic_request(body, limits(), count_tokens);
  ASSERT_TRUE(!parsed.ok()) << "accepted: " << body;
  EXPECT_EQ(parsed.error().status, 400) << body;
  EXPECT_EQ(parsed.error().param, param) << parsed.error().message;
}

std::string with(const std::string& fields) {
  return R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}],)" + fields + "}";
}

const char* kTool = R"("tools":[{"name":"f","input_schema":{"type":"object","properties":{"a":{"type":"integer"}}}}])";

TEST(AnthropicRequest, ToolChoiceMapsToTheChatEndpointsChoices) {
  EXPECT_EQ(parse_fields(std::string(kTool) + R"(,"tool_choice":{"type":"auto"})").tool_choice, ToolChoice::automatic);
  const ApiRequest any =
      parse_fields(std::string(kTool) + R"(,"tool_choice":{"type":"any","disable_parallel_tool_use":true})");
  EXPECT_EQ(any.tool_choice, ToolChoice::required);
  EXPECT_FALSE(any.parallel_tool_calls);
  ASSERT_TRUE(any.structured);
  EXPECT_TRUE(any.structured->tool_call);
  const ApiRequest named = parse_fields(std::string(kTool) + R"(,"tool_choice":{"type":"tool","name":"f"})");
  EXPECT_EQ(named.tool_choice, ToolChoice::named);
  EXPECT_EQ(named.tool_choice_name, "f");
  EXPECT_EQ(parse_fields(std::string(kTool) + R"(,"tool_choice":{"type":"none"})").tool_choice, ToolChoice::none);
  expect_field_error(with(std::string(kTool) + R"(,"tool_choice":{"type":"tool","name":"g"})"), "tool_choice");
  expect_field_error(with(R"("tool_choice":{"type":"any"})"), "tool_choice");
  expect_field_error(with(std::string(kTool) + R"(,"tool_choice":{"type":"sometimes"})"), "tool_choice.type");
  expect_field_error(with(R"("tools":[{"type":"web_search_20250305","name":"web_search"}])"), "tools[0].type");
  expect_field_error(with(R"("tools":[{"name":"f"}])"), "tools[0].input_schema");
}

// Claude Code's request as it sends it: every field read, none refused.
TEST(AnthropicRequest, ClaudeCodesRequestIsReadWhole) {
  std::ifstream in(std::string(KIPP_TEST_FIXTURES) + "/claude_code_request.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json sent = Json::parse(text.str())["request"];
  const ApiRequest request = must_parse(parse_anthropic_request(sent.dump(), limits(), false), "claude code");
  ASSERT_EQ(request.tools.size(), 2u) << "the deferred tool is left out of the prompt";
  EXPECT_EQ(request.tools[0].name, "Bash");
  ASSERT_EQ(request.messages.size(), 3u);
  EXPECT_EQ(request.messages[0].role, "system");  // the top-level system field
  EXPECT_EQ(request.messages[1].role, "user");
  EXPECT_EQ(request.messages[2].role, "system") << "the system message in the conversation stays where it is";
  EXPECT_TRUE(request.omit_thinking);
  EXPECT_FALSE(request.enable_thinking) << "adaptive: the checkpoint decides";
  EXPECT_EQ(request.thinking_budget, 16384u) << "effort high";
  EXPECT_NE(rendered(request).find("<|im_start|>system\n# Environment"), std::string::npos) << rendered(request);
  expect_field_error(with(R"("context_management":{"edits":[3]})"), "context_management.edits[0]");
}

// Claude Code's later turns: a tool search's tool_result holds tool_reference blocks, which load
// the deferred tools they name into the prompt.
TEST(AnthropicRequest, AToolReferenceLoadsTheDeferredToolItNames) {
  const std::string tools = R"("tools":[{"name":"ToolSearch","input_schema":{"type":"object"}},
    {"name":"Later","input_schema":{"type":"object"},"defer_loading":true},
    {"name":"Other","input_schema":{"type":"object"},"defer_loading":true}])";
  const auto turns = [](const std::string& result) {
    return R"("messages":[{"role":"user","content":"Find the tool"},
      {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch","input":{"query":"later"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":)" +
           result + R"(},{"type":"text","text":"Go on"}]}])";
  };
  const auto names = [](const ApiRequest& request) {
    std::vector<std::string> out;
    for (const ChatTool& tool : request.tools) out.push_back(tool.name);
    return out;
  };
  const auto body = [&](const std::string& result) {
    return R"({"model":"m","max_tokens":100,)" + tools + "," + turns(result) + "}";
  };
  const ApiRequest found =
      must_parse(parse_anthropic_request(body(R"([{"type":"tool_reference","tool_name":"Later"}])"), limits(), false),
                 "reference");
  EXPECT_EQ(names(found), (std::vector<std::string>{"ToolSearch", "Later"}));
  ASSERT_EQ(found.messages.size(), 4u);
  EXPECT_EQ(found.messages[2].role, "tool");
  EXPECT_EQ(found.messages[2].content, "") << "the reference adds the tool, not text";
  const ApiRequest none = must_parse(parse_anthropic_request(body(R"("nothing found")"), limits(), false), "text");
  EXPECT_EQ(names(none), std::vector<std::string>{"ToolSearch"});
  expect_field_error(body(R"([{"type":"tool_reference","tool_name":"Missing"}])"),
                     "messages[2].content[0].content[0].tool_name");
  expect_field_error(body(R"([{"type":"tool_reference"}])"), "messages[2].content[0].content[0].tool_name");
}

// Anthropic's contract: no thinking unless `thinking` enables it, and none under forced tool use.
TEST(AnthropicRequest, ThinkingIsOffUnlessEnabledAndUnderForcedToolUse) {
  const ApiRequest absent = parse_fields("");
  EXPECT_EQ(absent.enable_thinking, false);
  EXPECT_EQ(absent.thinking_budget, 0u) << "a thinking-2507 block closes at once";
  const std::string tool = R"("tools":[{"name":"f","input_schema":{"type":"object"}}],)";
  for (const char* choice : {R"({"type":"any"})", R"({"type":"tool","name":"f"})"}) {
    const ApiRequest forced = parse_fields(tool + R"("thinking":{"type":"adaptive"},"tool_choice":)" + choice);
    EXPECT_EQ(forced.enable_thinking, false) << choice;
    EXPECT_EQ(forced.thinking_budget, 0u) << choice;
  }
  const ApiRequest automatic = parse_fields(tool + R"("thinking":{"type":"adaptive"},"tool_choice":{"type":"auto"})");
  EXPECT_FALSE(automatic.enable_thinking) << "adaptive leaves it to the checkpoint";
}

TEST(AnthropicRequest, ThinkingSetsTheBudgetOrSwitchesItOff) {
  const ApiRequest enabled = parse_fields(R"("thinking":{"type":"enabled","budget_tokens":40})");
  EXPECT_EQ(enabled.thinking_budget, 40u);
  EXPECT_EQ(enabled.enable_thinking, true);
  const ApiRequest disabled = parse_fields(R"("thinking":{"type":"disabled"})");
  EXPECT_EQ(disabled.enable_thinking, false);
  EXPECT_EQ(disabled.thinking_budget, 0u) << "a thinking-2507 block closes at once";
  const ApiRequest adaptive = parse_fields(R"("thinking":{"type":"adaptive"})");
  EXPECT_FALSE(adaptive.enable_thinking);
  EXPECT_FALSE(adaptive.thinking_budget);
  EXPECT_EQ(parse_fields(R"("output_config":{"effort":"low"})").thinking_budget, 1024u);
  expect_field_error(
      with(
          R"("thinking":{"type":"enabled","budget_tokens":10},"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"})"),
      "thinking");
  expect_field_error(with(R"("thinking":{"type":"enabled","budget_tokens":100})"), "thinking.budget_tokens");
  expect_field_error(with(R"("thinking":{"type":"enabled"})"), "thinking.budget_tokens");
  expect_field_error(with(R"("thinking":{"type":"enabled","budget_tokens":10},"output_config":{"effort":"low"})"),
                     "output_config.effort");
  expect_field_error(with(R"("thinking":{"type":"enabled","budget_tokens":10,"display":"verbatim"})"),
                     "thinking.display");
  EXPECT_TRUE(parse_fields(R"("thinking":{"type":"enabled","budget_tokens":10,"display":"omitted"})").omit_thinking);
}

TEST(AnthropicRequest, SamplingStopsAndFormat) {
  const ApiRequest request =
      parse_fields(R"("temperature":0.5,"top_p":0.9,"top_k":20,"seed":7,"stop_sequences":["END"],"stream":true,)"
                   R"("metadata":{"user_id":"u"},"service_tier":"auto")");
  EXPECT_EQ(request.temperature, 0.5f);
  EXPECT_EQ(request.top_k, 20u);
  EXPECT_EQ(request.seed, 7u);
  EXPECT_EQ(request.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(request.stream);
  const ApiRequest format =
      parse_fields(R"("output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}})");
  ASSERT_TRUE(format.structured);
  EXPECT_EQ(format.structured->field, "output_config.format.schema");
  expect_field_error(with(R"("temperature":1.5)"), "temperature");  // Anthropic's range is [0, 1]
  expect_field_error(with(R"("stop_sequences":"END")"), "stop_sequences");
  expect_field_error(with(R"("frequency_penalty":1)"), "frequency_penalty");
  expect_field_error(with(R"("container":"c")"), "container");
}

TEST(AnthropicRequest, RefusalsNameTheField) {
  expect_field_error(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", "max_tokens");
  expect_field_error(R"({"max_tokens":5,"messages":[{"role":"user","content":"hi"}]})", "model");
  expect_field_error(R"({"model":"m","max_tokens":5,"messages":[]})", "messages");
  expect_field_error(R"({"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"x"}]})", "messages[0].role");
  expect_field_error(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})",
      "messages[0].content[0]");
  expect_field_error(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]})",
      "messages");
  expect_field_error(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]})",
      "messages[0].content[0].tool_use_id");
  expect_field_error(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi","name":"n"}]})",
                     "messages[0].name");
  expect_field_error(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5})", "max_tokens", true);
  // Every field given the wrong JSON type is a 400 naming it, never a crash.
  for (const auto& [fields, param] : std::vector<std::pair<std::string, std::string>>{
           {R"("system":5)", "system"},
           {R"("system":[{"type":"text"}])", "system[0].text"},
           {R"("tools":{})", "tools"},
           {R"("tools":[5])", "tools[0]"},
           {R"("tool_choice":"any")", "tool_choice"},
           {R"("thinking":"enabled")", "thinking"},
           {R"("thinking":{"type":"enabled","budget_tokens":"10"})", "thinking.budget_tokens"},
           {R"("output_config":[])", "output_config"},
           {R"("output_config":{"format":"json"})", "output_config.format"},
           {R"("stop_sequences":[1])", "stop_sequences"},
           {R"("stream":"yes")", "stream"},
           {R"("top_k":-1)", "top_k"}})
    expect_field_error(with(fields), param);
  for (
      const auto& [messages, param] : std::vector<std::pair<std::string, std::string>>{
          {R"({})", "messages"},
          {R"([5])", "messages[0]"},
          {R"([{"role":"user"}])", "messages[0].content"},
          {R"([{"role":"user","content":7}])", "messages[0].content"},
          {R"([{"role":"user","content":[7]}])", "messages[0].content[0]"},
          {R"([{"role":"user","content":[{"type":"text","text":1}]}])", "messages[0].content[0].text"},
          {R"([{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[]}]},{"role":"user","content":"x"}])",
           "messages[0].content[0].input"},
          {R"([{"role":"assistant","content":[{"type":"thinking"}]},{"role":"user","content":"x"}])",
           "messages[0].content[0].thinking"}})
    expect_field_error(R"({"model":"m","max_tokens":5,"messages":)" + messages + "}", param);
}

}  // namespace
}  // namespace kipp::server
