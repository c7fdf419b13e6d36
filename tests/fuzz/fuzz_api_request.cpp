// libFuzzer target: the request bodies of every API, the first thing every client's bytes reach.
// The first byte picks the reader ('0' OpenAI chat completions, '1' completions, '2' Anthropic
// messages, '3' Anthropic count_tokens, '4' OpenAI responses, '5' responses input_tokens, '6'
// embeddings, '7' rerank), the rest is the body, read with the server's default
// limits. Whatever it accepts goes on as the server takes it: chat prompts are rendered for each
// chat variant, and a constraint (response_format, tools forced by tool_choice, grammar) is walked;
// the tools also in Qwen3-Coder's XML form (its forced-call grammar, and the body read as a call).
#include <cstdint>
#include <string_view>

#include "chat/chat_template.h"
#include "chat/coder_call_grammar.h"
#include "chat/coder_calls.h"
#include "grammar/matcher.h"
#include "fuzz_support.h"
#include "registry/registry.h"
#include "server/anthropic_request.h"
#include "server/api_request.h"
#include "server/responses_request.h"
#include "server/retrieval_request.h"

namespace {

using kipp::server::ApiRequest;
using kipp::server::ApiResult;
using kipp::server::Endpoint;

ApiResult<ApiRequest> read_body(size_t route, std::string_view body) {
  kipp::server::ApiLimits limits;
  limits.vocab = kipp::family::vocab;  // kipp serve sets it from the model's tokenizer
  switch (route) {
    case 0: return kipp::server::parse_api_request(Endpoint::chat, body, limits);
    case 1: return kipp::server::parse_api_request(Endpoint::completions, body, limits);
    case 2: return kipp::server::parse_anthropic_request(body, limits, /*count_tokens=*/false);
    case 3: return kipp::server::parse_anthropic_request(body, limits, /*count_tokens=*/true);
    case 4: return kipp::server::parse_responses_request(body, limits, /*input_tokens=*/false);
    default: return kipp::server::parse_responses_request(body, limits, /*input_tokens=*/true);
  }
}

// The embeddings and rerank bodies, read; what a reader accepts must be what the server may
// take as it is: each input non-empty with its ids inside the rows, each document a string, at
// most the inputs and documents allowed.
void read_retrieval_body(size_t route, std::string_view body) {
  kipp::server::ApiLimits limits;
  limits.vocab = 151665;  // an embedding checkpoint's rows
  if (route == 6) {
    auto request = kipp::server::read_embeddings_request(body, limits);
    if (!request.ok()) return;
    if (request->inputs.empty() || request->inputs.size() > kipp::server::kMaxEmbeddingInputs) __builtin_trap();
    for (const auto& input : request->inputs) {
      if (input.text ? input.text->empty() : input.ids.empty()) __builtin_trap();
      for (uint32_t id : input.ids)
        if (id >= limits.vocab) __builtin_trap();
    }
    return;
  }
  auto request = kipp::server::read_rerank_request(body, limits);
  if (!request.ok()) return;
  if (request->query.empty() || request->documents.empty() ||
      request->documents.size() > kipp::server::kMaxRerankDocuments)
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = kipp::fuzz::split_route(data, size, 8);
  if (!input) return 0;
  if (input->route >= 6) {
    read_retrieval_body(input->route, input->body);
    return 0;
  }
  auto parsed = read_body(input->route, input->body);
  if (!parsed.ok()) return 0;
  const ApiRequest* request = &parsed.value();

  if (request->endpoint != Endpoint::completions) {
    kipp::ChatOptions options;  // as ApiServer::prompts_for renders
    options.enable_thinking = request->enable_thinking.value_or(true);
    for (const kipp::ChatTool& tool : request->tools) options.tools.push_back(tool.declaration);
    for (kipp::Variant variant :
         {kipp::Variant::instruct, kipp::Variant::instruct_2507, kipp::Variant::thinking_2507, kipp::Variant::coder})
      (void)kipp::render_chat(variant, request->messages, options);
  }
  if (request->structured) kipp::fuzz::walk_automaton(*request->structured->automaton, input->body);
  // The same tools in Qwen3-Coder's form: its forced call's grammar walked, the body read as a call.
  if (!request->tools.empty()) {
    if (auto coder = kipp::coder_forced_call(request->tools, "", request->json_form); coder.ok())
      if (auto automaton = kipp::grammar::Automaton::create(std::move(coder->grammar)); automaton.ok())
        kipp::fuzz::walk_automaton(**automaton, input->body);
    (void)kipp::read_coder_call(input->body, request->tools);
  }
  return 0;
}
