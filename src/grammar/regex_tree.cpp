#include "grammar/regex_tree.h"

#include <algorithm>

namespace kipp::grammar::pattern {
namespace {

Node nothing() { return chars({}); }

size_t node_count(const Node& node) {
  size_t count = 1;
  for (const Node& part : node.parts) count += node_count(part);
  return count;
}

}  // namespace

Node chars(CodePointRanges set) { return {Node::Kind::chars, std::move(set), {}, 0, 0}; }
Node sequence(std::vector<Node> parts) { return {Node::Kind::sequence, {}, std::move(parts), 0, 0}; }
Node choice(std::vector<Node> parts) { return {Node::Kind::choice, {}, std::move(parts), 0, 0}; }
Node repeat(Node part, uint32_t min, uint32_t max) {
  std::vector<Node> parts;
  parts.push_back(std::move(part));
  return {Node::Kind::repeat, {}, std::move(parts), min, max};
}

bool nullable(const Node& node) {
  switch (node.kind) {
    case Node::Kind::chars: return false;
    case Node::Kind::sequence: return std::all_of(node.parts.begin(), node.parts.end(), nullable);
    case Node::Kind::choice: return std::any_of(node.parts.begin(), node.parts.end(), nullable);
    case Node::Kind::repeat: return node.min == 0 || nullable(node.parts[0]);
  }
  return false;
}

bool matches_nothing(const Node& node) {
  switch (node.kind) {
    case Node::Kind::chars: return node.set.empty();
    case Node::Kind::sequence: return std::any_of(node.parts.begin(), node.parts.end(), matches_nothing);
    case Node::Kind::choice: return std::all_of(node.parts.begin(), node.parts.end(), matches_nothing);
    case Node::Kind::repeat: return node.min > 0 && matches_nothing(node.parts[0]);
  }
  return false;
}

Result<Node> without_empty(const Node& node, RewriteBudget& budget) {
  if (!nullable(node)) return node;
  switch (node.kind) {
    case Node::Kind::chars: return node;
    case Node::Kind::sequence: {
      // Every part is nullable: the first part that consumes something is one of them.
      std::vector<Node> options;
      for (size_t first = 0; first < node.parts.size(); ++first) {
        KIPP_ASSIGN(Node head, without_empty(node.parts[first], budget));
        if (matches_nothing(head)) continue;
        std::vector<Node> parts{std::move(head)};
        parts.insert(parts.end(), node.parts.begin() + long(first) + 1, node.parts.end());
        for (auto tail = parts.begin() + 1; tail != parts.end(); ++tail) KIPP_TRY(budget.spend(node_count(*tail)));
        options.push_back(sequence(std::move(parts)));
      }
      return options.empty() ? nothing() : choice(std::move(options));
    }
    case Node::Kind::choice: {
      std::vector<Node> options;
      for (const Node& part : node.parts) {
        KIPP_ASSIGN(Node option, without_empty(part, budget));
        if (!matches_nothing(option)) options.push_back(std::move(option));
      }
      return options.empty() ? nothing() : choice(std::move(options));
    }
    case Node::Kind::repeat: {
      // x{n,m} with x nullable is x'{0,m} (copies of the empty string make up any shortfall).
      KIPP_ASSIGN(Node part, without_empty(node.parts[0], budget));
      if (node.max == 0 || matches_nothing(part)) return nothing();
      return repeat(std::move(part), 1, node.max);
    }
  }
  return node;
}

}  // namespace kipp::grammar::pattern
