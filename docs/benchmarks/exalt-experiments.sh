#!/bin/sh
# Regenerates every Exalt CSV/PNG in docs/benchmarks (exalt-*.csv/png, tardis-codec.csv/png), one step at a time,
# printing "[i/n] step" progress with the time and load average before each step.
#
#   bash docs/benchmarks/exalt-experiments.sh              # all steps, outputs into docs/benchmarks
#   bash docs/benchmarks/exalt-experiments.sh codec fig43  # only these steps
#   SMOKE=1 bash docs/benchmarks/exalt-experiments.sh      # tiny sizes into /tmp/exalt-smoke: proves every step runs
#
# Steps: codec fig43-before fig43-after fig43-plot hbase-fig47 hbase-fig48 hbase-fig49 handlers samedir growing blockscan
#        capacity capacity-full
#        ab (not in the default list): A/B of two agent jars, alternating A B A B ... in one window on the same runner,
#           AB_A=/path/a-agent.jar AB_B=/path/b-agent.jar AB_NAME=exalt-ab-x [AB_ROUNDS=3 AB_DNS=10]
#           [AB_RUNNER_A=/path/a-runner.jar AB_RUNNER_B=...: runner jars exalt-agent-<V>.jar, default this build's]; writes
#           $AB_NAME.csv (one row per run: effective GB/s per core, emulated DataNodes per core, load) and $AB_NAME.png
# Needs: mvn -B -pl exalt-agent package -DskipTests (the launcher uses exalt-agent/target).
# The machine is a shared 2-core box: check `uptime` first; each CSV records the load average at its start.
set -e
cd "$(dirname "$0")/../.."
X=exalt-agent/exalt
V=0.1.0-SNAPSHOT
export EXALT_HEAP=${EXALT_HEAP:-4g}
if [ -n "$SMOKE" ]; then
  OUT=${OUT:-/tmp/exalt-smoke}
  DNS=3,5; DNS_BIG=5; FILE=1m; BLOCK=1m; DUR=3; WARM=1; MINF=1; MAXD=60; SMALLDUR=3; GROWDUR=5; STEPS_SCAN=100,200
  PREFILL=200; HANDLERS=1,10; DISK=
  RS=1,2; RPS=1,2; VALS=10k,100k; HDUR=3; HWARM=2; HMEM=64
  CAP_STEPS=1000,3000,5000; CAP_FULL_HEAP=160m; CAP_CHUNK=20000
else
  OUT=${OUT:-docs/benchmarks}
  # Fig. 4.3 sizes: 32 MB files in 16 MB blocks (the paper: 192 MB / 128 MB) so that every client closes >= 5
  # files per point within the time this shared machine allows; NameNode operations per byte are 6x the paper's.
  DNS=${DNS:-10,50,100,200}; DNS_BIG=20; FILE=32m; BLOCK=16m; DUR=20; WARM=10; MINF=5; MAXD=${MAXD:-600}; SMALLDUR=30
  GROWDUR=120
  STEPS_SCAN=1000,2000,4000,8000; PREFILL=100000; HANDLERS=1,2,5,10,50,256; DISK=--measure-disk
  RS=1,2,4; RPS=1,2,4,8; VALS=1k,10k,100k,500k; HDUR=30; HWARM=10; HMEM=512
  CAP_STEPS=20000,100000,200000,300000,400000; CAP_FULL_HEAP=512m; CAP_CHUNK=100000
