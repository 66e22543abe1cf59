package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.VolumeGeometry;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * NBD TRIM and WRITE_ZEROES reach {@link SalusVolume#writeZeroes} with ranges of up to 4 GiB - 1
 * each (the NBD length field; Linux's nbd driver, mkfs and blkdiscard send discards that large),
 * and the NBD layer admits them with no in-flight bytes (up to 128 per connection). SalusVolume
 * builds every zero block of the range up front, before the first one is sent: a zeroed range
 * of N bytes costs at least 2N bytes of heap at once (one zero array per 64-block batch, then a
 * copy per block that stays queued until its batch is submitted), so a single discard of a large
 * volume takes the whole heap of the server (OutOfMemoryError for every connection and the
 * volume's own loop). The allocation is now bounded by a window of batches, not the range (this
 * test failed before: "zeroing 32 MiB allocated 64 MiB before returning").
 */
class SalusTrimMemoryTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 4096;
  static final int REGIONS = 4;
  static final int MIB = 1 << 20;
  static SalusMiniCluster cluster;
  static final VolumeGeometry G =
      new VolumeGeometry("trimmem", REGIONS * PER_REGION * BLOCK, BLOCK, PER_REGION);

  @BeforeAll
  static void start() throws Exception {
    cluster = new SalusMiniCluster();
    cluster.createVolume(G);
  }

  @AfterAll
  static void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void zeroingARangeDoesNotAllocateTheRangeUpFront() throws Exception {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long blocks = 8192; // 32 MiB
    long[] probes = {0, 63, 64, 511, 512, 513, 4095, 4096, blocks - 1};
    byte[] data = new byte[BLOCK];
    java.util.Arrays.fill(data, (byte) 0x77);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "trimmem")) {
      for (long b : probes) {
        v.write(b, data, false).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      }
      v.write(blocks, data, false).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      long me = Thread.currentThread().getId();
      long before = threads.getThreadAllocatedBytes(me);
      CompletableFuture<Void> f = v.writeZeroes(0, blocks, false);
      long allocated = threads.getThreadAllocatedBytes(me) - before;
      f.get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      assertTrue(allocated < 8L * MIB,
          "zeroing " + (blocks * BLOCK / MIB) + " MiB allocated " + (allocated / MIB)
              + " MiB before returning: the heap needed grows with the range (4 GiB per NBD"
              + " TRIM, 128 of them in flight per connection)");
      for (long b : probes) {
        assertArrayEquals(new byte[BLOCK],
            v.read(b, 1).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS),
            "block " + b + " of the zeroed range");
      }
      assertArrayEquals(data,
          v.read(blocks, 1).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS),
          "the block after the zeroed range keeps its data");
    }
  }
}
