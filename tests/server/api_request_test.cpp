// The OpenAI request reader: every malformed request class of ../shared/BAD-INPUTS.md (S2-S16)
// is a 400 naming its field, the field policy holds, and seeded fuzzing of request bodies never
// crashes the reader or lets an out-of-range value through. Also the reasoning splitter, which
// must give the same split however the answer is chunked.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "chat/reasoning_split.h"
#include "server/api_request.h"
#include "util/json_fields.h"

namespace kipp::server {
namespace {

constexpr uint32_t kVocab = 151669;

ApiLimits limits() {
  ApiLimits l;
  l.vocab = kVocab;
  return l;
}

ApiResult<ApiRequest> parse(Endpoint endpoint, const std::string& body) {
  return parse_api_request(endpoint, body, limits());
}

// The error a body gets; fails the test if it is accepted.
ApiError error_of(Endpoint endpoint, const std::string& body) {
  auto result = parse(endpoint, body);
  if (!result.ok()) return result.error();
  ADD_FAILURE() << "accepted: " << body;
  return ApiError{0, ""};
}

std::string completion_with(const std::string& fields) {
  return R"({"model":"m","prompt":"hi")" + std::string(fields.empty() ? "" : ",") + fields + "}";
}

std::string chat_with(const std::string& fields) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" + std::string(fields.empty() ? "" : ",") +
         fields + "}";
}

void expect_field_error(Endpoint endpoint, const std::string& body, const std::string& param) {
  const ApiError error = error_of(endpoint, body);
  EXPECT_EQ(error.status, 400) << body;
  EXPECT_EQ(error.param, param) << body << " -> " << error.message;
  EXPECT_EQ(error.type, "invalid_request_error");
}

TEST(ApiRequest, ReadsEveryImplementedField) {
  auto result = parse(Endpoint::completions,
                      R"({"model":"m","prompt":[1,2,3],"max_tokens":7,"n":2,"temperature":0.5,"top_p":0.9,"top_k":-1,
                          "min_p":0.1,"frequency_penalty":-1,"presence_penalty":1.5,"repetition_penalty":1.1,
                          "logit_bias":{"42":-100,"7":3.5},"seed":-3,"stop":["a","bc"],"stream":true,
                          "stream_options":{"include_usage":true},"logprobs":4,"user":"x","store":true,
                          "metadata":{"k":"v"},"service_tier":"auto","suffix":null})");
  ASSERT_TRUE(result.ok()) << result.error().message;
  const ApiRequest& r = result.value();
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(r.max_tokens, 7u);
  EXPECT_EQ(r.n, 2u);
  EXPECT_FLOAT_EQ(*r.temperature, 0.5f);
  EXPECT_EQ(*r.top_k, 0u) << "-1 means off";
  EXPECT_EQ(r.logit_bias.size(), 2u);
  EXPECT_EQ(*r.seed, uint64_t(-3));
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream && r.include_usage && r.logprobs);
  EXPECT_EQ(r.top_logprobs, 4u);

  const SamplingParams sampling = sampling_for(r, SamplingParams{});
  EXPECT_FLOAT_EQ(sampling.top_p, 0.9f);
  EXPECT_FLOAT_EQ(sampling.repetition_penalty, 1.1f);

  auto chat = parse(Endpoint::chat, chat_with(R"("max_completion_tokens":5,"logprobs":true,"top_logprobs":20,
                                               "chat_template_kwargs":{"enable_thinking":false})"));
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_EQ(chat.value().max_tokens, 5u);
  EXPECT_EQ(chat.value().enable_thinking, false);
  EXPECT_EQ(chat.value().top_logprobs, 20u);
}

