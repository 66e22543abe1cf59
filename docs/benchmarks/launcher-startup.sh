#!/usr/bin/env bash
# Measures how long './salus up' takes to print its readiness line (wall clock from process
# start, JVM start-up included), on a new data directory and on a reopened one.
# Usage: docs/benchmarks/launcher-startup.sh [runs]   -> docs/benchmarks/launcher-startup.csv
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
runs="${1:-3}"
csv="$here/docs/benchmarks/launcher-startup.csv"
echo "run,kind,seconds_to_ready,loadavg_1min" > "$csv"
measure() { # $1=data dir, $2=kind, $3...=extra args
  local d="$1" kind="$2"; shift 2
  local out; out=$(mktemp)
  local t0; t0=$(date +%s.%N)
  SALUS_SKIP_BUILD=1 "$here/salus" up --data "$d" "$@" >"$out" 2>&1 &
  local pid=$!
  while ! grep -q "SALUS READY" "$out"; do
    kill -0 "$pid" 2>/dev/null || { cat "$out" >&2; exit 1; }
    sleep 0.1
  done
  local t1; t1=$(date +%s.%N)
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  echo "$run,$kind,$(echo "$t1 - $t0" | bc),$load" | tee -a "$csv"
  kill -TERM "$pid"; wait "$pid" || true
  rm -f "$out"
}
for run in $(seq 1 "$runs"); do
  d=$(mktemp -d)/salus-data
  measure "$d" fresh --zk-port 0 --namenode-port 0 --nbd-port 0
  measure "$d" reopen --nbd-port 0
  rm -rf "$(dirname "$d")"
done
