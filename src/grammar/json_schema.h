// JSON Schema (draft 2020-12, 2019-09 and draft-07; drafts 04 and 06 read as draft-07) compiled
// into the grammar form of grammar/grammar.h: exact, or refused.
//
// The contract. Let L be the language of the grammar and C(x) the compact serialization of an
// instance x (no whitespace; members and items in the instance's order; numbers as written;
// strings with only ", \ and control characters escaped: \b \f \n \r \t, others as \u00xx).
//   (1) every text in L parses to an instance that the schema accepts;
//   (2) C(x) is in L for every instance x that the schema accepts.
// What cannot be enforced so is refused with an error "keyword '<k>' at <pointer>: <reason>",
// <pointer> being the JSON pointer of the keyword itself (parse it with parse_refusal); with
// strict = false it is left out instead and listed, and then only (1) may fail, and only through
// the listed keywords. A $ref that resolves to nothing (a broken schema, or a document that
// load_document does not have) is refused whatever `strict` says. The grammar accepts more
// spellings than C: whitespace between tokens and around the value (at most max_whitespace
// characters in a row), \/ for /, and \u00XX in either case for control characters. Known
// limits of (2), kept because a grammar cannot do better:
//   * numbers in exponent form (1e2, 2.5E-3) are accepted only where no bound other than 0, no
//     multipleOf and no const or enum applies; an integer in exponent form only as
//     digits[.0...]e[+]digits. Elsewhere a valid instance must be written without an exponent;
//   * characters other than control characters are accepted raw only, never as \uXXXX escapes;
//   * a number in the schema that nlohmann parsed as a double of magnitude 2^53 or more may have
//     been rounded, so a bound, const or multipleOf of that kind is refused;
//   * duplicate keys cannot be told apart from distinct ones by a grammar: two additional members
//     with the same key count twice towards minProperties.
// Enforced: type, enum, const, properties, required, additionalProperties, patternProperties
// beside additionalProperties: false (one schema for all patterns, no named key matching one),
// min/maxProperties, prefixItems/items/additionalItems, min/maxItems, min/maxLength, pattern,
// format (compile_format), the numeric bounds, multipleOf (as a digit automaton), allOf and $ref
// (merged: each subschema keeps its own additionalProperties), anyOf, oneOf with provably disjoint
// branches, not of types, unevaluatedProperties/Items where nothing but the merged subschemas
// evaluates, $defs, anchors, $id, remote documents (load_document), boolean schemas. Refused:
// if/then/else, contains, uniqueItems, dependencies, dependentRequired/Schemas, propertyNames,
// other negations, $dynamicRef, $recursiveRef, pattern or format beside lengths, unknown $schema.
// Drafts 04 and 06 are read as draft-07 (with `id` and boolean exclusive bounds for draft-04);
// `const` is enforced in draft-04 too, as ajv does.
//
// The tidy form (SchemaOptions::form) is the language a generating model is held to, as
// xgrammar's strict mode and llama.cpp generate: (1) still holds, and (2) narrows to the
// instances a schema lists. Where a schema object names members (properties or required) and says
// nothing of others (no additionalProperties, unevaluatedProperties or patternProperties), no
// unlisted member is written unless minProperties needs more than it names; patternProperties
// without additionalProperties allows only keys matching its patterns; items past a prefix
// (prefixItems, or items as an array) that nothing describes (items, additionalItems,
// unevaluatedItems) are written only as far as minItems needs them. An object schema that names
// no member keeps any members: it asks for an open object. An integer is written as plain digits
// (no fraction of zeros, no exponent), so that no model can write 0.000… for ever where an integer
// is asked for. Whitespace is what Python's json.dumps
// writes, the form of the chat template's own JSON: at most one space after each ',' and ':', none
// elsewhere (so the compact form too). `kipp grammar --check` validates with the exact form.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "util/error.h"

namespace kipp::grammar {

enum class SchemaDraft { draft4, draft6, draft7, draft2019_09, draft2020_12 };

// Which language a schema compiles to: every instance it accepts (exact), or the ones a generating
// model should write (tidy, above).
enum class JsonForm { exact, tidy };

struct SchemaOptions {
  bool strict = true;          // false: what cannot be enforced is left out and listed, not refused
  bool assert_formats = true;  // `format` enforced (2020-12 makes it an annotation by default)
  JsonForm form = JsonForm::exact;
  uint32_t max_whitespace = 16;  // exact form: longest run of whitespace allowed between tokens (0 = compact only)
  SchemaDraft default_draft = SchemaDraft::draft2020_12;  // for a schema without $schema
  // Documents referenced by an absolute URI ($ref to another document); empty = refuse such refs.
  std::function<std::optional<nlohmann::json>(std::string_view uri)> load_document;
};

// A keyword left out (strict = false). pointer: its JSON pointer, e.g. "/properties/tags/uniqueItems"
// (prefixed by "<uri>#" for a keyword of another document).
struct Unenforced {
  std::string keyword;
  std::string pointer;
  bool operator==(const Unenforced&) const = default;
};

struct CompiledSchema {
  Grammar grammar;
  std::vector<Unenforced> unenforced;
};

// A schema that no value meets (false, an empty enum...) has no grammar: the matcher needs a
// sentence to lead to. compile_json_schema then fails with this message.
inline constexpr std::string_view kSchemaAcceptsNothing = "the schema accepts no value at all";

Result<CompiledSchema> compile_json_schema(const nlohmann::json& schema, const SchemaOptions& options = {});

// What one schema may cost to compile, whatever `strict` says, so that a request cannot exhaust
// the stack, memory or time of the server compiling it. Each is refused as a keyword at a pointer
// ("keyword 'enum' at /properties/x/enum: 20000 values, more than the limit of 10000").
// The deepest nesting of the schema document, in JSON levels (JSONSchemaBench's deepest: 17).
inline constexpr size_t kMaxSchemaDepth = 128;
// Subschemas being compiled inside one another, references followed included: a chain of $refs
// nests as deeply as the documents they lead through.
inline constexpr size_t kMaxSchemaNesting = 256;
// Subschema views compiled in all (anyOf / oneOf distributed over their siblings multiply them).
inline constexpr size_t kMaxSchemaViews = 10'000;
// The values of one enum, and the subschemas of one allOf / anyOf / oneOf.
inline constexpr size_t kMaxEnumValues = 10'000;
inline constexpr size_t kMaxSchemaBranches = 1'000;
// Number rules built in all (each numeric bound set, multipleOf, and number in an enum or const
// is a digit automaton of its own: milliseconds and ~100 KB each).
inline constexpr size_t kMaxSchemaNumbers = 2'000;

// The keyword and pointer of a refusal message "keyword '<k>' at <pointer>: <reason>"; nullopt for
// any other error (an invalid document, a grammar over the size limit).
std::optional<Unenforced> parse_refusal(std::string_view message);

}  // namespace kipp::grammar
