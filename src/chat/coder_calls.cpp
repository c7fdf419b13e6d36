#include "chat/coder_calls.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "util/json_fields.h"
#include "util/python_json.h"
#include "util/python_str.h"

namespace kipp {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kCallInstructions =
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n"
    "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified "
    "format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- "
    "Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural "
    "language BEFORE the function call, but NOT after\n- If there is no function call available, answer the "
    "question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

// A value as the template prints it: objects and arrays through tojson, the rest through str().
std::string template_value(const Json& value) {
  return value.is_object() || value.is_array() ? python_json_dumps(value) : python_str(value);
}

// The template's render_extra_keys: each member not handled already, as <key>value</key>.
void append_extra_keys(std::string& out, const Json& object, std::initializer_list<std::string_view> handled) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.items()) {
    if (std::find(handled.begin(), handled.end(), key) != handled.end()) continue;
    out += "\n<" + key + ">" + template_value(value) + "</" + key + ">";
  }
}

// `| trim` of a value: str(), then str.strip().
std::string trimmed(const Json& value) { return std::string(python_strip(python_str(value))); }

void append_tool(std::string& out, const Json& declaration) {
  const Json& tool =
      declaration.is_object() && declaration.contains("function") ? declaration["function"] : declaration;
  out += "\n<function>\n<name>" + python_str(tool.value("name", Json())) + "</name>";
  if (tool.contains("description")) out += "\n<description>" + trimmed(tool["description"]) + "</description>";
  out += "\n<parameters>";
  const Json parameters = tool.value("parameters", Json());
  if (parameters.is_object() && parameters.contains("properties") && parameters["properties"].is_object()) {
    for (const auto& [name, fields] : parameters["properties"].items()) {
      out += "\n<parameter>\n<name>" + name + "</name>";
      if (fields.is_object() && fields.contains("type")) out += "\n<type>" + python_str(fields["type"]) + "</type>";
      if (fields.is_object() && fields.contains("description"))
        out += "\n<description>" + trimmed(fields["description"]) + "</description>";
      append_extra_keys(out, fields, {"name", "type", "description"});
      out += "\n</parameter>";
    }
  }
  append_extra_keys(out, parameters, {"type", "properties"});
  out += "\n</parameters>";
  append_extra_keys(out, tool, {"type", "name", "description", "parameters"});
  out += "\n</function>";
}

}  // namespace

std::set<std::string> parameter_types(const Json& schema, const Json& root) {
  std::set<std::string> types;
  // References are followed a few levels at most: a schema that loops through $refs names no type.
  const std::function<void(const Json&, int)> collect = [&](const Json& at, int depth) {
    if (!at.is_object() || depth > 8) return;
    if (const auto type = at.find("type"); type != at.end()) {
      if (type->is_string()) types.insert(type->get<std::string>());
      if (type->is_array())
        for (const Json& name : *type)
          if (name.is_string()) types.insert(name.get<std::string>());
      return;
    }
    if (const auto ref = at.find("$ref");
        ref != at.end() && ref->is_string() && ref->get<std::string>().starts_with("#")) {
      const std::string pointer = ref->get<std::string>().substr(1);
      try {
        collect(root.at(Json::json_pointer(pointer)), depth + 1);
      } catch (const Json::exception&) {  // a pointer that is malformed or leads nowhere: no type
      }
      return;
    }
    for (const char* combinator : {"anyOf", "oneOf", "allOf"})
      if (const auto branches = at.find(combinator); branches != at.end() && branches->is_array())
        for (const Json& branch : *branches) collect(branch, depth + 1);
    for (const char* listed : {"enum", "const"}) {
      const auto values = at.find(listed);
      if (values == at.end()) continue;
      for (const Json& value : listed == std::string_view("const") ? Json::array({*values}) : *values) {
        if (value.is_null()) types.insert("null");
        else if (value.is_boolean()) types.insert("boolean");
        else if (value.is_number_integer() || value.is_number_unsigned()) types.insert("integer");
        else if (value.is_number()) types.insert("number");
        else if (value.is_string()) types.insert("string");
        else if (value.is_array()) types.insert("array");
        else types.insert("object");
      }
    }
  };
  collect(schema, 0);
  return types;
}

