#!/usr/bin/env python3
"""Where an emulated DataNode's cycles go: aggregates JFR CPU samples (jdk.ExecutionSample) of a runner JVM.

  EXALT_JAVA_OPTS=-XX:StartFlightRecording=filename=/tmp/x.jfr,settings=profile exalt-agent/exalt hdfs ...
  python3 docs/benchmarks/exalt-profile.py /tmp/x.jfr [out.csv|-] [skip_seconds]

Prints the top frames and the share of samples whose stack contains each category (a sample counts once per
category; categories can overlap, e.g. a Tardis expand inside a socket read)."""
import collections, re, subprocess, sys

CATEGORIES = [
    ("tardis expand (generate/decompress)", r"io\.exalt\.tardis\.TardisFormat\.expand"),
    ("tardis compress+verify", r"io\.exalt\.tardis\.TardisCompressor\."),
    ("tardis template pages (verify compare, receive copy)", r"io\.exalt\.tardis\.TardisTemplates\."),
    ("agent socket hooks", r"io\.exalt\.agent\.boot\.SocketHooks\."),
    ("agent file hooks", r"io\.exalt\.agent\.boot\.(FileHooks|CompressedFile|ExtentIndex)\."),
    ("CRC (checksum compute/verify)", r"(CRC32C|PureJavaCrc32|DataChecksum\.(verify|calculate|update))"),
    ("client generator fill", r"io\.exalt\.tardis\.TardisGenerator\.fill"),
    ("DataNode receive (BlockReceiver)", r"org\.apache\.hadoop\.hdfs\.server\.datanode\.BlockReceiver\."),
    ("DataNode packet responder / acks", r"BlockReceiver\$PacketResponder"),
    ("client DFSOutputStream/DataStreamer", r"org\.apache\.hadoop\.hdfs\.(DFSOutputStream|DataStreamer|DFSPacket)"),
    ("NameNode", r"org\.apache\.hadoop\.hdfs\.server\.(namenode|blockmanagement)\."),
    ("IPC (Hadoop RPC)", r"org\.apache\.hadoop\.ipc\."),
    ("socket I/O (JDK)", r"sun\.nio\.ch\.(SocketChannelImpl|NioSocketImpl|SocketDispatcher|IOUtil)"),
    ("array copies", r"(System\.arraycopy|Arrays\.copyOf|jdk\.internal\.misc\.Unsafe\.copyMemory)"),
    ("log4j level checks", r"org\.apache\.log4j\."),
    ("agent descriptor registry (synchronized maps)", r"(Collections\$SynchronizedMap|WeakHashMap)[\s\S]*io\.exalt\.agent\.boot\.(FileHooks|SocketHooks)\."),
    # by caller (the stack is joined top frame first, so "A[\s\S]*B" means A called, directly or not, by B)
    ("expand in socket receive", r"io\.exalt\.tardis\.TardisFormat\.expand[\s\S]*io\.exalt\.agent\.boot\.SocketHooks\."),
    ("expand in client data generation", r"io\.exalt\.tardis\.TardisFormat\.expand[\s\S]*io\.exalt\.runner\.Workload\."),
    ("compress+verify in file writes", r"io\.exalt\.tardis\.TardisCompressor\.[\s\S]*io\.exalt\.agent\.boot\.CompressedFile\.write"),
    ("compress+verify in socket sends", r"io\.exalt\.tardis\.TardisCompressor\.[\s\S]*io\.exalt\.agent\.boot\.SocketHooks\."),
]

def main():
    jfr, out = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None)
    skip = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "64", jfr],
                          capture_output=True, text=True, check=True).stdout
    samples = text.split("jdk.ExecutionSample {")[1:]
    if skip > 0:
        # keep samples from `skip` seconds after the first one on: a recording started with the JVM (no delay) avoids the
        # deoptimisation a recording started later causes ("Jvmti state change invalidated dependencies"), and the
        # start-up is cut here instead
        def secs(s):
            m = re.search(r"startTime = (\d+):(\d+):([\d.]+)", s)
            return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None
        times = [secs(s) for s in samples]
        t0 = min(t for t in times if t is not None)
        samples = [s for s, t in zip(samples, times) if t is not None and (t - t0) % 86400 >= skip]
    top = collections.Counter()
    cats = collections.Counter()
    for s in samples:
        frames = re.findall(r"^\s+([\w$.<>]+)\(", s, re.M)
        if not frames:
            continue
        top[frames[0]] += 1
        stack = "\n".join(frames)
        for name, rx in CATEGORIES:
            if re.search(rx, stack):
                cats[name] += 1
    n = len(samples)
    print(f"{n} CPU samples")
    print("top frames:")
    for f, c in top.most_common(15):
        print(f"  {100.0 * c / n:5.1f}%  {f}")
    print("stacks containing:")
    rows = []
    for name, _ in CATEGORIES:
        print(f"  {100.0 * cats[name] / n:5.1f}%  {name}")
        rows.append(f"{name},{cats[name]},{100.0 * cats[name] / n:.1f}")
    if out:
        with open(out, "w") as w:
            w.write("category,samples,percent_of_%d_samples\n" % n)
            w.write("\n".join(rows) + "\n")
        print("wrote", out)

if __name__ == "__main__":
    main()
