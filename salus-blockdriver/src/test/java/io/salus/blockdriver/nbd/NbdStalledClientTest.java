package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A client that stalls a transfer holding pooled buffer memory must not hold the server-wide cap
 * for good: a client that sends a large WRITE header and then only part of its payload (or none;
 * review rv17n), or asks for large reads and never reads the replies, has its connection closed
 * once nothing moves for the stall timeout, and the memory returns, so every other client is
 * served again. What the stalled client was not answered was never acknowledged, so nothing is
 * lost; the volume keeps what was written before. (A slow but steady client is not cut off.)
 */
class NbdStalledClientTest {
  static final int MIB = 1 << 20;
  static final long CAP = 32L * MIB; // one 32 MiB write payload fills it
  long savedTimeout;

  @BeforeEach
  void shortTimeout() {
    savedTimeout = NbdConnection.stallTimeoutMs;
    NbdConnection.stallTimeoutMs = 1000;
  }

  @AfterEach
  void restore() {
    NbdConnection.stallTimeoutMs = savedTimeout;
  }

  @Test
  void aClientStallingInsideAWritePayloadLosesItsConnectionNotTheServer() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    byte[] before = new byte[MIB];
    Arrays.fill(before, (byte) 0x5a);
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(mem), metrics, 8, CAP, 200).start();
        RawNbdClient silent = new RawNbdClient(server.port());
        RawNbdClient other = new RawNbdClient(server.port())) {
      silent.connect("vol", false);
      other.connect("vol", false);
      assertEquals(0, other.write(0, before, false));
      // 32 MiB WRITE header, 1 KiB of its payload, then nothing: the server has the whole cap
      // allocated for this payload
      silent.writeRequestHeader(0, CMD_WRITE, 7, 0, 32 * MIB);
      silent.out.write(new byte[1024]);
      silent.out.flush();
      Thread.sleep(300); // the server takes the buffer for the payload
      // another client's 1 MiB write needs pooled memory: refused (ENOMEM) while the silent
      // client holds it; once the payload timeout closes the silent connection it succeeds
      byte[] after = new byte[MIB];
      Arrays.fill(after, (byte) 0x3c);
      long deadline = System.nanoTime() + 15_000_000_000L;
      int err;
      int refusals = 0;
      do {
        err = other.write(MIB, after, false);
        if (err == ENOMEM) {
          refusals++;
        }
      } while (err != 0 && System.nanoTime() < deadline);
      assertEquals(0, err, "the other client's write never got buffer memory back ("
          + refusals + " ENOMEM replies): the silent client keeps the cap");
      assertTrue(silent.serverClosed(), "the stalled connection is closed");
      assertEquals(1, metrics.stalledConnections.sum());
      assertArrayEquals(before, other.read(0, MIB), "data written before is intact");
      assertArrayEquals(after, other.read(MIB, MIB));
      assertArrayEquals(new byte[MIB], other.read(32L * MIB - MIB, MIB),
          "nothing of the silent client's unacknowledged write landed");
    }
  }

  @Test
  void aSlowButSteadyPayloadIsNotCutOff() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (8L * MIB) / 4096, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(mem), new BlockDriverMetrics(), 8, CAP, 200).start();
        RawNbdClient slow = new RawNbdClient(server.port())) {
      slow.connect("vol", false);
      byte[] data = new byte[MIB];
      Arrays.fill(data, (byte) 0x77);
      // 1 MiB dribbled over ~3 timeout periods, a piece every 300 ms: progress keeps it alive
      slow.writeRequestHeader(0, CMD_WRITE, 9, 0, MIB);
      int pieces = 10;
      for (int i = 0; i < pieces; i++) {
        slow.out.write(data, i * (MIB / pieces), i == pieces - 1 ? MIB - i * (MIB / pieces) : MIB / pieces);
        slow.out.flush();
        Thread.sleep(300);
      }
      RawNbdClient.Reply r = slow.readReply(0);
      assertEquals(9, r.handle());
      assertEquals(0, r.error());
      assertArrayEquals(data, slow.read(0, MIB));
    }
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
        RawNbdClient hog1 = new RawNbdClient(server.port());
        RawNbdClient hog2 = new RawNbdClient(server.port());
        RawNbdClient other = new RawNbdClient(server.port())) {
      other.connect("vol", false);
      // two clients each ask for a 16 MiB read and never read the reply: each reply's write blocks
      // once the socket buffers (a few MiB) are full, holding its 16 MiB buffer; together they hold
      // the whole cap, whatever the timing (one connection alone may block its reader on the
      // stuck writer before it takes a second buffer)
      for (RawNbdClient hog : List.of(hog1, hog2)) {
        hog.connect("vol", false);
        hog.sendRequest(0, CMD_READ, 1, 0, 16 * MIB, null);
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
      assertTrue(metrics.stalledConnections.sum() >= 1, "a stalled connection was closed");
      assertTrue(server.peakBufferBytes() <= CAP);
    } finally {
      completions.shutdown();
    }
  }
}
