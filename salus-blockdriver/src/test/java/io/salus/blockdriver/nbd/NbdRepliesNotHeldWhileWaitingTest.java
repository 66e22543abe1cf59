package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.Volume;
import java.io.IOException;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The reader thread batches the replies it writes while more request bytes are buffered and
 * sends them before it next reads the socket. It can also wait elsewhere: for payload buffer
 * memory (the server-wide cap, held by other clients) and for in-flight permits (requests of
 * this connection that have not finished, e.g. on a hung cluster). The replies it held back
 * waited with it: an acknowledged write's reply stayed unsent until another client gave memory
 * back, an error reply until the volume answered a request that has nothing to do with it.
 * Both waits here end only when the test ends them; the replies before them must arrive first.
 */
class NbdRepliesNotHeldWhileWaitingTest {
  private static final int MIB = 1 << 20;

  @Test
  void aWriteReplyDoesNotWaitForBufferMemoryHeldByAnotherClient() throws Exception {
    MemoryVolume vol = new MemoryVolume("vol", 64L * MIB / 4096, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol), new BlockDriverMetrics(), 8, 32L * MIB, 120_000).start();
        RawNbdClient pinner = new RawNbdClient(server.port());
        RawNbdClient c = new RawNbdClient(server.port())) {
      pinner.connect("vol", false);
      // a 32 MiB write whose payload never comes: its buffer holds the whole 32 MiB cap
      header(pinner, CMD_WRITE, 9, 0, 32 * MIB);
      pinner.out.write(new byte[100]);
      pinner.out.flush();
      long deadline = System.nanoTime() + 20_000_000_000L; // liveness bound only
      while (server.peakBufferBytes() < 32L * MIB && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(32L * MIB, server.peakBufferBytes(), "the silent write holds the cap");

      c.connect("vol", false);
      byte[] data = new byte[4096];
      Arrays.fill(data, (byte) 0x5c);
      // one segment: an aligned write (answered at once, batched: the read is buffered behind
      // it), then an unaligned read, which needs a pooled buffer and so waits for memory
      header(c, CMD_WRITE, 1, 4096, data.length);
      c.out.write(data);
      header(c, CMD_READ, 2, 4096 + 3, 5);
      c.out.flush();
      RawNbdClient.Reply w;
      try {
        w = c.readReply(0);
      } catch (IOException e) {
        throw new AssertionError("the reply to a completed write waited for buffer memory that"
            + " another client holds: " + e, e);
      }
      assertEquals(1, w.handle());
      assertEquals(0, w.error());
      pinner.close(); // the memory comes back; the read goes on
      RawNbdClient.Reply r = c.readReply(5);
      assertEquals(2, r.handle());
      assertEquals(0, r.error());
      assertArrayEquals(Arrays.copyOf(data, 5), r.data());
    }
  }

  @Test
  void anErrorReplyDoesNotWaitForInFlightPermits() throws Exception {
    CompletableFuture<Void> gate = new CompletableFuture<>();
    Volume vol = new ForwardingVolume(new MemoryVolume("vol", 1024, 4096)) {
      @Override
      public CompletableFuture<Void> write(long f, byte[] b, boolean fua) {
        return gate.thenCompose(x -> super.write(f, b, fua)); // a hung cluster until opened
      }
    };
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol), metrics, 8).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true);
      int inFlightLimit = 128;
      for (int i = 0; i < inFlightLimit; i++) {
        header(c, CMD_WRITE, 100 + i, (long) i * 4096, 4096);
        c.out.write(new byte[4096]);
      }
      c.out.flush();
      long deadline = System.nanoTime() + 20_000_000_000L; // liveness bound only
      while (metrics.inFlight.sum() < inFlightLimit && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(inFlightLimit, metrics.inFlight.sum(), "every permit is held by a hung write");
      // one segment: a read beyond the end (refused at once, batched) and one more write,
      // which waits for a permit
      header(c, CMD_READ, 1, 1024L * 4096, 4096);
      header(c, CMD_WRITE, 2, 200L * 4096, 4096);
      c.out.write(new byte[4096]);
      c.out.flush();
      RawNbdClient.Reply e;
      try {
        e = c.readReply(0);
      } catch (IOException ex) {
        throw new AssertionError("the refusal of a bad read waited for the in-flight writes to"
            + " finish: " + ex, ex);
      } finally {
        gate.complete(null);
      }
      assertEquals(1, e.handle());
      assertEquals(EINVAL, e.error());
      boolean[] seen = new boolean[inFlightLimit + 1];
      for (int i = 0; i <= inFlightLimit; i++) {
        RawNbdClient.Reply r = c.readReply(0);
        assertEquals(0, r.error(), "write " + r.handle());
        int k = r.handle() == 2 ? inFlightLimit : (int) (r.handle() - 100);
        assertFalse(seen[k], "one reply per write");
        seen[k] = true;
      }
    } finally {
      gate.complete(null);
    }
  }

  private static void header(RawNbdClient c, int type, long handle, long offset, int length)
      throws IOException {
    c.out.writeInt(REQUEST_MAGIC);
    c.out.writeShort(0);
    c.out.writeShort(type);
    c.out.writeLong(handle);
    c.out.writeLong(offset);
    c.out.writeInt(length);
  }
}
