#!/usr/bin/env bash
# make quickstart: pull the default checkpoint (download, verify, convert), inspect it, generate
# text from it, and answer one request from `kipp serve`.
# Where the hub cannot be reached (`kipp pull` exits 3), it says so in one line and runs the same
# steps on the synthetic kipp-test/qwen3-0.6b-shape checkpoint (the real 0.6B's files and
# dimensions, random weights), under a banner that its text is noise; it still exits 0.
# Usage: quickstart.sh KIPP KIPP_SYNTHETIC TOKENIZER_DIR FACT_SHEET MODEL MODELS_DIR
set -uo pipefail
kipp=$1 synthetic=$2 tokenizer_dir=$3 fact_sheet=$4 model=$5 models_dir=$6
quant=${KIPP_QUICKSTART_QUANT:-bf16}
offline_model=kipp-test/qwen3-0.6b-shape

step() { echo; echo "quickstart: $*"; }

artifact=$("$kipp" pull "$model" --quant "$quant" --models-dir "$models_dir")
status=$?
if [[ $status -eq 3 ]]; then
  echo "quickstart: the hub cannot be reached (offline?); showing the same pipeline on the synthetic $offline_model checkpoint instead"
  cat <<'BANNER'
  ==========================================================================================
   OFFLINE DEMO: kipp-test/qwen3-0.6b-shape has the files and dimensions of Qwen3-0.6B but
   RANDOM WEIGHTS. Everything below runs for real (convert, inspect, generate, serve), but the
   generated text is noise. With network access, `make quickstart` pulls the real qwen3-0.6b.
  ==========================================================================================
BANNER
  artifact=$models_dir/kipp-test_qwen3-0.6b-shape.$quant.gguf
  if [[ ! -f $artifact ]]; then
    source_dir=$models_dir/.synthetic/qwen3-0.6b-shape
    sheet=()
    [[ -f $fact_sheet ]] && sheet=(--fact-sheet "$fact_sheet")
    step "$synthetic --checkpoint $offline_model --out $source_dir (1.5 GB of random BF16 weights)"
    "$synthetic" --checkpoint "$offline_model" --out "$source_dir" --tokenizer-dir "$tokenizer_dir" "${sheet[@]}" \
      --seed 3 || exit $?
    step "$kipp convert --checkpoint $offline_model --source $source_dir --quant $quant --out $artifact"
    "$kipp" convert --checkpoint "$offline_model" --source "$source_dir" --quant "$quant" --out "$artifact" || exit $?
    rm -rf "$source_dir"  # the artifact holds everything; 1.5 GB back
  fi
elif [[ $status -ne 0 ]]; then
  exit $status
fi

step "$kipp inspect $artifact"
"$kipp" inspect "$artifact" | tail -n 12 || exit $?

prompt="The three primary colors of light are"
step "$kipp generate --model $artifact --prompt \"$prompt\" -n 64"
"$kipp" generate --model "$artifact" --prompt "$prompt" -n 64 || exit $?
echo

# One request to the OpenAI-compatible server on a free port, then a clean shutdown.
step "$kipp serve --model $artifact --port 0, then POST /v1/chat/completions"
log=$(mktemp)
"$kipp" serve --model "$artifact" --port 0 2> "$log" &
server=$!
trap 'kill $server 2> /dev/null; wait $server 2> /dev/null; rm -f "$log"' EXIT
url=
for _ in $(seq 1 300); do
  url=$(sed -n 's/^kipp serve: listening on \(http[^ ]*\)$/\1/p' "$log")
  [[ -n $url ]] && break
  kill -0 $server 2> /dev/null || break
  sleep 0.1
done
if [[ -z $url ]]; then
  echo "quickstart: kipp serve did not start:" >&2
  cat "$log" >&2
  exit 1
fi
/usr/bin/python3 - "$url" <<'PYTHON' || exit $?
import json, sys, time, urllib.error, urllib.request
url = sys.argv[1]
for _ in range(600):  # the model loads after the port opens; /health says 200 when it is ready
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as response:
            if response.status == 200:
                break
    except (urllib.error.URLError, ConnectionError):
        pass
    time.sleep(0.2)
with urllib.request.urlopen(url + "/v1/models", timeout=30) as response:
    model = json.load(response)["data"][0]["id"]
body = {"model": model, "max_tokens": 24,
        "messages": [{"role": "user", "content": "Name the three primary colors of light."}]}
request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=300) as response:
        answer = json.load(response)
except urllib.error.HTTPError as error:
    sys.exit(f"quickstart: the server answered HTTP {error.code}: {error.read().decode(errors='replace')}")
message = answer["choices"][0]["message"]
print(json.dumps({"model": answer["model"], "finish_reason": answer["choices"][0]["finish_reason"],
                  "message": message, "usage": answer["usage"]}, indent=2, ensure_ascii=False))
PYTHON
echo
echo "quickstart: $artifact is ready."
