# Included by tests/CMakeLists.txt of the MAIN build when KIPP_SANITIZER_BUILD_DIR names a
# sanitizer build made with KIPP_FUZZ=ON: runs its fuzzers for a bounded time as ctest tests.
# Each run starts from a fresh writable corpus under this build tree (the seeds stay read-only
# in the sanitizer build); any crash, sanitizer report, leak, timeout or RSS blow-up fails it.
# (fuzz.tokenizer is registered beside its fuzzer, in tests/tokenizer.)

# kipp_fuzz_test(<name> <default seconds> [MAX_LEN <bytes>]): the test fuzz.<name>, running
# kipp_fuzz_<name> from seeds/<name> for KIPP_FUZZ_SECONDS_<NAME> seconds, a cache variable so that
# a machine with time to spare can fuzz longer (-DKIPP_FUZZ_SECONDS_JSON_SCHEMA=600). It is empty
# unless set, so that a build tree follows the default written here when that changes.
function(kipp_fuzz_test name default_seconds)
  cmake_parse_arguments(arg "" "MAX_LEN" "" ${ARGN})
  string(TOUPPER ${name} upper)
  set(KIPP_FUZZ_SECONDS_${upper} "" CACHE STRING
      "Seconds the ctest test fuzz.${name} fuzzes for (empty: ${default_seconds})")
  set(seconds ${default_seconds})
  if(KIPP_FUZZ_SECONDS_${upper})
    set(seconds ${KIPP_FUZZ_SECONDS_${upper}})
  endif()
  set(options)
  if(arg_MAX_LEN)
    list(APPEND options -DMAX_LEN=${arg_MAX_LEN})
  endif()
  add_test(NAME fuzz.${name}
    COMMAND ${CMAKE_COMMAND}
            -DFUZZER=${KIPP_SANITIZER_BUILD_DIR}/tests/fuzz/kipp_fuzz_${name}
            -DSEEDS=${KIPP_SANITIZER_BUILD_DIR}/tests/fuzz/seeds/${name}
            -DWORK_DIR=${CMAKE_BINARY_DIR}/fuzz/${name}
            -DSECONDS=${seconds} ${options}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/run_fuzz.cmake)
  # Room beyond the fuzzing for loading the corpus and for writing a reproducer.
  math(EXPR timeout "${seconds} + 120")
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT ${timeout})
endfunction()

# Short runs: make test checks that each target still runs clean from its seeds plus a little
# mutation; depth comes from bench/fuzz_long.sh, whose findings become regression tests.
kipp_fuzz_test(gguf 30)
# Replaying its ~530 seeds (real schemas, some compiling for seconds under ASan) takes 20-30 s on
# two busy cores before any mutation: 60 s leaves half a minute of fuzzing.
kipp_fuzz_test(json_schema 60)
# Patterns and grammars are short texts: shorter inputs keep the mutations on their syntax.
kipp_fuzz_test(regex 20 MAX_LEN 16384)
kipp_fuzz_test(gbnf 20 MAX_LEN 16384)
kipp_fuzz_test(api_request 20)
kipp_fuzz_test(convert_readers 20)
