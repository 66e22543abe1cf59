#!/usr/bin/env bash
# A/B of the JIT for `salus up`: C1 only (-XX:TieredStopAtLevel=1, what ./salus used for every command before
# 2026-12-02) against the JVM's default tiered compilation (C1 + C2), alternating in one run. Each round and arm: a
# fresh `salus up` (Salus volume of SIZE), fio fills FILL MiB sequentially over NBD (1 MiB writes, QD 8), the server
# JVM's CPU seconds and the fill rate are recorded, the server is stopped (SIGTERM).
#
# Usage: docs/benchmarks/salus-jit-ab.sh [rounds=2] [fill MiB=192] [size=2G]
#   -> docs/benchmarks/salus-jit-ab.csv, prints the median ratio C2/C1
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-2}"
fill="${2:-192}"
size="${3:-2G}"
csv="$here/docs/benchmarks/salus-jit-ab.csv"
echo "round,arm,fill_mib,seconds,mib_per_s,server_cpu_s,loadavg" > "$csv"
run() { # round arm opts
  local dir; dir="$(mktemp -d)"
  local port=$((20000 + RANDOM % 20000))
  local log="$dir/up.log"
  SALUS_SKIP_BUILD=1 SALUS_JAVA_OPTS="$3" "$here/salus" up --data "$dir/data" --size "$size" --nbd-port "$port" \
      --zk-port 0 --namenode-port 0 >"$log" 2>&1 &
  local pid=$!
  until grep -q "SALUS READY" "$log"; do
    kill -0 "$pid" 2>/dev/null || { tail -30 "$log"; exit 1; }
    sleep 0.5
  done
  local jpid; jpid=$(pgrep -P "$pid" java || echo "$pid")
  local cpu0; cpu0=$(awk '{print $14 + $15}' "/proc/$jpid/stat")
  local t0; t0=$(date +%s.%N)
  fio --name=fill --ioengine=nbd --uri="nbd://127.0.0.1:$port" --rw=write --bs=1M --iodepth=8 --size="${fill}M" \
      --output=/dev/null
  local s; s=$(echo "$(date +%s.%N) - $t0" | bc)
  local cpu1; cpu1=$(awk '{print $14 + $15}' "/proc/$jpid/stat")
  local tck; tck=$(getconf CLK_TCK)
  echo "$1,$2,$fill,$s,$(echo "scale=3; $fill / $s" | bc),$(( (cpu1 - cpu0) / tck )),$(cut -d' ' -f1 /proc/loadavg)" \
      | tee -a "$csv"
  kill -TERM "$jpid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then run "$r" c1 "-XX:TieredStopAtLevel=1"; run "$r" c2 ""
  else run "$r" c2 ""; run "$r" c1 "-XX:TieredStopAtLevel=1"; fi
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = {a: statistics.median(float(r["mib_per_s"]) for r in rows if r["arm"] == a) for a in ("c1", "c2")}
print(f"median fill MiB/s: C1 only {m['c1']:.2f}, tiered C2 {m['c2']:.2f}; ratio C2/C1 {m['c2'] / m['c1']:.2f}")
PY
# one series per arm (the plot takes a CSV per series)
tmp="$(mktemp -d)"
for a in c1 c2; do { head -1 "$csv"; grep ",$a," "$csv"; } > "$tmp/$a.csv"; done
"$here/exalt-agent/exalt" plot --series "C1 only=$tmp/c1.csv" --series "tiered (C2)=$tmp/c2.csv" --x round \
    --y mib_per_s --title "salus up: 1 MiB sequential fill over NBD, C1-only vs tiered JIT" \
    --out "$here/docs/benchmarks/salus-jit-ab.png" 2>&1 | grep -v "agent active\|Sharing" || true
