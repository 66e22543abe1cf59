#!/usr/bin/env python3
"""Summarises an A/B of two agent jars run by `exalt-experiments.sh ab` (alternating A B A B ... runs).

  python3 docs/benchmarks/exalt-ab.py RUN_DIR NAME A_JAR B_JAR > docs/benchmarks/NAME.csv

Reads RUN_DIR/NAME-r<i>-<A|B>.csv (runner summaries), writes one row per run to stdout and the per-variant files
docs/benchmarks/NAME-A.csv, NAME-B.csv (for `exalt plot`). Effective DataNode write bandwidth = client throughput x
replication, per core of CPU the runner JVM got (cpu_cores, JMX process CPU: NameNode and clients share that JVM,
so it is a lower bound for the DataNodes alone). ratio_B_over_A compares the two runs of the same round, which ran
back to back under (nearly) the same load; compare ratios, not absolute numbers, on a shared machine."""
import csv, glob, os, re, statistics, sys

run_dir, name, a_jar, b_jar = sys.argv[1:5]
rows = {}
for f in glob.glob(os.path.join(run_dir, f"{name}-r*-[AB].csv")):
    m = re.search(r"-r(\d+)-([AB])\.csv$", f)
    with open(f) as fh:
        for r in csv.DictReader(fh):
            rows[(int(m.group(1)), m.group(2))] = r
head = ["round", "variant", "agent", "datanodes", "throughput_MBps", "files", "cpu_cores", "eff_GBps_per_core",
        "datanodes_per_core", "complete", "load_avg_start", "ratio_B_over_A"]
out = {"A": [], "B": []}
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(head)
ratios = []
for (rnd, v) in sorted(rows):
    r = rows[(rnd, v)]
    cores = float(r["cpu_cores"])
    eff = float(r["throughput_MBps"]) * int(r["replication"]) / 1000.0 / cores
    ratio = ""
    if v == "B" and (rnd, "A") in rows:
        ra = rows[(rnd, "A")]
        eff_a = float(ra["throughput_MBps"]) * int(ra["replication"]) / 1000.0 / float(ra["cpu_cores"])
        ratio = f"{eff / eff_a:.3f}"
        ratios.append(eff / eff_a)
    line = [rnd, v, os.path.basename(a_jar if v == "A" else b_jar), r["datanodes"], r["throughput_MBps"], r["files"],
            r["cpu_cores"], f"{eff:.3f}", f"{int(r['datanodes']) / cores:.1f}", r["complete"], r["load_avg_start"], ratio]
    w.writerow(line)
    out[v].append(dict(zip(head, line)))

for v in "AB":
    target = os.environ.get("AB_OUT", "docs/benchmarks")
    with open(os.path.join(target, f"{name}-{v}.csv"), "w") as fh:
        ww = csv.DictWriter(fh, fieldnames=head, lineterminator="\n")
        ww.writeheader()
        ww.writerows(out[v])
if ratios:
    print(f"median ratio B/A of effective GB/s per core over {len(ratios)} rounds: {statistics.median(ratios):.3f}",
          file=sys.stderr)
