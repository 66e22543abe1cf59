#!/usr/bin/python3
"""Writes a volume over NBD sequentially and FLUSHes every 16 blocks; records what each FLUSH covered.

  flushed_writer.py write  URI PROGRESS START_BLOCK END_BLOCK   writes [START, END) in 16-block writes, each
                                                                followed by a FLUSH; after each FLUSH reply appends
                                                                the covered end block to PROGRESS (fsync'd)
  flushed_writer.py verify URI PROGRESS [FROM_BLOCK]           reads every block from FROM_BLOCK (default 0) below
                                                                the highest recorded end and checks it holds the
                                                                bytes written

Block b's content depends only on b (SHA-256 of "salus-restart:<b>" repeated), so a block written again in a later
cycle holds the same bytes, and a block the volume lost reads as something else (zeros). Used by
salus-restart-at-size.sh (issue 27: kill -9 of the whole 'salus up' JVM mid-write, then a restart).
Needs python3-libnbd (Debian).
"""
import hashlib
import os
import sys

import nbd

BLOCK = 4096
PER_FLUSH = 16


def content(b):
    h = hashlib.sha256(b"salus-restart:%d" % b).digest()
    return (h * (BLOCK // len(h)))


def connect(uri):
    h = nbd.NBD()
    h.connect_uri(uri)
    return h


def write(uri, progress, start, end):
    h = connect(uri)
    with open(progress, "a") as p:
        b = start
        while b < end:
            n = min(PER_FLUSH, end - b)
            h.pwrite(b"".join(content(x) for x in range(b, b + n)), b * BLOCK)
            h.flush()
            b += n
            p.write("%d\n" % b)
            p.flush()
            os.fsync(p.fileno())
    h.shutdown()


def verify(uri, progress, start=0):
    ends = [int(x) for x in open(progress).read().split()] if os.path.exists(progress) else []
    covered = max(ends) if ends else 0
    h = connect(uri)
    bad = []
    step = 256
    for b in range(start, covered, step):
        n = min(step, covered - b)
        got = h.pread(n * BLOCK, b * BLOCK)
        for i in range(n):
            if got[i * BLOCK:(i + 1) * BLOCK] != content(b + i):
                bad.append(b + i)
    h.shutdown()
    print("verified %d flushed blocks: %d lost or wrong%s" % (max(0, covered - start), len(bad),
          (" (first: %s)" % bad[:8]) if bad else ""))
    return covered, len(bad)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "write" and len(sys.argv) == 6:
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "verify":
        covered, bad = verify(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 0)
        sys.exit(1 if bad else 0)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
