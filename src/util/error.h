// Errors are values: every fallible call returns Result<T> (or Status) carrying one
// human-readable line that names the file, field or value and what was expected.
// Nothing in libkipp ends the process on bad input.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace kipp {

struct Error {
  std::string message;
  // The host named could not be reached at all (no route, no DNS, refused): being offline, as
  // opposed to every other failure. The CLI gives it its own exit status.
  bool unreachable = false;
  // A bound on what one input may cost was met (nesting, size, work): refused however lenient
  // the caller is about what it cannot honour.
  bool over_limit = false;
};

// Builds an Error by streaming every argument: fail("tensor ", name, ": expected ", n).
template <class... Parts>
Error fail(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return Error{out.str()};
}

// fail() for a limit met: the error says over_limit.
template <class... Parts>
Error limit_exceeded(const Parts&... parts) {
  Error error = fail(parts...);
  error.over_limit = true;
  return error;
}

// Prefixes context to an error on its way up: "model.gguf: " + "bad magic".
Error with_context(const std::string& context, Error error);

// A value or the error that prevented it. E is the error type: Error everywhere except the HTTP
// API layer, whose errors also carry a status code and the field at fault (server/api_error.h).
template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(E error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const E& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, E> state_;
};

template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : error_(std::move(error)) {}  // NOLINT

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const E& error() const { return *error_; }

 private:
  std::optional<E> error_;
};

using Status = Result<void>;

}  // namespace kipp

// Returns the error of a failed Status/Result from the enclosing function.
#define KIPP_TRY(expr)                                           \
  do {                                                           \
    auto kipp_try_result_ = (expr);                              \
    if (!kipp_try_result_.ok()) return kipp_try_result_.error(); \
  } while (0)

#define KIPP_CONCAT_INNER(a, b) a##b
#define KIPP_CONCAT(a, b) KIPP_CONCAT_INNER(a, b)
// Declares `decl` from the value of a Result, or returns its error.
#define KIPP_ASSIGN(decl, expr) KIPP_ASSIGN_IMPL(KIPP_CONCAT(kipp_assign_, __LINE__), decl, expr)
#define KIPP_ASSIGN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                      \
  if (!tmp.ok()) return tmp.error();      \
  decl = std::move(tmp).value()
