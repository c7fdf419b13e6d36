// Where the subschemas of a JSON Schema are, and what $ref points at: base URIs ($id), anchors,
// JSON pointers in fragments, and documents loaded by URI.
//
// Every schema document is walked once through the keywords that hold subschemas in its draft
// (so an $id inside `enum` or an unknown keyword is no identifier, as the specification says),
// recording for each subschema its base URI and draft, and for each $id and anchor its schema.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "util/error.h"

namespace kipp::grammar {

// A schema and what is needed to read it.
struct SchemaLocation {
  const nlohmann::json* node = nullptr;
  std::string base;  // absolute URI without fragment, for the $refs inside
  SchemaDraft draft = SchemaDraft::draft2020_12;
  std::string pointer;  // for messages: JSON pointer, "<uri>#<pointer>" outside the root document
};

// RFC 3986 section 5.2: `reference` resolved against the absolute URI `base`.
std::string resolve_uri(std::string_view base, std::string_view reference);

// "/" and "~" escaped for one JSON pointer token.
std::string pointer_token(std::string_view name);

class SchemaIndex {
 public:
  explicit SchemaIndex(const SchemaOptions& options) : options_(options) {}

  // Walks the root document; its location (a refusal if its $schema is unknown).
  Result<SchemaLocation> add_root(const nlohmann::json& schema);
  // The schema that `reference` (the value of a $ref of the schema at `from`) points at. The
  // error is the reason alone; the caller names the keyword.
  Result<SchemaLocation> resolve(std::string_view reference, const SchemaLocation& from);
  // A subschema of `parent` at `node`, reached through `tokens` (for the pointer).
  SchemaLocation child(const SchemaLocation& parent, const nlohmann::json& node, std::string_view token,
                       std::optional<std::string_view> second = std::nullopt) const;

 private:
  struct NodeInfo {
    std::string base;
    SchemaDraft draft;
    std::string pointer;
  };
  Status walk(const nlohmann::json& node, std::string base, SchemaDraft draft, const std::string& pointer,
              bool resource_root);
  Result<const nlohmann::json*> resource(const std::string& uri, SchemaDraft draft);
  SchemaLocation location_of(const nlohmann::json& node, const NodeInfo& fallback, const std::string& pointer) const;

  const SchemaOptions& options_;
  std::unordered_map<const nlohmann::json*, NodeInfo> nodes_;
  std::map<std::string, const nlohmann::json*> resources_;  // absolute URI -> schema
  std::map<std::string, const nlohmann::json*> anchors_;    // absolute URI # name -> schema
  std::deque<nlohmann::json> documents_;                    // loaded by URI; addresses stay put
};

}  // namespace kipp::grammar
