#!/usr/bin/env python3
"""Per-class test times from surefire/failsafe reports: class,seconds,tests (slowest first), then the total.

usage: python3 docs/benchmarks/test-times.py [REPO_ROOT]   (reads REPO_ROOT/**/target/*-reports/TEST-*.xml)
The before/after table docs/benchmarks/test-times.csv was built from this output of two runs.
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET

root = sys.argv[1] if len(sys.argv) > 1 else "."
rows = []
for f in glob.glob(os.path.join(root, "**/target/*-reports/TEST-*.xml"), recursive=True):
    s = ET.parse(f).getroot()
    rows.append((s.get("name").rsplit(".", 1)[-1], float(s.get("time") or 0), int(s.get("tests") or 0)))
rows.sort(key=lambda r: -r[1])
print("class,seconds,tests")
for name, t, n in rows:
    print("%s,%.1f,%d" % (name, t, n))
print("TOTAL,%.1f,%d" % (sum(r[1] for r in rows), sum(r[2] for r in rows)))