namespace {

std::string_view trim_ascii(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\t' || text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// The text as one JSON value, or discarded. The model's text, which a prompt can steer, is read
// only within the shape any file Kipp reads keeps to (each level recurses once).
Json json_value(std::string_view text) {
  const json::ShapeLimits readable_shape{.depth = json::kMaxFileDepth, .members = json::kMaxObjectMembers};
  if (json::shape_of(text, readable_shape) != json::Shape::fits) return Json(Json::value_t::discarded);
  return Json::parse(trim_ascii(text), nullptr, /*allow_exceptions=*/false);
}

Json convert_value(std::string_view text, const std::set<std::string>& types) {
  if (types.empty()) {
    const Json value = json_value(text);
    return value.is_discarded() || value.is_string() ? Json(std::string(text)) : value;
  }
  const std::string_view bare = trim_ascii(text);
  if (types.contains("null") && (bare == "null" || bare == "None")) return nullptr;
  if (types.contains("boolean")) {
    if (bare == "true" || bare == "True") return true;
    if (bare == "false" || bare == "False") return false;
  }
  const Json value = json_value(text);
  if (!value.is_discarded()) {
    // An integer may be written with a fraction of zeros or an exponent (3.0, 2e3), as JSON Schema counts it.
    const bool integral = value.is_number_integer() || value.is_number_unsigned() ||
                          (value.is_number_float() && std::isfinite(value.get<double>()) &&
                           std::floor(value.get<double>()) == value.get<double>());
    if (types.contains("integer") && integral) return value;
    if (types.contains("number") && value.is_number()) return value;
    if (types.contains("object") && value.is_object()) return value;
    if (types.contains("array") && value.is_array()) return value;
  }
  return std::string(text);
}

// The types of `parameter` of the offered function `name`; none when either is unknown.
std::set<std::string> offered_types(const std::vector<ChatTool>& tools, const std::string& name,
                                    const std::string& parameter) {
  for (const ChatTool& tool : tools) {
    if (tool.name != name) continue;
    const auto properties = tool.parameters.find("properties");
    if (properties == tool.parameters.end() || !properties->is_object()) return {};
    const auto schema = properties->find(parameter);
    return schema == properties->end() ? std::set<std::string>{} : parameter_types(*schema, tool.parameters);
  }
  return {};
}

// Reads "<TAG=NAME>" at `pos`: the name, with pos moved past the '>'.
std::optional<std::string> read_opening(std::string_view body, size_t& pos, std::string_view tag) {
  if (body.substr(pos, tag.size()) != tag) return std::nullopt;
  const size_t close = body.find('>', pos + tag.size());
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view name = body.substr(pos + tag.size(), close - pos - tag.size());
  if (name.empty() || name.find_first_of("<\n") != std::string_view::npos) return std::nullopt;
  pos = close + 1;
  return std::string(name);
}

void skip_whitespace(std::string_view body, size_t& pos) {
  while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\n' || body[pos] == '\t' || body[pos] == '\r')) ++pos;
}

}  // namespace

void append_coder_tools(std::string& out, const std::vector<Json>& tools) {
  out += "\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>";
  for (const Json& tool : tools) append_tool(out, tool);
  out += "\n</tools>";
  out += kCallInstructions;
}

Status append_coder_call(std::string& out, const ChatToolCall& call) {
  const Json arguments = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (!arguments.is_object())
    return fail("the arguments of the call to '", call.name,
                "' must be a JSON object: Qwen3-Coder's template prints each member as a <parameter> block");
  out += "\n<tool_call>\n<function=" + call.name + ">\n";
  for (const auto& [name, value] : arguments.items())
    out += "<parameter=" + name + ">\n" + template_value(value) + "\n</parameter>\n";
  out += "</function>\n</tool_call>";
  return {};
}

std::optional<ChatToolCall> read_coder_call(std::string_view body, const std::vector<ChatTool>& tools) {
  static constexpr std::string_view kFunction = "<function=", kParameter = "<parameter=",
                                    kParameterEnd = "</parameter>", kFunctionEnd = "</function>";
  size_t pos = 0;
  skip_whitespace(body, pos);
  const std::optional<std::string> name = read_opening(body, pos, kFunction);
  if (!name) return std::nullopt;
  Json arguments = Json::object();
  while (true) {
    skip_whitespace(body, pos);
    if (pos == body.size()) break;  // no </function>: tolerated at the end
    if (body.substr(pos, kFunctionEnd.size()) == kFunctionEnd) {
      pos += kFunctionEnd.size();
      break;
    }
    const std::optional<std::string> parameter = read_opening(body, pos, kParameter);
    if (!parameter || arguments.contains(*parameter)) return std::nullopt;
    const std::set<std::string> types = offered_types(tools, *name, *parameter);
    // The value runs to the first closing or opening tag after it.
    size_t end = body.size(), next = body.size();
    for (const std::string_view tag : {kParameterEnd, kParameter, kFunctionEnd}) {
      const size_t found = body.find(tag, pos);
      if (found < end) {
        end = found;
        next = found + (tag == kParameterEnd ? tag.size() : 0);
      }
    }
    // A JSON value may hold those tags inside its strings, but never a newline before
    // </parameter> (JSON strings hold no raw newline): where the text up to there reads as JSON,
    // that is where it ends.
    if (!types.empty() && !types.contains("string")) {
      const size_t closer = body.find("\n</parameter>", pos);
      if (closer != std::string_view::npos && closer + 1 > end &&
          !json_value(body.substr(pos, closer + 1 - pos)).is_discarded()) {
        end = closer + 1;
        next = end + kParameterEnd.size();
      }
    }
    std::string_view value = body.substr(pos, end - pos);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    arguments[*parameter] = convert_value(value, types);
    pos = next;
  }
  skip_whitespace(body, pos);
  if (pos != body.size()) return std::nullopt;
  return ChatToolCall{*name, python_json_dumps(arguments)};
}

}  // namespace kipp
