#!/usr/bin/env bash
# make quickstart: pull the default checkpoint (download, verify, convert), inspect it and
# generate text from it.
# Where the hub cannot be reached it says so in one line and points to `kipp convert`.
set -uo pipefail
kipp=$1 model=$2 models_dir=$3
quant=${KIPP_QUICKSTART_QUANT:-bf16}
artifact=$("$kipp" pull "$model" --quant "$quant" --models-dir "$models_dir")
status=$?
if [[ $status -ne 0 ]]; then
  echo "quickstart: could not pull $model (no network access to the hub?). With a local copy of the" \
       "checkpoint run: $kipp convert --checkpoint $model --source DIR --out $models_dir/$model.$quant.gguf" >&2
  exit $status
fi
"$kipp" inspect "$artifact" | tail -n 12
echo
prompt="The three primary colors of light are"
echo "quickstart: $kipp generate --model $artifact --prompt \"$prompt\" -n 64"
"$kipp" generate --model "$artifact" --prompt "$prompt" -n 64 || exit $?
echo
echo "quickstart: $artifact is ready."
