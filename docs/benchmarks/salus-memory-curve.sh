#!/usr/bin/env bash
# Issue 27, "memory curve": './salus up' (default heap unless SALUS_HEAP is set) exports a Salus volume of SIZE; fio
# fills it sequentially over NBD (1 MiB writes) in steps, then writes 4K random blocks over the whole volume for
# RANDOM_S seconds. After each step: the server JVM's heap after a full GC (jcmd GC.run + GC.heap_info), the bytes
# the data directory holds (everything: HDFS, ZooKeeper, witnesses, logs), the HDFS space used (the DataNodes'
# storage directories, DATA/dfs/data: block and checksum files of every replica), the bytes the DataNodes wrote
# (their own counters, DataNodeActivity BytesWritten summed over the three DataNodes, read over the JDK's local JMX
# agent by MBeanSum.java), what the NameNode counts under the replica tables (/hbase/data/salus/<volume>_r*), HBase's
# archive (compacted-away store files until the master's cleaner deletes them, 5 min by default) and the Salus logs
# (/salus/logs) (hadoop's FsShell -du on the launcher's class path), and the OutOfMemoryError / uncaught-exception lines of the server log so far.
# A "settled" row follows the fill and the random phase after SETTLE_S seconds without client I/O (idle regions
# flush, compactions and the Salus log GC run); volume_data_mib is the volume's distinct data (the fill's extent;
# random writes after a whole fill overwrite blocks).
#
# Usage: docs/benchmarks/salus-memory-curve.sh [size=4G] [steps MiB="0 256 512 1024 2048 4096"] [random seconds=600]
#   [settle seconds=300]
#   -> docs/benchmarks/salus-memory-curve.csv, docs/benchmarks/salus-memory-curve.png
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
size="${1:-4G}"
steps="${2:-0 256 512 1024 2048 4096}"
random_s="${3:-600}"
settle_s="${4:-300}"
volume=demo # the volume salus up exports by default
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
echo "phase,client_mib_written,volume_data_mib,heap_used_mib_after_gc,heap_max_mib,data_dir_mib,hdfs_used_mib,hdfs_used_per_volume_byte,replica_tables_mib,hbase_archive_mib,salus_logs_mib,datanode_written_mib,datanode_written_per_client_byte,log_errors,seconds,mib_per_s,loadavg" > "$csv"
heap() {
  jcmd "$jpid" GC.run >/dev/null 2>&1 || true
  local info; info=$(jcmd "$jpid" GC.heap_info 2>/dev/null)
  used=$(echo "$info" | grep -oE 'used [0-9]+K' | head -1 | grep -oE '[0-9]+' | awk '{printf "%d", $1/1024}')
  max=$(echo "$info" | grep -oE 'total [0-9]+K' | head -1 | grep -oE '[0-9]+' | awk '{printf "%d", $1/1024}')
}
dn_written_mib() { # the DataNodes' BytesWritten, summed (MiB); fails the run when the counters cannot be read
  local out; out=$(java "$here/docs/benchmarks/MBeanSum.java" "$jpid" \
      'Hadoop:service=*,name=DataNodeActivity-*' BytesWritten) || { echo "DataNode counters unreadable" >&2; exit 1; }
  echo "$out" | grep -oE 'BytesWritten=[0-9]+' | cut -d= -f2 | awk '{printf "%d", $1/1048576}'
}
fsshell_cp="$(mktemp -d)"; echo '<configuration></configuration>' > "$fsshell_cp/core-site.xml"
lcp="$fsshell_cp:$here/salus-blockdriver/salus-launcher/target/salus-launcher-0.1.0-SNAPSHOT.jar:$here/salus-blockdriver/salus-launcher/target/lib/*"
hdfs_du_mib() { # MiB (one copy) under the replica tables, HBase's archive and the Salus logs: "tables,archive,logs"
  local nn; nn=$(grep -oE 'namenode=hdfs://[0-9.:]+' "$log" | head -1 | cut -d= -f2)
  java -cp "$lcp" org.apache.hadoop.fs.FsShell -du -s "$nn/hbase/data/salus/${volume}_r*" "$nn/hbase/archive" \
      "$nn/salus/logs" 2>/dev/null | awk '
    $NF ~ /\/hbase\/data\// {t += $1} $NF ~ /\/hbase\/archive$/ {a += $1} $NF ~ /\/salus\/logs$/ {l += $1}
    END {printf "%d,%d,%d", t / 1048576, a / 1048576, l / 1048576}'
}
ratio() { [ "$2" -gt 0 ] && echo "scale=2; $1 / $2" | bc || echo ""; }
row() { # phase client_written volume_data seconds mib_this_step
  heap
  local errs; errs=$(cat "$log" "$data"/logs/* 2>/dev/null | grep -cE "OutOfMemoryError|Exception in thread" || true)
  local mbps=""; [ "$4" != 0 ] && mbps=$(echo "scale=2; $5 / $4" | bc)
  local hdfs; hdfs=$(du -sm "$data/dfs/data" | cut -f1)
  local dnw; dnw=$(dn_written_mib)
  echo "$1,$2,$3,$used,$max,$(du -sm "$data" | cut -f1),$hdfs,$(ratio "$hdfs" "$3"),$(hdfs_du_mib),$dnw,$(ratio "$dnw" "$2"),$errs,$4,$mbps,$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$csv"
}
done_mib=0
for s in $steps; do
  if [ "$s" -gt "$done_mib" ]; then
    t0=$(date +%s)
    fio --name=fill --ioengine=nbd --uri="nbd://127.0.0.1:$port" --rw=write --bs=1M --iodepth=8 \
        --offset="${done_mib}M" --size="$((s - done_mib))M" --output=/dev/null
    t=$(( $(date +%s) - t0 ))
    row fill "$s" "$s" "$t" "$((s - done_mib))"
    done_mib=$s
  else
    row fill "$s" "$s" 0 0
  fi
done
if [ "$settle_s" -gt 0 ]; then sleep "$settle_s"; row settled "$done_mib" "$done_mib" "$settle_s" 0; fi
written=$done_mib
if [ "$random_s" -gt 0 ]; then
  t0=$(date +%s)
  fio --name=random --ioengine=nbd --uri="nbd://127.0.0.1:$port" --rw=randwrite --bs=4k --iodepth=32 \
      --size="$size" --time_based --runtime="$random_s" --output-format=terse --output="$(dirname "$data")/rand.terse"
  kib=$(cut -d';' -f47 "$(dirname "$data")/rand.terse" 2>/dev/null || echo 0)
  written=$((done_mib + kib / 1024))
  row random "$written" "$done_mib" "$(( $(date +%s) - t0 ))" "$((kib / 1024))"
  if [ "$settle_s" -gt 0 ]; then sleep "$settle_s"; row settled "$written" "$done_mib" "$settle_s" 0; fi
fi
"$here/exalt-agent/exalt" plot --series "salus up heap after full GC=$csv" --x client_mib_written \
    --y heap_used_mib_after_gc,hdfs_used_mib --title "Salus server heap and data directory vs MiB written ($size volume)" \
    --out "$here/docs/benchmarks/salus-memory-curve.png" 2>/dev/null | grep -v "agent active" || true
echo "results: $csv (server log $log)"
