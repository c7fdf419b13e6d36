#!/usr/bin/env bash
# The chaos and soak run: a fleet of `kipp serve` replicas behind HAProxy (scripts/fleet.sh) under
# mixed load for a set time — normal clients on both APIs, hostile clients, replicas SIGKILLed and
# SIGTERMed in turn — then what was served, failed and lost, latency, and RSS over time.
# bench/soak.mjs drives the run and judges it; this script brings the fleet up and always down.
#
#   bench/soak.sh --model FILE [--duration S] [--replicas N] [--kipp BIN] [--port P] [--out DIR]
#                 [--chaos-every S] [-- kipp serve flags (default: --threads 1)]
#
# Defaults: 1800 s, 2 replicas, build/src/kipp, HAProxy on 19080 (fleet.sh's layout: stats on
# P-1, replicas on P+i, agents on P+100+i), a SIGKILL or SIGTERM every 30 s, OUT
# $TMPDIR/kipp-soak-DATE (summary.json, rss.csv, normal.csv, hostile.csv, the fleet's logs under
# fleet/). Exits 0 when every check passes, 1 when one fails, 2 on a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '7,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
duration=1800 replicas=2 model="" kipp=build/src/kipp port=19080 out="" chaos_every=30
serve_flags=(--threads 1)  # two replicas, HAProxy and the driver share a small machine
while [[ $# -gt 0 ]]; do
  [[ $1 == -- || $# -ge 2 ]] || usage
  case $1 in
    --model) model=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --kipp) kipp=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --chaos-every) chaos_every=$2; shift 2 ;;
    --) shift; serve_flags=("$@"); break ;;
    *) usage ;;
  esac
done
[[ -f $model ]] || { echo "soak: --model: no file '$model'" >&2; usage; }
[[ -x $kipp ]] || { echo "soak: --kipp: '$kipp' is not an executable (build it first)" >&2; exit 2; }
[[ $duration =~ ^[0-9]+$ && $duration -ge 30 ]] || { echo "soak: --duration: at least 30 seconds" >&2; exit 2; }
[[ $replicas =~ ^[1-9][0-9]*$ ]] || usage
out=${out:-${TMPDIR:-/tmp}/kipp-soak-$(date +%Y%m%d-%H%M%S)}
fleet_dir=$out/fleet

# A port already answering would mix another server's answers into this run's.
for p in $((port - 1)) $(seq "$port" $((port + replicas))) $(seq $((port + 101)) $((port + 100 + replicas))); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "soak: port $p is in use; pick another --port" >&2
    exit 1
  fi
done
mkdir -p "$out"

# fleet.sh down drains the replicas and waits for them. Should that hang, the processes fleet.sh
# started are stopped by the pids it wrote, supervisors first so that none is started again.
stop_fleet() {
  [[ -e $fleet_dir/supervisor0.pid ]] || return 0  # nothing was started
  timeout 120 scripts/fleet.sh down --port "$port" --dir "$fleet_dir" && return 0
  echo "soak: fleet.sh down failed; killing the fleet's processes" >&2
  touch "$fleet_dir/stopping"
  for pidfile in "$fleet_dir"/supervisor*.pid "$fleet_dir"/replica*.pid "$fleet_dir"/haproxy.pid; do
    [[ -e $pidfile ]] && kill -KILL "$(cat "$pidfile")" 2>/dev/null || true
  done
  rm -f "$fleet_dir"/*.pid
  return 1
}

driver=""
finish() {
  local code=$?
  trap - EXIT INT TERM
  [[ -n $driver ]] && kill "$driver" 2>/dev/null || true
  stop_fleet || code=1
  exit "$code"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/fleet.sh up "$replicas" --model "$model" --kipp "$kipp" --port "$port" --dir "$fleet_dir" -- "${serve_flags[@]}"
# In the background, so that a signal to this script is handled at once rather than after the run.
node bench/soak.mjs --port "$port" --fleet-dir "$fleet_dir" --replicas "$replicas" --duration "$duration" \
  --chaos-every "$chaos_every" --out "$out" &
driver=$!
code=0
wait "$driver" || code=$?
driver=""
exit "$code"
