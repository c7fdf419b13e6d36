#!/usr/bin/env bash
# The long fuzzing run: every libFuzzer target of a sanitizer build fuzzes for DURATION, each with
# a corpus that persists under the work folder (so a second run starts where the first stopped),
# up to JOBS targets at once (more targets than jobs run in waves). A target keeps going after a
# crash, timeout or out-of-memory (libFuzzer's fork mode), so one finding does not end its night.
# At the end it prints, per target: executions, coverage (the cov: edges and ft: features of
# libFuzzer's last status line), the corpus size, and the findings (artifact files) of this run.
#
# usage: bench/fuzz_long.sh [-j JOBS] [-b SANITIZER_BUILD] [-w WORK_DIR] DURATION [TARGET...]
#   DURATION  8h, 90m or 600s (a bare number is hours)
#   TARGET    gguf, json_schema, ... (default: every kipp_fuzz_* fuzzer in the build)
#   -j        targets fuzzed at once (default: the number of processors)
#   -b        the sanitizer build (default: build-asan; `make asan` makes it)
#   -w        the work folder: corpora, logs, artifacts (default: ~/kipp-fuzz, outside the repository)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
jobs_max="$(nproc)"
build="$repo/build-asan"
work="$HOME/kipp-fuzz"
while getopts "j:b:w:" option; do
  case "$option" in
    j) jobs_max="$OPTARG" ;;
    b) build="$(cd "$OPTARG" && pwd)" ;;
    w) work="$OPTARG" ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [[ $# -lt 1 ]]; then
  sed -n '2,15p' "$0" >&2
  exit 2
fi

case "$1" in
  *h) seconds=$(( ${1%h} * 3600 )) ;;
  *m) seconds=$(( ${1%m} * 60 )) ;;
  *s) seconds=$(( ${1%s} )) ;;
  *) seconds=$(( $1 * 3600 )) ;;
esac
shift

# Every fuzzer of the build, by the libFuzzer entry point it holds (the seed makers share the
# kipp_fuzz_ prefix but are ordinary programs).
declare -A binary
while IFS= read -r path; do
  if grep -qa LLVMFuzzerTestOneInput "$path"; then binary["$(basename "$path" | sed 's/^kipp_fuzz_//')"]="$path"; fi
done < <(find "$build/tests" -type f -name 'kipp_fuzz_*' -perm -u+x)
if [[ ${#binary[@]} -eq 0 ]]; then
  echo "fuzz_long.sh: no fuzzers in $build: build them with make asan" >&2
  exit 1
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then mapfile -t targets < <(printf '%s\n' "${!binary[@]}" | sort); fi
for target in "${targets[@]}"; do
  [[ -n "${binary[$target]:-}" ]] || { echo "fuzz_long.sh: no fuzzer kipp_fuzz_$target in $build" >&2; exit 1; }
done

# A target's seeds: the corpus its build wrote, else the fuzz_seeds folder beside its sources.
seeds_of() {
  local target="$1" built="$build/tests/fuzz/seeds/$1"
  if [[ -d "$built" ]]; then echo "$built"; return; fi
  local folder
  folder="$(dirname "${binary[$target]}")"
  echo "$repo/${folder#"$build"/}/fuzz_seeds"
}

run_target() {
  local target="$1" dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  # The first folder takes the new inputs; the seeds are read, never written.
  ASAN_OPTIONS="abort_on_error=0:detect_leaks=1:allocator_may_return_null=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "${binary[$target]}" "$dir/corpus" "$(seeds_of "$target")" \
      -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/" > "$dir/log" 2>&1 || true
}

mkdir -p "$work"
stamp="$work/.started"
touch "$stamp"
echo "fuzzing ${targets[*]} for $seconds s each, $jobs_max at once, under $work"
for target in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs_max ]]; do wait -n || true; done
  run_target "$target" &
done
wait

printf '\n%-18s %14s %8s %9s %8s %s\n' target executions cov ft corpus findings
for target in "${targets[@]}"; do
  dir="$work/$target"
  # The last status line: "#N ... cov: C ft: F ..." (fork mode: "#N: cov: C ft: F ...").
  status="$(grep -E '^#[0-9]+:? .*cov: [0-9]+ ft: [0-9]+' "$dir/log" | tail -1 || true)"
  executions="$(sed -E 's/^#([0-9]+).*/\1/' <<< "$status")"
  cov="$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<< "$status")"
  ft="$(sed -E 's/.*ft: ([0-9]+).*/\1/' <<< "$status")"
  corpus="$(find "$dir/corpus" -type f | wc -l)"
  mapfile -t findings < <(find "$dir/artifacts" -type f -newer "$stamp" | sort)
  printf '%-18s %14s %8s %9s %8s %s\n' "$target" "${executions:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "${#findings[@]}"
  for finding in "${findings[@]}"; do echo "    $finding"; done
done
