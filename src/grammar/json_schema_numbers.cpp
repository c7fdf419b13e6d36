#include "grammar/json_schema_numbers.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

namespace kipp::grammar {

namespace {

// Exponents beyond this are refused rather than written out digit by digit.
constexpr int64_t kMaxExponent = 1000;
// The automaton is refused beyond this many states (a multipleOf with a large modulus).
constexpr size_t kMaxStates = 20000;
// multipleOf moduli beyond this (after scaling to an integer) are refused.
constexpr uint64_t kMaxModulus = 10000;

int sign_of(int value) { return (value > 0) - (value < 0); }

// A bound's magnitude split at the decimal point: integer digits ("0" below one) and fraction
// digits without trailing zeros.
struct Magnitude {
  std::string integer;
  std::string fraction;
};

Magnitude magnitude_of(const Decimal& value) {
  if (value.is_zero()) return {"0", ""};
  const auto length = int64_t(value.digits.size());
  if (value.exponent >= 0) return {value.digits + std::string(size_t(value.exponent), '0'), ""};
  if (length + value.exponent > 0) {
    const size_t split = size_t(length + value.exponent);
    return {value.digits.substr(0, split), value.digits.substr(split)};
  }
  return {"0", std::string(size_t(-value.exponent - length), '0') + value.digits};
}

enum Phase : uint8_t { kStart, kMinus, kZero, kInt, kDot, kFrac, kExpMark, kExpSign, kExpDigits };

struct State {
  Phase phase = kStart;
  bool negative = false;
  bool nonzero = false;
  uint32_t int_length = 0;            // capped: only compared with the bounds' lengths
  uint32_t frac_length = 0;           // capped likewise
  int8_t vs_lower = 0, vs_upper = 0;  // magnitude so far against each bound's magnitude
  uint32_t remainder = 0;
  auto operator<=>(const State&) const = default;
};

class NumberAutomaton {
 public:
  NumberAutomaton(GrammarBuilder& builder, const NumberConstraints& c) : builder_(builder), c_(c) {
    if (c.lower) lower_ = magnitude_of(c.lower->value);
    if (c.upper) upper_ = magnitude_of(c.upper->value);
    size_t longest_int = 0, longest_frac = 0;
    for (const auto* m : {&lower_, &upper_})
      if (m->has_value()) {
        longest_int = std::max(longest_int, (*m)->integer.size());
        longest_frac = std::max(longest_frac, (*m)->fraction.size());
      }
    if (c.multiple_of) {
      const Magnitude step = magnitude_of(*c.multiple_of);
      scale_ = uint32_t(step.fraction.size());
      modulus_ = std::stoull(step.integer + step.fraction);
      longest_frac = std::max(longest_frac, size_t(scale_));
    }
    const bool bounded = lower_ || upper_;
    signed_ = bounded;
    int_cap_ = bounded ? uint32_t(longest_int + 1) : 0;
    frac_cap_ = (bounded || c.multiple_of) ? uint32_t(longest_frac + 1) : 0;
    // Exponents move the decimal point, which only a bound of 0 (a sign) can ignore.
    exponent_allowed_ =
        !c.multiple_of && (!c.lower || c.lower->value.is_zero()) && (!c.upper || c.upper->value.is_zero());
  }

  Result<std::optional<RuleId>> build() {
    bool any_accepting = false;
    std::map<State, RuleId> rules;
    std::vector<State> pending{State{}};
    rules.emplace(State{}, builder_.declare(c_.integer ? "integer" : "number"));
    while (!pending.empty()) {
      const State state = pending.back();
      pending.pop_back();
      std::map<State, ByteSet> targets;
      for (unsigned byte = 0; byte < 256; ++byte)
        if (auto next = step(state, uint8_t(byte))) targets[*next].add(uint8_t(byte));
      std::vector<Sequence> alternatives;
      for (const auto& [next, bytes] : targets) {
        auto [found, inserted] = rules.try_emplace(next, 0);
        if (inserted) {
          if (rules.size() > kMaxStates)
            return fail("the number constraints need more than ", kMaxStates, " automaton states");
          found->second = builder_.declare(c_.integer ? "integer" : "number");
          pending.push_back(next);
        }
        alternatives.push_back({builder_.bytes(bytes), GrammarBuilder::call(found->second)});
      }
      if (accepts(state)) {
        alternatives.push_back({});
        any_accepting = true;
      }
      if (alternatives.empty()) alternatives.push_back({builder_.bytes(ByteSet())});
      builder_.set_alternatives(rules.at(state), std::move(alternatives));
    }
    // Every reachable state was seen: none accepting means no number at all.
    if (!any_accepting) return std::optional<RuleId>();
    return std::optional<RuleId>(rules.at(State{}));
  }

