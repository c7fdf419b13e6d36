#include "server/answer.h"

namespace kipp::server {

Answer::Answer(const AnswerOptions& options, ToolCallCounts& counts)
    : parallel_calls_(options.parallel_calls),
      call_id_prefix_(options.call_id_prefix),
      counts_(counts),
      call_ids_(std::random_device{}()) {
  if (options.find_calls) extractor_.emplace(options.read_call);
}

AnswerPiece Answer::take(const ChoiceUpdate& update) {
  AnswerPiece piece;
  ToolCallExtractor::Output found;
  if (extractor_) {
    extractor_->push(update.text, update.parts, found);
    if (update.finish) extractor_->finish(found);
    counts_.unparsed += found.unparsed;
  } else {
    found.text = update.text;
    found.starts = update.parts;
  }
  piece.first_new_call = calls.size();
  for (ChatToolCall& call : found.calls) {
    if (!parallel_calls_ && !calls.empty()) {
      ++counts_.dropped;  // parallel calls switched off: the first call only
      continue;
    }
    ++counts_.returned;
    calls.push_back({new_call_id(), std::move(call)});
  }
  splitter_.push(found.text, found.starts, piece.reasoning, piece.content);
  if (update.finish) {
    splitter_.finish(piece.reasoning, piece.content);
    finish = *update.finish;
    stop = update.stop;
    done = true;
  }
  piece.text_offset = characters_;
  text += update.text;
  for (const TokenReport& token : update.tokens)
    for (unsigned char c : token.text) characters_ += (c & 0xC0) != 0x80;
  reasoning += piece.reasoning;
  content += piece.content;
  // Reasoning tokens: those up to </think>; all of them when the answer never left its think
  // block (cut by max_tokens there, it stays reasoning).
  for (const PartStart& start : update.parts)
    if (start.part == PartStart::Part::answer && !reasoning_tokens) reasoning_tokens = update.generated;
  if (update.finish && !reasoning_tokens && !reasoning.empty() && content.empty() && calls.empty())
    reasoning_tokens = update.generated;
  tokens.insert(tokens.end(), update.tokens.begin(), update.tokens.end());
  return piece;
}

// Ids are the prefix and 24 letters and digits, as both APIs write them; clients only echo them.
std::string Answer::new_call_id() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = call_id_prefix_;
  for (int i = 0; i < 24; ++i) id += kAlphabet[call_ids_() % (sizeof kAlphabet - 1)];
  return id;
}

}  // namespace kipp::server