TEST(ApiRequest, StructuredOutputIsCompiledWhileReading) {
  auto schema = parse(Endpoint::chat, chat_with(R"("response_format":{"type":"json_schema","json_schema":
      {"name":"n","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}})"));
  ASSERT_TRUE(schema.ok()) << schema.error().message;
  const auto& structured = schema.value().structured;
  ASSERT_TRUE(structured.has_value());
  EXPECT_EQ(structured->field, "response_format.json_schema.schema");
  EXPECT_GT(structured->automaton->grammar().rules.size(), 1u);
  EXPECT_TRUE(structured->unenforced.empty());

  // OpenAI's default is strict: false: what cannot be enforced is listed, not refused.
  auto lenient = parse(Endpoint::chat, chat_with(R"("response_format":{"type":"json_schema","json_schema":
      {"name":"n","schema":{"type":"array","uniqueItems":true}}})"));
  ASSERT_TRUE(lenient.ok()) << lenient.error().message;
  ASSERT_EQ(lenient.value().structured->unenforced.size(), 1u);
  EXPECT_EQ(lenient.value().structured->unenforced[0].keyword, "uniqueItems");

  const ApiError strict = error_of(Endpoint::chat, chat_with(R"("response_format":{"type":"json_schema","json_schema":
      {"name":"n","strict":true,"schema":{"type":"array","uniqueItems":true}}})"));
  EXPECT_EQ(strict.status, 400);
  EXPECT_EQ(strict.param, "response_format.json_schema.schema");
  EXPECT_NE(strict.message.find("keyword 'uniqueItems' at /"), std::string::npos) << strict.message;

  auto text = parse(Endpoint::chat, chat_with(R"("response_format":{"type":"text"})"));
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text.value().structured.has_value());

  auto gbnf = parse(Endpoint::completions, completion_with(R"("grammar":"root ::= \"a\" | \"b\"")"));
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  EXPECT_EQ(gbnf.value().structured->field, "grammar");
  auto llama_schema = parse(Endpoint::completions, completion_with(R"("json_schema":{"type":"boolean"})"));
  ASSERT_TRUE(llama_schema.ok()) << llama_schema.error().message;

  expect_field_error(Endpoint::chat,
                     chat_with(R"("response_format":{"type":"json_object"},"grammar":"root ::= \"a\"")"),
                     "grammar");  // keys are read in the client's order: the second names the clash
  expect_field_error(Endpoint::chat, chat_with(R"("response_format":{"type":"yaml"})"), "response_format.type");
  expect_field_error(Endpoint::chat, chat_with(R"("response_format":{"type":"json_object","schema":{}})"),
                     "response_format.schema");
  expect_field_error(Endpoint::completions, completion_with(R"("grammar":"root ::= \"a")"), "grammar");
  expect_field_error(Endpoint::completions, completion_with(R"("json_schema":"{}")"), "json_schema");
}

// The server reads on one set of threads and compiles on another: reading keeps the constraint as
// the body gave it, and compiling is what costs (and what a limit refuses).
TEST(ApiRequest, ReadingLeavesTheConstraintForCompiling) {
  const std::string deep = std::string(100, '(') + "a" + std::string(100, ')');
  const std::string body = chat_with(R"("response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,
      "schema":{"type":"string","pattern":")" +
                                     deep + R"("}}})");
  auto read = read_api_request(Endpoint::chat, body, limits());
  ASSERT_TRUE(read.ok()) << read.error().message;
  ApiRequest& request = read.value();
  EXPECT_FALSE(request.structured.has_value());
  ASSERT_TRUE(request.constraint.has_value());
  EXPECT_EQ(request.constraint->field, "response_format.json_schema.schema");
  EXPECT_TRUE(has_constraints(request));
  const auto refused = compile_constraints(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().param, "response_format.json_schema.schema");
  EXPECT_NE(refused.error().message.find("limit of 64"), std::string::npos) << refused.error().message;
  EXPECT_EQ(error_of(Endpoint::chat, body).message, refused.error().message);  // parse_api_request: both steps

  // A forced call is a constraint too; a plain request has none.
  auto forced = read_api_request(Endpoint::chat, chat_with(R"("tools":[{"type":"function","function":{"name":"f",
      "parameters":{"type":"object"}}}],"tool_choice":"required")"),
                                 limits());
  ASSERT_TRUE(forced.ok()) << forced.error().message;
  EXPECT_TRUE(has_constraints(forced.value()));
  EXPECT_TRUE(compile_constraints(forced.value()).ok());
  ASSERT_TRUE(forced.value().structured.has_value());
  EXPECT_TRUE(forced.value().structured->tool_call);
  auto plain = read_api_request(Endpoint::chat, chat_with(""), limits());
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(has_constraints(plain.value()));
}

TEST(ApiRequest, FieldsThatCannotChangeTheAnswerAreAccepted) {
  auto chat =
      parse(Endpoint::chat, chat_with(R"("prediction":{"type":"content","content":"x"},"prompt_cache_key":"k",)"
                                      R"("safety_identifier":"s","stream":true,)"
                                      R"("stream_options":{"include_usage":true,"include_obfuscation":false})"));
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_TRUE(chat.value().include_usage);
  EXPECT_TRUE(chat.value().ignored_fields.empty());
  for (const char* changes : {R"("verbosity":"low")", R"("audio":{})"})
    EXPECT_EQ(error_of(Endpoint::chat, chat_with(changes)).status, 400) << changes;
}

