// `kipp tokenize` (text to ids: one text, a JSONL batch, or a throughput measurement) and
// `kipp detokenize` (ids to text, one list or a JSONL batch). Both load only the artifact's
// tokenizer data, never its weights.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report.h"
#include "cli/id_list.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/files.h"
#include "util/json_fields.h"

namespace kipp::cli {
namespace {

constexpr uint64_t kMaxInputBytes = 1ull << 30;
constexpr int kBenchRuns = 5;

struct TokenizeArgs {
  std::string model, text, file, jsonl;
  bool json = false;
  bool bench = false;
};

struct DetokenizeArgs {
  std::string model, ids, jsonl;
};

Result<Tokenizer> load_tokenizer(const std::string& path) {
  KIPP_ASSIGN(auto model, ModelFile::open(path));
  auto tokenizer = Tokenizer::create(model->tokenizer());
  if (!tokenizer) return with_context(path, tokenizer.error());
  return tokenizer;
}

void append_ids_json(const std::vector<TokenId>& ids, std::string& out) {
  out += "{\"ids\":[";
  char number[16];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out.append(number, std::to_chars(number, number + sizeof number, ids[i]).ptr);
  }
  out += "]}\n";
}

void write_stdout(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// Lines of a JSONL file; a final newline does not start another line.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Reads a JSONL file and calls `handle` with each line's object and a "FILE line N" label; the
// first failing line ends the run with its error. Output is written only when every line succeeded.
int run_jsonl(
    const std::string& path,
    const std::function<Status(const json::Json& object, const std::string& where, std::string& out)>& handle) {
  auto input = read_text_file(path, kMaxInputBytes);
  if (!input) return report(input.error());
  std::string out;
  const auto lines = split_lines(input.value());
  for (size_t index = 0; index < lines.size(); ++index) {
    const std::string where = path + " line " + std::to_string(index + 1);
    auto object = json::parse(std::string(lines[index]), where);
    if (!object) return report(object.error());
    if (auto handled = handle(object.value(), where, out); !handled) return report(handled.error());
  }
  write_stdout(out);
  return 0;
}

int run_jsonl_tokenize(const Tokenizer& tokenizer, const std::string& path) {
  EncodeWorkspace workspace;
  std::vector<TokenId> ids;
  return run_jsonl(path, [&](const json::Json& object, const std::string& where, std::string& out) -> Status {
    KIPP_ASSIGN(std::string text, json::get_string(object, "text", where));
    ids.clear();
    if (auto encoded = tokenizer.encode_append(text, workspace, ids); !encoded)
      return with_context(where, encoded.error());
    append_ids_json(ids, out);
    return {};
  });
}

using Clock = std::chrono::steady_clock;

// Encoding speed (the median of kBenchRuns cold runs) and how long the tokenizer took to load.
int run_bench(const Tokenizer& tokenizer, const std::string& text, double load_seconds) {
  std::vector<double> seconds;
  size_t tokens = 0;
  for (int run = 0; run < kBenchRuns; ++run) {
    EncodeWorkspace workspace;  // a cold word cache every run
    const auto started = Clock::now();
    auto ids = tokenizer.encode(text, workspace);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - started).count());
    if (!ids) return report(ids.error());
    tokens = ids->size();
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[kBenchRuns / 2];
  std::printf("{\"bytes\":%zu,\"tokens\":%zu,\"seconds\":%.6f,\"mb_per_s\":%.3f,\"load_seconds\":%.6f}\n", text.size(),
              tokens, median, double(text.size()) / 1e6 / median, load_seconds);
  return 0;
}

int run_tokenize(const TokenizeArgs& args) {
  const auto load_started = Clock::now();
  auto tokenizer = load_tokenizer(args.model);
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_started).count();
  if (!tokenizer) return report(tokenizer.error());
  if (!args.jsonl.empty()) return run_jsonl_tokenize(tokenizer.value(), args.jsonl);
  std::string text = args.text;
  if (!args.file.empty()) {
    auto contents = read_text_file(args.file, kMaxInputBytes);
    if (!contents) return report(contents.error());
    text = std::move(contents.value());
  }
  if (args.bench) return run_bench(tokenizer.value(), text, load_seconds);
  auto ids = tokenizer->encode(text);
  if (!ids) return report(with_context(args.file.empty() ? "--text" : args.file, ids.error()));
  std::string out;
  if (args.json) {
    append_ids_json(ids.value(), out);
  } else {
    for (size_t i = 0; i < ids->size(); ++i) out += (i ? "," : "") + std::to_string(ids.value()[i]);
    out += '\n';
  }
  write_stdout(out);
  return 0;
}

