# Runs one libFuzzer binary for a bounded time from a fresh corpus copy; fails on any finding.
# cmake -DFUZZER=bin -DSEEDS=dir -DWORK_DIR=dir -DSECONDS=n [-DMAX_LEN=bytes] [-DINPUT_TIMEOUT=s]
#       [-DRSS_LIMIT_MB=mib] -P run_fuzz.cmake
# An input that runs longer than INPUT_TIMEOUT seconds or makes the process grow past RSS_LIMIT_MB
# (or ask for that much in one allocation) is a finding like a crash: a request must not be able
# to stall or exhaust the server either.
foreach(var FUZZER SEEDS WORK_DIR SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake: -D${var}= is required")
  endif()
endforeach()
if(NOT DEFINED MAX_LEN)
  set(MAX_LEN 65536)
endif()
if(NOT DEFINED INPUT_TIMEOUT)
  set(INPUT_TIMEOUT 10)
endif()
if(NOT DEFINED RSS_LIMIT_MB)
  set(RSS_LIMIT_MB 2048)
endif()
if(NOT EXISTS ${FUZZER})
  message(FATAL_ERROR "fuzzer ${FUZZER} is not built: configure the sanitizer build with clang, "
                      "-DKIPP_SANITIZE=ON -DKIPP_FUZZ=ON and build it")
endif()
if(NOT IS_DIRECTORY ${SEEDS})
  message(FATAL_ERROR "seed corpus ${SEEDS} is missing: build the sanitizer build's fuzz targets (their seeds come with them)")
endif()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
file(GLOB seeds ${SEEDS}/*)
if(seeds)
  file(COPY ${seeds} DESTINATION ${WORK_DIR}/corpus)
endif()

# Halt on the first report of any sanitizer; leaks are findings too.
set(ENV{ASAN_OPTIONS} "abort_on_error=0:detect_leaks=1:allocator_may_return_null=0")
set(ENV{UBSAN_OPTIONS} "halt_on_error=1:print_stacktrace=1")
execute_process(
  COMMAND ${FUZZER} ${WORK_DIR}/corpus
          -max_total_time=${SECONDS} -timeout=${INPUT_TIMEOUT} -rss_limit_mb=${RSS_LIMIT_MB}
          -malloc_limit_mb=${RSS_LIMIT_MB} -max_len=${MAX_LEN} -print_final_stats=1
          -artifact_prefix=${WORK_DIR}/artifacts/
  WORKING_DIRECTORY ${WORK_DIR}
  RESULT_VARIABLE result)
file(GLOB findings ${WORK_DIR}/artifacts/*)
if(NOT result EQUAL 0 OR findings)
  message(FATAL_ERROR "${FUZZER} failed (exit ${result}); reproducer(s): ${findings}")
endif()
