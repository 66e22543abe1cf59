#!/usr/bin/env python3
"""Where the CPU goes in one time window of a SalusVsHBaseBenchmark JFR recording (task tput20).

usage: python3 docs/benchmarks/salus-vs-hbase-window-profile.py RUN.jfr HH:MM:SS HH:MM:SS > SUMMARY.txt

The window is the one of a workload on one target, from the driver's progress lines (e.g. "[ 8/26 23:52:28]
seq-write-4k-qd32 on salus" to the next line's time). Prints the jdk.ExecutionSample count in the window, by thread
(digits folded), the samples with signature crypto on the stack (Ed25519, HMAC-SHA256, CRC32C weak signatures), the
Salus callers of the Ed25519 and HMAC samples (first three io.salus frames outside the crypto package), the top
innermost frames and the io.salus classes most often on the stack.
"""
import collections
import re
import subprocess
import sys

jfr, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3]
text = subprocess.run(['jfr', 'print', '--events', 'jdk.ExecutionSample', '--stack-depth', '64', jfr],
                      capture_output=True, text=True, check=True).stdout
n = 0
threads = collections.Counter()
top = collections.Counter()
classes = collections.Counter()
crypto = collections.Counter()
callers = {'ed25519': collections.Counter(), 'hmac': collections.Counter()}
for e in text.split('jdk.ExecutionSample {')[1:]:
    m = re.search(r'startTime = (\S+)', e)
    if not m or not (t0 <= m.group(1)[:8] < t1):
        continue
    n += 1
    th = re.search(r'sampledThread = "([^"]*)"', e)
    threads[re.sub(r'\d+', 'N', th.group(1) if th else '?')] += 1
    frames = re.findall(r'^\s+([\w$.<>]+)\(', e, re.M)
    if frames:
        top[frames[0]] += 1
    seen = set()
    for f in frames:
        k = f.rsplit('.', 1)[0]
        if k.startswith('io.salus') and k not in seen:
            seen.add(k)
            classes[k] += 1
    kind = None
    if any('org.bouncycastle.math.ec.rfc8032' in f or 'Ed25519' in f for f in frames):
        kind = 'ed25519'
    elif any('HMac' in f or 'SHA256Digest' in f for f in frames):
        kind = 'hmac'
    elif any('weakSignature' in f for f in frames):
        kind = 'weak'
    if kind:
        crypto[kind] += 1
        if kind in callers:
            chain = [f for f in frames if f.startswith('io.salus') and '.crypto.' not in f]
            callers[kind][' <- '.join(x.replace('io.salus.core.', '') for x in chain[:3])] += 1
print(f'window {t0}..{t1}: {n} samples')
print('-- signature crypto on the stack (samples, share)')
for k in ('ed25519', 'hmac', 'weak'):
    print(f'{crypto[k]:5d} {100.0 * crypto[k] / max(n, 1):5.1f}% {k}')
for k in ('ed25519', 'hmac'):
    print(f'-- callers of {k}')
    for c, v in callers[k].most_common(15):
        print(f'{v:5d} {c}')
print('-- threads')
for k, v in threads.most_common(15):
    print(f'{v:5d} {k}')
print('-- top frames')
for k, v in top.most_common(25):
    print(f'{v:5d} {k}')
print('-- io.salus classes on the stack')
for k, v in classes.most_common(25):
    print(f'{v:5d} {k}')
