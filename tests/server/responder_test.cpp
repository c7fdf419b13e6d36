// The responders of every API against a recording reply channel: a stream follows the channel's
// contract (start_stream, then the events, then one finish) even when the scheduler thread is done
// with a short answer before the worker that submitted it has started the stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server/anthropic_responder.h"
#include "server/api_response.h"
#include "server/openai_responder.h"
#include "server/responses_responder.h"
#include "tiny_checkpoint.h"

namespace kipp::server {
namespace {

// What the server was asked to send, in order, with the contract checked as it comes.
class RecordingExchange : public HttpExchange {
 public:
  void respond(HttpResponse response) override { calls.push_back("respond " + std::to_string(response.status)); }
  void start_stream(int status, std::string, HttpHeaders) override {
    calls.push_back("start_stream " + std::to_string(status));
  }
  void write(std::string data) override {
    EXPECT_FALSE(calls.empty()) << "a write before start_stream: " << data;
    EXPECT_NE(calls.back(), "finish") << "a write after finish: " << data;
    calls.push_back("write");
  }
  void finish() override {
    EXPECT_FALSE(calls.empty()) << "finish before start_stream";
    calls.push_back("finish");
  }
  void on_disconnect(std::function<void()>) override {}

  std::vector<std::string> calls;
};

// A whole streamed answer, as the scheduler thread gives it (before start(), when it is fast).
void answer_whole(Responder& responder) {
  ChoiceUpdate update;
  update.text = "Hello";
  update.generated = 1;
  update.finish = FinishReason::stop_token;
  responder.update(update);
  RequestReport report;
  report.prompt_tokens = 3;
  report.completion_tokens = 1;
  responder.done(report);
}

void expect_one_whole_stream(const std::vector<std::string>& calls) {
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls.front(), "start_stream 200");
  EXPECT_EQ(calls.back(), "finish");
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "finish"), 1);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "start_stream 200"), 1);
}

class ResponderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(testing::open_tiny_checkpoint(tiny_));
    request_.stream = true;
    request_.messages.push_back({"user", "Hi", {}, {}});
  }
  testing::TinyCheckpoint tiny_;
  ApiRequest request_;
  ToolCallCounts counts_;
  AnswerOptions answer_;
};

TEST_F(ResponderTest, AStreamDoneBeforeItStartedIsSentWholeWhenItStarts) {
  for (Endpoint endpoint : {Endpoint::chat, Endpoint::completions, Endpoint::messages, Endpoint::responses}) {
    request_.endpoint = endpoint;
    if (endpoint == Endpoint::responses) request_.responses.emplace();
    auto exchange = std::make_shared<RecordingExchange>();
    std::shared_ptr<Responder> responder =
        endpoint == Endpoint::messages    ? make_anthropic_responder(request_, "m", exchange, answer_, counts_, 3)
        : endpoint == Endpoint::responses ? make_responses_responder(request_, "m", exchange, answer_, counts_)
                                          : make_openai_responder(new_response_header(endpoint, "m"), request_,
                                                                  *tiny_.tokenizer, exchange, answer_, counts_, 1);
    answer_whole(*responder);
    EXPECT_TRUE(exchange->calls.empty()) << "nothing goes out before the stream starts";
    responder->start();
    SCOPED_TRACE(int(endpoint));
    expect_one_whole_stream(exchange->calls);
  }
}

TEST_F(ResponderTest, AStreamStartedFirstEndsOnce) {
  request_.endpoint = Endpoint::responses;
  request_.responses.emplace();
  auto exchange = std::make_shared<RecordingExchange>();
  auto responder = make_responses_responder(request_, "m", exchange, answer_, counts_);
  responder->start();
  answer_whole(*responder);
  expect_one_whole_stream(exchange->calls);
}

}  // namespace
}  // namespace kipp::server