fi
mkdir -p "$OUT"
ALL="codec fig43-before fig43-after fig43-plot hbase-fig47 hbase-fig48 hbase-fig49 handlers samedir growing blockscan capacity capacity-full"
STEPS=${*:-$ALL}
n=$(echo $STEPS | wc -w)
i=0
for s in $STEPS; do
  i=$((i + 1))
  echo "[$i/$n] $s  ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"
  case $s in
    codec)
      java -cp "exalt-agent/target/exalt-agent-$V.jar:exalt-agent/target/lib/*" io.exalt.bench.CodecBenchmark "$OUT" ;;
    fig43-before)  # the paper's first setup: 10 NameNode handlers, NameNode log on the edit log's disk
      $X hdfs --datanodes $DNS --handlers 10 --nn-log disk --file-size $FILE --block-size $BLOCK --duration $DUR \
        --warmup $WARM --min-files-per-client $MINF --max-duration $MAXD $DISK --out "$OUT" \
        --name exalt-hdfs-datanodes-before ;;
    fig43-after)   # both of the paper's fixes: 256 handlers, NameNode log on tmpfs (JFR profile: EXALT_JAVA_OPTS)
      $X hdfs --datanodes $DNS --handlers 256 --nn-log tmpfs --file-size $FILE --block-size $BLOCK --duration $DUR \
        --warmup $WARM --min-files-per-client $MINF --max-duration $MAXD $DISK --out "$OUT" \
        --name exalt-hdfs-datanodes ;;
    fig43-plot)
      $X plot --x datanodes --y throughput_MBps --series "before (10 handlers, log on disk)=$OUT/exalt-hdfs-datanodes-before.csv" \
        --series "after (256 handlers, log on tmpfs)=$OUT/exalt-hdfs-datanodes.csv" \
        --title "Fig. 4.3 on one 2-core machine: client throughput vs emulated DataNodes" --out "$OUT/exalt-hdfs-fig4.3.png"
      $X plot --x datanodes --y files_per_s --series "before=$OUT/exalt-hdfs-datanodes-before.csv" \
        --series "after=$OUT/exalt-hdfs-datanodes.csv" --title "files completed per second vs emulated DataNodes" \
        --out "$OUT/exalt-hdfs-fig4.3-files.png" ;;
    hbase-fig47)   # HBase throughput vs region servers (10 regions each, 100 KB values)
      $X hbase --regionservers $RS --datanodes 6 --regions-per-server 10 --value-size 100k --memstore-mb 256 \
        --duration $HDUR --warmup $HWARM --out "$OUT" --name exalt-hbase-fig4.7
      $X plot --x regionservers --y put_MBps --series "HBase 2.6=$OUT/exalt-hbase-fig4.7.csv" \
        --title "Fig. 4.7: HBase put throughput vs region servers (one 2-core machine)" --out "$OUT/exalt-hbase-fig4.7.png" ;;
    hbase-fig48)   # memory per region: regions per GB of memstore, 2 region servers
      $X hbase --regionservers 2 --datanodes 6 --regions-per-server $RPS --value-size 100k --memstore-mb $HMEM \
        --duration $HDUR --warmup $HWARM --out "$OUT" --name exalt-hbase-fig4.8
      $X plot --x regions_per_GB_memstore --y put_MBps --series "HBase 2.6=$OUT/exalt-hbase-fig4.8.csv" \
        --title "Fig. 4.8: HBase put throughput vs regions per GB of memstore" --out "$OUT/exalt-hbase-fig4.8.png" ;;
    hbase-fig49)   # colocation headroom vs value size: DataNode logical/physical bytes and MB/s per core
      $X hbase --regionservers 2 --datanodes 6 --regions-per-server 4 --value-size $VALS --memstore-mb 256 \
        --duration $HDUR --warmup $HWARM --out "$OUT" --name exalt-hbase-fig4.9
      $X plot --x value_bytes --y colocation_ratio --series "HBase 2.6=$OUT/exalt-hbase-fig4.9.csv" \
        --title "Fig. 4.9: DataNode logical/physical bytes vs value size" --out "$OUT/exalt-hbase-fig4.9.png" ;;
    handlers)      # throughput vs NameNode handler count, NameNode-bound workload (1 MB files, 1 MB blocks)
      $X hdfs --datanodes $DNS_BIG --clients 32 --handlers $HANDLERS --file-size 1m --block-size 1m --duration $SMALLDUR \
        --warmup 5 --min-files-per-client $MINF --max-duration $MAXD --out "$OUT" --name exalt-hdfs-handlers ;;
    samedir)       # same-directory workload vs own directories, directory pre-filled with N files
      $X hdfs --workload same-dir --datanodes $DNS_BIG --clients 16 --file-size 64k --block-size 1m --prefill 0 \
        --duration $SMALLDUR --warmup 5 --min-files-per-client $MINF --out "$OUT" --name exalt-hdfs-samedir-0
      $X hdfs --workload same-dir --datanodes $DNS_BIG --clients 16 --file-size 64k --block-size 1m --prefill $PREFILL \
        --duration $SMALLDUR --warmup 5 --min-files-per-client $MINF --out "$OUT" --name exalt-hdfs-samedir-100k
      $X hdfs --workload own-dir --datanodes $DNS_BIG --clients 16 --file-size 64k --block-size 1m --prefill $PREFILL \
        --duration $SMALLDUR --warmup 5 --min-files-per-client $MINF --out "$OUT" --name exalt-hdfs-owndir-100k ;;
    growing)       # 4 clients each append to one file forever, 1 MB blocks
      $X hdfs --workload growing-file --datanodes $DNS_BIG --clients 4 --block-size 1m --duration $GROWDUR --warmup 5 \
        --out "$OUT" --name exalt-hdfs-growing ;;
    blockscan)     # DataNode block scan vs blocks per DataNode
      $X blockscan --steps $STEPS_SCAN --out "$OUT" ;;
    capacity)      # Table 4.1: NameNode heap after full GC per file/block (real NameNode, protocol-level DataNodes,
                   # 128 MiB blocks recorded at full length, r=3), capacity per 1/2/4/8 GiB of NameNode heap
      $X capacity --steps $CAP_STEPS --blocks-per-file 1,4 --datanodes 6 --replication 3 --block-size 128m --out "$OUT" ;;
    capacity-full) # validation of the extrapolation: a NameNode JVM with a real -Xmx filled with one-block files until full
      EXALT_HEAP=$CAP_FULL_HEAP $X capacity --steps $CAP_STEPS --blocks-per-file 1 --datanodes 6 --replication 3 --block-size 128m \
        --until-full --full-chunk $CAP_CHUNK --base-dir /tmp/exalt-capacity-full --out "$OUT" --name exalt-capacity-xmx$CAP_FULL_HEAP ;;
    ab)            # A/B of two agent jars; short runs so that other users of this machine are not starved
      : "${AB_A:?set AB_A to the A agent jar}" "${AB_B:?set AB_B to the B agent jar}"
      AB_NAME=${AB_NAME:-exalt-ab}; AB_ROUNDS=${AB_ROUNDS:-3}; AB_DNS=${AB_DNS:-10}
      # optional AB_RUNNER_A / AB_RUNNER_B: runner jars (exalt-agent-<V>.jar) per variant; default: this build's
      RUNNER_DEFAULT=exalt-agent/target/exalt-agent-0.1.0-SNAPSHOT.jar
      if [ -n "$SMOKE" ]; then AB_ROUNDS=1; AB_DNS=3; fi
      r=0
      while [ $r -lt $AB_ROUNDS ]; do
        r=$((r + 1))
        for v in A B; do
          eval jar=\$AB_$v
          eval runner=\${AB_RUNNER_$v:-}
          echo "  round $r variant $v: $jar ${runner:+runner $runner }($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"
          EXALT_AGENT=$jar EXALT_RUNNER=${runner:-$RUNNER_DEFAULT} $X hdfs --datanodes $AB_DNS --handlers 256 --nn-log tmpfs --file-size $FILE --block-size $BLOCK \
            --duration $DUR --warmup $WARM --min-files-per-client 2 --max-duration 120 --out /tmp/$AB_NAME \
            --name "$AB_NAME-r$r-$v" > "/tmp/$AB_NAME-r$r-$v.log" 2>&1
        done
      done
      AB_OUT="$OUT" python3 docs/benchmarks/exalt-ab.py /tmp/$AB_NAME "$AB_NAME" "$AB_A" "$AB_B" > "$OUT/$AB_NAME.csv"
      cat "$OUT/$AB_NAME.csv"
      $X plot --x round --y eff_GBps_per_core --series "A=$OUT/$AB_NAME-A.csv" --series "B=$OUT/$AB_NAME-B.csv" \
        --title "A/B: effective DataNode write GB/s per core, alternating runs" --out "$OUT/$AB_NAME.png" ;;
    *) echo "unknown step '$s'; steps: $ALL" >&2; exit 2 ;;
  esac
done
echo "done: $STEPS ($(date -u +%H:%M:%S) UTC)"
