package io.salus.blockdriver.nbd;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.BlockCorruptedException;
import io.salus.blockdriver.volume.MemoryVolume;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/**
 * The block driver's metrics are in JMX (Hadoop metrics2, as salus-hdfs's witness metrics):
 * read through the platform MBeanServer after real NBD traffic from qemu-io.
 */
class NbdJmxMetricsTest {

  static String qemuIo(String uri, String... commands) throws Exception {
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(
        "qemu-io", "-f", "raw", uri));
    for (String c : commands) {
      cmd.add("-c");
      cmd.add(c);
    }
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "qemu-io finished");
    return out;
  }

  @Test
  void metricsAreReadableThroughThePlatformMBeanServer() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(new File("/usr/bin/qemu-io").canExecute(),
        "qemu-io (a real NBD client) is not installed");
    MemoryVolume mem = new MemoryVolume("vol", 4096, 4096);
    // block 100 is "corrupt": the volume refuses to return it, as a verification failure does
    ForwardingVolume vol = new ForwardingVolume(mem) {
      @Override
      public CompletableFuture<byte[]> read(long first, int count) {
        if (first <= 100 && first + count > 100) {
          return CompletableFuture.failedFuture(
              new BlockCorruptedException("vol", 100, "data hash mismatch"));
        }
        return super.read(first, count);
      }
    };
    NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(vol))
        .start();
    try {
      String uri = server.uri("vol");
      String ok = qemuIo(uri, "write -P 0x5a 0 64k", "read -P 0x5a 0 64k", "flush",
          "discard 64k 8k", "write -z 128k 16k");
      assertFalse(ok.contains("error"), ok);
      String bad = qemuIo(uri, "read 400k 4k");
      assertTrue(bad.contains("Input/output error"), bad);

      MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
      Set<ObjectName> names = mbs.queryNames(
          new ObjectName("Hadoop:name=SalusNbd-" + server.port() + ",*"), null);
      assertEquals(1, names.size(), "one metrics2 bean for the server: " + names);
      ObjectName n = names.iterator().next();
      // metrics2 refreshes its JMX cache once per period (10 s by default): poll
      long deadline = System.currentTimeMillis() + 60_000;
      while (((Number) mbs.getAttribute(n, "ReadErrors")).longValue() < 1) {
        if (System.currentTimeMillis() > deadline) {
          throw new AssertionError("JMX never showed the traffic: WriteRequests "
              + mbs.getAttribute(n, "WriteRequests"));
        }
        Thread.sleep(250);
      }
      long writes = ((Number) mbs.getAttribute(n, "WriteRequests")).longValue();
      assertTrue(writes >= 1, "WriteRequests " + writes);
      assertTrue(((Number) mbs.getAttribute(n, "BytesWritten")).longValue() >= 64 * 1024);
      assertTrue(((Number) mbs.getAttribute(n, "ReadRequests")).longValue() >= 2);
      assertTrue(((Number) mbs.getAttribute(n, "BytesRead")).longValue() >= 64 * 1024 + 4096);
      assertTrue(((Number) mbs.getAttribute(n, "FlushRequests")).longValue() >= 1);
      assertTrue(((Number) mbs.getAttribute(n, "TrimRequests")).longValue() >= 1);
      assertTrue(((Number) mbs.getAttribute(n, "WriteZeroesRequests")).longValue() >= 1);
      assertTrue(((Number) mbs.getAttribute(n, "ReadErrors")).longValue() >= 1,
          "the failed read is counted as a read error");
      assertEquals(0L, ((Number) mbs.getAttribute(n, "WriteErrors")).longValue());
      assertTrue(((Number) mbs.getAttribute(n, "EioReplies")).longValue() >= 1);
      assertEquals(0L, ((Number) mbs.getAttribute(n, "InFlight")).longValue(),
          "nothing in flight after the clients are done");
      assertTrue(((Number) mbs.getAttribute(n, "WriteCompleted")).longValue() >= 1);
      assertTrue(((Number) mbs.getAttribute(n, "WriteAvgLatencyMicros")).doubleValue() > 0,
          "write latency recorded");
      assertTrue(((Number) mbs.getAttribute(n, "ReadMaxLatencyMicros")).doubleValue() > 0,
          "read latency recorded");
    } finally {
      server.close();
      mem.close();
    }
    assertTrue(ManagementFactory.getPlatformMBeanServer().queryNames(
        new ObjectName("Hadoop:name=SalusNbd-" + server.port() + ",*"), null).isEmpty(),
        "the bean goes away with the server");
  }
}
