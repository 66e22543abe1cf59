#!/usr/bin/env bash
# Measures how long './salus up' takes to print its readiness line (wall clock from process
# start, JVM start-up included), on a new data directory and on a reopened one, for the default
# export (a Salus volume) and for the plain-HBase baseline (--kind hbase).
# A Salus volume can be mounted once in its life until the client mount protocol exists, so the
# Salus reopen of the same volume may be refused: it is then recorded as "refused" (no time) and
# the reopen is measured again with a new volume (--volume demo2, created on the reopened cluster).
# Usage: docs/benchmarks/launcher-startup.sh [runs]   -> docs/benchmarks/launcher-startup.csv
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
runs="${1:-3}"
csv="$here/docs/benchmarks/launcher-startup.csv"
echo "run,volume_kind,start,seconds_to_ready,loadavg_1min" > "$csv"
measure() { # $1=data dir, $2=volume kind, $3=start label, $4...=extra args
  local d="$1" vkind="$2" kind="$3"; shift 3
  local out; out=$(mktemp)
  local t0; t0=$(date +%s.%N)
  SALUS_SKIP_BUILD=1 "$here/salus" up --data "$d" "$@" >"$out" 2>&1 &
  local pid=$!
  while ! grep -q "SALUS READY" "$out"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$out" >&2
      if grep -q "cannot export Salus volume" "$out"; then
        echo "$run,$vkind,$kind,refused,$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$csv"; rm -f "$out"; return 0
      fi
      exit 1
    fi
    sleep 0.1
  done
  local t1; t1=$(date +%s.%N)
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  echo "$run,$vkind,$kind,$(echo "$t1 - $t0" | bc),$load" | tee -a "$csv"
  kill -TERM "$pid"; wait "$pid" || true
  rm -f "$out"
}
for run in $(seq 1 "$runs"); do
  d=$(mktemp -d)/salus-data
  measure "$d" salus fresh --zk-port 0 --namenode-port 0 --nbd-port 0
  measure "$d" salus reopen --nbd-port 0
  measure "$d" salus reopen-new-volume --nbd-port 0 --volume demo2
  rm -rf "$(dirname "$d")"
  d=$(mktemp -d)/salus-data
  measure "$d" hbase fresh --zk-port 0 --namenode-port 0 --nbd-port 0 --kind hbase
  measure "$d" hbase reopen --nbd-port 0
  rm -rf "$(dirname "$d")"
done
