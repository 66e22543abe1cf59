package io.salus.blockdriver.launcher;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Checks done before anything starts, so that a bad environment fails fast and clearly. */
public final class Preflight {
  /** Heap the embedded cluster needs: NameNode, 3 DataNodes, HMaster and 3 region servers. */
  /**
   * The smallest heap 'salus up' starts with: every server of the stack shares it, and HBase sizes its memstores
   * (40%, split over the region servers) and block caches (3 x 10%) from it; what stays is ~235 MiB of servers.
   * SalusUpSmallHeapTest runs a volume holding more than this heap at it (issue 27; it was 1,536 MiB, a guess).
   */
  public static final long MIN_HEAP_BYTES = 1024L << 20;
  /** Physical memory that must still be available on the machine. */
  public static final long MIN_AVAILABLE_BYTES = 2048L << 20;

  private Preflight() {}

  /** Fails if {@code port} cannot be bound on {@code host}. */
  public static void checkPortFree(String host, int port, String what, String option)
      throws LauncherException {
    if (port == 0) {
      return;
    }
    try {
      if (canBind(InetAddress.getByName(host), port)) {
        return;
      }
    } catch (IOException e) {
      // an unknown host is reported as the port being unusable, like a failed bind
    }
    throw portInUse(host, port, what, option);
  }

  /** The error for a port another process holds, naming the option that changes it. */
  public static LauncherException portInUse(String host, int port, String what, String option) {
    return new LauncherException(
        "port " + port + " on " + host + " (" + what + ") is already in use by another process;"
            + " stop that process or pass " + option + " with a free port");
  }

  /** Whether a listening socket (with SO_REUSEADDR, as the servers use) can bind the port now. */
  private static boolean canBind(InetAddress address, int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(address, port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * A free port for a service whose port is recorded in the data directory and reused on every
   * start. It is chosen below the kernel's ephemeral range (ip_local_port_range), like HBase's and
   * HDFS's own defaults, so that no outgoing connection or port-0 listener of the cluster being
   * started (DataNodes bind several) can take it between the preflight check and the bind. A port it handed out
   * before in this JVM is not handed out again: the ports of one start are all chosen before any of them is bound,
   * and two services given the same port failed the start ("Address already in use", CI of stop 37).
   */
  public static int freePort(String host) throws IOException {
    InetAddress address = InetAddress.getByName(host);
    int[] ephemeral = ephemeralRange();
    int lo = FIXED_PORTS_FLOOR;
    int hi = ephemeral[0] - 1;
    if (hi - lo >= 1000) {
      java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
      for (int attempt = 0; attempt < 200; attempt++) {
        int port = random.nextInt(lo, hi + 1);
        if (!HANDED_OUT.contains(port) && canBind(address, port) && HANDED_OUT.add(port)) {
          return port;
        }
      }
    }
    // no room below the ephemeral range (or all busy): let the kernel choose
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(address, 0));
      return s.getLocalPort();
    }
  }

  /** Ports {@link #freePort} handed out in this JVM. */
  private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** Lowest port {@link #freePort} hands out: above the common fixed service ports. */
  static final int FIXED_PORTS_FLOOR = 20000;

  /** The kernel's ephemeral port range, or the Linux default where it cannot be read. */
  static int[] ephemeralRange() {
    try {
      String[] f = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim()
          .split("\\s+");
      return new int[] {Integer.parseInt(f[0]), Integer.parseInt(f[1])};
    } catch (IOException | RuntimeException e) {
      return new int[] {32768, 60999};
    }
  }

  public static void checkMemory() throws LauncherException {
    long maxHeap = Runtime.getRuntime().maxMemory();
    if (maxHeap < MIN_HEAP_BYTES) {
      throw new LauncherException(
          "'salus up' needs a Java heap of at least " + (MIN_HEAP_BYTES >> 20) + " MiB but this JVM"
              + " has " + (maxHeap >> 20) + " MiB; run it with SALUS_HEAP=3g (the ./salus script)"
              + " or java -Xmx3g");
    }
    long available = availablePhysicalMemory();
    if (available >= 0 && available < MIN_AVAILABLE_BYTES) {
      throw new LauncherException(
          "only " + (available >> 20) + " MiB of memory is available on this machine but the"
              + " embedded cluster needs about " + (MIN_AVAILABLE_BYTES >> 20) + " MiB; stop other"
              + " programs or use a larger machine (--skip-memory-check starts anyway)");
    }
  }

  /** MemAvailable from /proc/meminfo in bytes, or -1 where that file does not exist. */
  static long availablePhysicalMemory() {
    Path meminfo = Path.of("/proc/meminfo");
    if (!Files.isReadable(meminfo)) {
      return -1;
    }
    try {
      List<String> lines = Files.readAllLines(meminfo);
      for (String line : lines) {
        if (line.startsWith("MemAvailable:")) {
          String[] parts = line.trim().split("\\s+");
          return Long.parseLong(parts[1]) * 1024L;
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }
}
