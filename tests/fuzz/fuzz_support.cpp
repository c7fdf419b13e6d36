#include "fuzz_support.h"

#include <memory>
#include <utility>

#include "grammar/matcher.h"

namespace kipp::fuzz {
namespace {

// Enough to enter nested rules and permutations a few levels deep; short enough that the walk
// stays a small part of an input's time next to compiling.
constexpr size_t kWalkBytes = 64;

}  // namespace

std::optional<Routed> split_route(const uint8_t* data, size_t size, size_t routes) {
  if (size == 0) return std::nullopt;
  return Routed{data[0] % routes, text_of(data + 1, size - 1)};
}

void walk_grammar(grammar::Grammar grammar, std::string_view steer) {
  auto created = grammar::Automaton::create(std::move(grammar));
  if (created) walk_automaton(**created, steer);
}

void walk_automaton(grammar::Automaton& automaton, std::string_view steer) {
  grammar::StateId state = automaton.start();
  for (size_t step = 0; step < kWalkBytes && automaton.continues(state); ++step) {
    // The steering byte first; when the automaton refuses it, the least byte it takes.
    grammar::StateId next = grammar::kDeadState;
    if (step < steer.size()) {
      auto steered = automaton.next(state, uint8_t(steer[step]));
      if (!steered) return;
      next = *steered;
    }
    for (unsigned byte = 0; next == grammar::kDeadState && byte < 256; ++byte) {
      auto tried = automaton.next(state, uint8_t(byte));
      if (!tried) return;
      next = *tried;
    }
    if (next == grammar::kDeadState) return;
    state = next;
    automaton.accepts(state);
  }
}

}  // namespace kipp::fuzz
