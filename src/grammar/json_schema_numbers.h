// Numeric keywords of JSON Schema as grammar rules over JSON number lexemes.
//
// Bounds and multipleOf are decided digit by digit, so the numbers are compiled through a small
// deterministic automaton whose state is the syntax position plus what the digits so far say:
// how the magnitude compares with each bound, and the remainder for multipleOf. Its reachable
// states become rules (one byte set per next state), so every bound is exact at any length.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar.h"
#include "util/error.h"

namespace kipp::grammar {

// An exact decimal: (negative ? -1 : 1) * digits * 10^exponent.
struct Decimal {
  bool negative = false;
  std::string digits;  // significant digits without leading or trailing zeros; empty for 0
  int64_t exponent = 0;
  bool is_zero() const { return digits.empty(); }
  bool is_integer() const { return digits.empty() || exponent >= 0; }
};

// A JSON number lexeme (exponent included) as a Decimal; nullopt for anything else, or for an
// exponent so large that writing the number out would not be reasonable.
std::optional<Decimal> parse_decimal(std::string_view lexeme);
int compare(const Decimal& a, const Decimal& b);
// The number written without an exponent: "-12.5", "100", "0.001".
std::string plain_decimal(const Decimal& value);

struct NumberBound {
  Decimal value;
  bool exclusive = false;
};

struct NumberConstraints {
  bool integer = false;  // only integer values (1.0 is one)
  // Integers written as plain digits only, never with a fraction of zeros or an exponent (the tidy
  // form: a generating model cannot run on writing 0.000… for ever).
  bool plain_integers = false;
  std::optional<NumberBound> lower, upper;
  std::optional<Decimal> multiple_of;  // positive
};

// The rule for the number lexemes whose value meets the constraints (see json_schema.h for the
// exponent forms accepted); nullopt when no number does; an error when the automaton would be
// too large.
Result<std::optional<RuleId>> number_rule(GrammarBuilder& builder, NumberConstraints constraints);

}  // namespace kipp::grammar
