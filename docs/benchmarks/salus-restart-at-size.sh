#!/usr/bin/env bash
# Issue 27, "restart at size": './salus up' exports a Salus volume; a writer writes it sequentially and FLUSHes every
# 16 blocks (flushed_writer.py, recording what each FLUSH reply covered); the whole 'salus up' JVM is killed with
# SIGKILL mid-write; './salus up' again on the same data directory must print its READY line, and every block covered
# by a FLUSH reply must read back with the bytes written. Cycle 0 fills the first FILL_MIB with fio (1 MiB writes,
# crc32c verify headers, one FLUSH at the end), then writes on with the flushed writer and is killed after a random
# 15-60 s, as is every later cycle (each writes on from where the last flushed write ended). After every restart fio
# verifies the whole fill (--verify_only) and the writer every block its FLUSHes covered. Each restart's log is checked for
# OutOfMemoryError and uncaught exceptions ("Exception in thread"), and the server's heap after a full GC is read
# with jcmd before each kill.
#
# Usage: docs/benchmarks/salus-restart-at-size.sh [cycles=10] [volume size=4G] [fill MiB=1024] [data dir]
#   -> docs/benchmarks/salus-restart-at-size-<fill MiB>mib.csv (one row per cycle)
# Needs python3-libnbd and jcmd (JDK). Runs on 127.0.0.1 only.
# FILL_VERIFY=last reads the fio fill back (fio --verify_only) after the last restart only, not after every one (at
# 4 GiB filled each read-back takes minutes); the FLUSHed writer's blocks are checked after every restart either way.
# REUSE=1 starts on a data directory a run of this script filled before (same size and fill; pass its directory):
# cycle 0 does not fill again, the writer continues after the last FLUSHed block recorded next to it, and the fill is
# still read back after the last restart (a restart-at-size loop without a fresh fill each time).
# CSV=<path> writes the rows there instead; PRIOR_MIB=<n> adds n to written_mib_before_kill: the client MiB another run
# wrote to the directory before (REUSE=1 of a memory-curve run's directory with fill MiB 0: the volume holds that
# run's fill, which fio did not write with verify headers, so only the FLUSHed writer's blocks are checked).
# TREE_FAMILY=0 creates the volume without the tree-node column family 't' (-Dsalus.layout.treeFamily=false: the
# layout of volumes created before it, whose mount scans the blocks and, at 1 GiB written, does not finish in 120 s).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "${TREE_FAMILY:-1}" = 0 ]; then export SALUS_JAVA_OPTS="${SALUS_JAVA_OPTS:-} -Dsalus.layout.treeFamily=false"; fi
cycles="${1:-10}"
size="${2:-4G}"
fill_mib="${3:-1024}"
data="${4:-$(mktemp -d)/salus-data}"
mkdir -p "$(dirname "$data")"
port=$((20000 + RANDOM % 20000))
csv="${CSV:-$here/docs/benchmarks/salus-restart-at-size-${fill_mib}mib.csv}" # one file per fill size
prog="$(dirname "$data")/flushed-progress"
writer="$here/docs/benchmarks/flushed_writer.py"
uri="nbd://127.0.0.1:$port"
[ "${REUSE:-0}" = 1 ] || : > "$prog"
echo "cycle,size,written_mib_before_kill,kill_after_s,ready_after_restart_s,verified_blocks,lost_blocks,fill_read_back,log_errors,heap_used_mib_after_gc,salus_data_mib,loadavg" > "$csv"

start_salus() { # -> sets pid, log; waits for READY (fails after 300 s)
  log="$(dirname "$data")/salus-up-$1.log"
  rm -f "$log" # (REUSE=1: an earlier run's log of the same cycle would read as READY at once)
  local t0; t0=$(date +%s.%N)
  local first=(); [ "$1" = 0 ] && [ "${REUSE:-0}" != 1 ] && first=(--zk-port 0 --namenode-port 0) # a restart reuses the recorded ports
  SALUS_SKIP_BUILD=1 "$here/salus" up --data "$data" --size "$size" --nbd-port "$port" "${first[@]}" \
      >"$log" 2>&1 &
  pid=$!
  while ! grep -q "SALUS READY" "$log"; do
    if ! kill -0 "$pid" 2>/dev/null || [ "$(echo "$(date +%s.%N) - $t0 > 300" | bc)" = 1 ]; then
      tail -30 "$log" >&2; echo "salus up did not become READY ($log)" >&2; return 1
    fi
    sleep 0.2
  done
  ready_s=$(echo "$(date +%s.%N) - $t0" | bc)
}