TEST(ApiRequest, ThinkingBudgetsComeFromTheKippFieldOrTheReasoningEffort) {
  auto budget_of = [](const std::string& fields) {
    auto parsed = parse(Endpoint::chat, chat_with(fields));
    EXPECT_TRUE(parsed.ok()) << fields;
    return parsed.ok() ? parsed.value().thinking_budget : std::nullopt;
  };
  EXPECT_EQ(budget_of(R"("thinking_budget":77)"), 77u);
  EXPECT_EQ(budget_of(R"("reasoning_effort":"none")"), 0u);
  EXPECT_EQ(budget_of(R"("reasoning_effort":"low")"), 1024u);
  EXPECT_EQ(budget_of(R"("reasoning_effort":"medium")"), 4096u);
  EXPECT_EQ(budget_of(R"("reasoning_effort":"high")"), 16384u);
  EXPECT_EQ(budget_of(R"("reasoning_effort":"max")"), std::nullopt);
  EXPECT_EQ(budget_of(R"("stream":false)"), std::nullopt);
  expect_field_error(Endpoint::chat, chat_with(R"("reasoning_effort":"extreme")"), "reasoning_effort");
  expect_field_error(Endpoint::chat, chat_with(R"("thinking_budget":-1)"), "thinking_budget");
  expect_field_error(Endpoint::chat, chat_with(R"("thinking_budget":5,"reasoning_effort":"low")"), "reasoning_effort");
  expect_field_error(Endpoint::completions, completion_with(R"("thinking_budget":5)"), "thinking_budget");
}

TEST(ApiRequest, IgnoreUnknownFieldsAcceptsAndListsThem) {
  ApiLimits lenient = limits();
  lenient.ignore_unknown_fields = true;
  auto parsed =
      parse_api_request(Endpoint::completions, completion_with(R"("echo":true,"foo":{"x":1},"n":2)"), lenient);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const ApiRequest& request = parsed.value();
  EXPECT_EQ(request.ignored_fields, (std::vector<std::string>{"echo", "foo"}));
  EXPECT_EQ(request.n, 2u);  // the known fields are read as always
  // Fields Kipp knows are still checked.
  auto bad = parse_api_request(Endpoint::completions, completion_with(R"("foo":1,"n":0)"), lenient);
  ASSERT_TRUE(!bad.ok());
  EXPECT_EQ(bad.error().param, "n");
}

TEST(ApiRequest, RefusesUnimplementedAndUnknownFieldsByName) {
  for (const char* field : {"echo", "best_of", "suffix", "functions", "function_call"}) {
    const ApiError error = error_of(Endpoint::completions, completion_with("\"" + std::string(field) + "\":1"));
    EXPECT_EQ(error.param, field);
    EXPECT_NE(error.message.find("not supported"), std::string::npos) << error.message;
  }
  // Tools are a chat matter: on /v1/completions they are not fields at all.
  for (const char* field : {"tools", "tool_choice", "parallel_tool_calls"}) {
    const ApiError error = error_of(Endpoint::completions, completion_with("\"" + std::string(field) + "\":1"));
    EXPECT_EQ(error.param, field);
    EXPECT_NE(error.message.find("not a field of /v1/completions"), std::string::npos) << error.message;
  }
  const ApiError unknown = error_of(Endpoint::completions, completion_with(R"("foo":1)"));
  EXPECT_EQ(unknown.param, "foo");
  EXPECT_NE(unknown.message.find("not a field"), std::string::npos);
  expect_field_error(Endpoint::completions, completion_with(R"("messages":[])"), "messages");
  expect_field_error(Endpoint::chat, chat_with(R"("prompt":"x")"), "prompt");
  expect_field_error(Endpoint::chat, chat_with(R"("chat_template_kwargs":{"tools":[]})"), "chat_template_kwargs.tools");
  expect_field_error(Endpoint::completions, completion_with(R"("stream":true,"stream_options":{"x":1})"),
                     "stream_options.x");
  expect_field_error(Endpoint::completions, R"({"prompt":"x"})", "model");
  expect_field_error(Endpoint::completions, R"({"model":"m"})", "prompt");
  expect_field_error(Endpoint::chat, R"({"model":"m"})", "messages");
}

