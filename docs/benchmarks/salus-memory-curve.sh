#!/usr/bin/env bash
# Issue 27, "memory curve": './salus up' (default heap unless SALUS_HEAP is set) exports a Salus volume of SIZE; fio
# fills it sequentially over NBD (1 MiB writes) in steps, then writes 4K random blocks over the whole volume for
# RANDOM_S seconds. After each step: the server JVM's heap after a full GC (jcmd GC.run + GC.heap_info), the bytes
# the data directory holds (HDFS: the DataNodes' block files; ZooKeeper), the Salus log and checkpoint files
# (/salus/logs, from the NameNode), and the OutOfMemoryError / uncaught-exception lines of the server log so far.
#
# Usage: docs/benchmarks/salus-memory-curve.sh [size=4G] [steps MiB="0 256 512 1024 2048 4096"] [random seconds=600]
#   -> docs/benchmarks/salus-memory-curve.csv, docs/benchmarks/salus-memory-curve.png (MemoryCurvePlot)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
size="${1:-4G}"
steps="${2:-0 256 512 1024 2048 4096}"
random_s="${3:-600}"
data="$(mktemp -d)/salus-data"
port=$((20000 + RANDOM % 20000))
csv="$here/docs/benchmarks/salus-memory-curve.csv"
log="$(dirname "$data")/salus-up.log"
SALUS_SKIP_BUILD=1 "$here/salus" up --data "$data" --size "$size" --nbd-port "$port" --zk-port 0 \
    --namenode-port 0 >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
until grep -q "SALUS READY" "$log"; do
  kill -0 "$pid" 2>/dev/null || { tail -30 "$log"; exit 1; }
  sleep 0.5
done
jpid=$(pgrep -P "$pid" java || echo "$pid")
echo "phase,client_mib_written,heap_used_mib_after_gc,heap_max_mib,data_dir_mib,log_errors,seconds,mib_per_s,loadavg" > "$csv"
heap() {
  jcmd "$jpid" GC.run >/dev/null 2>&1 || true
  local info; info=$(jcmd "$jpid" GC.heap_info 2>/dev/null)
  used=$(echo "$info" | grep -oE 'used [0-9]+K' | head -1 | grep -oE '[0-9]+' | awk '{printf "%d", $1/1024}')
  max=$(echo "$info" | grep -oE 'total [0-9]+K' | head -1 | grep -oE '[0-9]+' | awk '{printf "%d", $1/1024}')
}
row() { # phase written seconds
  heap
  local errs; errs=$(cat "$log" "$data"/logs/* 2>/dev/null | grep -cE "OutOfMemoryError|Exception in thread" || true)
  local mbps=""; [ "$3" != 0 ] && mbps=$(echo "scale=2; $4 / $3" | bc)
  echo "$1,$2,$used,$max,$(du -sm "$data" | cut -f1),$errs,$3,$mbps,$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$csv"
}
done_mib=0
for s in $steps; do
  if [ "$s" -gt "$done_mib" ]; then
    t0=$(date +%s)
    fio --name=fill --ioengine=nbd --uri="nbd://127.0.0.1:$port" --rw=write --bs=1M --iodepth=8 \
        --offset="${done_mib}M" --size="$((s - done_mib))M" --output=/dev/null
    t=$(( $(date +%s) - t0 ))
    row fill "$s" "$t" "$((s - done_mib))"
    done_mib=$s
  else
    row fill "$s" 0 0
  fi
done
if [ "$random_s" -gt 0 ]; then
  t0=$(date +%s)
  fio --name=random --ioengine=nbd --uri="nbd://127.0.0.1:$port" --rw=randwrite --bs=4k --iodepth=32 \
      --size="$size" --time_based --runtime="$random_s" --output-format=terse --output="$(dirname "$data")/rand.terse"
  kib=$(cut -d';' -f47 "$(dirname "$data")/rand.terse" 2>/dev/null || echo 0)
  row random "$((done_mib + kib / 1024))" "$(( $(date +%s) - t0 ))" "$((kib / 1024))"
fi
"$here/exalt-agent/exalt" plot --series "salus up heap after full GC=$csv" --x client_mib_written \
    --y heap_used_mib_after_gc,data_dir_mib --title "Salus server heap and data directory vs MiB written ($size volume)" \
    --out "$here/docs/benchmarks/salus-memory-curve.png" 2>/dev/null | grep -v "agent active" || true
echo "results: $csv (server log $log)"
