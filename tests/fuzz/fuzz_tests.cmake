# Included by tests/CMakeLists.txt of the MAIN build when KIPP_SANITIZER_BUILD_DIR names a
# sanitizer build made with KIPP_FUZZ=ON: runs its fuzzers for a bounded time as ctest tests.
# Each run starts from a fresh writable corpus under this build tree (the seeds stay read-only
# in the sanitizer build); any crash, sanitizer report, leak, timeout or RSS blow-up fails it.

set(KIPP_FUZZ_SECONDS 60 CACHE STRING "Seconds each ctest fuzz.* test fuzzes for")

add_test(NAME fuzz.gguf
  COMMAND ${CMAKE_COMMAND}
          -DFUZZER=${KIPP_SANITIZER_BUILD_DIR}/tests/fuzz/kipp_fuzz_gguf
          -DSEEDS=${KIPP_SANITIZER_BUILD_DIR}/tests/fuzz/seeds/gguf
          -DWORK_DIR=${CMAKE_BINARY_DIR}/fuzz/gguf
          -DSECONDS=${KIPP_FUZZ_SECONDS}
          -P ${CMAKE_CURRENT_LIST_DIR}/run_fuzz.cmake)
math(EXPR _kipp_fuzz_timeout "${KIPP_FUZZ_SECONDS} + 120")
set_tests_properties(fuzz.gguf PROPERTIES LABELS fuzz TIMEOUT ${_kipp_fuzz_timeout})
