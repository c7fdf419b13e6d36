#include "grammar/json_schema_refs.h"

#include "grammar/json_schema_values.h"

namespace kipp::grammar {

using nlohmann::json;

namespace {

// The base of a root document without $id: refs within it ("#/$defs/a") resolve against it, and
// relative refs to other documents resolve to URIs that no loader knows.
constexpr std::string_view kDefaultBase = "https://kipp.invalid/schema.json";

struct UriParts {
  std::optional<std::string> scheme, authority, query, fragment;
  std::string path;
};

UriParts parse_uri(std::string_view text) {
  UriParts parts;
  if (size_t hash = text.find('#'); hash != std::string_view::npos) {
    parts.fragment = std::string(text.substr(hash + 1));
    text = text.substr(0, hash);
  }
  if (size_t question = text.find('?'); question != std::string_view::npos) {
    parts.query = std::string(text.substr(question + 1));
    text = text.substr(0, question);
  }
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos && colon > 0 && text.substr(0, colon).find('/') == std::string_view::npos) {
    parts.scheme = std::string(text.substr(0, colon));
    text = text.substr(colon + 1);
  }
  if (text.starts_with("//")) {
    const size_t end = text.find('/', 2);
    parts.authority = std::string(text.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end);
  }
  parts.path = std::string(text);
  return parts;
}

std::string remove_dot_segments(std::string input) {
  std::string output;
  while (!input.empty()) {
    if (input.starts_with("../")) {
      input.erase(0, 3);
    } else if (input.starts_with("./")) {
      input.erase(0, 2);
    } else if (input.starts_with("/./")) {
      input.erase(0, 2);
    } else if (input == "/.") {
      input = "/";
    } else if (input.starts_with("/../") || input == "/..") {
      input = input == "/.." ? "/" : input.substr(3);
      const size_t last = output.rfind('/');
      output.erase(last == std::string::npos ? 0 : last);
    } else if (input == "." || input == "..") {
      input.clear();
    } else {
      const size_t next = input.find('/', input[0] == '/' ? 1 : 0);
      output += input.substr(0, next);
      input.erase(0, next == std::string::npos ? input.size() : next);
    }
  }
  return output;
}

std::string compose(const UriParts& parts) {
  std::string out;
  if (parts.scheme) out += *parts.scheme + ":";
  if (parts.authority) out += "//" + *parts.authority;
  out += parts.path;
  if (parts.query) out += "?" + *parts.query;
  if (parts.fragment) out += "#" + *parts.fragment;
  return out;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += char(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::pair<std::string, std::string> split_fragment(const std::string& uri) {
  const size_t hash = uri.find('#');
  if (hash == std::string::npos) return {uri, ""};
  return {uri.substr(0, hash), uri.substr(hash + 1)};
}

std::optional<SchemaDraft> draft_named(std::string_view uri) {
  if (uri.ends_with('#')) uri.remove_suffix(1);
  for (std::string_view scheme : {"http://", "https://"})
    if (uri.starts_with(scheme)) uri.remove_prefix(scheme.size());
  static constexpr std::pair<std::string_view, SchemaDraft> kDrafts[] = {
      {"json-schema.org/draft-04/schema", SchemaDraft::draft4},
      {"json-schema.org/draft-06/schema", SchemaDraft::draft6},
      {"json-schema.org/draft-07/schema", SchemaDraft::draft7},
      {"json-schema.org/draft/2019-09/schema", SchemaDraft::draft2019_09},
      {"json-schema.org/draft/2020-12/schema", SchemaDraft::draft2020_12},
  };
  for (const auto& [name, draft] : kDrafts)
    if (uri == name) return draft;
  return std::nullopt;
}

}  // namespace

std::string resolve_uri(std::string_view base_text, std::string_view reference) {
  const UriParts base = parse_uri(base_text), ref = parse_uri(reference);
  UriParts target;
  if (ref.scheme) {
    target = ref;
    target.path = remove_dot_segments(ref.path);
  } else {
    if (ref.authority) {
      target.authority = ref.authority;
      target.path = remove_dot_segments(ref.path);
      target.query = ref.query;
    } else {
      if (ref.path.empty()) {
        target.path = base.path;
        target.query = ref.query ? ref.query : base.query;
      } else {
        if (ref.path.starts_with('/')) {
          target.path = remove_dot_segments(ref.path);
        } else if (base.authority && base.path.empty()) {
          target.path = remove_dot_segments("/" + ref.path);
        } else {
          const size_t slash = base.path.rfind('/');
          target.path =
              remove_dot_segments((slash == std::string::npos ? "" : base.path.substr(0, slash + 1)) + ref.path);
        }
        target.query = ref.query;
      }
      target.authority = base.authority;
    }
    target.scheme = base.scheme;
  }
  target.fragment = ref.fragment;
  return compose(target);
}

std::string pointer_token(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

Result<SchemaLocation> SchemaIndex::add_root(const json& schema) {
  const std::string base(kDefaultBase);
  resources_[base] = &schema;
  KIPP_TRY(walk(schema, base, options_.default_draft, "", true));
  return location_of(schema, {base, options_.default_draft, ""}, "");
}

Status SchemaIndex::walk(const json& node, std::string base, SchemaDraft draft, const std::string& pointer,
                         bool resource_root) {
  if (!node.is_object()) {
    nodes_.emplace(&node, NodeInfo{base, draft, pointer});
    return {};
  }
  const bool legacy = draft <= SchemaDraft::draft7;
  const bool has_id = node.contains("$id") || (draft == SchemaDraft::draft4 && node.contains("id"));
  if (auto schema = node.find("$schema"); schema != node.end() && schema->is_string() && (resource_root || has_id)) {
    auto named = draft_named(schema->get_ref<const std::string&>());
    if (!named)
      return fail("keyword '$schema' at ", pointer, "/$schema: the meta-schema '",
                  schema->get_ref<const std::string&>(), "' is not known, so neither are the vocabularies it uses");
    draft = *named;
  }
  const std::string id_key = draft == SchemaDraft::draft4 ? "id" : "$id";
  // Before 2019-09 a $ref makes its siblings ignored, $id among them.
  const bool ref_alone = legacy && node.contains("$ref");
  if (auto id = node.find(id_key); id != node.end() && id->is_string() && !ref_alone) {
    const std::string& text = id->get_ref<const std::string&>();
    auto [uri, fragment] = split_fragment(resolve_uri(base, text));
    if (!text.starts_with('#')) {
      base = uri;
      resources_.emplace(base, &node);
    }
    if (legacy && !fragment.empty() && !fragment.starts_with('/')) anchors_.emplace(uri + "#" + fragment, &node);
  }
  if (!legacy)
    for (const char* key : {"$anchor", "$dynamicAnchor"})
      if (auto anchor = node.find(key); anchor != node.end() && anchor->is_string())
        anchors_.emplace(base + "#" + anchor->get<std::string>(), &node);
  nodes_.emplace(&node, NodeInfo{base, draft, pointer});

  const bool since6 = draft >= SchemaDraft::draft6, since7 = draft >= SchemaDraft::draft7;
  const bool since2019 = draft >= SchemaDraft::draft2019_09, is2020 = draft == SchemaDraft::draft2020_12;
  const std::pair<const char*, bool> singles[] = {{"additionalProperties", true},
                                                  {"propertyNames", since6},
                                                  {"additionalItems", !is2020},
                                                  {"contains", since6},
                                                  {"not", true},
                                                  {"if", since7},
                                                  {"then", since7},
                                                  {"else", since7},
                                                  {"unevaluatedItems", since2019},
                                                  {"unevaluatedProperties", since2019},
                                                  {"contentSchema", since2019},
                                                  {"items", true}};
  const std::pair<const char*, bool> maps[] = {
      {"properties", true}, {"patternProperties", true},     {"definitions", true},
      {"$defs", since2019}, {"dependentSchemas", since2019}, {"dependencies", !since2019}};
  const std::pair<const char*, bool> lists[] = {
      {"allOf", true}, {"anyOf", true}, {"oneOf", true}, {"prefixItems", is2020}, {"items", !is2020}};
  const std::string here = pointer + "/";
  for (const auto& [key, known] : singles) {
    auto value = node.find(key);
    if (known && value != node.end() && (value->is_object() || value->is_boolean()))
      KIPP_TRY(walk(*value, base, draft, here + key, false));
  }
  for (const auto& [key, known] : maps) {
    auto value = node.find(key);
    if (!known || value == node.end() || !value->is_object()) continue;
    for (const auto& [name, sub] : value->items())
      if (sub.is_object() || sub.is_boolean())
        KIPP_TRY(walk(sub, base, draft, here + key + "/" + pointer_token(name), false));
  }
  for (const auto& [key, known] : lists) {
    auto value = node.find(key);
    if (!known || value == node.end() || !value->is_array()) continue;
    for (size_t i = 0; i < value->size(); ++i)
      KIPP_TRY(walk((*value)[i], base, draft, here + key + "/" + std::to_string(i), false));
  }
  return {};
}

Result<const json*> SchemaIndex::resource(const std::string& uri, SchemaDraft draft) {
  if (auto found = resources_.find(uri); found != resources_.end()) return found->second;
  std::optional<json> loaded;
  if (options_.load_document) loaded = options_.load_document(uri);
  if (!loaded) return fail("'", uri, "' is neither in the schema nor a document that can be loaded");
  documents_.push_back(std::move(*loaded));
  const json& document = documents_.back();
  resources_[uri] = &document;
  if (auto deep = check_json_depth(document, kMaxSchemaDepth); !deep) return fail(uri, ": ", deep.error().message);
  KIPP_TRY(walk(document, uri, draft, uri + "#", true));
  return &document;
}

SchemaLocation SchemaIndex::location_of(const json& node, const NodeInfo& fallback, const std::string& pointer) const {
  if (auto found = nodes_.find(&node); found != nodes_.end())
    return {&node, found->second.base, found->second.draft, found->second.pointer};
  return {&node, fallback.base, fallback.draft, pointer};
}

SchemaLocation SchemaIndex::child(const SchemaLocation& parent, const json& node, std::string_view token,
                                  std::optional<std::string_view> second) const {
  std::string pointer = parent.pointer + "/" + pointer_token(token);
  if (second) pointer += "/" + pointer_token(*second);
  return location_of(node, {parent.base, parent.draft, parent.pointer}, pointer);
}

Result<SchemaLocation> SchemaIndex::resolve(std::string_view reference, const SchemaLocation& from) {
  auto [uri, raw_fragment] = split_fragment(resolve_uri(from.base, reference));
  const std::string fragment = percent_decode(raw_fragment);
  KIPP_ASSIGN(const json* root, resource(uri, from.draft));
  NodeInfo info = nodes_.at(root);
  if (fragment.empty()) return location_of(*root, info, info.pointer);
  if (!fragment.starts_with('/')) {
    auto anchor = anchors_.find(uri + "#" + fragment);
    if (anchor == anchors_.end()) return fail("no schema has the anchor '", fragment, "' in '", uri, "'");
    return location_of(*anchor->second, info, info.pointer);
  }
  const json* node = root;
  std::string pointer = info.pointer;
  for (size_t start = 1; start <= fragment.size();) {
    size_t end = fragment.find('/', start);
    if (end == std::string::npos) end = fragment.size();
    std::string token;
    for (size_t i = start; i < end; ++i) {
      if (fragment[i] == '~' && i + 1 < end && (fragment[i + 1] == '0' || fragment[i + 1] == '1')) {
        token += fragment[++i] == '0' ? '~' : '/';
      } else {
        token += fragment[i];
      }
    }
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() && token.size() < 10 &&
               token.find_first_not_of("0123456789") == std::string::npos && std::stoull(token) < node->size()) {
      node = &(*node)[std::stoull(token)];
    } else {
      return fail("the pointer '", fragment, "' does not lead to a value in '", uri, "'");
    }
    pointer += "/" + pointer_token(token);
    if (auto found = nodes_.find(node); found != nodes_.end()) info = found->second;
    start = end + 1;
  }
  return location_of(*node, info, pointer);
}

}  // namespace kipp::grammar
