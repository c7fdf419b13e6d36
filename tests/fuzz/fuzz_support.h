// What the libFuzzer harnesses of this folder share: reading an input as a route byte and a body,
// and driving a compiled grammar the way generation does, so that every harness that ends in a
// grammar also fuzzes the matcher built from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "grammar/matcher.h"

namespace kipp::fuzz {

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// An input for a harness with several entry points: the first byte picks one (its value modulo
// `routes`, so that the digits '0', '1', ... name them in hand-written seeds), the rest is what
// that entry point reads. Nothing for an empty input.
struct Routed {
  size_t route;
  std::string_view body;
};
std::optional<Routed> split_route(const uint8_t* data, size_t size, size_t routes);

// Builds the grammar's automaton (as the engine does for each constrained request) and walks it
// for a few bytes: each step takes the next byte of `steer` when the automaton allows it, else the
// least byte it allows, and stops at a whole sentence that cannot continue. Errors (a grammar over
// the matcher's limits) are answers, not findings; only crashes, hangs and blow-ups are.
void walk_grammar(grammar::Grammar grammar, std::string_view steer);
// The same walk over an automaton built already (the server's, which a request carries).
void walk_automaton(grammar::Automaton& automaton, std::string_view steer);

}  // namespace kipp::fuzz
