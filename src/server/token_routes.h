// llama.cpp's probing routes, in its shapes, for the tools that call them (front ends count
// tokens with /tokenize before they send; some read /props for the chat template):
//   POST /tokenize   {"content": "text", "with_pieces": false}  -> {"tokens": [ids]}
//                    (with_pieces: [{"id": 9707, "piece": "Hello"}], a piece that is not whole
//                    UTF-8 given as its byte values); special tokens written in the text
//                    (<|im_start|>) are read as those tokens, as the chat prompt is;
//   POST /detokenize {"tokens": [ids]}                           -> {"content": "text"};
//   GET  /props      the chat template, what it can do, the context and the served names.
// Bad bodies are 400s naming the field, as on /v1.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace kipp::server {

// A route's answer: the status and the JSON body (an OpenAI-shaped error when not 200).
struct RouteAnswer {
  int status = 200;
  nlohmann::ordered_json body;
};

RouteAnswer tokenize_route(const Tokenizer& tokenizer, std::string_view body);
RouteAnswer detokenize_route(const Tokenizer& tokenizer, std::string_view body);

struct PropsInfo {
  std::string chat_template;  // the artifact's, verbatim ("" for a base checkpoint)
  std::vector<std::string> model_names;
  uint32_t context = 0;
  uint32_t max_sequences = 0;  // evaluated together: llama.cpp's total_slots
};
nlohmann::ordered_json props_json(const PropsInfo& info);

}  // namespace kipp::server