java_pid() { # the JVM under the salus script
  pgrep -P "$pid" java || echo "$pid"
}

heap_after_gc() {
  local j; j=$(java_pid)
  jcmd "$j" GC.run >/dev/null 2>&1 || true
  jcmd "$j" GC.heap_info 2>/dev/null | grep -oE 'used [0-9]+K' | head -1 | grep -oE '[0-9]+' | awk '{printf "%d", $1/1024}'
}

# the launcher's stdout/stderr and its log files under <data>/logs
log_errors() { cat "$1" "$data"/logs/* 2>/dev/null | grep -cE "OutOfMemoryError|Exception in thread" || true; }

start_salus 0
echo "cycle 0: READY after ${ready_s}s ($data)"
fill_blocks=$((fill_mib * 256))
fio_fill=(fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=1M --iodepth=8 --size="${fill_mib}M"
  --verify=crc32c --randseed=27 --verify_state_save=0)
if [ "$fill_mib" -gt 0 ] && [ "${REUSE:-0}" != 1 ]; then
  t0=$(date +%s)
  "${fio_fill[@]}" --do_verify=0 --end_fsync=1 --output=/dev/null
  echo "filled ${fill_mib} MiB with fio in $(( $(date +%s) - t0 )) s"
fi
[ "${REUSE:-0}" = 1 ] && [ -s "$prog" ] || echo "$fill_blocks" >> "$prog"
for c in $(seq 1 "$cycles"); do
  last=$(tail -1 "$prog" 2>/dev/null || echo 0); last=${last:-0}
  end=$((last + 1024 * 1024)); kill_after=$((15 + RANDOM % 46))
  t0=$(date +%s)
  /usr/bin/python3 "$writer" write "$uri" "$prog" "$last" "$end" 2>/dev/null &
  wpid=$!
  sleep "$kill_after"
  heap=$(heap_after_gc)
  now=$(tail -1 "$prog" 2>/dev/null || echo 0)
  errors=$(log_errors "$log")
  kill -KILL "$(java_pid)" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  kill "$wpid" 2>/dev/null || true
  wait "$wpid" 2>/dev/null || true
  start_salus "$c"
  fill_bad=0; fill_read=0
  if [ "$fill_mib" -gt 0 ] && { [ "${FILL_VERIFY:-every}" = every ] || [ "$c" = "$cycles" ]; }; then
    fill_read=1
    "${fio_fill[@]}" --verify_only=1 --output="$(dirname "$data")/fio-verify-$c.txt" || fill_bad=1
  fi
  res=$(/usr/bin/python3 "$writer" verify "$uri" "$prog" "$fill_blocks" || true)
  [ "$fill_bad" = 1 ] && res="$res; fio found the fill damaged (see fio-verify-$c.txt)"
  echo "cycle $c: killed after $(( $(date +%s) - t0 ))s at $(( ${now:-0} / 256 )) MiB flushed; READY after ${ready_s}s; $res"
  verified=$(echo "$res" | grep -oE 'verified [0-9]+' | grep -oE '[0-9]+')
  lost=$(echo "$res" | grep -oE '[0-9]+ lost' | grep -oE '[0-9]+')
  [ "$fill_bad" = 1 ] && lost="$lost+fill"
  echo "$c,$size,$(( ${now:-0} / 256 + ${PRIOR_MIB:-0} )),$kill_after,$ready_s,$verified,$lost,$fill_read,$errors,$heap,$(du -sm "$data" | cut -f1),$(cut -d' ' -f1 /proc/loadavg)" >> "$csv"
done
kill -TERM "$(java_pid)" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
echo "results: $csv"
