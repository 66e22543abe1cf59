package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A client that asks for large reads and never reads the replies keeps their pooled buffers
 * (the reply thread blocks in its socket write): a few such clients would hold the server-wide
 * buffer cap for good and every other client's large requests would get ENOMEM. A reply write
 * that makes no progress for the stall timeout closes that connection and returns its memory.
 * (A slow but reading client is not cut off: {@link NbdSlowReaderTest}.)
 */
class NbdStalledReaderTest {
  static final int MIB = 1 << 20;
  static final long CAP = 32L * MIB;
  long saved;

  @BeforeEach
  void shortTimeout() {
    saved = NbdConnection.stallTimeoutMs;
    NbdConnection.stallTimeoutMs = 1000;
  }

  @AfterEach
  void restore() {
    NbdConnection.stallTimeoutMs = saved;
  }

  @Test
  void aClientThatNeverReadsItsRepliesLosesItsConnectionNotTheServer() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    byte[] pattern = new byte[MIB];
    Arrays.fill(pattern, (byte) 0x6b);
    for (int i = 0; i < 64; i++) {
      mem.write((long) i * (MIB / 4096), pattern, false).join();
    }
    // a ForwardingVolume offers no zero-copy views: every 1 MiB read takes a pooled buffer; reads
    // complete on another thread, as HBase and Salus volumes' do, so replies go through the reply
    // thread while the reader goes on taking requests (and buffers)
    java.util.concurrent.ExecutorService completions = java.util.concurrent.Executors.newFixedThreadPool(2);
    ForwardingVolume vol = new ForwardingVolume(mem) {
      @Override
      public java.util.concurrent.CompletableFuture<byte[]> read(long f, int c) {
        return super.read(f, c).thenApplyAsync(x -> x, completions);
      }
    };
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol), metrics, 8, CAP, 200).start();
        RawNbdClient hog = new RawNbdClient(server.port());
        RawNbdClient other = new RawNbdClient(server.port())) {
      hog.connect("vol", false);
      other.connect("vol", false);
      // large reads whose replies are never read: the first reply's write blocks once the socket
      // buffers are full (with its 16 MiB buffer), the reader takes the next request's buffer before
      // it waits for the blocked writer, and together they fill the cap
      for (int i = 0; i < 4; i++) {
        hog.sendRequest(0, CMD_READ, i, (long) i * 16 * MIB, 16 * MIB, null);
      }
      Thread.sleep(500);
      long deadline = System.nanoTime() + 15_000_000_000L;
      RawNbdClient.Reply r;
      int refusals = 0;
      do {
        other.sendRequest(0, CMD_READ, 1000, 0, MIB, null);
        r = other.readReply(MIB);
        if (r.error() == ENOMEM) {
          refusals++;
        }
      } while (r.error() != 0 && System.nanoTime() < deadline);
      assertEquals(0, r.error(), "the other client never got buffer memory back (" + refusals
          + " ENOMEM replies): the client that stopped reading keeps the cap");
      assertArrayEquals(pattern, r.data());
      assertEquals(1, metrics.stalledConnections.sum());
      assertTrue(server.peakBufferBytes() <= CAP);
    } finally {
      completions.shutdown();
    }
  }
}
