#!/usr/bin/env python3
"""Summarises the JFR recording of a SalusVsHBaseBenchmark run (--jfr FILE) into a CSV of CPU samples.

usage: python3 docs/benchmarks/salus-vs-hbase-profile.py RUN.jfr > docs/benchmarks/salus-vs-hbase-profile.csv

Rows: all jdk.ExecutionSample events; those on the Salus replica event loops (threads salus-replica-*);
those with NodeKeys.edVerify (Ed25519 signature verification) on the stack, split by the protocol method
that asked for the verification; the top 10 innermost frames.
"""
import collections
import re
import subprocess
import sys

jfr = sys.argv[1]
text = subprocess.run(['jfr', 'print', '--events', 'jdk.ExecutionSample', '--stack-depth', '64', jfr],
                      capture_output=True, text=True, check=True).stdout
events = text.split('\njdk.ExecutionSample {')[1:]
n = len(events)
rows = []
loop = sum(1 for e in events if re.search(r'sampledThread = "salus-replica-', e))
verify = collections.Counter()
top = collections.Counter()
verify_all = 0
for e in events:
    frames = re.findall(r'^\s+([\w$.<>]+)\(', e, re.M)
    if frames:
        top[frames[0]] += 1
    if 'io.salus.core.crypto.NodeKeys.edVerify' in frames:
        verify_all += 1
        callers = [f for f in frames if f.startswith('io.salus') and '.crypto.' not in f and '.cert.' not in f]
        verify[callers[0] if callers else '?'] += 1
print('# CPU samples of ' + jfr + ' (jdk.ExecutionSample, JFR settings "profile"); share = samples / all samples')
print('what,samples,share')
print('all samples,%d,1.000' % n)
print('on the Salus replica event loops (threads salus-replica-*),%d,%.3f' % (loop, loop / n))
print('Ed25519 verification (NodeKeys.edVerify on the stack),%d,%.3f' % (verify_all, verify_all / n))
for k, c in verify.most_common(8):
    print('  edVerify asked by %s,%d,%.3f' % (k, c, c / n))
for k, c in top.most_common(10):
    print('innermost frame %s,%d,%.3f' % (k, c, c / n))
