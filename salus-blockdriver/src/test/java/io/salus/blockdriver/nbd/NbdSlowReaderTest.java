package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.Volume;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * A client that stops reading its replies must not stall any other connection: reply writes
 * never block the threads that complete volume requests (for HBaseVolume, the HBase client's
 * completion pool, shared by all connections of the volume).
 */
class NbdSlowReaderTest {
  static final int MIB = 1 << 20;

  /**
   * A MemoryVolume whose reads complete on a small shared pool, as HBaseVolume's complete on its
   * max(2, CPUs) completion threads. Storage is the real MemoryVolume.
   */
  static final class PooledVolume extends ForwardingVolume {
    final ExecutorService completions = Executors.newFixedThreadPool(2);

    PooledVolume(Volume d) {
      super(d);
    }

    @Override
    public CompletableFuture<byte[]> read(long f, int c) {
      return super.read(f, c).thenApplyAsync(x -> x, completions);
    }
  }

  @Test
  void aClientThatStopsReadingStallsNoOtherConnection() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    byte[] pattern = new byte[4096];
    Arrays.fill(pattern, (byte) 0x5a);
    mem.write(7, pattern, false).join();
    PooledVolume vol = new PooledVolume(mem);
    ExecutorService probe = Executors.newSingleThreadExecutor();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient stuck = new RawNbdClient(server.port());
        RawNbdClient other = new RawNbdClient(server.port())) {
      stuck.socket.setReceiveBufferSize(64 * 1024);
      stuck.connect("vol", false);
      other.connect("vol", false);
      // 100 MiB of read replies requested, none read: the socket buffers fill up
      for (int i = 0; i < 100; i++) {
        stuck.sendRequest(0, CMD_READ, i, (long) (i % 63) * MIB, MIB, null);
      }
      Thread.sleep(500); // let the stuck connection's replies fill its socket buffers
      Future<byte[]> r = probe.submit(() -> other.read(7 * 4096L, 4096));
      byte[] got;
      try {
        got = r.get(60, TimeUnit.SECONDS); // a liveness bound, not a timing assertion
      } catch (TimeoutException e) {
        fail("a connection whose client stopped reading stalled another connection");
        return;
      }
      assertArrayEquals(pattern, got);
    } finally {
      probe.shutdownNow();
      vol.completions.shutdownNow();
    }
  }
}
