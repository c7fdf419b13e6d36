#!/usr/bin/env bash
# Generates the synthetic 2507 checkpoints (laid out as Qwen3-4B-Instruct-2507 and
# Qwen3-4B-Thinking-2507 are published, each tokenizer_config.json with its own template) and the
# Qwen3-Coder one (Qwen3-Coder-30B-A3B-Instruct's files at the tiny MoE width), and converts each
# with the real `kipp convert`, for the chat and tool-call tests of those variants.
# Usage: make_chat_models.sh KIPP KIPP_SYNTHETIC TOKENIZER_DIR FACT_SHEET OUT_DIR
set -euo pipefail
kipp=$1 synthetic=$2 tokenizer_dir=$3 fact_sheet=$4 out=$5
rm -rf "$out"
mkdir -p "$out/src"
for model in qwen3-tiny-instruct-2507 qwen3-tiny-thinking-2507 qwen3-coder-tiny; do
  "$synthetic" --checkpoint "kipp-test/$model" --out "$out/src/$model" \
    --tokenizer-dir "$tokenizer_dir" --fact-sheet "$fact_sheet" --seed 7
  "$kipp" convert --checkpoint "kipp-test/$model" --source "$out/src/$model" --quant bf16 \
    --out "$out/$model.bf16.gguf"
done
echo "chat test models ready in $out"
