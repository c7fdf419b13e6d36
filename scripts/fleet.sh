#!/usr/bin/env bash
# A fleet of `kipp serve` replicas on loopback behind HAProxy (deploy/haproxy/kipp.cfg), every
# process supervised: one that exits is started again.
#
#   scripts/fleet.sh up N --model FILE [--port P] [--kipp BIN] [--dir DIR] [-- kipp serve flags]
#   scripts/fleet.sh down [--port P] [--dir DIR]
#
# Ports: HAProxy on P (default 8080), replica i on P+i with its agent port on P+100+i, HAProxy's
# stats on P-1. DIR (default $TMPDIR/kipp-fleet-P) holds the generated haproxy.cfg, pid files
# (replicaI.pid is the running process of replica I) and logs. `up` returns once HAProxy and
# every replica answer; `down` drains the replicas (SIGTERM) and stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '5,6p' "$0" | sed 's/^# *//' >&2; exit 2; }
[[ $# -ge 1 ]] || usage
command=$1
shift
count=0
if [[ $command == up ]]; then
  [[ $# -ge 1 && $1 =~ ^[1-9][0-9]*$ ]] || usage
  count=$1
  shift
fi
port=8080 kipp=build/src/kipp model="" dir=""
serve_flags=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --kipp) kipp=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --) shift; serve_flags=("$@"); break ;;
    *) usage ;;
  esac
done
dir=${dir:-${TMPDIR:-/tmp}/kipp-fleet-$port}

# Runs "$@" again whenever it exits, until DIR/stopping exists; the running process's pid is in
# DIR/NAME.pid.
supervise() {
  local name=$1
  shift
  while [[ ! -e $dir/stopping ]]; do
    "$@" </dev/null >>"$dir/$name.log" 2>&1 &
    echo $! >"$dir/$name.pid"
    local code=0
    wait $! || code=$?
    [[ -e $dir/stopping ]] && break
    echo "fleet: $name exited ($code); starting it again" >>"$dir/fleet.log"
    sleep 0.2
  done
}

wait_for() {  # URL: until it answers 200, at most 60 s
  for _ in $(seq 600); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    sleep 0.1
  done
  echo "fleet: $1 did not come up (logs in $dir)" >&2
  return 1
}

case $command in
  up)
    [[ -n $model ]] || usage
    command -v haproxy >/dev/null || { echo "fleet: haproxy is not installed (scripts/install-deps.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    rm -f "$dir/stopping"
    servers=""
    for i in $(seq "$count"); do
      servers+="  server replica$i 127.0.0.1:$((port + i)) agent-port $((port + 100 + i))"$'\n'
    done
    awk -v servers="$servers" -v port="$port" '
      /^ *# KIPP-SERVERS$/ { print; printf "%s", servers; skip = 1; next }
      /^ *# \/KIPP-SERVERS$/ { skip = 0 }
      skip { next }
      /bind 127.0.0.1:8080/ { sub("8080", port) }
      /bind 127.0.0.1:8079/ { sub("8079", port - 1) }
      { print }' deploy/haproxy/kipp.cfg >"$dir/haproxy.cfg"
    haproxy -c -q -f "$dir/haproxy.cfg"
    for i in $(seq "$count"); do
      supervise "replica$i" "$kipp" serve --model "$model" --port $((port + i)) --agent-port $((port + 100 + i)) \
        "${serve_flags[@]+"${serve_flags[@]}"}" </dev/null >/dev/null 2>&1 &
      echo $! >"$dir/supervisor$i.pid"
    done
    supervise haproxy haproxy -db -f "$dir/haproxy.cfg" </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/supervisor0.pid"
    for i in $(seq "$count"); do wait_for "http://127.0.0.1:$((port + i))/health"; done
    wait_for "http://127.0.0.1:$((port - 1))/stats"
    for _ in $(seq 600); do  # until HAProxy's own checks have taken every replica in
      up=$(curl -sf "http://127.0.0.1:$((port - 1))/stats;csv" | awk -F, '$1 == "replicas" && $2 ~ /^replica/ && $18 ~ /^UP/' | wc -l)
      [[ $up -eq $count ]] && break
      sleep 0.1
    done
    [[ $up -eq $count ]] || { echo "fleet: HAProxy sees $up of $count replicas up (logs in $dir)" >&2; exit 1; }
    echo "fleet: up: $count replicas behind http://127.0.0.1:$port (state in $dir)"
    ;;
  down)
    [[ -d $dir ]] || { echo "fleet: nothing in $dir" >&2; exit 1; }
    touch "$dir/stopping"
    for pidfile in "$dir"/replica*.pid; do
      [[ -e $pidfile ]] && kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
    done
    for pidfile in "$dir"/supervisor*.pid; do
      pid=$(cat "$pidfile")
      [[ $pidfile == */supervisor0.pid ]] && continue
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done  # the replica drained and exited
    done
    [[ -e $dir/haproxy.pid ]] && kill -TERM "$(cat "$dir/haproxy.pid")" 2>/dev/null || true
    pid=$(cat "$dir/supervisor0.pid")
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    rm -f "$dir"/*.pid "$dir/stopping"
    echo "fleet: down"
    ;;
  *) usage ;;
esac