TEST(ApiRequest, BadInputsS2ToS16AreNamed400s) {
  const Endpoint C = Endpoint::completions, H = Endpoint::chat;
  // S2 / S3: logprobs counts.
  for (const char* v : {"6", "-1", "1000000000", "2.5"})
    expect_field_error(C, completion_with("\"logprobs\":" + std::string(v)), "logprobs");
  for (const char* v : {"21", "-1", "1000000000"})
    expect_field_error(H, chat_with("\"logprobs\":true,\"top_logprobs\":" + std::string(v)), "top_logprobs");
  expect_field_error(H, chat_with(R"("top_logprobs":5)"), "top_logprobs");
  expect_field_error(H, chat_with(R"("logprobs":1)"), "logprobs");
  // S4: token ids.
  for (const char* ids : {"[-1]", "[151669]", "[2147483647]", "[1,\"2\"]", "[1.5]", "[]", "[[1,-2]]", "[\"a\",3]",
                          "[[]]", "[\"a\",[151669]]"})
    expect_field_error(C, R"({"model":"m","prompt":)" + std::string(ids) + "}", "prompt");
  // Several prompts, strings and id arrays mixed, are read in order.
  auto several = parse(C, R"({"model":"m","prompt":["a",[1,2],"b"]})");
  ASSERT_TRUE(several.ok()) << several.error().message;
  const auto& prompts = several.value().prompts;
  ASSERT_EQ(prompts.size(), 3u);
  EXPECT_EQ(prompts[0].text, "a");
  EXPECT_EQ(prompts[1].ids, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(prompts[2].text, "b");
  // S6: logit_bias keys and values.
  for (const char* bias : {R"({"-5":1})", R"({"151669":1})", R"({"abc":1})", R"({"5":"x"})", R"({"5":1e39})",
                           R"({"5":101})", R"({"":1})", R"({" 5":1})", "[1]"})
    expect_field_error(C, completion_with("\"logit_bias\":" + std::string(bias)), "logit_bias");
  // S7: n.
  for (const char* n : {"0", "-1", "1000000", "9", "\"2\""})
    expect_field_error(C, completion_with("\"n\":" + std::string(n)), "n");
  // S8: max_tokens.
  for (const char* m : {"-5", "0", "2147483648", "1e20", "\"10\"", "true", "1.5"})
    expect_field_error(C, completion_with("\"max_tokens\":" + std::string(m)), "max_tokens");
  // S11: bodies that are not the JSON object expected, and wrong types.
  std::string raw_nul = R"({"model":"m","prompt":"a)";
  raw_nul += '\0';
  raw_nul += R"(b"})";
  for (const std::string& body :
       {std::string(""), std::string(R"({"model":"m","prompt":"x")"), std::string("[1,2]"),
        std::string("{\"model\":\"m\",\"prompt\":\"\xff\xfe\"}"), std::string("null"), raw_nul}) {
    const ApiError error = error_of(C, body);
    EXPECT_EQ(error.status, 400);
  }
  expect_field_error(C, completion_with(R"("stream":"true")"), "stream");
  expect_field_error(C, completion_with(R"("temperature":"hot")"), "temperature");
  expect_field_error(C, completion_with(R"("model2":1)"), "model2");
  expect_field_error(C, R"({"model":7,"prompt":"x"})", "model");
  // S12: messages.
  for (const char* messages :
       {"null", "\"string\"", "[123]", "[{}]", R"([{"role":123,"content":"x"}])", R"([{"role":"user","content":123}])",
        "[]", R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}])",
        R"([{"role":"assistant","content":"x","tool_calls":[{}]}])"})
    expect_field_error(H, R"({"model":"m","messages":)" + std::string(messages) + "}", "messages");
  // S13: nesting 10k deep is refused before parsing.
  const std::string deep = completion_with("\"metadata\":" + std::string(10000, '[') + std::string(10000, ']'));
  EXPECT_NE(error_of(C, deep).message.find("nests deeper"), std::string::npos);
  // S14: stop strings.
  std::string many = "[";
  for (int i = 0; i < 10000; ++i) many += std::string(i ? "," : "") + "\"s\"";
  many += "]";
  for (const std::string& stop : {many, "\"" + std::string(1 << 20, 'x') + "\"", std::string("\"\""),
                                  std::string("[\"\"]"), std::string("[1]"), std::string("7")})
    expect_field_error(C, completion_with("\"stop\":" + stop), "stop");
  // S16: float fields.
  for (const auto& [field, value] : std::vector<std::pair<std::string, std::string>>{{"temperature", "-1"},
                                                                                     {"temperature", "1e30"},
                                                                                     {"temperature", "2.01"},
                                                                                     {"top_p", "2"},
                                                                                     {"top_p", "0"},
                                                                                     {"top_p", "\"nan\""},
                                                                                     {"min_p", "1.5"},
                                                                                     {"frequency_penalty", "3"},
                                                                                     {"presence_penalty", "-2.5"},
                                                                                     {"repetition_penalty", "0"},
                                                                                     {"repetition_penalty", "-1"}})
    expect_field_error(C, completion_with("\"" + field + "\":" + value), field);
  // include_usage without streaming.
  expect_field_error(C, completion_with(R"("stream_options":{"include_usage":true})"), "stream_options");
}