// "1,2,3" (spaces allowed around the numbers) to ids; anything else names the bad item.
int run_jsonl_detokenize(const Tokenizer& tokenizer, const std::string& path) {
  std::vector<TokenId> ids;
  return run_jsonl(path, [&](const json::Json& object, const std::string& where, std::string& out) -> Status {
    KIPP_ASSIGN(const json::Json* list, json::field(object, "ids", where));
    if (!list->is_array()) return fail(where, ": \"ids\" must be an array of token ids");
    ids.clear();
    for (const auto& id : *list) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
        return fail(where, ": ", id.dump(), " is not a token id");
      ids.push_back(TokenId(id.get<uint64_t>()));
    }
    auto text = tokenizer.decode(ids);
    if (!text) return with_context(where, text.error());
    out += json::Json{{"text", text.value()}}.dump();
    out += '\n';
    return {};
  });
}

int run_detokenize(const DetokenizeArgs& args) {
  auto tokenizer = load_tokenizer(args.model);
  if (!tokenizer) return report(tokenizer.error());
  if (!args.jsonl.empty()) return run_jsonl_detokenize(tokenizer.value(), args.jsonl);
  auto ids = parse_id_list(args.ids);
  if (!ids) return report(ids.error());
  auto text = tokenizer->decode(ids.value());
  if (!text) return report(text.error());
  write_stdout(text.value());
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto* sub = app.add_subcommand("tokenize", "Turn text into token ids with an artifact's tokenizer");
  auto args = std::make_shared<TokenizeArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact")->required();
  auto* text = sub->add_option("--text", args->text, "The text to tokenize");
  auto* file = sub->add_option("--file", args->file, "A file whose whole contents are the text");
  auto* jsonl =
      sub->add_option("--jsonl", args->jsonl, "Batch: one {\"text\":...} per line in, one {\"ids\":[...]} out");
  text->excludes(file)->excludes(jsonl);
  file->excludes(jsonl);
  auto* json = sub->add_flag("--json", args->json, "Print {\"ids\":[...]} instead of comma-separated ids");
  auto* bench = sub->add_flag("--bench", args->bench,
                              "Print one JSON line of single-thread throughput (the median of 5 runs) and the load "
                              "time");
  bench->excludes(json)->excludes(jsonl);
  sub->callback([sub] {
    if (!sub->count("--text") && !sub->count("--file") && !sub->count("--jsonl"))
      throw CLI::ValidationError("tokenize", "one of --text, --file or --jsonl is required");
  });
  return {sub, [args] { return run_tokenize(*args); }};
}

Command add_detokenize_command(CLI::App& app) {
  auto* sub = app.add_subcommand("detokenize", "Turn token ids back into text with an artifact's tokenizer");
  auto args = std::make_shared<DetokenizeArgs>();
  sub->add_option("--model", args->model, "A Kipp .gguf artifact")->required();
  auto* ids = sub->add_option("--ids", args->ids, "Comma-separated token ids, e.g. 1,2,3");
  auto* jsonl =
      sub->add_option("--jsonl", args->jsonl, "Batch: one {\"ids\":[...]} per line in, one {\"text\":...} out");
  ids->excludes(jsonl);
  sub->callback([sub] {
    if (!sub->count("--ids") && !sub->count("--jsonl"))
      throw CLI::ValidationError("detokenize", "one of --ids or --jsonl is required");
  });
  return {sub, [args] { return run_detokenize(*args); }};
}

}  // namespace kipp::cli