 private:
  std::optional<State> step(State s, uint8_t byte) const {
    const bool digit = byte >= '0' && byte <= '9';
    const int d = byte - '0';
    switch (s.phase) {
      case kStart:
        if (byte == '-') {
          s.phase = kMinus;
          s.negative = signed_;
          return s;
        }
        [[fallthrough]];
      case kMinus:
        if (!digit) return std::nullopt;
        s.phase = d == 0 ? kZero : kInt;
        return int_digit(s, d);
      case kInt:
        if (digit) return int_digit(s, d);
        [[fallthrough]];
      case kZero:
        if (c_.integer && c_.plain_integers) return std::nullopt;
        if (byte == '.') {
          finish_int(s);
          s.phase = kDot;
          return s;
        }
        return exponent_mark(s, byte);
      case kDot:
      case kFrac:
        if (digit) return frac_digit(s, d);
        if (s.phase == kDot) return std::nullopt;
        return exponent_mark(s, byte);
      case kExpMark:
        if ((byte == '+' || (byte == '-' && !c_.integer))) {
          s.phase = kExpSign;
          return s;
        }
        [[fallthrough]];
      case kExpSign:
      case kExpDigits:
        if (!digit) return std::nullopt;
        s.phase = kExpDigits;
        return s;
    }
    return std::nullopt;
  }

  std::optional<State> int_digit(State s, int d) const {
    const uint32_t at = s.int_length;
    compare_digit(s.vs_lower, lower_, at, d, true);
    compare_digit(s.vs_upper, upper_, at, d, true);
    s.int_length = std::min(at + 1, int_cap_);
    s.nonzero |= signed_ && d != 0;
    if (c_.multiple_of) s.remainder = uint32_t((uint64_t(s.remainder) * 10 + uint64_t(d)) % modulus_);
    return s;
  }

  std::optional<State> frac_digit(State s, int d) const {
    if (c_.integer && d != 0) return std::nullopt;
    const uint32_t at = s.frac_length;
    if (c_.multiple_of) {
      if (at >= scale_ && d != 0) return std::nullopt;  // a digit below the step's last place
      if (at < scale_) s.remainder = uint32_t((uint64_t(s.remainder) * 10 + uint64_t(d)) % modulus_);
    }
    compare_digit(s.vs_lower, lower_, at, d, false);
    compare_digit(s.vs_upper, upper_, at, d, false);
    s.frac_length = std::min(at + 1, frac_cap_);
    s.nonzero |= signed_ && d != 0;
    s.phase = kFrac;
    return s;
  }

  std::optional<State> exponent_mark(State s, uint8_t byte) const {
    if ((byte != 'e' && byte != 'E') || !exponent_allowed_) return std::nullopt;
    if (s.phase != kFrac) finish_int(s);
    finish_frac(s);
    s.phase = kExpMark;
    return s;
  }

  // Same-position comparison while the result is still open: the integer digits compare as
  // strings of equal length (lengths are compared when the integer part ends), fraction digits
  // against the bound's, padded with zeros.
  static void compare_digit(int8_t& vs, const std::optional<Magnitude>& bound, uint32_t at, int d, bool integer_part) {
    if (!bound || vs != 0) return;
    const std::string& digits = integer_part ? bound->integer : bound->fraction;
    if (at < digits.size()) vs = int8_t(sign_of(d - (digits[at] - '0')));
    else if (!integer_part && d != 0) vs = 1;
  }

  void finish_int(State& s) const {
    const auto finish = [&](int8_t& vs, const std::optional<Magnitude>& bound) {
      if (!bound) return;
      const size_t length = bound->integer.size();
      if (s.int_length != length) vs = s.int_length < length ? -1 : 1;
    };
    finish(s.vs_lower, lower_);
    finish(s.vs_upper, upper_);
  }

  void finish_frac(State& s) const {
    const auto finish = [&](int8_t& vs, const std::optional<Magnitude>& bound) {
      if (bound && vs == 0 && s.frac_length < bound->fraction.size()) vs = -1;
    };
    finish(s.vs_lower, lower_);
    finish(s.vs_upper, upper_);
  }

  bool accepts(State s) const {
    if (s.phase != kZero && s.phase != kInt && s.phase != kFrac && s.phase != kExpDigits) return false;
    if (s.phase == kZero || s.phase == kInt) finish_int(s);
    if (s.phase != kExpDigits) finish_frac(s);
    const int value_sign = !s.nonzero ? 0 : s.negative ? -1 : 1;
    const auto versus = [&](const NumberBound& bound, int8_t magnitude) {
      const int bound_sign = bound.value.is_zero() ? 0 : bound.value.negative ? -1 : 1;
      if (value_sign != bound_sign) return sign_of(value_sign - bound_sign);
      return value_sign == 0 ? 0 : value_sign * magnitude;
    };
    if (c_.lower) {
      const int vs = versus(*c_.lower, s.vs_lower);
      if (vs < 0 || (vs == 0 && c_.lower->exclusive)) return false;
    }
    if (c_.upper) {
      const int vs = versus(*c_.upper, s.vs_upper);
      if (vs > 0 || (vs == 0 && c_.upper->exclusive)) return false;
    }
    if (c_.multiple_of) {
      uint64_t scaled = s.remainder;
      for (uint32_t k = std::min(s.frac_length, scale_); k < scale_; ++k) scaled = scaled * 10 % modulus_;
      if (scaled != 0) return false;
    }
    return true;
  }

