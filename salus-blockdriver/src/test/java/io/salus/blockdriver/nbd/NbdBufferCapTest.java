package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import io.salus.blockdriver.volume.Volume;
import org.junit.jupiter.api.Test;

/**
 * The payload buffers of all connections together stay under one cap: a request that cannot
 * get memory waits (back-pressure), then is refused with ENOMEM, and the server, the other
 * connections and the data stay intact; memory comes back when the holder goes away.
 */
class NbdBufferCapTest {
  static final int MIB = 1 << 20;
  static final long CAP = 32L * MIB;

  /** A MemoryVolume whose reads complete only when the test opens the gate. */
  static final class GatedVolume extends ForwardingVolume {
    final CompletableFuture<Void> gate = new CompletableFuture<>();

    GatedVolume(Volume d) {
      super(d);
    }

    @Override
    public CompletableFuture<byte[]> read(long f, int c) {
      return gate.thenCompose(x -> super.read(f, c));
    }
  }

  @Test
  void buffersOfAllConnectionsStayUnderTheCap() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    byte[] pattern = new byte[MIB];
    Arrays.fill(pattern, (byte) 0x3c);
    mem.write(0, pattern, false).join();
    GatedVolume vol = new GatedVolume(mem);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol), new BlockDriverMetrics(), 8, CAP, 200).start();
        RawNbdClient other = new RawNbdClient(server.port());
        RawNbdClient busy = new RawNbdClient(server.port())) {
      other.connect("vol", false);
      busy.connect("vol", false);
      // 48 MiB of reads in flight on one connection (its own limit is 128 MiB): more than the
      // cap; the ones beyond it wait for memory, then are refused
      int n = 48;
      for (int i = 0; i < n; i++) {
        busy.sendRequest(0, CMD_READ, i, (long) (i % 60) * MIB, MIB, null);
      }
      int refused = 0;
      for (int i = 0; i < n - 32; i++) {
        RawNbdClient.Reply r = busy.readReply(MIB);
        assertEquals(ENOMEM, r.error(), "only refusals can arrive while the reads are held");
        refused++;
      }
      // the other connection is refused with ENOMEM too (after the wait): not hung, not crashed
      other.sendRequest(0, CMD_READ, 1000, 0, MIB, null);
      assertEquals(ENOMEM, other.readReply(MIB).error(),
          "a request that cannot get buffer memory gets ENOMEM");
      assertTrue(server.peakBufferBytes() <= CAP,
          "buffers in use " + server.peakBufferBytes() + " exceeded the cap " + CAP);
      // the held reads complete: their memory comes back and everyone is served again
      vol.gate.complete(null);
      for (int i = refused; i < n; i++) {
        RawNbdClient.Reply r = busy.readReply(MIB);
        assertEquals(0, r.error());
      }
      assertArrayEquals(pattern, other.read(0, MIB));
      assertTrue(server.peakBufferBytes() <= CAP);
    }
  }
}
