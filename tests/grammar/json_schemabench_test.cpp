// The 150 real-world schemas of JSONSchemaBench (shared/data/jsonschemabench, see SOURCES.md there)
// through the JSON Schema compiler with the default options: each compiles to a grammar the
// matcher can run, or is refused with a message naming the keyword and its pointer. The share that
// compiles and the keywords refused are printed; they are measurements, not expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace kipp::grammar {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(JsonSchemaBench, EverySchemaCompilesOrIsRefusedByKeyword) {
  const fs::path dir = fs::path(KIPP_SHARED_DATA) / "jsonschemabench";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << dir;

  size_t compiled = 0;
  std::map<std::string, size_t> refusals;
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const json schema = json::parse(text.str(), nullptr, false);
    ASSERT_FALSE(schema.is_discarded()) << path;
    auto result = compile_json_schema(schema);
    if (result) {
      auto automaton = Automaton::create(std::move(result->grammar));
      EXPECT_TRUE(automaton.ok()) << path.filename() << ": " << automaton.error().message;
      ++compiled;
      continue;
    }
    auto refused = parse_refusal(result.error().message);
    EXPECT_TRUE(refused.has_value()) << path.filename() << ": not a refusal by keyword: " << result.error().message;
    if (refused) ++refusals[refused->keyword];
    std::cout << "refused " << path.filename().string() << ": " << result.error().message << "\n";
  }
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const auto& [keyword, n] : refusals) ranked.push_back({n, keyword});
  std::sort(ranked.rbegin(), ranked.rend());
  std::cout << "JSONSchemaBench: " << compiled << " of " << files.size() << " schemas compile ("
            << 100.0 * double(compiled) / double(files.size()) << "%); refused by keyword:";
  for (const auto& [n, keyword] : ranked) std::cout << " " << keyword << " " << n << ";";
  std::cout << "\n";
  EXPECT_GT(compiled, 0u);
}

}  // namespace
}  // namespace kipp::grammar
