#!/bin/bash
# Interleaved A/B/C of three agent builds on the same command as `exalt-experiments.sh ab` (10 emulated DataNodes,
# 32 MB files, 16 MB blocks, >= 2 files per client), one round = A, B1, B2 back to back; then B1/A and B2/A per round
# through exalt-ab.py (CSV + PNG each). The cluster gets its own --base-dir/--port-base so that other users' runners
# on this shared machine do not collide with it.
#
#   AB_A=main-agent.jar AB_RUNNER_A=main-runner.jar AB_B1=b1-agent.jar AB_RUNNER_B1=b1-runner.jar \
#   AB_B2=b2-agent.jar AB_RUNNER_B2=b2-runner.jar AB_NAME1=exalt-ab-core18-fdops AB_NAME2=exalt-ab-core18 \
#   AB_ROUNDS=4 bash docs/benchmarks/exalt-ab3.sh
# AB_B2 unset: only A and B1 per round. AB_FIRST_ROUND=5 AB_ROUNDS=7: adds rounds 5-7 to an earlier window's run
# directory; the summaries cover every round 1..AB_ROUNDS found there.
set -e
cd "$(dirname "$0")/../.."
: "${AB_A:?}" "${AB_B1:?}" "${AB_NAME1:?}"
ROUNDS=${AB_ROUNDS:-4}
FIRST=${AB_FIRST_ROUND:-1}
VARIANTS="A B1${AB_B2:+ B2}"
RUN=${AB_RUN_DIR:-/tmp/exalt-ab3}
BASE=${AB_BASE_DIR:-/tmp/exalt-ab3-cluster}
PORT=${AB_PORT_BASE:-31000}
OUT=${OUT:-docs/benchmarks}
mkdir -p "$RUN"
for r in $(seq "$FIRST" "$ROUNDS"); do
  for v in $VARIANTS; do
    eval jar=\$AB_$v; eval runner=\${AB_RUNNER_$v:-exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar}
    echo "round $r variant $v: $jar ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"
    rm -rf "$BASE"
    EXALT_HEAP=4g EXALT_AGENT=$jar EXALT_RUNNER=$runner exalt-agent/exalt hdfs --datanodes 10 --handlers 256 --nn-log tmpfs \
      --file-size 32m --block-size 16m --duration 20 --warmup 10 --min-files-per-client 2 --max-duration 120 --out "$RUN" \
      --name "ab3-r$r-$v" --base-dir "$BASE" --port-base "$PORT" > "$RUN/ab3-r$r-$v.log" 2>&1
  done
done
for pair in "B1 $AB_NAME1 $AB_B1" ${AB_B2:+"B2 $AB_NAME2 $AB_B2"}; do
  set -- $pair
  d="$RUN/$2"; mkdir -p "$d"
  for r in $(seq 1 "$ROUNDS"); do
    [ -f "$RUN/ab3-r$r-$1.csv" ] || continue
    ln -sf "$RUN/ab3-r$r-A.csv" "$d/$2-r$r-A.csv"; ln -sf "$RUN/ab3-r$r-$1.csv" "$d/$2-r$r-B.csv"
  done
  AB_OUT="$OUT" python3 docs/benchmarks/exalt-ab.py "$d" "$2" "$AB_A" "$3" > "$OUT/$2.csv"
  cat "$OUT/$2.csv"
  exalt-agent/exalt plot --x round --y eff_GBps_per_core --series "A=$OUT/$2-A.csv" --series "B=$OUT/$2-B.csv" \
    --title "A/B: effective DataNode write GB/s per core, alternating runs" --out "$OUT/$2.png"
done
