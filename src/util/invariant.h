// Checks of what code relies on because an earlier step made sure of it: the weight slot that the
// tensor layout names, a session that this backend created, logit rows within the tokens of an
// item. They are not for input: bad input is an Error that says what was wrong. They run where
// KIPP_CHECK_INVARIANTS is defined (debug and sanitizer builds: the sanitizer build runs the unit
// tests under `make test`), where a broken invariant stops the process at the line that found it;
// elsewhere they compile to nothing, their conditions not evaluated.
#pragma once

namespace kipp {

[[noreturn]] void invariant_broken(const char* condition, const char* file, int line);

}  // namespace kipp

#if defined(KIPP_CHECK_INVARIANTS)
#define KIPP_INVARIANT(condition) ((condition) ? void(0) : ::kipp::invariant_broken(#condition, __FILE__, __LINE__))
#else
#define KIPP_INVARIANT(condition) ((void)sizeof(condition))
#endif
