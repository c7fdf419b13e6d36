// The official JSON-Schema-Test-Suite (draft2020-12 and draft7, with optional/ and
// optional/format/) against the JSON Schema compiler: every schema either compiles or is refused
// with a keyword, and for every schema that compiles, the grammar accepts the compact text of each
// test instance exactly when the suite says the instance is valid. Every disagreement fails. The
// tidy form of every schema it compiles accepts no invalid instance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compact_json.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace kipp::grammar {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSuite = fs::path(KIPP_SHARED_DATA) / "json-schema-test-suite";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct SuiteFile {
  std::string relative;  // e.g. draft2020-12/optional/format/date.json
  SchemaDraft draft;
  bool assert_formats;
};

std::vector<SuiteFile> suite_files() {
  std::vector<SuiteFile> files;
  for (auto [folder, draft] :
       {std::pair{"draft2020-12", SchemaDraft::draft2020_12}, std::pair{"draft7", SchemaDraft::draft7}})
    for (const char* sub : {"", "/optional", "/optional/format"}) {
      const fs::path dir = kSuite / "tests" / (std::string(folder) + sub);
      if (!fs::is_directory(dir)) continue;
      std::vector<std::string> names;
      for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().extension() == ".json")
          names.push_back(entry.path().filename().string());
      std::sort(names.begin(), names.end());
      // Formats are annotations in the main folders (the suite's format.json checks only that
      // non-strings pass); optional/format/ asks for them to be asserted.
      for (const std::string& name : names)
        files.push_back({std::string(folder) + sub + "/" + name, draft, std::string_view(sub) == "/optional/format"});
    }
  return files;
}

// The suite's remotes are served at http://localhost:1234/; the meta-schemas are not in the data,
// so a $ref to them is refused.
std::optional<json> load_remote(std::string_view uri) {
  constexpr std::string_view kHost = "http://localhost:1234/";
  if (!uri.starts_with(kHost)) return std::nullopt;
  const fs::path path = kSuite / "remotes" / std::string(uri.substr(kHost.size()));
  if (!fs::is_regular_file(path)) return std::nullopt;
  return json::parse(read_file(path), nullptr, false);
}

struct Tally {
  size_t files = 0, groups = 0, compiled = 0, cases = 0, agreeing = 0;
  std::map<std::string, size_t> refusals;  // keyword -> schemas refused for it
};

struct Summary {
  std::map<std::string, Tally> by_folder;  // draft2020-12, draft2020-12/optional, ...
  size_t files_run = 0;
};

Summary& summary() {
  static Summary s;
  return s;
}

std::string folder_of(const std::string& relative) { return relative.substr(0, relative.rfind('/')); }

std::string report(const Summary& s) {
  std::ostringstream out;
  Tally total;
  out << "JSON-Schema-Test-Suite (commit 44401e0c), compiled by kipp's JSON Schema compiler\n";
  out << "folder | files | schemas | compiled | refused | cases run | agreeing\n";
  for (const auto& [folder, t] : s.by_folder) {
    out << folder << " | " << t.files << " | " << t.groups << " | " << t.compiled << " | " << t.groups - t.compiled
        << " | " << t.cases << " | " << t.agreeing << "\n";
    total.files += t.files;
    total.groups += t.groups;
    total.compiled += t.compiled;
    total.cases += t.cases;
    total.agreeing += t.agreeing;
    for (const auto& [keyword, n] : t.refusals) total.refusals[keyword] += n;
  }
  out << "total | " << total.files << " | " << total.groups << " | " << total.compiled << " | "
      << total.groups - total.compiled << " | " << total.cases << " | " << total.agreeing << "\n";
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const auto& [keyword, n] : total.refusals) ranked.push_back({n, keyword});
  std::sort(ranked.rbegin(), ranked.rend());
  out << "refused schemas by keyword:";
  for (const auto& [n, keyword] : ranked) out << " " << keyword << " " << n << ";";
  out << "\n";
  return out.str();
}

class SummaryWriter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Summary& s = summary();
    if (s.files_run == 0) return;
    const std::string text = report(s);
    std::cout << text;
    // Written only after a run of the whole suite, so that a filtered run leaves no partial numbers.
    if (s.files_run != suite_files().size()) return;
    // Beside the test binary (in the build tree) unless KIPP_TEST_TMP names a folder.
    const char* dir = std::getenv("KIPP_TEST_TMP");
    const fs::path folder = dir ? fs::path(dir) : fs::read_symlink("/proc/self/exe").parent_path();
    std::ofstream(folder / "json_schema_suite_summary.txt") << text;
    std::cout << "written to " << (folder / "json_schema_suite_summary.txt").string() << "\n";
  }
};
[[maybe_unused]] ::testing::Environment* const kSummaryWriter = ::testing::AddGlobalTestEnvironment(new SummaryWriter);

