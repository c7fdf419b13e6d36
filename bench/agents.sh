#!/usr/bin/env bash
# Four coding agents, each for one non-interactive turn ("Say hi"), against a real `kipp serve` on
# loopback: Codex CLI (the Responses API), Claude Code (the Messages API), opencode and Qwen Code
# (chat completions). The agents come from npm at the pinned versions below, into WORK/npm (never
# into the repository); each runs with a HOME of its own under WORK, telemetry and update checks
# off. The checkpoint must hold an agent's prompt (8-17k tokens): the default is the synthetic
# checkpoint of the real 0.6B shape (40,960 positions; `make test` builds it). Its random weights
# never end an answer, so each agent's own output limit is set to LIMIT tokens where it has one
# (Claude Code CLAUDE_CODE_MAX_OUTPUT_TOKENS, opencode's limit.output, Qwen Code
# QWEN_CODE_MAX_OUTPUT_TOKENS) and the server's --default-max-tokens covers Codex, which sends none.
# Prints one line per agent: its exit code, the requests the server answered, saw cancelled by
# the client and refused for it, the prompt tokens, the wall time, and the agent's last error or
# words; the logs stay under WORK.
#
#   bench/agents.sh [--kipp build/src/kipp] [--model FILE.gguf] [--work build/agents] [--limit 32]
set -euo pipefail
cd "$(dirname "$0")/.."

kipp=build/src/kipp
model=build/test-models-shape/qwen3-0.6b-shape.bf16.gguf
work=build/agents
limit=32
while (($#)); do
  case "$1" in
    --kipp) kipp=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) echo "usage: bench/agents.sh [--kipp BIN] [--model FILE] [--work DIR] [--limit N]" >&2; exit 2 ;;
  esac
done
work=$(realpath -m "$work")
mkdir -p "$work/npm"

# The agents, pinned.
cat > "$work/npm/package.json" <<'JSON'
{
  "private": true,
  "dependencies": {
    "@openai/codex": "0.171.0",
    "@anthropic-ai/claude-code": "2.1.332",
    "opencode-ai": "1.18.33",
    "@qwen-code/qwen-code": "0.15.10"
  }
}
JSON
(cd "$work/npm" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
bin="$work/npm/node_modules/.bin"

name=qwen3-agent
"$kipp" serve --model "$model" --host 127.0.0.1 --port 0 --default-max-tokens "$limit" \
  --served-model-name "$name" 2> "$work/serve.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
for _ in $(seq 600); do
  grep -q "kipp serve: ready" "$work/serve.log" && break
  kill -0 $server 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log" | head -1)
url="http://127.0.0.1:$port"

minus() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }
# A counter of the server's /metrics, by name and label text.
metric() { curl -s "$url/metrics" | awk -v name="$1" -v label="$2" '$1 ~ "^"name"[{]" && index($1, label) {print $2}'; }

# run AGENT COMMAND...: the command in WORK/AGENT (its HOME), with the server's counters around it.
run() {
  local agent=$1; shift
  local dir="$work/$agent"
  local finished=$(metric kipp_requests_total finished) cancelled=$(metric kipp_requests_total cancelled)
  local invalid=$(metric kipp_requests_rejected_total invalid) prompt=$(metric kipp_prompt_tokens_total "")
  local start=$(date +%s.%N) code=0
  (cd "$dir" && HOME="$dir" "$@" > "$dir/stdout" 2> "$dir/stderr" < /dev/null) || code=$?
  local seconds=$(minus "$(date +%s.%N)" "$start")
  # Its last error line, else the last line it printed (colour codes and blank lines aside).
  local lines=$(cat "$dir/stderr" "$dir/stdout" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^\s*$')
  local said=$( (grep -i 'error' <<< "$lines" || tail -1 <<< "$lines") | tail -1 | cut -c1-100)
  printf '%-9s exit %-2s answered %-2s cancelled %-2s refused %-2s prompt tokens %-6s %6.1f s  %s\n' "$agent" "$code" \
    "$(minus "$(metric kipp_requests_total finished)" "$finished")" \
    "$(minus "$(metric kipp_requests_total cancelled)" "$cancelled")" \
    "$(minus "$(metric kipp_requests_rejected_total invalid)" "$invalid")" \
    "$(minus "$(metric kipp_prompt_tokens_total "")" "$prompt")" "$seconds" "$said"
}

mkdir -p "$work/codex/.codex" "$work/claude" "$work/opencode/.config/opencode" "$work/qwen/.qwen"
cat > "$work/codex/.codex/config.toml" <<TOML
model = "$name"
model_provider = "kipp"

[model_providers.kipp]
name = "Kipp"
base_url = "$url/v1"
wire_api = "responses"
stream_idle_timeout_ms = 1800000
TOML
cat > "$work/opencode/.config/opencode/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "kipp": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Kipp",
      "options": { "baseURL": "$url/v1", "apiKey": "unused" },
      "models": { "$name": { "name": "Qwen3 (Kipp)", "limit": { "context": 40960, "output": $limit } } }
    }
  },
  "model": "kipp/$name"
}
JSON
cat > "$work/qwen/.qwen/settings.json" <<JSON
{ "security": { "auth": { "selectedType": "openai" } }, "telemetry": { "enabled": false },
  "privacy": { "usageStatisticsEnabled": false }, "general": { "disableAutoUpdate": true } }
JSON

echo "kipp serve on $url: $model, --default-max-tokens $limit; agents' output limit $limit"
run codex env CODEX_HOME="$work/codex/.codex" "$bin/codex" exec --skip-git-repo-check "Say hi"
run claude env ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY=unused DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 CLAUDE_CODE_MAX_OUTPUT_TOKENS="$limit" \
  "$bin/claude" -p "Say hi" --model "$name"
run opencode env OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1 "$bin/opencode" run "Say hi" -m "kipp/$name"
run qwen env OPENAI_API_KEY=unused OPENAI_BASE_URL="$url/v1" OPENAI_MODEL="$name" QWEN_CODE_MAX_OUTPUT_TOKENS="$limit" \
  "$bin/qwen" -p "Say hi"