  GrammarBuilder& builder_;
  const NumberConstraints& c_;
  std::optional<Magnitude> lower_, upper_;
  bool signed_ = false;  // the sign and whether a digit is nonzero matter (there is a bound)
  uint32_t int_cap_ = 0, frac_cap_ = 0;
  uint32_t scale_ = 0;  // multipleOf = modulus_ * 10^-scale_
  uint64_t modulus_ = 1;
  bool exponent_allowed_ = true;
};

uint64_t power_of_ten_gcd(uint64_t modulus, uint32_t scale) {
  uint64_t g = 1;
  for (uint32_t k = 0; k < scale; ++k) {
    const uint64_t next = std::gcd(modulus / g, uint64_t(10));
    if (next == 1) break;
    g *= next;
  }
  return g;
}

}  // namespace

std::optional<Decimal> parse_decimal(std::string_view text) {
  size_t i = 0;
  Decimal out;
  if (i < text.size() && text[i] == '-') {
    out.negative = true;
    ++i;
  }
  std::string digits;
  int64_t exponent = 0;
  const size_t int_start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') digits += text[i++];
  if (i == int_start) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    const size_t frac_start = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      digits += text[i++];
      --exponent;
    }
    if (i == frac_start) return std::nullopt;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative_exponent = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative_exponent = text[i++] == '-';
    const size_t exp_start = i;
    int64_t written = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      written = std::min<int64_t>(written * 10 + (text[i++] - '0'), 10 * kMaxExponent);
    }
    if (i == exp_start) return std::nullopt;
    exponent += negative_exponent ? -written : written;
  }
  if (i != text.size()) return std::nullopt;
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{out.negative, "", 0};
  const size_t last = digits.find_last_not_of('0');
  exponent += int64_t(digits.size() - 1 - last);
  out.digits = digits.substr(first, last - first + 1);
  out.exponent = exponent;
  const int64_t magnitude = exponent + int64_t(out.digits.size());
  if (magnitude > kMaxExponent || magnitude < -kMaxExponent) return std::nullopt;
  return out;
}

int compare(const Decimal& a, const Decimal& b) {
  const int sign_a = a.is_zero() ? 0 : a.negative ? -1 : 1;
  const int sign_b = b.is_zero() ? 0 : b.negative ? -1 : 1;
  if (sign_a != sign_b || sign_a == 0) return sign_of(sign_a - sign_b);
  // Same sign: compare magnitudes by the position of the leading digit, then digit by digit.
  const int64_t lead_a = a.exponent + int64_t(a.digits.size()), lead_b = b.exponent + int64_t(b.digits.size());
  int magnitude = sign_of(int(lead_a > lead_b) - int(lead_a < lead_b));
  if (magnitude == 0) {
    const size_t n = std::max(a.digits.size(), b.digits.size());
    for (size_t k = 0; k < n && magnitude == 0; ++k) {
      const int da = k < a.digits.size() ? a.digits[k] - '0' : 0;
      const int db = k < b.digits.size() ? b.digits[k] - '0' : 0;
      magnitude = sign_of(da - db);
    }
  }
  return sign_a * magnitude;
}

std::string plain_decimal(const Decimal& value) {
  const Magnitude m = magnitude_of(value);
  std::string out = value.negative && !value.is_zero() ? "-" : "";
  out += m.integer;
  if (!m.fraction.empty()) out += "." + m.fraction;
  return out;
}

Result<std::optional<RuleId>> number_rule(GrammarBuilder& builder, NumberConstraints c) {
  if (c.multiple_of) {
    const Magnitude step = magnitude_of(*c.multiple_of);
    const std::string digits =
        (step.integer + step.fraction).substr((step.integer + step.fraction).find_first_not_of('0'));
    if (digits.size() > 12 || std::stoull(digits) > kMaxModulus)
      return fail("multipleOf ", plain_decimal(*c.multiple_of), " needs a modulus above ", kMaxModulus);
    uint64_t modulus = std::stoull(digits);
    const auto scale = uint32_t(step.fraction.size());
    if (c.integer) {
      // An integer is a multiple of m * 10^-s exactly when it is one of m / gcd(m, 10^s).
      modulus /= power_of_ten_gcd(modulus, scale);
      c.multiple_of = parse_decimal(std::to_string(modulus));
      if (modulus == 1) c.multiple_of.reset();
    } else if (scale == 0 && modulus == 1) {
      c.integer = true;
      c.multiple_of.reset();
    }
  }
  return NumberAutomaton(builder, c).build();
}

}  // namespace kipp::grammar