void PrintTo(const SuiteFile& file, std::ostream* out) { *out << file.relative; }

class JsonSchemaSuiteFile : public ::testing::TestWithParam<SuiteFile> {};

// The tidy form, what a generating model is held to, accepts fewer instances than the schema does,
// and only valid ones: no invalid instance of the group is accepted. (Where it compiles a schema the
// exact form refuses, patternProperties without additionalProperties, this is its whole check.)
void expect_tidy_form_sound(const SuiteFile& file, const json& group, const lexical::LexicalJson& source,
                            SchemaOptions options) {
  options.form = JsonForm::tidy;
  auto compiled = compile_json_schema(group["schema"], options);
  if (!compiled) return;
  auto automaton = Automaton::create(std::move(compiled->grammar));
  ASSERT_TRUE(automaton.ok()) << automaton.error().message;
  const lexical::LexicalJson* cases = source.member("tests");
  ASSERT_NE(cases, nullptr);
  for (size_t c = 0; c < cases->items.size(); ++c) {
    if (group["tests"][c]["valid"].get<bool>()) continue;
    const std::string instance = lexical::compact_json(*cases->items[c].member("data"));
    auto check = check_text(**automaton, instance);
    ASSERT_TRUE(check.ok()) << check.error().message;
    EXPECT_FALSE(check->complete) << file.relative << ": schema \"" << group.value("description", "")
                                  << "\": the tidy form accepts the invalid instance " << instance << " (case \""
                                  << group["tests"][c].value("description", "") << "\")";
  }
}

TEST_P(JsonSchemaSuiteFile, AgreesOrRefuses) {
  const SuiteFile& file = GetParam();
  const std::string text = read_file(kSuite / "tests" / file.relative);
  const json groups = json::parse(text, nullptr, false);
  ASSERT_TRUE(groups.is_array()) << file.relative;
  auto source = lexical::parse_lexical_json(text);
  ASSERT_TRUE(source.ok()) << file.relative << ": " << source.error().message;
  ASSERT_EQ(source->items.size(), groups.size());

  Tally& tally = summary().by_folder[folder_of(file.relative)];
  ++tally.files;
  ++summary().files_run;
  SchemaOptions options;
  options.default_draft = file.draft;
  options.assert_formats = file.assert_formats;
  options.load_document = load_remote;
  for (size_t g = 0; g < groups.size(); ++g) {
    const json& group = groups[g];
    const std::string description = group.value("description", "");
    ++tally.groups;
    expect_tidy_form_sound(file, group, source->items[g], options);
    auto compiled = compile_json_schema(group["schema"], options);
    if (!compiled && compiled.error().message == kSchemaAcceptsNothing) {
      // Compiled to the empty language: every case must be invalid.
      ++tally.compiled;
      for (const json& test : group["tests"]) {
        ++tally.cases;
        if (!test["valid"].get<bool>()) {
          ++tally.agreeing;
          continue;
        }
        ADD_FAILURE() << file.relative << ": schema \"" << description << "\" accepts nothing, but case \""
                      << test.value("description", "") << "\" is valid";
      }
      continue;
    }
    if (!compiled) {
      auto refused = parse_refusal(compiled.error().message);
      ++tally.refusals[refused ? refused->keyword : "(" + compiled.error().message + ")"];
      continue;
    }
    auto automaton = Automaton::create(std::move(compiled->grammar));
    ASSERT_TRUE(automaton.ok()) << description << ": " << automaton.error().message;
    ++tally.compiled;
    const lexical::LexicalJson* cases = source->items[g].member("tests");
    ASSERT_NE(cases, nullptr);
    for (size_t c = 0; c < cases->items.size(); ++c) {
      const lexical::LexicalJson& test = cases->items[c];
      const std::string instance = lexical::compact_json(*test.member("data"));
      const bool valid = group["tests"][c]["valid"].get<bool>();
      auto check = check_text(**automaton, instance);
      ASSERT_TRUE(check.ok()) << check.error().message;
      ++tally.cases;
      if (check->complete == valid) {
        ++tally.agreeing;
        continue;
      }
      ADD_FAILURE() << file.relative << ": schema \"" << description << "\", case \""
                    << group["tests"][c].value("description", "") << "\"\n  instance " << instance << " is "
                    << (valid ? "valid" : "invalid") << " but the grammar " << (check->complete ? "accepts" : "rejects")
                    << " it\n  schema " << group["schema"].dump();
    }
  }
}

std::string test_name(const ::testing::TestParamInfo<SuiteFile>& info) {
  std::string name = info.param.relative.substr(0, info.param.relative.size() - 5);
  for (char& c : name)
    if (!std::isalnum(uint8_t(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(JsonSchemaSuite, JsonSchemaSuiteFile, ::testing::ValuesIn(suite_files()), test_name);

}  // namespace
}  // namespace kipp::grammar