TEST(ApiRequest, NestingIsMeasuredOutsideStrings) {
  const json::ShapeLimits three_deep{.depth = 3};
  EXPECT_EQ(json::shape_of(R"({"a":"[[[[[[[[[[[[[[[[[[[[\"[[[[[["})", three_deep), json::Shape::fits);
  EXPECT_EQ(json::shape_of("[[[[", three_deep), json::Shape::too_deep);
  EXPECT_EQ(json::shape_of("[[[]]]", three_deep), json::Shape::fits);
}

TEST(ApiRequest, MembersAreCountedPerObjectOutsideStrings) {
  const json::ShapeLimits three_members{.members = 3};
  EXPECT_EQ(json::shape_of(R"({"a":1,"b":[1,2,3,4,5,6],"c":{"x":1,"y":2,"z":3}})", three_members), json::Shape::fits);
  EXPECT_EQ(json::shape_of(R"({"a":1,"b":2,"c":3,"d":4})", three_members), json::Shape::too_many_members);
  EXPECT_EQ(json::shape_of(R"({"a":"1,2,3,4,5","b":2})", three_members), json::Shape::fits);
  // The limit a server applies: a body with an object of more members is a 400 before parsing.
  std::string body = R"({"model":"m","prompt":"x","logit_bias":{)";
  for (int i = 0; i < 1025; ++i) body += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  body += "}}";
  auto request = parse_api_request(Endpoint::completions, body, ApiLimits{.vocab = 151936});
  ASSERT_TRUE(!request.ok());
  EXPECT_NE(request.error().message.find("more than the limit of 1024 members"), std::string::npos);
}

// Seeded mutations of valid bodies: the reader never crashes, and whatever it accepts is in range.
TEST(ApiRequest, FuzzedBodiesAreReadOrRefusedNeverCrash) {
  const std::vector<std::string> seeds = {
      completion_with(R"("max_tokens":7,"n":2,"temperature":0.5,"logit_bias":{"42":-1},"stop":["a"],"logprobs":2)"),
      R"({"model":"m","prompt":[1,2,3],"seed":5,"stream":true,"stream_options":{"include_usage":true}})",
      chat_with(R"("logprobs":true,"top_logprobs":3,"chat_template_kwargs":{"enable_thinking":true},"top_k":5)"),
  };
  std::mt19937 rng(20261130);
  const std::string alphabet = std::string("{}[]\":,\\0123456789-.eE") + '\0' + "\xff\xc3\x28 ntrufalse";
  uint32_t accepted = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string body = seeds[rng() % seeds.size()];
    const int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const size_t at = rng() % body.size();
      switch (rng() % 4) {
        case 0: body[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: body.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 2: body.erase(at, 1 + rng() % 3); break;
        default: body.resize(at); break;
      }
    }
    const Endpoint endpoint = body.find("messages") != std::string::npos ? Endpoint::chat : Endpoint::completions;
    auto result = parse(endpoint, body);
    if (result.ok()) {
      const ApiRequest* request = &result.value();
      ++accepted;
      EXPECT_GE(request->n, 1u);
      EXPECT_LE(request->n, 8u);
      for (const ApiRequest::Prompt& prompt : request->prompts)
        for (uint32_t id : prompt.ids) EXPECT_LT(id, kVocab);
      for (const LogitBias& bias : request->logit_bias) EXPECT_LT(bias.token, kVocab);
      EXPECT_GE(request->max_tokens.value_or(1), 1u);
      const float temperature = request->temperature.value_or(0);
      EXPECT_TRUE(temperature >= 0 && temperature <= 2);
      EXPECT_LE(request->stop.size(), 4u);
    } else {
      EXPECT_EQ(result.error().status, 400);
    }
  }
  EXPECT_GT(accepted, 100u) << "the mutations reach the field checks, not only the JSON parser";
}

// The part starts an answer's layout reports for `answer`, read as the decoder would take it:
// each <think> and </think> in it one tag token, every other character a token of its own.
std::vector<PartStart> starts_of(AnswerStart start, std::string_view answer) {
  constexpr ThinkTokens think{1, 2};
  AnswerLayout layout(start, think);
  std::vector<PartStart> starts;
  for (size_t at = 0; at < answer.size();) {
    const std::string_view rest = answer.substr(at);
    const size_t bytes = rest.starts_with("<think>") ? 7 : rest.starts_with("</think>") ? 8 : 1;
    const uint32_t token = bytes == 7 ? think.open : bytes == 8 ? think.close : 3;
    layout.report_starts(layout.take(token), at, bytes, starts);
    at += bytes;
  }
  return starts;
}

// Every way of cutting `answer` into pieces gives the same split as the whole answer at once,
// whether the part starts come with their text or (odd seeds) all before it.
std::pair<std::string, std::string> split(AnswerStart start, const std::string& answer, uint32_t seed) {
  ReasoningSplitter splitter;
  const std::vector<PartStart> starts = starts_of(start, answer);
  size_t next_start = 0;
  std::string reasoning, content;
  std::mt19937 rng(seed);
  for (size_t at = 0; at < answer.size();) {
    const size_t length = seed == 0 ? answer.size() : std::min<size_t>(answer.size() - at, 1 + rng() % 5);
    size_t reached = next_start;
    while (reached < starts.size() && (seed % 2 == 1 || starts[reached].offset < at + length)) ++reached;
    splitter.push(std::string_view(answer).substr(at, length),
                  std::span(starts).subspan(next_start, reached - next_start), reasoning, content);
    next_start = reached;
    at += length;
  }
  splitter.finish(reasoning, content);
  return {reasoning, content};
}

TEST(ReasoningSplitter, SplitsThinkBlocksTheSameWhateverTheChunks) {
  const std::vector<std::tuple<AnswerStart, std::string, std::string, std::string>> cases = {
      {AnswerStart::maybe_think, "<think>\nLet me see.\n</think>\n\nThe answer.", "Let me see.", "The answer."},
      {AnswerStart::maybe_think, "<think>\n\n</think>\n\nJust this.", "", "Just this."},
      {AnswerStart::maybe_think, "No thinking here <think> at all", "", "No thinking here <think> at all"},
      {AnswerStart::maybe_think, "<thin", "", "<thin"},
      {AnswerStart::maybe_think, "<think>\nunfinished </thi", "unfinished </thi", ""},
      {AnswerStart::after_think, "step 1\nstep 2\n</think>\n\n42", "step 1\nstep 2", "42"},
      {AnswerStart::after_think, "a </b> c </think>d", "a </b> c ", "d"},  // only the newlines go
      {AnswerStart::at_once, "<think>x</think>y", "", "<think>x</think>y"},
  };
  for (const auto& [start, answer, reasoning, content] : cases) {
    for (uint32_t seed = 0; seed < 40; ++seed) {
      const auto [got_reasoning, got_content] = split(start, answer, seed);
      EXPECT_EQ(got_reasoning, reasoning) << answer << " seed " << seed;
      EXPECT_EQ(got_content, content) << answer << " seed " << seed;
    }
  }
}

TEST(ReasoningSplitter, TheTagsSpelledByOrdinaryTokensAreText) {
  ReasoningSplitter splitter;  // thinking-2507, whose reasoning quotes the tag
  std::string reasoning, content;
  const std::vector<PartStart> starts = {{0, 0, PartStart::Part::thought}};
  splitter.push("Is </think> a tag?\n", starts, reasoning, content);
  splitter.finish(reasoning, content);
  EXPECT_EQ(reasoning, "Is </think> a tag?\n");
  EXPECT_EQ(content, "");
}

}  // namespace
}  // namespace kipp::server
